"""Several train ops fetched in one run (`sess.run([d_train, g_train], feed)`).

TF1 does not order the ops of one run, but its executor starts every op as
soon as its inputs are ready, and each train op's gradients wait only on the
forward pass: measured on CPU (benchmarks/train_op_order.py), both gradient
sets are computed from the values the variables had before the run, then each
optimizer applies its own. The rewrite writes exactly that order: one step
that takes every gradient on one tape, then applies the updates, in the order
of the fetches.

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

Key = tuple[int, "str | None"]   # a variable node, or a layer's node and its weight (None: all of them)


def check(program, call: cst.CSTNode, trains: list[TrainOp], fetched: list, qualified, closure) -> None:
    """Refusal where TF1's measured order (every gradient before every update) is not
    what the run computes, or where the rewrite cannot tell which variables each updates."""
    seen: dict[Key, str] = {}
    for train in trains:
        if train.stats or train.result is not None or train.clip is not None:
            raise Refusal.of(call, "two_train_ops_form", op=train.names[0])
        updated = _updated(program, train, qualified, closure)
        if updated is None:
            raise Refusal.of(call, "two_train_ops_unknown_variables", op=train.names[0])
        for key in updated:
            other = next((seen[k] for k in seen if _overlap(k, key)), None)
            if other is not None:
                raise Refusal.of(call, "two_train_ops", variable=_label(program, key), first=other, second=train.names[0])
        for key in updated:
            seen[key] = train.names[0]
    _check_reads(program, call, trains, fetched, qualified, closure)


def _check_reads(program, call, trains: list[TrainOp], fetched: list, qualified, closure) -> None:
    """Refusal where a value of the run reads a variable another train op updates while that
    update may already have run: a forward value its loss does not need, or an op on a train
    op's own backward path (the gradient of `x @ w` with respect to `x` reads `w`)."""
    losses = {t.index: _loss(program, t, closure) for t in trains}
    for b in trains:
        written = {k[0] for k in cast(set, _updated(program, b, qualified, closure))}
        before = closure(program, [losses[b.index]])   # (all of it runs before b's update)
        for a in trains:
            if a is b:
                continue
            own = {k[0] for k in cast(set, _updated(program, a, qualified, closure))}
            for i in sorted(closure(program, [losses[a.index]])):
                node = program.nodes[i]
                read = sorted(node.deps & written)
                if not read:
                    continue
                if i not in before or closure(program, list(node.deps)) & own:
                    raise Refusal.of(call, "two_train_ops_interleaved", op=a.names[0], other=b.names[0],
                                     variable=_label(program, (read[0], None)), value=_label(program, (i, None)))
        for value in fetched:
            if isinstance(value, TrainOp):
                continue
            for i in sorted(closure(program, [value.index]) - before):
                read = sorted(program.nodes[i].deps & written)
                if read:
                    raise Refusal.of(call, "two_train_ops_interleaved", op=value.names[0], other=b.names[0],
                                     variable=_label(program, (read[0], None)), value=_label(program, (i, None)))


def _loss(program, train: TrainOp, closure) -> int:
    """The node of the loss `train` differentiates (its compute_gradients' for apply_gradients)."""
    node = train
    if train.method == "apply_gradients":
        node = next(program.nodes[i] for i in closure(program, list(train.deps))
                    if isinstance(program.nodes[i], ComputeGradients))
    return program.final[cast(cst.Name, node.bound["loss"]).value]


def _overlap(a: Key, b: Key) -> bool:
    return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def _label(program, key: Key) -> str:
    node = program.nodes[key[0]]
    name = node.names[0] if node.names else "?"
    return name if key[1] is None else f"{name}.{key[1]}"


def _updated(program, train: TrainOp, qualified, closure) -> set[Key] | None:
    """The variables `train` updates: its var_list, the trainable variables its loss reaches,
    or (apply_gradients) those of the compute_gradients its pairs come from."""
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
    listed = var_lists.members(program, given, node.index, qualified)
    if listed is None:
        return None
    return {(e.node, e.weight if e.site is None else f"{e.weight}#{e.iteration}") for e in listed}
