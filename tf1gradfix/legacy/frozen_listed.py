"""TFG802: a variable made with `trainable=False` listed in an explicit `var_list`.

`trainable=False` only keeps a variable out of the TRAINABLE_VARIABLES collection,
TF1's default list; an optimizer given it in `var_list` (or `tf.global_variables()`)
trains it like any other, when the loss reaches it.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.legacy.slices import label
from tf1gradfix.model.nodes import Variable


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for update in updates:
        if "var_list" not in update.node.bound:
            continue
        frozen = [i for i in update.trained if isinstance(program.nodes[i], Variable) and not program.nodes[i].trainable
                  and not program.nodes[i].global_step]
        if frozen:
            out.append((update.node.bound["var_list"], {"variables": label(program, frozen), "method": update.node.method},
                        frozen))
    return out
