"""A model function opening a variable scope around the layer functions it calls:

    def discriminator(x, reuse=False):
        with tf.variable_scope("discriminator", reuse=reuse):
            h = lrelu(linear(x, 64, "d_h0"))
            return linear(h, 1, "d_out")

TF1 named the layer function's variables under both scopes
(`discriminator/d_h0/w`), made them at the first call and gave them back at a
call with `reuse=True` (or after `scope.reuse_variables()`). The layer
function's module keeps its variables by scope and makes each at the first call
under it (builders.py), so the function loses its `with` and hands the layer
functions the whole scope (`linear(x, 64, "discriminator/d_h0")`): the same
names, made once, given back at every later call. A call with `reuse=False`
that TF1 would have failed on is the original's failure, not the migration's.

Only a function whose body is one such `with` (after statements making no
variables), with a string scope and `reuse=` at most, whose builder calls are
all calls of layer functions naming their scope by a string, and whose `as`
name, if any, only reuses (`if reuse: scope.reuse_variables()`).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builders, scope_reuse
from tf1gradfix.cst.syntax import bound_args, literal_string
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import BuilderModule

VARIABLE_SCOPE = "tensorflow.variable_scope"


def prefix(builder, helper: cst.FunctionDef) -> str | None:
    """"LABEL/" for a function of that form, its edits recorded in `program.edits`; "" for a
    function opening no variable scope or calling no builder; None for one whose scope is
    not followed."""
    block, _, _ = builders.scope_block(helper)
    scopes = [c for c, q in builder.calls(helper) if q == VARIABLE_SCOPE]
    if not scopes or not any(type(c) is cst.Call and isinstance(c.func, cst.Name) and builder.is_builder(c.func.value)
                             for c in walk(helper.body)):
        return ""
    item = block.items[0] if block is not None and len(block.items) == 1 else None
    opened = item.item if item is not None else None
    if not isinstance(opened, cst.Call) or scopes != [opened] or not opened.args or opened.args[0].keyword is not None \
            or any(a.keyword is not None and a.keyword.value != "reuse" for a in opened.args[1:]) \
            or any(a.keyword is None for a in opened.args[1:]):
        return None
    label = literal_string(opened.args[0].value)
    if not label:
        return None
    block = cast(cst.With, block)
    dropped = _reuse_statements(block, cast(cst.WithItem, item).asname)
    if dropped is None:
        return None
    edits: dict[cst.CSTNode, object] = {}
    for call in walk(block.body):
        if type(call) is not cst.Call or not isinstance(call.func, cst.Name) or not builder.is_builder(call.func.value):
            continue
        named = scope_named(builder, call)
        if named is None:
            return None
        edits[named[1]] = prefixed(named[1], label + "/")
    edits[block] = _flattened
    edits.update({stmt: cst.RemovalSentinel.REMOVE for stmt in dropped})
    builder.program.edits.update(edits)
    return label + "/"


def scope_named(builder, call: cst.Call) -> tuple[BuilderModule, cst.SimpleString] | None:
    """(its module, the string) for a call of a layer function (one making variables, no
    layers) naming its scope by a string literal; None for any other builder call."""
    made = builders.node(builder, builder.program.helpers[cast(cst.Name, call.func).value])
    given = bound_args(call, [p.name.value for p in made.builder.params.params], call).get(made.scope_parameter or "")
    if made.scope_parameter is None or made.layers or not isinstance(given, cst.SimpleString) \
            or given.value[0] not in "'\"" or literal_string(given) is None:
        return None
    return made, given


def prefixed(given: cst.SimpleString, prefix: str) -> cst.SimpleString:
    """The scope string with the enclosing scope `prefix` ("outer/") in front."""
    return given.with_changes(value=given.value[0] + prefix + given.value[1:])


def _flattened(updated: cst.With) -> cst.FlattenSentinel:
    return cst.FlattenSentinel(cast(cst.IndentedBlock, updated.body).body)


def _reuse_statements(block: cst.With, asname: cst.AsName | None) -> list[cst.BaseStatement] | None:
    """The statements of the block that only reuse its scope (`scope.reuse_variables()`, also
    under `if reuse:`); None where the `as` name is read otherwise."""
    if asname is None:
        return []
    if not isinstance(asname.name, cst.Name):
        return None
    name = asname.name.value
    dropped = [stmt for stmt in cast(cst.IndentedBlock, block.body).body if _reuses(stmt, name)]
    kept_reads = [n for stmt in cast(cst.IndentedBlock, block.body).body if stmt not in dropped
                  for n in walk(stmt) if type(n) is cst.Name and n.value == name]
    return None if kept_reads else dropped


def _reuses(stmt: cst.BaseStatement, name: str) -> bool:
    if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock):
        return len(stmt.body.body) == 1 and _reuses(stmt.body.body[0], name) and not any(
            type(n) is cst.Name and n.value == name for n in walk(stmt.test))
    return scope_reuse.reuses(stmt, name)
