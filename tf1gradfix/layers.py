"""`tf.layers` calls: a layer created where the graph was built, called in the steps.

`h = tf.layers.dense(x, 16, name="hidden")` makes two nodes of the model: a
`layer` node (the Keras layer, created once where the graph was built, like a
variable) and a `tensor` node (`h = <layer>(x)`, computed in the step
functions like any forward statement). The layer's variables are those the
tape trains when a loss reaches the layer. What each v1 layer becomes is the
table `rules/layers.toml`; layers not in it stay refused.
"""

from __future__ import annotations

import functools
import keyword

import libcst as cst

from tf1gradfix.catalog import _read
from tf1gradfix.syntax import Refusal, bound_args, literal_string


@functools.lru_cache(maxsize=None)
def layer_table() -> dict[str, dict]:
    raw = _read("layers.toml")
    return {symbol: {**row, "why": raw["why"]} for symbol, row in raw["layer"].items()}


def model(builder, item, names, call: cst.Call | None, q: str | None, deps) -> bool:
    """Adds the layer and tensor nodes of a `tf.layers` statement; False if not one."""
    row = layer_table().get(q or "")
    if row is None:
        return False
    if len(names) != 1:
        raise Refusal(call, "TFG905", f"`{_short(q)}` assigned to something other than one name")
    bound = bound_args(call, row["params"], call)
    source = bound.get(row["params"][0])
    if source is None:
        raise Refusal(call, "TFG905", f"`{_short(q)}` without its input")
    refused = sorted(set(bound) - set(row["keep"]) - {row["params"][0]} - {"reuse"})
    if refused:
        raise Refusal(call, "TFG905", f"`{_short(q)}` argument(s) {', '.join(refused)}: {row['why']}")
    reuse = bound.get("reuse")
    if reuse is not None and not (isinstance(reuse, cst.Name) and reuse.value in ("None", "False")):
        raise Refusal(reuse, "TFG905", f"`{_short(q)}` with `reuse=`: {row['why']}")
    trainable = bound.get("trainable")
    if trainable is not None and not (isinstance(trainable, cst.Name) and trainable.value in ("True", "False")):
        raise Refusal(trainable, "TFG905", "`trainable=` that is not True or False")
    settings = [a.value for a in call.args if a.value is not source]
    for expr in settings:
        for i in builder.deps_of(expr):
            if builder.program.nodes[i].kind != "static":
                raise Refusal(expr, "TFG905", f"a `{_short(q)}` setting computed from a graph value")
    label = literal_string(bound.get("name"))
    if label is None:   # TF1's own name for the k-th unnamed layer of a kind: dense, dense_1, ...
        k = sum(1 for n in builder.program.nodes if n.kind == "layer" and n.info["row"] is row)
        label = row["auto_name"] + (f"_{k}" if k else "")
    base = label if label.isidentifier() and not keyword.iskeyword(label) else row["auto_name"]
    layer = builder._add(item, "layer", (), call, (), row=row, symbol=q, bound=bound, base=base, var=None,
                         weights=row["weights"], trainable=trainable is None or trainable.value == "True")
    builder._add(item, "tensor", names, call, set(builder.deps_of(source)) | {layer.index},
                 calls=[q], layer=layer.index, source=source)
    item.node = layer   # the statement's place keeps the layer; the call moves into the steps
    return True


def _short(q: str) -> str:
    return q.replace("tensorflow", "tf", 1)
