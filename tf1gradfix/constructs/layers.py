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
from typing import AbstractSet, cast

import libcst as cst

from tf1gradfix.constructs import scope_reuse
from tf1gradfix.rules import contrib
from tf1gradfix.rules.catalog import _read
from tf1gradfix.cst.syntax import Refusal, bound_args, literal_bool, literal_string, loads
from tf1gradfix.model.nodes import Layer, LayerCall, LayerNode, Placeholder, Statement, Static


@functools.lru_cache(maxsize=None)
def layer_table() -> dict[str, dict]:
    """tf.layers rows (layers.toml), then the contrib layers of contrib.toml."""
    raw = _read("layers.toml")
    return {**{symbol: {**row, "why": raw["why"]} for symbol, row in raw["layer"].items()}, **contrib.layer_rows()}


def model(builder, item, names, call: cst.Call | None, q: str | None, deps) -> bool:
    """Adds the layer and tensor nodes of a `tf.layers` statement; False if not one."""
    row = layer_table().get(q or "")
    if row is None:
        return False
    call, q = cast(cst.Call, call), cast(str, q)   # (a row of the table: a layer call)
    if len(names) != 1:
        raise Refusal.of(call, "layer_target", api=q)
    bound, source, call_args, trainable, helper = settings(builder, call, q, row, allow_reuse=True)
    label = literal_string(bound.get(name_param(row)))
    flags = {builder.program.final[e.value] for _, e in call_args if isinstance(e, cst.Name) and e.value in builder.program.final}
    layer = scope_reuse.layer(builder, item, call, q, row, bound, label, name_param(row))
    if layer is not None:   # (TF1 gave back the earlier layer's variables: its name scope is numbered)
        builder.unique_name(item.scope + cast(str, label))
    else:
        layer = _made(builder, item, call, q, row, bound, label, trainable, helper)
    builder.add(item, LayerCall, names, call, set(builder.deps_of(source)) | {layer.index} | flags,
                calls=[q], layer=layer.index, source=source, call_args=call_args)
    builder.own(call, but=[source, *(v for _, v in call_args)])   # (its input: checked as a tensor's)
    if layer.stmt is not item.stmt:
        return True   # (a reused layer stays where it was made)
    item.node = layer   # the statement's place keeps the layer; the call moves into the steps
    return True


def _made(builder, item, call: cst.Call, q: str, row: dict, bound: dict, label: str | None, trainable: bool,
          helper) -> Layer:
    """The `Layer` node of a call making a new layer."""
    if label is not None and any(n.tf1_name() == item.prefix + label for n in builder.program.nodes
                                 if isinstance(n, LayerNode)):
        raise Refusal.of(call, "layer_named_twice", layer=item.prefix + label)
    base = None
    full = tf1_scope(builder, item, row, label, call)
    if label is None:
        label = full.rpartition("/")[2]
        base = label.lower()   # (the variable holding contrib's `Conv` layer: `conv`)
    base = base or (label if label.isidentifier() and not keyword.iskeyword(label) else row["auto_name"].lower())
    return builder.add(item, Layer, (), call, (), row=row, symbol=q, bound=bound, base=base,
                       weights=row["weights"], trainable=trainable, full_name=full, helper=helper)


def tf1_scope(builder, item, row: dict, label: str | None, call: cst.Call) -> str:
    """The variable scope TF1 gives a layer (its name): tf.layers and contrib open
    `variable_scope(name, default_name=...)`, an unnamed layer's name made unique in the
    variable scope it is made in (`a/dense`, `b/dense`, `a/dense_1`: model/tf1_names.py),
    a tf.layers layer's given name too; its name scope and variables take names of the
    graph. Refusal where TF1 numbers a weight's name (a layer named like another in another case)."""
    full = opened_scope(builder, item.prefix, item.scope, row, label)
    take_weights(builder, full, row, call)
    return full


