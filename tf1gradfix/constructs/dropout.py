"""`tf.nn.dropout(x, keep_prob)`: TF2's `tf.nn.dropout` takes the rate of units dropped.

TF1's v1 function is `dropout(x, keep_prob, noise_shape, seed, name, rate)` and
computes `rate = 1 - keep_prob` before calling the TF2 function, so the call
becomes `tf.nn.dropout(x, rate=1 - keep_prob)` in the step function: the same
op with the same mask. A keep_prob fed 1.0 gives rate 0, the identity in both.
A placeholder keep_prob is a parameter of the step function like any fed one.
`seed=` is refused: an op seed draws another sequence in TF2 than in a TF1 graph.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs.losses import ATOMS, loss_table
from tf1gradfix.cst.syntax import Refusal, bound_args
from tf1gradfix.cst.walk import walk

SYMBOL = "tensorflow.nn.dropout"
PARAMS = ["x", "keep_prob", "noise_shape", "seed", "name", "rate"]   # TF1's, in positional order
KEPT = ("noise_shape", "name")   # the same meaning in TF2, passed on unchanged


def refusal(call: cst.Call, tf_calls) -> Refusal | None:
    """Why the statement's dropout `call` cannot be rewritten (None: it can).
    `tf_calls`: the statement's calls, each with its TensorFlow name."""
    inside = {id(n) for n in walk(call)} - {id(call)}
    if any(q == SYMBOL and id(c) in inside for c, q in tf_calls):
        return Refusal.of(call, "dropout_of_dropout")
    if any(q in loss_table() for _, q in tf_calls):
        return Refusal.of(call, "dropout_in_loss_statement")
    try:
        check(call)
    except Refusal as r:
        return r
    return None


def helper_refusal(helper: str, calls, written: cst.FunctionDef | None = None) -> Refusal | None:
    """A helper function the rewrite keeps as it is: a `keep_prob` in it would be read as the rate.
    `written`: a builder, whose computation the rewrite writes with each call's `rate=`
    (builders.class_statements): only a call it cannot write so is refused, as in graph code."""
    for call, q in calls:
        if q == SYMBOL and written is not None:
            found = refusal(call, _statement_calls(written, call, calls))
            if found is not None:
                return found
        elif q == SYMBOL and _given(bound_args(call, PARAMS, call).get("keep_prob")):
            return Refusal.of(call, "dropout_keep_prob_in_helper", name=helper)
    return None


def _statement_calls(function: cst.FunctionDef, call: cst.Call, calls) -> list:
    """The (call, name) of `calls` in the statement of `function` that holds `call`."""
    for stmt in walk(function):
        if isinstance(stmt, cst.SimpleStatementLine):
            inside = {id(n) for n in walk(stmt)}
            if id(call) in inside:
                return [(c, q) for c, q in calls if id(c) in inside]
    return []


def check(call: cst.Call) -> None:
    """Refuses a call the rewrite cannot write with the same mask."""
    bound = bound_args(call, PARAMS, call)
    given = [p for p in ("keep_prob", "rate") if _given(bound.get(p))]
    if "x" not in bound:
        raise Refusal.of(call, "dropout_without_input")
    if len(given) != 1:
        raise Refusal.of(call, "dropout_keep_prob_or_rate", given=", ".join(given) or "neither")
    if _given(bound.get("seed")):
        raise Refusal.of(bound["seed"], "dropout_seed")


def _given(expr: cst.BaseExpression | None) -> bool:
    return expr is not None and not (isinstance(expr, cst.Name) and expr.value == "None")


class DropoutRewriter(cst.CSTTransformer):
    """Writes each `tf.nn.dropout` call of a statement with `rate=`."""

    def __init__(self, qualified, code):
        super().__init__()
        self.qualified, self.code = qualified, code

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.qualified(original.func) != SYMBOL:
            return updated
        bound = bound_args(original, PARAMS, original)
        if _given(bound.get("rate")):
            rate = self.code(bound["rate"])
        else:
            keep = bound["keep_prob"]
            text = self.code(keep)
            rate = f"1 - {text}" if isinstance(keep, ATOMS) else f"1 - ({text})"
        args = [self.code(bound["x"]), f"rate={rate}"]
        args += [f"{p}={self.code(bound[p])}" for p in KEPT if _given(bound.get(p))]
        return cst.parse_expression(f"{self.code(original.func)}({', '.join(args)})")


def rewritten_statement(stmt: cst.CSTNode, calls, qualified, code) -> cst.CSTNode:
    """`stmt` with its dropout calls written with `rate=` (itself when it has none)."""
    if SYMBOL not in calls:
        return stmt
    return cast(cst.CSTNode, stmt.visit(DropoutRewriter(qualified, code)))


def writer(builder, code):
    """`rewritten_statement` for the statements of a builder's computation (builders.class_statements)."""
    return lambda stmt: rewritten_statement(stmt, [q for _, q in builder.calls(stmt)], builder.qualified, code)
