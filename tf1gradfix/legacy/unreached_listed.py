"""TFG803: a variable of an explicit `var_list` that the loss never reaches.

TF1 gives it a None gradient and skips it silently (a misspelt name, a detached
branch); the trainable variables the loss does reach and the list leaves out are not
trained either. Only lists the program writes out are read: a collection lists
variables the program did not choose one by one.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.legacy.slices import label


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for update in updates:
        if update.listed is None:
            continue
        unreached = [i for i in update.listed if i not in update.loss]
        if not unreached:
            continue
        left_out = [n.index for n in program.trainable()
                    if n.index in update.loss and n.index not in update.listed and n.index < update.node.index]
        missed = f"; the loss reaches {label(program, left_out)}, which the list leaves out" if left_out else ""
        out.append((update.node.bound["var_list"], {"variables": label(program, unreached), "method": update.node.method,
                                                    "missed": missed}, unreached))
    return out