def opened_scope(builder, prefix: str, name_scope: str, row: dict, label: str | None) -> str:
    """The variable scope TF1 opens for a layer made in the variable scope `prefix` and the
    name scope `name_scope` (`a/`, or `""` at the top), as `tf1_scope` says."""
    scopes = builder.variable_scopes
    base = label if label is not None else row["auto_name"]
    if label is not None and name_param(row) != "name":   # (contrib's `scope=`: a scope by its name)
        full = prefix + label
        scopes.open(full)
    else:
        full = scopes.unique(prefix, base)
    scopes.close(full)
    builder.unique_name(name_scope + base)
    return full


def take_weights(builder, full: str, row: dict, call: cst.Call) -> None:
    """The graph names of the weights of the layer TF1 made in the scope `full`; Refusal where
    TF1 numbers one (`dense/kernel_1`)."""
    weights = row.get("variables") or []
    for weight in weights.values() if isinstance(weights, dict) else weights:
        given = builder.unique_name(f"{full}/{weight}")
        if given != f"{full}/{weight}":
            raise Refusal.of(call, "layer_weight_numbered", tf1=given, layer=full)


def name_param(row: dict) -> str:
    """The v1 parameter that names the layer (`name`; contrib's `scope`)."""
    return next((p for p, keras in row.get("rename", {}).items() if keras == "name"), "name")


