"""Layers a loop makes: a loop of layers alone (`loop_model`, each call site a list of layers
the same loop fills, the loop again in the steps), or a loop making variables or entering
scopes too (constructs/variable_loops.py); each layer's call-time mode (`training=`), the
name TF1 gives it in each iteration under the loop's variable scopes, and the class it
becomes by the rank of its input followed through the loop.

TF1 names a layer made under a variable scope the loop enters (`with
tf.variable_scope("block-%d" % i):`) in that iteration's scope, numbering layers of a kind
in each variable scope: `block-0/dense`, `block-0/dense_1`, `block-1/dense` (model/tf1_names.py).
The creation loop makes each layer with the last part of that name (`name="dense"`) and the
steps' loop calls it under the same scopes as Keras name scopes (`with
tf.keras.name_scope("block-%d" % i):`), so Keras names its weights `block-0/dense/kernel` as
TF1 did, and the verifier pairs them (moving statistics included) by name. That is checked
for every iteration: a name TF1 numbered, a scope's name holding `/` (a Keras name scope
cannot) or read from values the loop changed before the call is refused. A layer under no
variable scope of the loop keeps Keras's name (TF1 numbered it from iteration to iteration at
the top of the graph, `dense`, `dense_1`); under a name scope or an outer variable scope only,
it is refused.
"""

from __future__ import annotations

import keyword
from typing import AbstractSet, Callable, cast

import libcst as cst

from tf1gradfix.constructs import layers
from tf1gradfix.cst.syntax import Refusal, literal_string, loads, matches
from tf1gradfix.model.nodes import Layer, LayerLoop, LayerLoopCall, LayerNode, Static, Tensor
from tf1gradfix.model.parts import LayerSite, LoopStatement


def loop_model(builder, item) -> bool:
    """A host `for` loop that creates layers (`for i, size in enumerate(SIZES):
    h = tf.layers.dense(h, size, name="layer%d" % i)`): one `layer` node for the
    layers the loop creates (a list per call site, filled by the same loop where
    the graph was built) and one `tensor` node, the loop again in the step
    functions, zipped with those lists. False if `item` is not such a loop."""
    loop = item.stmt
    if not isinstance(loop, cst.For):
        return False
    sites = [(c, q) for c, q in builder.calls(loop) if q in layers.layer_table()]
    if not sites:
        return False
    if loop.orelse is not None or loop.asynchronous is not None or builder.deps_of(loop.iter):
        raise Refusal.of(loop, "layer_loop_form")
    program = builder.program
    statements: list = []
    layer_sites: list[LayerSite] = []
    bound: set[str] = set()
    for stmt in loop.body.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            raise Refusal.of(stmt, "layer_loop_body")
        name, value = small.targets[0].target.value, small.value
        q = builder.qualified(value.func) if isinstance(value, cst.Call) else None
        row = layers.layer_table().get(q or "")
        graph = bool(builder.deps_of(value)) or any(n in bound for n in loads(value))
        site = None
        if row is not None:
            site = loop_layer(builder, cast(cst.Call, value), cast(str, q), row, bound, layer_sites)
            layer_sites.append(site)
        elif any(q is not None for _, q in builder.calls(value)) and not graph:
            raise Refusal.of(small, "layer_loop_host_tf")
        role = "layer" if row is not None else "graph" if graph else "host"
        statements.append(LoopStatement(role, small, name, value, site, column=builder.position(small)[1] - 1))
        if graph or row is not None:
            bound.add(name)
    helpers(builder, statements)
    for name in bound:
        prior = program.node(name)
        if prior is not None and not isinstance(prior, (Tensor, Static)):
            raise Refusal.of(loop, "layer_loop_rebinds", kind=prior.kind, name=name)
    weights = any(site.row["weights"] for site in layer_sites)
    trainable = all(site.trainable for site in layer_sites if site.row["weights"])
    layer = builder.add(item, LayerLoop, (), None, (), loop=loop, sites=layer_sites, statements=statements,
                        weights=weights, trainable=trainable)
    deps = {i for st in statements for i in builder.deps_of(st.value)} | {layer.index}
    targets = tuple(sorted(set(loads(loop.target)) | {st.name for st in statements if st.name}))
    builder.add(item, LayerLoopCall, targets, loop, deps, calls=[q for _, q in builder.calls(loop) if q],
                layer_loop=layer.index)
    own_sites(builder, layer_sites)
    item.node = layer
    return True


