"""`tf.placeholder(dtype, shape)` and `tf.placeholder_with_default(value, shape)`:
the graph's inputs, fed by each run. In TF2 they are parameters of the step
functions (a default becomes the parameter's default).

TF1's feed converts each value to the placeholder's dtype (`np.asarray(value,
dtype)`: a float64 array fed to a float32 or int32 placeholder computes as
float32 / int32) and checks it against the static shape. The function's
`input_signature` does both (measured on TF 2.21: a float64 array bound to an
int32 spec is truncated as NumPy truncates; without a signature it stays
float64). A model class's methods are defined before `__init__` runs: a
dimension only `__init__` knows is `None` in the signature, and restored in the
body with `tf.ensure_shape` where what is computed from the placeholder may
read the static shape TF1's graph had (a Keras layer makes its weights from its
input's last dimension); a dtype only `__init__` knows is refused.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, literal_dtype, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import LayerCall, LayerLoop, LayerNode, Placeholder, RnnRun, Statement, Tensor, ZeroState
from tf1gradfix.model.parts import LayerSite

Known = Callable[[cst.CSTNode], bool]   # whether an expression can be read where the step functions are defined

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


def signature_shape(node: Placeholder, known: Known) -> tuple[cst.BaseExpression | None, bool]:
    """The shape the input signature gives (None: any rank), and whether the body
    restores the placeholder's shape with `tf.ensure_shape`: where a dimension is
    not `known` it is `None` in the signature (where the rank is not, the shape)."""
    shape = node.shape
    if shape is None or known(shape):
        return shape, False
    if isinstance(shape, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in shape.elements):
        return shape.with_changes(elements=[e if known(e.value) else e.with_changes(value=cst.Name("None"))
                                            for e in shape.elements]), True
    return None, True


def check_dtype(node: Placeholder, known: Known) -> None:
    """A dtype the signature cannot read where the functions are defined (a model
    class's `self.dtype`) is refused: TF1 converted every fed value to it."""
    if isinstance(node.dtype, cst.CSTNode) and not known(node.dtype):
        raise Refusal.of(node.dtype, "placeholder_dtype_unknown", name=node.names[0])


def reads_static_shape(program, node: Placeholder, nodes: set[int], qualified) -> bool:
    """Whether what `nodes` (a function's) compute from the placeholder may read its static
    shape: a layer (its weights are made from its input's last dimension), an RNN,
    `.shape` or `.get_shape()`, a function or method of the user's. Gradients and
    updates do not."""
    below = {node.index}
    for n in program.nodes[node.index + 1:]:
        if not n.deps & below or n.index not in nodes:
            continue
        below.add(n.index)
        if not isinstance(n, Tensor):   # (gradients, updates, optimizer calls)
            continue
        if isinstance(n, (LayerCall, RnnRun, ZeroState)) or any(_layers(program.nodes[d]) for d in n.deps):
            return True
        for part in walk(n.stmt):
            if isinstance(part, cst.Attribute) and part.attr.value in ("shape", "get_shape"):
                return True
            if isinstance(part, cst.Call) and not _shape_blind(part, qualified):
                return True
    return False


def _layers(node) -> bool:
    """Layers, or a builder making some (a loop making only variables makes none)."""
    if isinstance(node, LayerLoop):
        return any(isinstance(site, LayerSite) for site in node.made())
    return isinstance(node, LayerNode)


def _shape_blind(call: cst.Call, qualified) -> bool:
    """A TensorFlow op (it infers the shapes it does not know; graph_ops.toml lists those
    that read them), a builtin other than `len`, a string's method; a function or method
    of the user's may read a static shape."""
    name, func = qualified(call.func), call.func
    if name is not None:
        return name.startswith("tensorflow.") and not matches(name, "static_shape")
    if isinstance(func, cst.Name):
        return func.value in _BUILTINS
    return isinstance(func, cst.Attribute) and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))


_BUILTINS = frozenset(dir(builtins)) - {"len"}
