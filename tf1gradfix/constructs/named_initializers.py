"""An initializer a builder function makes once and names, passed to its `tf.get_variable`s.

    def encoder(x):
        with tf.variable_scope("encoder"):
            w_init = tf.truncated_normal_initializer(stddev=0.02)
            w = tf.get_variable("w", [4, 8], initializer=w_init)
            v = tf.get_variable("v", [8, 2], initializer=w_init)

A v1 initializer object holds only its settings: each `tf.get_variable` makes its own
initializing op from them, with its own op seed, as a call written in its place would.
So each variable is read with the call in place of the name, and the statement naming
it goes with the function's TF1 plumbing: the module class writes each variable's TF2
initializer from the call (emit/state.py), and the v1 call is nowhere in the output.
Only a name bound once in the function, to a call of an initializer the tables map,
and read nowhere but as an `initializer=` of the function's `tf.get_variable`s.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import contrib
from tf1gradfix.cst.syntax import bound_names, loads
from tf1gradfix.cst.walk import walk


def named(builder, helper: cst.FunctionDef, inner: list) -> dict[str, tuple[cst.Call, cst.BaseStatement]]:
    """Name -> (the initializer call, the statement binding it) of such names among `inner`,
    the statements of `helper` its variable scope holds."""
    from tf1gradfix.constructs.variables import initializer_rows   # (variables reads the builders' model)
    rows = initializer_rows()
    found: dict[str, tuple[cst.Call, cst.BaseStatement]] = {}
    for stmt in inner:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Call)):
            continue
        q = builder.qualified(small.value.func)
        if q in rows or contrib.initializer_row(q) is not None:
            found[small.targets[0].target.value] = (small.value, stmt)
    if not found:
        return found
    bindings = [name for s in helper.body.body for part in walk(s) if isinstance(part, cst.BaseSmallStatement)
                for name in bound_names(cst.SimpleStatementLine(body=[part]))]
    reads = loads(helper.body)   # (its one binding among them)
    passed = [a.value.value for c in walk(helper.body) if isinstance(c, cst.Call)
              and builder.qualified(c.func) == "tensorflow.get_variable"
              for a in c.args if a.keyword is not None and a.keyword.value == "initializer" and isinstance(a.value, cst.Name)]
    return {name: made for name, made in found.items()
            if bindings.count(name) == 1 and reads.count(name) == passed.count(name) + 1}


def resolved(bound: dict, names: dict) -> dict:
    """The bound arguments of a `tf.get_variable` with a named initializer read as its call."""
    init = bound.get("initializer")
    if isinstance(init, cst.Name) and init.value in names:
        return {**bound, "initializer": names[init.value][0]}
    return bound