def own_sites(builder, sites: list[LayerSite]) -> None:
    """Claims the loop's layer calls and their settings (the layers are made once); their inputs
    and call-time arguments are what the steps' loop computes (checked as a tensor's)."""
    for site in sites:
        builder.own(site.call, but=[site.source, *(v for _, v in site.call_args)])


def loop_layer(builder, call: cst.Call, q: str, row: dict, graph_names: AbstractSet[str], pending: list[LayerSite]) -> LayerSite:
    """The site of a layer call in a loop that creates layers (`pending`: the loop's sites before
    it); Refusal for what the loop cannot make (`graph_names`: names the loop binds to graph values)."""
    bound, source, call_args, trainable, _ = layers.settings(builder, call, q, row, graph_names, in_loop=True)
    label = literal_string(bound.get(layers.name_param(row)))   # (a scope's layer: `scope="norm"`)
    named = label is not None and label.isidentifier() and not keyword.iskeyword(label)
    base = label if named else _auto_name(builder.program, row, pending).lower()   # (the variable holding it)
    return LayerSite(call, row, bound, source, cast(str, base), trainable, call_args)


def _auto_name(program, row: dict, pending: list[LayerSite]) -> str:
    """TF1's own name for the k-th unnamed layer of a kind: dense, dense_1, ..."""
    rows = [r for n in program.nodes if isinstance(n, LayerNode) for r in n.rows()] + [site.row for site in pending]
    if row.get("write_name"):   # (a name written: TF1's own, whose count skips the layers given a scope)
        sites = [s for n in program.nodes if isinstance(n, LayerLoop) for s in n.sites] + pending
        rows = [n.row for n in program.nodes if isinstance(n, Layer) and layers.name_param(n.row) not in n.bound] + \
               [s.row for s in sites if layers.name_param(s.row) not in s.bound]
    k = sum(1 for r in rows if r is row)
    return row["auto_name"] + (f"_{k}" if k else "")


def scopes_of(item, small: cst.CSTNode, scopes: tuple, api: str) -> tuple[str | cst.BaseExpression, ...]:
    """The variable scopes a layer of the loop is called under in TF2 (`scopes`: the loop's
    scopes around it, as variable_loops reads them): the outer ones' names, then the loop's
    own variable scopes' expressions; () where it keeps Keras's name (no scope at all)."""
    inner = tuple(expr for _, kind, expr in scopes if kind == "variable_scope")
    if not inner and (scopes or item.prefix or item.scope):
        raise Refusal.of(small, "variable_loop_layer_in_scope", api=api)
    return tuple(part for part in item.prefix.split("/") if part) + inner if inner else ()


def name_in_iteration(builder, site: LayerSite, env: dict, variable_scope: str, names_scope: str, own: set[str],
                      made: set[str], evaluated: Callable[[cst.BaseExpression, dict, cst.CSTNode], str]) -> None:
    """TF1's name of the loop's layer `site` in one iteration, made in the variable scope
    `variable_scope` and the name scope `names_scope` from the loop's values `env` (`own`: the
    names it had in earlier iterations, `made`: the names of the loop's other layers so far;
    `evaluated`: a name expression's value, or Refusal); Refusal where it repeats (TF1 raised
    for its weights), or where the Keras layer called under the loop's scopes would name its
    weights otherwise."""
    row = site.row
    given = site.bound.get(layers.name_param(row))
    label = None if given is None else evaluated(given, env, given)
    full = layers.opened_scope(builder, variable_scope, names_scope, row, label)
    if full.lower() in own:
        raise Refusal.of(site.call, "variable_loop_name_fixed", tf1=full)
    if full.lower() in made or any(name.lower() == full.lower() for name in _layer_names(builder.program)):
        raise Refusal.of(site.call, "variable_loop_name_taken", tf1=full)
    own.add(full.lower())
    made.add(full.lower())
    layers.take_weights(builder, full, row, site.call)
    if site.name is None and given is None:   # (an unnamed layer: TF1's name in the first iteration, written)
        site.name = '"' + full.rpartition("/")[2] + '"'
    written = label if label is not None else cast(str, site.name)[1:-1]
    parts = [part if isinstance(part, str) else evaluated(part, env, part) for part in site.scopes]
    tf2 = "/".join(parts + [written])
    if row["weights"] and (tf2 != full or any("/" in part for part in parts)):
        raise Refusal.of(site.call, "variable_loop_layer_name_differs", api=layers.symbol_of(row), tf1=full, tf2=tf2)
    site.tf1_names += (full,)


