"""Several train ops fetched in one run (`sess.run([d_train, g_train], feed)`).

TF1 does not order the ops of one run. Measured on CPU with reference
variables (benchmarks/train_op_order.py, GANs whose generator gradient goes
through the discriminator's weights): in 38 of 40 four-step runs both gradient
sets were computed from the values the variables had before the run, then each
optimizer applied its own; in the other two some gradient op read a weight the
other update had already written. The rewrite writes the first order: one step
that takes every gradient on one tape, then applies the updates in source
order (they update disjoint variables). The verifier proves it on the program
at hand; where TF1's run read an updated weight the proof fails (DIVERGED) and
the file stays as it is. Where no value of the run reads what another train op
updates (a probe on stopped features), the order cannot matter.

Where the order would change the numbers it is refused: two train ops
updating the same variable (TF1 applies both to one buffer at once, unlocked),
or train ops that run batch normalization updates, or contrib's optimize_loss
forms (their own gradients and results).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import var_lists
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.model.nodes import ComputeGradients, Layer, TrainOp, Variable

Key = tuple[int, "str | None"]   # a variable node, or a layer's (builder's) node and its weight (None: all of them)


def check(program, call: cst.CSTNode, trains: list[TrainOp], qualified, closure) -> None:
    """Refusal where TF1's measured order (every gradient before every update) is not
    what the run computes, or where the rewrite cannot tell which variables each updates."""
    seen: dict[Key, str] = {}
    for train in trains:
        if train.stats or train.result is not None or train.clip is not None:
            raise Refusal.of(call, "two_train_ops_form", op=train.names[0])
        keys = updated(program, train, qualified, closure)
        if keys is None:
            raise Refusal.of(call, "two_train_ops_unknown_variables", op=train.names[0])
        for key in keys:
            other = next((seen[k] for k in seen if _overlap(k, key)), None)
            if other is not None:
                raise Refusal.of(call, "two_train_ops", variable=_label(program, key), first=other, second=train.names[0])
        for key in keys:
            seen[key] = train.names[0]


def _overlap(a: Key, b: Key) -> bool:
    return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def _label(program, key: Key) -> str:
    node = program.nodes[key[0]]
    name = node.names[0] if node.names else "?"
    return name if key[1] is None else key[1].removesuffix(":0") if ":" in key[1] else f"{name}.{key[1]}"


def updated(program, train, qualified, closure) -> set[Key] | None:
    """The variables `train` (a train op or compute_gradients) updates: its var_list, the
    trainable variables its loss reaches, or (apply_gradients) those of the compute_gradients
    its pairs come from; None where that is not read."""
    if train.method == "apply_gradients":
        sources = [program.nodes[i] for i in closure(program, list(train.deps))
                   if isinstance(program.nodes[i], ComputeGradients)]
        if len(sources) != 1:
            return None
        return _listed(program, cast(ComputeGradients, sources[0]), qualified, closure)
    return _listed(program, train, qualified, closure)


def _listed(program, node, qualified, closure) -> set[Key] | None:
    given = node.bound.get("var_list")
    if given is None:
        loss = node.bound.get("loss")
        if isinstance(node, ComputeGradients) or not isinstance(loss, cst.Name) or loss.value not in program.final:
            nodes = program.trainable()
        else:
            reached = closure(program, [program.final[loss.value]])
            nodes = [n for n in program.trainable() if n.index in reached]
        return {(n.index, None) for n in nodes if isinstance(n, (Variable, Layer))} \
            if all(isinstance(n, (Variable, Layer)) for n in nodes) else None
    listed = var_lists.members(program, given, node.index, qualified, layers=True)
    if listed is None:
        return None
    # (a layer's or a builder's weight by its TF1 name where known: such a node holds several)
    return {(e.node, None if isinstance(program.nodes[e.node], Variable) else
             e.tf1 or (e.weight if e.site is None else f"{e.weight}#{e.iteration}")) for e in listed}
