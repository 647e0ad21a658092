"""Layer functions called under a variable scope the script opens:

    with tf.variable_scope("maker"):
        made = dense_layer(dense_layer(noise, 20, "l1", tf.nn.relu), 16, "l2")

TF1 named their variables under both scopes (`maker/l1/W`). The layer function's
module keeps its variables by the scope each call names (builders.py), so each call
names the whole scope, `dense_layer(..., "maker/l1")`, as outer_scopes.py does for a
function opening the scope around the calls; a collection of the scope (`var_list=
tf.trainable_variables("maker")`) lists those. Only direct calls of layer functions
naming their scope by a string; any other builder under such a scope is refused: its
module's name is its own scope alone.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import outer_scopes
from tf1gradfix.cst.syntax import Refusal, literal_string
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import BuilderModule


def prefix_calls(builder, prefix: str, statement: cst.CSTNode, deps) -> None:
    """Each builder call of the statement, under the scope `prefix` ("maker/"), named with it
    (`program.labels`, and the scope its call recorded); Refusal where that cannot be."""
    program = builder.program
    called: set[int] = set()
    for call in walk(statement):
        if type(call) is not cst.Call or not isinstance(call.func, cst.Name) or not builder.is_builder(call.func.value):
            continue
        named = outer_scopes.scope_named(builder, call)
        made, given = named if named is not None else (None, None)
        k = next((k for k, site in enumerate(made.call_sites) if site is call), None) if made is not None else None
        if made is None or given is None or made.made_on_call or k is None:   # (a call deps_of recorded: builder_loops)
            raise Refusal.of(call, "builder_called_in_scope", scope=prefix[:-1])
        program.labels[given] = outer_scopes.prefixed(given, prefix)
        made.scoped[k] = (made.scoped[k][0], prefix + cast(str, literal_string(given)))
        called.add(made.index)
    if any(isinstance(program.nodes[d], BuilderModule) and d not in called for d in deps):
        raise Refusal.of(statement, "builder_called_in_scope", scope=prefix[:-1])
