"""A sum started from a constant and grown by graph code:

    l2 = 0.0                          # or tf.constant(0.0), or []
    for w in weights:
        l2 += tf.nn.l2_loss(w)        # (or `l2 = l2 + ...` on straight lines)

TF1 ran these statements once, when the graph was built: the constant became the
first term of an op. In TF2 the graph statements move into the step functions, and
a name bound there is a local of the function; the start must move with them, or
the function reads the name before binding it. The start moves when it is made of
constants only and nothing between it and the graph code reads or binds the name
(a statement between may be a block, a loop making variables, that never names it).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from tf1gradfix.cst.syntax import bound_names, loads
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Static, Tensor


def carry(builder, name: str, position: int) -> bool:
    """Makes the statement that started `name` before the item at `position` a step
    statement (a `Tensor` node, before the graph code that rebinds it); False where it
    cannot move (another kind of start, a read in between, a static value others read)."""
    program = builder.program
    first = start(program, name, position, lambda value: _constant(builder, value))
    if first is None:
        return False
    node = first.node
    if node is None:
        value = first.stmt.body[0].value
        builder.add(first, Tensor, (name,), value, (), calls=[q for _, q in builder.calls(value) if q])
        return True
    if type(node) is not Static or any(node.index in n.deps for n in program.nodes):
        return False
    fields = {f.name: getattr(node, f.name) for f in dataclasses.fields(node) if f.init}
    program.nodes[node.index] = first.node = Tensor(**fields)   # (same index: nothing reads it yet)
    return True


def start(program, name: str, position: int, accepts=None):
    """The item `name = []` (or `{}`: a list a loop fills) before `position`, with only plain
    statements between that do not read it; `accepts(value)`: another start it may have (a
    value of constants, `carry`). None where there is none."""
    for item in reversed(program.items[:position]):
        stmt = item.stmt
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name:
            empty = isinstance(small.value, (cst.List, cst.Dict)) and not small.value.elements
            held = empty if accepts is None else accepts(small.value)
            made = item.node is None or accepts is not None and type(item.node) is Static
            return item if held and made and not item.drop else None
        if _mentions(stmt, name):
            return None
    return None


def _mentions(stmt: cst.BaseStatement, name: str) -> bool:
    """Whether the statement may read or bind `name`: any `name` in it, its blocks too (a
    loop making the model's variables between the start and the sum is passed by)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return name in loads(stmt) or name in bound_names(stmt)
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(stmt))


def _constant(builder, value: cst.BaseExpression) -> bool:
    """Made of literals and TensorFlow's pure calls on them (`0.0`, `tf.constant(0.0)`, `[]`)?"""
    tf = builder.program.tf_alias
    calls = builder.calls(value)
    return all(n == tf for n in loads(value)) and all(q is not None for _, q in calls) and not builder.deps_of(value)
