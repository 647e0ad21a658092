"""`tf.losses.*` calls: the same number written with TF2 ops.

A v1 loss with its default weights is the mean of its per-element losses,
so the call becomes that mean in the step function (`rules/losses.toml`).
The model checks the arguments where the statement is classified; the
text is written where the statement moves into a step function.
"""

from __future__ import annotations

import functools
from typing import cast

import libcst as cst

from tf1gradfix.rules.catalog import _read
from tf1gradfix.cst.syntax import Refusal, bound_args

ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


@functools.lru_cache(maxsize=None)
def loss_table() -> dict[str, dict]:
    raw = _read("losses.toml")
    return {symbol: {**row, "why": raw["why"]} for symbol, row in raw["loss"].items()}


def check(call: cst.Call, q: str, code) -> None:
    """Refuses a loss call whose arguments make it other than the plain mean."""
    row = loss_table()[q]
    bound = bound_args(call, row["params"], call)
    missing = [p for p in row["params"][:2] if p not in bound]
    if missing:
        raise Refusal.of(call, "loss_missing_argument", api=q, param=missing[0])
    for param, expr in bound.items():
        if param in row["params"][:2] or param in row["dropped"]:
            continue
        if code(expr) not in row["defaults"].get(param, ()):
            raise Refusal.of(expr, "loss_argument", api=q, param=param, detail=row['why'])


class LossRewriter(cst.CSTTransformer):
    """Replaces each table loss call of a statement with its TF2 expression."""

    def __init__(self, qualified, code, tf_alias: str):
        super().__init__()
        self.qualified, self.code, self.tf = qualified, code, tf_alias

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        row = loss_table().get(self.qualified(original.func) or "")
        if row is None:
            return updated
        bound = bound_args(original, row["params"], original)
        args = {p: self._operand(bound[p]) for p in row["params"][:2]}
        return cst.parse_expression(row["template"].format(tf=self.tf, **args))

    def _operand(self, expr: cst.BaseExpression) -> str:
        text = self.code(expr)
        return text if isinstance(expr, ATOMS) else f"({text})"


def rewritten_statement(stmt: cst.CSTNode, calls, qualified, code, tf_alias: str) -> cst.CSTNode:
    """`stmt` with its loss calls replaced (itself when it has none)."""
    if not any(q in loss_table() for q in calls):
        return stmt
    return cast(cst.CSTNode, stmt.visit(LossRewriter(qualified, code, tf_alias)))
