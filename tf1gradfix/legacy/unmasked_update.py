"""TFG805: a gradient mask applied to some updates of a variable and not to others.

`opt.apply_gradients([(grad * mask, emb)])` freezes the entries the mask zeroes, but
another update of `emb` (a `minimize` over the trainable variables, pairs applied
unedited) moves them all: TF1 runs both, and the "frozen" entries train.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.legacy.slices import reads
from tf1gradfix.model.nodes import ComputeGradients, Tensor, Variable


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    masked: dict[int, int] = {}   # variable -> the update masking its gradient
    for update in updates:
        if update.node.method == "apply_gradients":
            for variable in _masked(program, update.node, update.node.bound.get("grads_and_vars"), updates, qualified):
                masked.setdefault(variable, update.node.index)
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for update in updates:
        if not update.applies:
            continue
        plain = [i for i in update.trained if i in masked and masked[i] != update.node.index
                 and i not in _masked(program, update.node, update.node.bound.get("grads_and_vars"), updates, qualified)]
        for i in plain:
            out.append((update.node.call, {"variable": program.nodes[i].names[0], "method": update.node.method,
                                           "masking": program.nodes[masked[i]].names[0]}, [i]))
    return out


def _masked(program, node, pairs, updates, qualified) -> set[int]:
    """The variables whose gradients `pairs` (what an apply_gradients applies) multiplies by something."""
    if pairs is None:
        return set()
    if isinstance(pairs, cst.Name):   # `masked = [...]` on a line of its own
        bound = [program.nodes[d] for d in reads(program, node, pairs)]
        return _masked(program, bound[0], bound[0].value, updates, qualified) \
            if len(bound) == 1 and isinstance(bound[0], Tensor) else set()
    if isinstance(pairs, (cst.List, cst.Tuple)):
        out = set()
        for element in pairs.elements:
            pair = element.value
            if isinstance(pair, cst.Tuple) and len(pair.elements) == 2 and _scaled(pair.elements[0].value, qualified):
                out |= {d for d in reads(program, node, pair.elements[1].value) if isinstance(program.nodes[d], Variable)}
        return out
    if isinstance(pairs, (cst.ListComp, cst.GeneratorExp)) and isinstance(pairs.elt, cst.Tuple) \
            and len(pairs.elt.elements) == 2 and _scaled(pairs.elt.elements[0].value, qualified) \
            and pairs.for_in.inner_for_in is None and pairs.for_in.ifs == []:
        sources = [program.nodes[d] for d in reads(program, node, pairs.for_in.iter)]
        trained = {u.node.index: u.trained for u in updates}
        return {v for s in sources if isinstance(s, ComputeGradients) for v in trained.get(s.index, [])}
    return set()


def _scaled(grad: cst.BaseExpression, qualified) -> bool:
    """Is a gradient multiplied by something (`g * mask`, `tf.multiply(g, mask)`)?"""
    if isinstance(grad, cst.BinaryOperation):
        return isinstance(grad.operator, cst.Multiply)
    return isinstance(grad, cst.Call) and qualified(grad.func) in ("tensorflow.multiply", "tensorflow.math.multiply")
