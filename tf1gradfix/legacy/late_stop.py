"""TFG801: `tf.stop_gradient` applied after the loss was built from the unstopped tensor.

`a2 = tf.stop_gradient(a2)` on the line after `loss = f(a1 - a2)` stops nothing: the
loss already reads the first `a2`, so the variables behind it keep training. Reported
where no update reads the stopped value: a stop a later loss reads is meant for that
loss (a GAN's discriminator loss reads the generator's output stopped, its generator
loss the same output unstopped).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import arg
from tf1gradfix.legacy.slices import label, reads
from tf1gradfix.model.nodes import Tensor
from tf1gradfix.model.slicing import closure


def find(program, updates, qualified) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for stop in program.nodes:
        call = stop.value
        if not isinstance(stop, Tensor) or not isinstance(call, cst.Call) or qualified(call.func) != "tensorflow.stop_gradient":
            continue
        stopped = reads(program, stop, arg(call, 0, "input"))
        if len(stopped) != 1:
            continue
        source = next(iter(stopped))
        if any(stop.index in u.loss for u in updates):
            continue
        behind = closure(program, [source])
        for update in updates:
            built = [i for i in update.loss if i < stop.index and source in program.nodes[i].deps]
            trained = [i for i in update.trained if i in behind and program.nodes[i].trained()]
            if not update.applies or source not in update.loss or stop.index in update.loss or not built or not trained:
                continue
            out.append((call, {"stopped": program.nodes[source].names[0], "loss": program.nodes[max(built)].names[0],
                               "variables": label(program, trained), "method": update.node.method}, trained))
            break
    return out
