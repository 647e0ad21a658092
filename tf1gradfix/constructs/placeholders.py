"""`tf.placeholder(dtype, shape)` and `tf.placeholder_with_default(value, shape)`:
the graph's inputs, fed by each run. In TF2 they are parameters of the step
functions (a default becomes the parameter's default)."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, literal_dtype
from tf1gradfix.model.nodes import Placeholder, Statement

FUNCTIONS = ("tensorflow.placeholder", "tensorflow.placeholder_with_default")


def build(builder, s: Statement) -> bool:
    """A `Placeholder` for `x = tf.placeholder(...)`; False if not one."""
    if s.q not in FUNCTIONS or not s.one or s.call is None:
        return False
    _model(builder, s.item, s.one, s.call, s.q)
    return True


def _model(builder, item, name: str, call: cst.Call, q: str) -> None:
    earlier = builder.program.node(name)
    if earlier is not None and earlier.graph_input():
        # Two graph inputs under one name: a feed_dict key could mean either.
        raise Refusal.of(call, "second_graph_input", name=name)
    dtype: cst.BaseExpression | str | None   # (the argument, or the dtype TF1 infers from the default)
    if q == "tensorflow.placeholder":
        dtype, shape = arg(call, 0, "dtype"), arg(call, 1, "shape")
        builder.add(item, Placeholder, (name,), call, dtype=dtype, shape=shape, default=None)
        return
    default, shape = arg(call, 0, "input"), arg(call, 1, "shape")
    dtype = literal_dtype(default)
    if dtype is None or shape is None:
        raise Refusal.of(call, "placeholder_default_form")
    builder.add(item, Placeholder, (name,), call, dtype=dtype, shape=shape, default=default)
