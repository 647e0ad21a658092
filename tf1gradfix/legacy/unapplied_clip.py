"""TFG806: `tf.clip_by_global_norm` whose clipped list is not the one applied.

`clipped, norm = tf.clip_by_global_norm(grads, 5.0)` then
`opt.apply_gradients(zip(grads, params))`: TF1 computes the clipped list and
applies the unclipped gradients.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import arg, loads
from tf1gradfix.legacy.slices import reads
from tf1gradfix.model.nodes import GRADIENT_NODES, OptimizerCall
from tf1gradfix.model.slicing import closure

CLIPS = ("tensorflow.clip_by_global_norm",)


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for clip in program.nodes:
        call = clip.value
        if not isinstance(call, cst.Call) or qualified(call.func) not in CLIPS or not clip.names:
            continue
        clipped = clip.names[0]
        inputs = {i for i in closure(program, reads(program, clip, arg(call, 0, "t_list")))
                  if isinstance(program.nodes[i], GRADIENT_NODES)}
        for update in updates:
            if update.node.method != "apply_gradients" or not inputs & update.loss:
                continue
            readers = [program.nodes[i] for i in update.loss | {update.node.index} if clip.index in program.nodes[i].deps]
            if any(clipped in loads(_read_part(r)) for r in readers):
                continue
            norm = arg(call, 1, "clip_norm")
            limit = float(norm.evaluated_value) if isinstance(norm, (cst.Float, cst.Integer)) else None
            out.append((update.node.call, {"clipped": clipped, "limit": limit}, update.trained))
    return out


def _read_part(node) -> cst.CSTNode:
    """What a reader of the clip reads it in (an update: the pairs it applies)."""
    return node.bound.get("grads_and_vars", node.value) if isinstance(node, OptimizerCall) else node.value

