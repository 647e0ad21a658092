"""A layer call nested in an expression, moved to a statement of its own before it.

`h = tf.nn.relu(tf.layers.batch_normalization(h, training=t))` means: make and call the
layer, then apply relu to its output. The model reads a layer from a statement whose value
is the layer call (constructs/layers.py), so the nested call is written first on its own
line under a fresh name and the statement reads that name. Python calls the inner call
first as well, so the graph TF1 builds is the same, with one condition: no other call of
the statement may complete before the layer call (an op made earlier keeps its place in
the graph and with it its op seed), so hoisting stops at the first such call, unless it is
in the layer call's own arguments (`tf.layers.dense(tf.concat([z, e], 1), 24)`), which
move with it. Calls inside lambdas, comprehensions, conditional expressions and boolean
operators are never moved (they run conditionally, repeatedly or later), and a call among
them stops hoisting, but where they are the arguments of a layer call moved whole.
"""

from __future__ import annotations

import functools

from typing import cast

import libcst as cst

from tf1gradfix.constructs import layers
from tf1gradfix.cst.syntax import fresh_name
from tf1gradfix.cst.walk import walk

_NOT_ENTERED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)


@functools.lru_cache(maxsize=1)
def _short_names() -> frozenset[str]:
    """`dense`, `batch_normalization`, `fully_connected`, ...: the layer functions of the tables."""
    return frozenset(q.rsplit(".", 1)[1] for q in layers.layer_table() if q.rsplit(".", 2)[-2] == "layers")


def _is_layer(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in _short_names() \
        and (isinstance(func.value, cst.Attribute) and func.value.attr.value == "layers"
             or isinstance(func.value, cst.Name) and func.value.value == "layers")


def hoisted(small: cst.BaseSmallStatement, taken: set[str]) -> list[cst.BaseSmallStatement] | None:
    """`small` preceded by assignments of the layer calls nested in its value, or None
    where there is none to move (the caller keeps `small`)."""
    if isinstance(small, cst.Assign):
        base = small.targets[0].target.value if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) else "out"
    elif isinstance(small, cst.Return) and small.value is not None:
        base = "out"
    else:
        return None
    top = small.value
    assert top is not None   # (a bare `return`: None above)
    mover = _Mover(top, base, taken)
    value = cast(cst.BaseExpression, top.visit(mover))
    if not mover.moved:
        return None
    return [*mover.moved, small.with_changes(value=value)]


class _Mover(cst.CSTTransformer):
    def __init__(self, top: cst.BaseExpression, base: str, taken: set[str]) -> None:
        super().__init__()
        self.top, self.base, self.taken = top, base, taken
        self.moved: list[cst.BaseSmallStatement] = []
        self.done: list[cst.CSTNode] = []   # calls completed in place so far (and blocks holding calls)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _NOT_ENTERED):
            if any(isinstance(n, cst.Call) for n in walk(node)):
                self.done.append(node)
            return False
        return True

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        inside = {id(n) for n in walk(original)}
        before = [n for n in self.done if id(n) not in inside]   # (an argument's calls move with the layer call)
        if original is self.top or before or not _is_layer(updated):
            if original is not self.top:
                self.done.append(original)
            return updated
        self.done = before
        short = cast(cst.Attribute, updated.func).attr.value
        name = fresh_name(f"{self.base}_{short}", self.taken)
        self.moved.append(cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=updated))
        return cst.Name(name)
