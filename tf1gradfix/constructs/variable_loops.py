"""Variables made in a host `for` loop (the text CNN: one convolution per filter width):

    pooled = []
    for i, width in enumerate(WIDTHS):
        with tf.name_scope("conv-%d" % width):
            W = tf.Variable(tf.truncated_normal([width, 8, 1, 4]), name="W")
            h = tf.nn.relu(tf.nn.conv2d(x, W, [1, 1, 1, 1], "VALID"))
            pooled.append(tf.reduce_max(h, axis=1))

TF1 runs the loop once, making a variable and ops per iteration. In TF2 the
variables are made once where the graph was built, by the same loop filling one
list per variable statement, each variable under the name TF1 gave it (the
scopes written into the name: `name="conv-%d/W" % width`); the step functions run
the loop again zipped with those lists (`for (i, width), W in zip(enumerate(WIDTHS),
W_variables):`), and the lists it fills (`pooled`, started empty just before) are
made afresh in each call. `tf.layers` and contrib layer calls of the loop become lists
of layers, as in a loop of layers alone (loop_layers.loop_model), called with their
training mode and, under the loop's variable scopes, named as TF1 named them
(loop_layers); a loop of layers under such scopes is read here too. The trainable
variables are listed in TF1's order: iteration by iteration; a variable collection read
after the loop lists them so too (var_lists, written by loop_lists.listed_text).

The loop must run over values the file fixes (host_values), so each iteration's
names are known before it runs: a name must differ from iteration to iteration and
from every other name of the graph (TF1 would number a repeated `tf.Variable` name
and raise on a repeated `tf.get_variable` one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from tf1gradfix.constructs import carried_values, host_values, layers, loop_layers, loop_names, tensors, variables
from tf1gradfix.constructs.loop_names import Scoped
from tf1gradfix.cst.syntax import Refusal, arg, bound_names, loads, names_as_attributes
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import LayerLoop, LayerLoopCall, Tensor
from tf1gradfix.model.parts import LayerSite, LoopStatement, VariableSite

SCOPES = {"tensorflow.name_scope": "name", "tensorflow.variable_scope": "name_or_scope"}


@dataclass
class _Body:
    """What reading the loop's body found."""

    statements: list[Scoped] = field(default_factory=list)
    graph: set[str] = field(default_factory=set)     # names bound to graph values
    filled: set[str] = field(default_factory=set)    # lists (or dicts) filled
    layer_sites: list[LayerSite] = field(default_factory=list)
    local: set[str] = field(default_factory=set)     # host names the loop binds (its target's too)
    helper_calls: list[str] = field(default_factory=list)   # the calls of the helper functions its graph values call


