"""TFG805, entry-wise: a variable frozen in part by `tf.stop_gradient(mask_h * E) + mask * E`
that a loss also reads directly.

The entry-wise stop freezes the entries `mask` zeroes only for what is computed from its
result; a loss that reads `E` another way too (a tied output layer, a second lookup)
gives every entry a gradient, and TF1's update moves the "frozen" rows.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Computed, Variable


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    stops = {node.index: variables for node in program.nodes if (variables := _stopped_in_part(program, node, qualified))}
    for update in updates:
        if not update.applies:
            continue
        for stop, variables in stops.items():
            if stop not in update.loss:
                continue
            for v in variables:
                direct = [i for i in update.loss if i != stop and v in program.nodes[i].deps]
                if v in update.trained and direct:
                    out.append((update.node.call, {"variable": program.nodes[v].names[0], "method": update.node.method,
                                                   "masking": program.nodes[stop].names[0]}, [v]))
    return out


def _stopped_in_part(program, node, qualified) -> list[int]:
    """The variables `node`'s statement reads both inside a `tf.stop_gradient` and outside one."""
    if not isinstance(node, Computed) or not isinstance(node.value, cst.CSTNode):
        return []
    inside: set[str] = set()
    stops = [c for c in walk(node.value) if type(c) is cst.Call and qualified(c.func) == "tensorflow.stop_gradient"]
    for call in stops:
        inside |= {n.value for n in walk(call) if type(n) is cst.Name}
    hidden = {id(n) for call in stops for n in walk(call)}
    outside = {n.value for n in walk(node.value) if type(n) is cst.Name and id(n) not in hidden}
    return [d for d in node.deps if isinstance(program.nodes[d], Variable)
            and set(program.nodes[d].names) & inside & outside]
