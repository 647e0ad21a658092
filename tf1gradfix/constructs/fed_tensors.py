"""A computed graph value fed in a run (`sess.run(b, feed_dict={a: 15})` with
`a = tf.add(2, 5)`): TF1 uses the fed value instead of computing `a`, and none of
what `a` is computed from runs (its placeholders need no feed). In TF2 that run
gets a function of its own where `a` is a parameter: the slice stops at it
(slicing.py). TF1 converts the fed value to the tensor's dtype, so the parameter
is cast to it; a value whose dtype the model cannot read is refused.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg
from tf1gradfix.model.nodes import Node, Static, Tensor, ZeroState

# dtype arguments by position, for the calls whose result has that dtype
_DTYPE_POSITION = {"tensorflow.cast": 1, "tensorflow.zeros": 1, "tensorflow.ones": 1, "tensorflow.constant": 1}


def can_feed(node: Node | None) -> bool:
    """A computed value a run may feed (one name bound, not a summary or a layer's call)."""
    return node is not None and type(node) in (Tensor, Static, ZeroState) and len(node.names) == 1


def checked_dtype(node: Node, key: cst.BaseExpression, qualified) -> str | tuple[str]:
    """The dtype the fed value takes (dtype_of), or the refusal."""
    dtype = dtype_of(node, qualified)
    if dtype is None:
        raise Refusal.of(key, "fed_tensor_dtype_unknown", name=node.names[0])
    return dtype


def dtype_of(node: Node, qualified) -> str | tuple[str] | None:
    """The fed value's dtype: a `dtype=` expression's source, or ("int32",) / ("float32",)
    for a value computed by TensorFlow calls from numeric literals of one kind only."""
    value = node.value
    code = cst.Module([]).code_for_node
    if isinstance(node, ZeroState):   # (an RNN cell's zeros: the dtype it was asked for)
        return code(node.dtype)
    if isinstance(value, cst.Call):
        q = qualified(value.func)
        given = arg(value, _DTYPE_POSITION.get(q or "", -1), "dtype")   # (elsewhere by keyword only)
        if given is not None and not (isinstance(given, cst.Name) and given.value == "None"):
            return code(given)
    kinds = set()
    for n in _leaves(value, qualified):
        if isinstance(n, cst.Integer) and abs(int(n.value.replace("_", ""), 0)) < 2 ** 31:
            kinds.add("int32")
        elif isinstance(n, cst.Float):
            kinds.add("float32")
        else:
            return None
    return (kinds.pop(),) if len(kinds) == 1 else None


def _leaves(expr: cst.BaseExpression, qualified):
    """The operands of an expression of TensorFlow calls and arithmetic (anything else
    is a leaf of its own, which dtype_of does not read)."""
    if isinstance(expr, cst.Call) and (qualified(expr.func) or "").startswith("tensorflow.") \
            and all(a.keyword is None and not a.star for a in expr.args):
        for a in expr.args:
            yield from _leaves(a.value, qualified)
    elif isinstance(expr, cst.BinaryOperation):
        yield from _leaves(expr.left, qualified)
        yield from _leaves(expr.right, qualified)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        yield from _leaves(expr.expression, qualified)
    else:
        yield expr