def model(builder, item, position: int) -> bool:
    """Adds the nodes of a host loop making variables at `item`; False if not one."""
    loop = item.stmt
    if not isinstance(loop, cst.For) or not _makes(builder, loop):
        return False
    code = builder.module.code_for_node
    if loop.orelse is not None or loop.asynchronous is not None or any(
            type(n) in (cst.Break, cst.Continue, cst.Return, cst.Yield) for n in walk(loop.body, skip=(cst.FunctionDef, cst.Lambda))):
        raise Refusal.of(loop, "variable_loop_stops")
    try:
        runs = host_values.iterations(builder, loop)
    except host_values.NotFixed:
        written = names_as_attributes(loop.iter, builder.class_attributes or {})   # (a model class's `self.x`)
        raise Refusal.of(loop.iter, "variable_loop_iterable", iterable=cst.Module([]).code_for_node(written)) from None
    for name in loads(loop.target):   # (the loop's names are host values of each iteration, as another loop's were)
        prior = builder.program.node(name)
        if prior is not None and not (isinstance(prior, LayerLoopCall) and name in loads(prior.value.target)):
            raise Refusal.of(loop.target, "variable_loop_rebinds", kind=prior.kind, name=name)
    if not isinstance(loop.body, cst.IndentedBlock):
        raise Refusal.of(loop, "variable_loop_body")
    body = _Body(local=set(loads(loop.target)))
    _read(builder, item, body, list(loop.body.body), ())
    statements = [s.stmt for s in body.statements]
    loop_layers.helpers(builder, statements)
    loop_names.name(builder, item, body.statements, runs, code)
    program = builder.program
    _host_in_steps(builder, loop, statements)
    for name in sorted(body.filled):   # the lists it fills: made afresh in each step
        start = carried_values.start(program, name, position)
        if start is None or name in {st.name for st in statements}:
            raise Refusal.of(loop, "variable_loop_fills_other", name=name)
        builder.add(start, Tensor, (name,), start.stmt.body[0].value, (), calls=[])
    sites = [st.site for st in statements if isinstance(st.site, VariableSite)]
    made = {i for site in sites for i in _deps(builder, site.call, body)}
    trainable = any(v.trainable for v in sites) or any(s.trainable and s.row["weights"] for s in body.layer_sites)
    layer = builder.add(item, LayerLoop, (), None, made, loop=loop, sites=body.layer_sites, statements=statements,
                        variables=sites, weights=True, trainable=trainable, runs=len(runs))
    deps = {i for st in statements if st.role not in ("variable", "layer") for i in _deps(builder, st.stmt, body)}
    deps |= {i for site in body.layer_sites for e in _layer_reads(site) for i in _deps(builder, e, body)}
    deps |= {program.final[name] for name in body.filled} | {layer.index}
    calls = [q for _, q in builder.calls(loop) if q] + body.helper_calls
    bound = {st.name for st in statements if st.name and st.role != "host"} | set(loads(loop.target)) | body.filled
    builder.add(item, LayerLoopCall, tuple(sorted(bound)), loop, deps, calls=calls, layer_loop=layer.index)
    loop_layers.own_sites(builder, body.layer_sites)
    for site in sites:   # (made once, where the graph was built: variables.arguments checked them)
        builder.own(site.call)
    item.node = layer
    return True


def _makes(builder, loop: cst.For) -> bool:
    """Does the loop make variables, or layers under scopes (a loop of layers alone is
    loop_layers.loop_model's)?"""
    made = {q for _, q in builder.calls(loop)}
    return any(q in variables.FUNCTIONS for q in made) or any(q in layers.layer_table() for q in made if q) \
        and any(isinstance(n, cst.With) for n in walk(loop.body, skip=(cst.FunctionDef, cst.Lambda)))


def _layer_reads(site: LayerSite) -> list[cst.BaseExpression]:
    """What the steps' loop reads where it calls the layer: its input, its mode, its scopes."""
    return [site.source, *(v for _, v in site.call_args), *(s for s in site.scopes if not isinstance(s, str))]


def _host_in_steps(builder, loop: cst.For, statements: list[LoopStatement]) -> None:
    """Which host statements the steps' loop runs too: those its graph values read (the
    creation loop runs them all, so what is read after the loop is bound where the graph
    was built). Refusal where the steps' loop would bind a name a step reads before it (in
    the step function that name would be the loop's local, not bound yet)."""
    needed = set(loads(loop.target))
    for st in statements:
        if st.role in ("graph", "fill"):
            needed |= set(loads(st.stmt))
        elif isinstance(st.site, LayerSite):
            needed |= {name for e in _layer_reads(st.site) for name in loads(e)}
    for st in reversed(statements):
        st.steps = st.role != "host" or st.name in needed
        if st.role == "host" and st.steps:
            needed |= set(loads(st.stmt))
    read = set()   # what the steps read before the loop (bound before it: in a step function, the loop's local)
    for node in builder.program.nodes:
        if isinstance(node, Tensor) and isinstance(node.value, cst.For):   # (another loop: not its own names)
            read |= set(loads(node.value)) - bound_names(node.value)
        elif isinstance(node, Tensor) and node.value is not None:
            read |= set(loads(node.value))
    for name in sorted(set(loads(loop.target)) | {cast(str, st.name) for st in statements if st.role == "host" and st.steps}):
        if name in read:
            raise Refusal.of(loop, "variable_loop_rebinds", kind="host value a step reads before the loop", name=name)


