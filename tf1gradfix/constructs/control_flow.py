"""`tf.cond` in graph code: kept as it is in the step functions.

A v1 cond run by a session evaluates its predicate and the branch it takes;
TF2's `tf.cond` does the same inside a `tf.function` (both branches traced,
one run) and eagerly, so the branches' numbers, random draws included, match.
What TF2 dropped is arguments: `strict`, and the old `fn1`/`fn2` names. A call
using one is refused, not renamed, because its meaning would change.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, graph_ops


def argument_refusal(call: cst.Call, q: str) -> Refusal | None:
    """The refusal for an argument TF2's `q` does not take, or None."""
    kept = graph_ops().get("tf2_arguments", {}).get(q)
    if kept is None:
        return None
    for i, a in enumerate(call.args):
        if a.star:
            return Refusal.of(call, "tf2_dropped_argument", api=q, argument=a.star + "…")
        name = a.keyword.value if a.keyword is not None else (kept[i] if i < len(kept) else f"argument {i + 1}")
        if name not in kept:
            return Refusal.of(call, "tf2_dropped_argument", api=q, argument=name)
    return None
