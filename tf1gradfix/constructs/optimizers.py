"""`opt = tf.train.<Name>Optimizer(...)`: an optimizer. What each becomes in TF2
is the table `tf1gradfix/rules/optimizers.toml` (emit/state.py writes it)."""

from __future__ import annotations

import fnmatch

from tf1gradfix.model.nodes import Optimizer, Statement


def is_optimizer(q: str | None) -> bool:
    """Is `q` the name of a v1 optimizer class?"""
    return q is not None and fnmatch.fnmatchcase(q, "tensorflow.train.*Optimizer")


def build(builder, s: Statement) -> bool:
    """An `Optimizer` for `opt = tf.train.AdamOptimizer(...)`; False if not one."""
    if not is_optimizer(s.q) or not s.one:
        return False
    builder.add(s.item, Optimizer, s.names, s.value, s.deps, cls=s.q.rsplit(".", 1)[1], call=s.call)
    return True