def _layer_names(program) -> list[str]:
    """The TF1 names of the layers the program made so far (its loops' included)."""
    return [n.full_name for n in program.nodes if isinstance(n, Layer)] + \
        [name for n in program.nodes if isinstance(n, LayerLoop) for site in n.sites for name in site.tf1_names]


def helpers(builder, statements: list[LoopStatement]) -> None:
    """The class each layer of the loop becomes (layers.helper_of: the row's Keras layer where
    the input's rank is one it is exact for, else the row's helper class, which computes as
    TF1 did on every rank)."""
    for at, st in enumerate(statements):
        if isinstance(st.site, LayerSite):
            site = st.site
            site.helper = layers.helper_of(site.row, site.bound, _rank(builder, statements, at, site.source, {}))


def _rank(builder, statements: list[LoopStatement], at: int, expr: cst.BaseExpression, carried: dict) -> int | None:
    """The rank of `expr` as the loop's statement `at` reads it: through the statements before it
    in the iteration; a name the previous iteration bound has the rank it has before the loop
    where the iteration keeps that rank (`carried`: the ranks assumed for such names)."""
    passed = _passed(builder, expr)
    if passed is not None:
        return _rank(builder, statements, at, passed, carried)
    if not isinstance(expr, cst.Name):
        return None
    name = expr.value
    for k in range(at - 1, -1, -1):
        if statements[k].name == name and statements[k].role != "host":
            return _bound(builder, statements, k, carried)
    if name in carried:
        return carried[name]
    before = _before(builder, expr, None)
    if before is None or not any(st.name == name for st in statements):
        return before
    end = _rank(builder, statements, len(statements), expr, {**carried, name: before})
    return before if end == before else None


def _bound(builder, statements: list[LoopStatement], k: int, carried: dict) -> int | None:
    """The rank of what the loop's statement `k` binds: a layer's output, a copy or a call
    keeping its input's rank."""
    st = statements[k]
    if isinstance(st.site, LayerSite):
        return st.site.row.get("output_rank") or _rank(builder, statements, k, st.site.source, carried)
    if st.role == "graph" and st.value is not None:
        return _rank(builder, statements, k, st.value, carried)
    return None


def _before(builder, expr: cst.BaseExpression, before: int | None) -> int | None:
    """The rank of `expr` before the loop (layers.rank), also through copies and calls keeping
    their input's rank (`h = x`, `h = tf.nn.relu(x)`)."""
    passed = _passed(builder, expr)
    if passed is not None:
        return _before(builder, passed, before)
    bound = [n for n in builder.program.nodes[:before] if isinstance(expr, cst.Name) and expr.value in n.names]
    node = bound[-1] if bound else None
    if type(node) is Tensor and isinstance(node.value, cst.BaseExpression) and len(node.names) == 1 and \
            (isinstance(node.value, cst.Name) or _passed(builder, node.value) is not None):
        return _before(builder, node.value, node.index)
    return layers.rank(builder, expr, before)


def _passed(builder, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The input of a call whose output has its rank (`rank_kept` in graph_ops.toml), or None."""
    if isinstance(expr, cst.Call) and matches(builder.qualified(expr.func), "rank_kept") and expr.args \
            and expr.args[0].keyword is None and not expr.args[0].star:
        return expr.args[0].value
    return None
