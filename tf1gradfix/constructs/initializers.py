"""`init = tf.global_variables_initializer()` and its kin: TF2 variables are
initialized when made, so the statement and its runs go."""

from __future__ import annotations

from tf1gradfix.cst.syntax import matches
from tf1gradfix.model.nodes import Init, Statement


def build(builder, s: Statement) -> bool:
    """An `Init` node; False if not an initializer."""
    if not matches(s.q, "initializers") or not s.one:
        return False
    builder.add(s.item, Init, s.names, s.value)
    return True