def _read(builder, item, body: _Body, statements: list, scopes: tuple) -> None:
    """The loop's statements, each with its scopes (`with tf.name_scope(...)`: read as if unindented)."""
    for stmt in statements:
        if isinstance(stmt, cst.With):
            if not isinstance(stmt.body, cst.IndentedBlock):
                raise Refusal.of(stmt, "variable_loop_body")
            _read(builder, item, body, list(stmt.body.body), scopes + (_scope(builder, stmt),))
            builder.own(stmt.items[0].item)   # (a scope: its name is the loop's host value)
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if small is None:
            raise Refusal.of(stmt, "variable_loop_body")
        st = _statement(builder, item, body, small, scopes)
        st.column = builder.position(small)[1] - 1
        body.statements.append(Scoped(st, scopes))


def _scope(builder, stmt: cst.With) -> tuple[cst.With, str, cst.BaseExpression]:
    """(the `with`, "name_scope" or "variable_scope", its name) of a scope in the loop."""
    item = stmt.items[0] if len(stmt.items) == 1 and stmt.asynchronous is None else None
    call = item.item if item is not None and isinstance(item.item, cst.Call) else None
    q = builder.qualified(call.func) if call is not None else None
    if item is None or call is None or q not in SCOPES:
        raise Refusal.of(stmt, "variable_loop_body")
    if any(a.keyword is not None and a.keyword.value == "reuse" for a in call.args):
        raise Refusal.of(stmt, "variable_loop_reuse")
    name = arg(call, 0, SCOPES[q])
    used_as = item.asname.name if item.asname is not None else None
    if name is None or len(call.args) != 1 or call.args[0].star or used_as is not None and not (
            isinstance(used_as, cst.Name) and builder.unused(used_as.value)):
        raise Refusal.of(stmt, "variable_loop_scope_form", api=q.replace("tensorflow", "tf", 1))
    return stmt, q.rsplit(".", 1)[1], name