def _mode(builder, q: str, param: str, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`training=`: True/False, or a bool placeholder that every run feeds with
    True or False (a mode flag: each step function gets the literal of its runs)."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr
    flag = builder.program.node(expr.value) if isinstance(expr, cst.Name) else None
    if not isinstance(flag, Placeholder) or not is_bool(builder, flag):
        raise Refusal.of(expr, "layer_training_form", api=q, param=param)
    flag.mode_flag = True
    return expr


def is_bool(builder, flag: Placeholder) -> bool:
    dtype, default = flag.dtype, flag.default
    if default is not None:
        return isinstance(default, cst.Name) and default.value in ("True", "False")
    return dtype is not None and builder.qualified(dtype) == "tensorflow.bool"


def rank(builder, expr: cst.BaseExpression, before: int | None = None) -> int | None:
    """The rank of a layer's input where the program states it: a placeholder's literal
    shape, through layers that keep the rank (dense, dropout, batch norm) or set it.
    `before`: the statement reading `expr` (`net = layer(net)` reads the `net` bound before it)."""
    bound = [n for n in builder.program.nodes[:before] if isinstance(expr, cst.Name) and expr.value in n.names]
    node = bound[-1] if bound else None
    if isinstance(node, Placeholder) and isinstance(node.shape, (cst.List, cst.Tuple)):
        return len(node.shape.elements)
    if isinstance(node, LayerCall):
        row = builder.program.nodes[node.layer].row
        return row.get("output_rank") or rank(builder, node.source, node.index)
    return None


def _dtype(builder, expr: cst.BaseExpression, before: int | None = None) -> str | None:
    """The qualified dtype of a layer's input where the program states it: a placeholder's,
    through the layers it passes (as `rank`); None where not known."""
    bound = [n for n in builder.program.nodes[:before] if isinstance(expr, cst.Name) and expr.value in n.names]
    node = bound[-1] if bound else None
    if isinstance(node, Placeholder) and isinstance(node.dtype, cst.BaseExpression):
        return builder.qualified(node.dtype)
    if isinstance(node, LayerCall):
        return _dtype(builder, node.source, node.index)
    return None


def _short(q: str) -> str:
    return q.replace("tensorflow", "tf", 1)


def passed_on(builder, call: cst.Call, q: str, row: dict, untrainable_refused: bool = False):
    """(arguments by name, input) of a layer call; Refusal for a call without input, for
    settings the table does not pass on (`untrainable_refused`: `trainable=False` too), and
    for a setting's value the table does not accept."""
    bound = bound_args(call, row["params"], call)
    source = bound.get(row["params"][0])
    if source is None:
        raise Refusal.of(call, "layer_without_input", api=q)
    accepted = row.get("accepted", {})
    refused = sorted(set(bound) - set(row["keep"]) - {row["params"][0], "reuse"} - set(row.get("call", ())) - set(accepted))
    if untrainable_refused and literal_bool(bound.get("trainable"), "trainable") is False:
        refused.append("trainable")
    if refused:
        raise Refusal.of(call, "layer_arguments", api=q, args=', '.join(refused), detail=row['why'])
    for param, values in accepted.items():
        if param in bound and builder.module.code_for_node(bound[param]) not in values:
            raise Refusal.of(bound[param], "layer_setting_value", api=q, param=param, values=' or '.join(values))
    label = literal_string(bound.get(name_param(row)))
    if label is not None and "/" in label:   # (Keras 3 refuses such a name; TF1 nested the scopes)
        raise Refusal.of(bound[name_param(row)], "layer_name_nested", api=q, param=name_param(row), name=label)
    return bound, source


def settings(builder, call: cst.Call, q: str, row: dict, graph_names: AbstractSet[str] = frozenset(),
              in_loop: bool = False, allow_reuse: bool = False):
    """(arguments, input, call-time arguments, trainable, helper class) of a layer call;
    Refusal for settings the table does not pass on, or that are computed from graph values
    (`graph_names`: names a loop binds to graph values; `in_loop`: a loop makes the layers;
    `allow_reuse`: graph code outside functions, where constructs/scope_reuse.py reads `reuse=`)."""
    bound, source = passed_on(builder, call, q, row)
    reuse = bound.get("reuse")
    if reuse is not None and not (isinstance(reuse, cst.Name) and reuse.value in ("None", "False")) and not allow_reuse:
        raise Refusal.of(reuse, "layer_reuse", api=q, detail=row['why'])
    call_args = at_call(row, bound, lambda param, value: _mode(builder, q, param, value))
    training = dict(call_args).get("training")
    if row.get("statistics") and literal_bool(bound.get("trainable"), "trainable") is False and training is not None \
            and not (isinstance(training, cst.Name) and training.value == "False"):
        raise Refusal.of(call, "batch_norm_untrainable_training", api=_short(q))
    dtype = _dtype(builder, source)
    if row.get("statistics") and dtype not in (None, "tensorflow.float32"):
        raise Refusal.of(call, "batch_norm_input_dtype", api=_short(q), dtype=_short(dtype))
    helper = None if in_loop else helper_of(row, bound, rank(builder, source))   # (a loop's: loop_layers.helpers)
    given = [bound[p] for p in row.get("call", ()) if p in bound]
    for a in call.args:
        if a.value is source or any(a.value is e for e in given):
            continue
        if set(loads(a.value)) & graph_names or any(not isinstance(builder.program.nodes[i], Static)
                                                    for i in builder.deps_of(a.value)):
            raise Refusal.of(a.value, "layer_setting_from_graph", api=q)
    return bound, source, call_args, literal_bool(bound.get("trainable"), "trainable") is not False, helper


def helper_of(row: dict, bound: dict, rank: int | None) -> str | None:
    """The class of rules/helpers.toml a layer call becomes (`row["helper"]`), or None where
    the row's Keras layer is exact: an input rank it is exact for, or settings (`fused=False`)
    under which TF1 computed what Keras computes. A row with `ranks` names a helper that
    computes as TF1 did on every rank (tests/test_layers_table.py); a row with a helper and
    no `ranks` is always its helper (contrib's batch_norm: which rank TF1 fused, the class
    decides when called)."""
    if not row.get("ranks"):
        return row.get("helper")
    if "fused" in bound or rank in row["ranks"]:
        return None
    return row["helper"]


def at_call(row: dict, bound: dict, form=lambda param, value: value) -> list[tuple[str, cst.BaseExpression]]:
    """(Keras argument, value) of the settings passed where the layer is called (`training=`):
    those given (their v1 parameter and value through `form`, which may refuse them), then the v1 defaults
    Keras lacks (contrib's `is_training=True`), under their Keras names."""
    rename = row.get("rename", {})
    given = [(rename.get(p, p), form(p, bound[p])) for p in row.get("call", ()) if p in bound]
    return given + [(rename.get(p, p), cst.Name(value)) for p, value in row.get("call_defaults", {}).items()
                    if p not in bound]


def updates_in_place(row: dict, bound: dict) -> bool:
    """contrib's `updates_collections=None`: TF1 updated the moving statistics with the output,
    in every run computing it in training mode, as Keras does; not through UPDATE_OPS."""
    value = bound.get(row.get("in_place", ""))
    return isinstance(value, cst.Name) and value.value == "None"


def symbol_of(row: dict) -> str:
    """`tf.layers.batch_normalization`, `tf.contrib.layers.batch_norm`: the call a row maps."""
    return _short(next(symbol for symbol, r in layer_table().items() if r is row))


def spread(row: dict, param: str, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """(Keras argument, value) per entry of a dict literal the row writes as one argument per
    key (contrib's `param_initializers={"gamma": init}`: `gamma_initializer=init`); none for None."""
    if isinstance(value, cst.Name) and value.value == "None":
        return []
    keys = row["spread"][param]
    out = []
    for element in value.elements if isinstance(value, cst.Dict) else [None]:
        key = literal_string(element.key) if isinstance(element, cst.DictElement) else None
        if element is None or key not in keys:   # (not a dict literal, `**more`, a key not known)
            raise Refusal.of(value, "layer_spread_form", api=symbol_of(row), param=param,
                             keys=", ".join(f'"{k}"' for k in keys))
        out.append((keys[key], element.value))
    return out


def build(builder, s: Statement) -> bool:
    """A `Layer` and its `LayerCall` for `h = tf.layers.dense(x, ...)`; False if not one."""
    return model(builder, s.item, s.names, s.call, s.q, s.deps)


def check_layer_arguments(row: dict, call: cst.Call, bound: dict, qualified, code) -> None:
    """Refusal for a layer initializer the Keras layer cannot take (emit.state writes
    the layer's arguments on these terms)."""
    from tf1gradfix.constructs.variables import check_initializer
    source = bound[row["params"][0]]
    for position, a in enumerate(a for a in call.args if a.value is not source):
        param = a.keyword.value if a.keyword is not None else row["params"][position + 1]
        if param == "reuse" or param in row.get("call", ()) or param in row.get("accepted", {}):
            continue
        if param in row.get("spread", {}):   # (a dict literal of initializers: each is checked)
            initializers = [v for _, v in spread(row, param, a.value)]
        else:
            mapped = param in row["initializers"] and code(a.value) not in row.get("values", {}).get(param, {})
            initializers = [a.value] if mapped else []
        for init in initializers:
            if not isinstance(init, cst.Call):
                raise Refusal.of(init, "layer_initializer_form")
            if check_initializer(qualified, code, init) is not None:
                raise Refusal.of(init, "layer_initializer_dtype")


def layer_weights(row: dict, bound, which: str = "trainable") -> list[tuple[str, str]] | None:
    """The variables a layer makes, in TF1's order (layers.toml `variables`): (the Keras layer's
    attribute, TF1's last name: contrib's `weights` is Keras's `kernel`), those a setting turns
    off left out (`present`: `use_bias`, `center`, `scale`), the moving statistics last in the
    global collection; None where the table does not list them."""
    if not row["weights"]:
        return []
    names = row.get("variables")
    if names is None:
        return None
    leaves = dict(names) if isinstance(names, dict) else {name: name for name in names}
    present = row.get("present", {})
    out = [(weight, leaf) for weight, leaf in leaves.items() if weight not in present or _setting(row, bound, present[weight])]
    return out + ([(name, name) for name in row.get("statistics_variables", ())] if which == "global" else [])


def _setting(row: dict, bound, setting: str) -> bool:
    """The Keras setting (`use_bias`) a layer call gives: its own argument, another written as
    it (contrib's `biases_initializer=None`: `values`), the row's default, else Keras's True."""
    param = next((p for p, keras in row.get("rename", {}).items() if keras == setting), setting)
    if param in bound:
        return literal_bool(bound[param], param) is not False
    for other, written in row.get("values", {}).items():
        text = written.get(cst.Module([]).code_for_node(bound[other])) if other in bound else None
        if text is not None and text.startswith(setting + "="):
            return text == f"{setting}=True"
    return row.get("defaults", {}).get(param, "True") == "True"