def _statement(builder, item, body: _Body, small: cst.BaseSmallStatement, scopes: tuple) -> LoopStatement:
    """What a statement of the loop is: a variable or layer made, a host or graph value, a list
    filled (`scopes`: the loop's scopes around it)."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "reuse_variables":
            raise Refusal.of(small, "variable_loop_reuse")
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend") and isinstance(func.value, cst.Name) \
                and len(small.value.args) == 1 and small.value.args[0].keyword is None and not small.value.args[0].star:
            _check_graph(builder, small, small.value.args[0].value, body)
            body.filled.add(func.value.value)
            return LoopStatement("fill", small)
        raise Refusal.of(small, "variable_loop_body")
    target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else \
        small.target if isinstance(small, cst.AugAssign) else None
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and isinstance(small, cst.Assign):
        _check_graph(builder, small, small, body)   # `params["w%d" % i] = w`
        body.filled.add(target.value.value)
        return LoopStatement("fill", small)
    if not isinstance(target, cst.Name):
        raise Refusal.of(small, "variable_loop_body")
    name, value = target.value, cast("cst.Assign | cst.AugAssign", small).value
    q = builder.qualified(value.func) if isinstance(value, cst.Call) else None
    if isinstance(small, cst.Assign) and q in variables.FUNCTIONS:
        _rebinds(builder, small, name, new=True)
        site = _variable(builder, item, cast(cst.Call, value), cast(str, q), name, body)
        body.graph.add(name)
        return LoopStatement("variable", small, name, value, site)
    row = layers.layer_table().get(q or "")
    if isinstance(small, cst.Assign) and row is not None:
        named = loop_layers.scopes_of(item, small, scopes, cast(str, q).replace("tensorflow", "tf", 1))
        _rebinds(builder, small, name)
        layer = loop_layers.loop_layer(builder, cast(cst.Call, value), cast(str, q), row, body.graph, body.layer_sites)
        layer.scopes = named
        body.layer_sites.append(layer)
        body.graph.add(name)
        return LoopStatement("layer", small, name, value, layer)
    tf_calls = [(c, q) for c, q in builder.calls(value) if q is not None]
    graph = bool(tf_calls) or bool(_deps(builder, value, body)) or any(n in body.graph for n in loads(small))
    if graph:
        _check_graph(builder, small, value, body)
        _rebinds(builder, small, name)
        body.graph.add(name)
    else:
        body.local.add(name)
    prior = builder.program.node(name)
    if not graph and prior is not None:   # (a host value where a graph value was)
        raise Refusal.of(small, "variable_loop_rebinds", kind=prior.kind, name=name)
    return LoopStatement("graph" if graph else "host", small, name, value)


def _deps(builder, expr: cst.CSTNode, body: _Body) -> set[int]:
    """The nodes `expr` reads, but for the host names of the loop (another loop's of the same name)."""
    mine = {builder.program.final.get(name) for name in body.local}
    return {i for i in builder.deps_of(expr) if i not in mine}


def _rebinds(builder, small: cst.CSTNode, name: str, new: bool = False) -> None:
    """A graph value of the loop may take over a tensor's name; a variable takes a new name."""
    prior = builder.program.node(name)
    if prior is not None and (new or not isinstance(prior, Tensor)):
        raise Refusal.of(small, "variable_loop_rebinds", kind=prior.kind, name=name)


def _check_graph(builder, small: cst.CSTNode, value: cst.CSTNode, body: _Body) -> None:
    """Refusal for a computation of the loop the step functions cannot run as it is."""
    tf_calls = [(c, q) for c, q in builder.calls(value) if q is not None]
    unsupported = tensors.checked_calls(builder, tf_calls)
    if unsupported is not None:
        raise unsupported
    tensors.check_inputs(builder, small, _deps(builder, value, body))
    inner, unsupported = tensors.helper_calls(builder, small, value)
    if unsupported is not None:
        raise unsupported
    body.helper_calls += inner


def _variable(builder, item, call: cst.Call, q: str, name: str, body: _Body) -> VariableSite:
    """The site of `name = tf.Variable(...)` / `tf.get_variable(...)` in the loop (named by `_name`)."""
    if any(n in body.graph for n in loads(call)):
        raise Refusal.of(call, "variable_from_graph_value", name=name)
    bound, trainable = variables.arguments(builder, name, call, q, _deps(builder, call, body))
    if bound.get("name") is None and q == "tensorflow.get_variable":
        raise Refusal.of(call, "variable_unnamed_in_scope")
    return VariableSite(call, name, q, bound, "", (), trainable)


def loop_statement(st: LoopStatement, code, small: cst.BaseSmallStatement | None = None) -> str:
    """A host or graph statement of a loop, or a list filled, as the loops write it
    (`small`: the statement as the rewrite changed it)."""
    small = small or st.stmt
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return f"{small.targets[0].target.value} = {code(small.value)}"
    return code(small)


def variables_text(node: LayerLoop, lists: dict) -> str:
    """How a loop's trainable variables are listed, in the order TF1 made them: iteration by
    iteration, and in each the variables (and layers' weights) in the order of the body."""
    sites = [s for s in node.made() if s.trainable and (isinstance(s, VariableSite) or s.row["weights"])]
    if len(sites) == 1 and isinstance(sites[0], VariableSite):
        return f"*{lists[sites[0]]}"
    if all(isinstance(s, VariableSite) for s in sites):
        return f"*[v for made in zip({', '.join(lists[s] for s in sites)}) for v in made]"
    parts = [f"made[{k}]" if isinstance(s, VariableSite) else f"*made[{k}].trainable_variables" for k, s in enumerate(sites)]
    return f"*[v for made in zip({', '.join(lists[s] for s in sites)}) for v in ({', '.join(parts)})]"
