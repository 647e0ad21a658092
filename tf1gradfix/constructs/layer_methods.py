"""Layer methods: a model class's method that `__init__` calls with arguments
and for its result, reading `self` only for attributes `__init__` set.

    def _build_net(self, inputs, scope, units):
        with tf.variable_scope(scope):
            w1 = tf.get_variable("w1", [self.n_state, units], ...)
            return tf.matmul(inputs, w1)

    self.q_eval = self._build_net(self.s, "eval_net", 10)
    self.q_next = self._build_net(self.s_, "target_net", 10)

desugar reads its `self.<attr>` as `__init__`'s names, like `__init__`'s own, so
the model sees a helper function; one that makes variables under a
`tf.variable_scope` is a builder (builders.py), here with one set of variables
per scope it is called with. In TF2 the class keeps them in `self.made` by
"SCOPE/name"; `_build_net_variables(scope, units)` makes one scope's where
`__init__` called the method (TF1 made them there, with the graph: a target
network copied before any step must find them), and the method reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from tf1gradfix.constructs import builder_layers
from tf1gradfix.constructs.layers import layer_weights, name_param, symbol_of
from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import (Refusal, bound_args, bound_names, free_names, is_docstring, literal_string, loads,
                                   names_as_attributes)
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import BuilderModule

MADE = "made"   # the attribute holding the variables, "SCOPE/name" -> variable


def found(cls: cst.ClassDef, self_name: str | None, owners: list[cst.FunctionDef], helpers,
          bare: bool = False, reached=None) -> list[cst.FunctionDef]:
    """The methods `owners` (`__init__` and the methods it inlines) call as
    `self.m(...)`, and those these call so, that are plain methods of `self`;
    static helpers aside. `bare`: calls `m(...)` too (the class desugared).
    `reached`: the nodes of `owners` TF1 evaluates building the graph (build_flow),
    where their calls are looked for (default: their bodies)."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    seen = {id(m) for m in owners}
    out: list[cst.FunctionDef] = []
    queue: list[cst.CSTNode] = list(reached) if reached is not None else [m.body for m in owners]
    while queue and self_name is not None:
        for node in walk(queue.pop(0)):
            func = node.func if type(node) is cst.Call else None
            if bare and type(func) is cst.Name:
                method = methods.get(func.value)
            elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == self_name:
                method = methods.get(func.attr.value)
            else:
                continue
            if method is None or id(method) in seen or method.name.value in helpers or not _plain(method, self_name):
                continue
            seen.add(id(method))
            out.append(method)
            queue.append(method.body)
    for method in out:
        for target in walk(method.body):
            if type(target) is cst.AssignTarget or type(target) is cst.AugAssign:
                for a in walk(target.target):
                    if type(a) is cst.Attribute and type(a.value) is cst.Name and a.value.value == self_name:
                        raise Refusal.of(a, "class_method_sets_attribute", instance=self_name,
                                         attr=a.attr.value, method=method.name.value)
    return out


def _plain(method: cst.FunctionDef, self_name: str) -> bool:
    params = method.params
    return not method.decorators and method.asynchronous is None and isinstance(method.body, cst.IndentedBlock) \
        and bool(params.params) and params.params[0].name.value == self_name and not params.posonly_params \
        and params.star_arg == cst.MaybeSentinel.DEFAULT and not params.star_kwarg


@dataclass
class ClassLayers:
    """The layer methods of the model class being read (ModelBuilder.class_layers)."""

    self_name: str
    names: dict[str, str]          # the name `__init__` calls it by -> method
    taken: frozenset[str]          # the class's names (ModelClass.members) and the names it reads
    attributes: dict[str, str] = field(default_factory=dict)   # ModelClass.attributes
    seen: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, plan, helpers: dict, model: cst.ClassDef) -> "ClassLayers | None":
        """For `plan` (a ModelClass), with the names `__init__` calls its methods by in `helpers`."""
        names = {name: attr for name, attr in plan.attributes.items() if attr in plan.layered or name in helpers}
        return cls(plan.self_name, names, plan.members | set(loads(model)), plan.attributes) if names else None

    def reads_graph(self, helper: cst.FunctionDef, name: str) -> None:
        """Refuses a layer method that reads `name`, `__init__`'s name for an attribute holding a graph value."""
        method = self.names.get(helper.name.value)
        if method is not None and name in self.attributes:
            where = next((n for n in walk(helper.body) if type(n) is cst.Name and n.value == name), helper)
            raise Refusal.of(where, "class_method_reads_graph_value", instance=self.self_name, method=method,
                             attr=self.attributes[name])

    def record(self, builder, expr: cst.CSTNode) -> None:
        """Each call in `expr` of a layer method that makes variables, with its scope."""
        for call in walk(expr):
            if type(call) is not cst.Call or not isinstance(call.func, cst.Name) or call.func.value not in self.names \
                    or id(call) in self.seen or not builder._builder(call.func.value):
                continue
            self.seen.add(id(call))
            method = self.names[call.func.value]
            helper = builder.program.helpers[call.func.value]   # (its node: made by builders.node, called first)
            node = next(n for n in builder.program.nodes if isinstance(n, BuilderModule) and n.builder is helper)
            if node.made_on_call or node.scope is None and node.scope_parameter is None:   # (builder_loops)
                raise Refusal.of(call, "layer_method_layers_on_call", method=method)
            if node.method_of is None:
                normalizing = next((site for site in node.layers if site.row.get("statistics")), None)
                if normalizing is not None and _in_place(normalizing.call):   # (`updates_collections=None`)
                    raise Refusal.of(normalizing.call, "builder_layer_statistics_in_place", api=symbol_of(normalizing.row))
                if normalizing is not None:   # (builder_statistics follows calls of a builder function only)
                    raise Refusal.of(normalizing.call, "builder_layer_statistics", api=symbol_of(normalizing.row))
                unlisted = next((site for site in node.layers if _weights_of(site) is None), None)
                if unlisted is not None:   # (its weights' names and order are not in layers.toml)
                    raise Refusal.of(unlisted.call, "layer_method_layers", method=method, api=symbol_of(unlisted.row))
                clash = {MADE, variables_method(method)} & self.taken
                if clash:
                    raise Refusal.of(call, "class_attribute_clash", attr=sorted(clash)[0])
                node.method_of = self.self_name
                node.single = sum(1 for name in self.names if builder._builder(name)) == 1
            scope = node.scope
            if node.scope_parameter is not None:
                params = [p.name.value for p in node.builder.params.params]
                given = bound_args(call, params, call).get(node.scope_parameter)
                scope = literal_string(given)
                if scope is None:
                    raise Refusal.of(call, "layer_method_scope_not_literal", method=method, param=node.scope_parameter)
                if any(s == scope for _, s, _ in node.method_calls):
                    raise Refusal.of(call, "layer_method_scope_twice", method=method, scope=scope)
            node.method_calls.append((len(builder.program.nodes), cast(str, scope), call))


def variables_method(method: str) -> str:
    return f"{method}_variables"


def key(node: BuilderModule, label: str, scope: str | None = None, holder: str = MADE) -> str:
    """`made["SCOPE/name"]` (`__init__`'s name for `self.made`, as the model reads it);
    `scope` None: the method's own (a parameter's: an f-string)."""
    if scope is None and node.scope_parameter is not None:
        return f'{holder}[f"{{{node.scope_parameter}}}/{label}"]'
    return f'{holder}["{scope or node.scope}/{label}"]'


def variables_text(node: BuilderModule, single: bool) -> str:
    """Its variables in the order TF1 made them (`single`: the class's only layer method making any;
    `self.made` then holds nothing else, unless it holds layers)."""
    if single and not node.layers:
        return f"*{MADE}.values()"
    return ", ".join(text for _, scope, _ in _made_calls(node) for text, _ in _made(node, scope))


def _made(node: BuilderModule, scope: str) -> list[tuple[str, str]]:
    """(how the model reads it, TF1's `v.name`) of what the method makes under `scope`, in
    TF1's order: its `tf.get_variable`s and its layers' weights, statement by statement."""
    at = {id(s): i for i, s in enumerate(node.inner)}
    made = [(at[id(v[4])], 0, key(node, v[1], scope), f"{scope}/{v[1]}:0") for v in node.variables]
    for k, site in enumerate(node.layers):
        made += [(site.at, 1 + k, f"{key(node, site.label, scope)}.{weight}", f"{scope}/{site.label}/{leaf}:0")
                 for weight, leaf in cast("list[tuple[str, str]]", _weights_of(site))]
    return [(text, tf1) for *_, text, tf1 in sorted(made, key=lambda m: m[:2])]


def _weights_of(site) -> list[tuple[str, str]] | None:
    """A layer's trainable weights (Keras attribute, TF1's last name), None where not known
    or where the call sets `trainable` (var_lists.py reads the same table)."""
    return None if "trainable" in site.bound else layer_weights(site.row, site.bound)


def _made_calls(node: BuilderModule):
    """The calls that make variables: each scope's first (a fixed scope: the first call only)."""
    return node.method_calls if node.scope_parameter is not None else node.method_calls[:1]


def listed(node: BuilderModule, prefix: str, before: int) -> list[tuple[int, str, str]]:
    """(node index, `self.made[...]`, TF1's `v.name`) of its variables made before node
    `before` whose name starts with `prefix` (a collection's scope)."""
    return [(index, text, tf1) for index, scope, _ in _made_calls(node) if index < before
            for text, tf1 in _made(node, scope) if tf1.startswith(prefix)]


@dataclass
class Made:
    """What the class's `__init__` and methods become for its layer methods (checked in `prepared`)."""

    before: dict[int, list[str]]          # id of an `__init__` statement -> statements to put before it
    nodes: dict[str, BuilderModule]       # method -> its builder node


def prepared(program, layers: ClassLayers | None, host: list[cst.BaseStatement]) -> Made:
    """Checks where each layer method is called (`host`: the class's host code, see
    model_classes.host_statements) and what shapes its variables."""
    made = Made({}, {})
    if layers is None:
        return made
    nodes = [n for n in program.nodes if isinstance(n, BuilderModule) and n.method_of is not None]
    first = True
    for node in nodes:
        method = layers.names[node.builder.name.value]
        made.nodes[method] = node
        for stmt in host:   # (a method that never reads `self` is host code too)
            if not (isinstance(stmt, cst.FunctionDef) and stmt.name.value == method):
                for a in walk(stmt):
                    if type(a) is cst.Attribute and a.attr.value == method:
                        raise Refusal.of(a, "class_init_builder_reused", attr=method)
        params = [p.name.value for p in node.builder.params.params]
        local = set().union(*(bound_names(s) for s in node.inner))
        shaping: set[str] = set()
        for _, label, call, _, _ in node.variables:
            reads = set(loads(call))
            if reads & local:
                raise Refusal.of(call, "layer_method_variable_from_local", variable=label, method=method,
                                 name=sorted(reads & local)[0])
            shaping |= reads & set(params)
        shaping.discard(node.scope_parameter or "")
        wanted = [p for p in params if p in shaping or p == node.scope_parameter]
        for _, _, call in _made_calls(node):
            item = next((it for it in program.items if any(n is call for n in walk(it.stmt))), None)
            if item is None or not isinstance(item.stmt, cst.SimpleStatementLine) or item.prefix:
                raise Refusal.of(call, "graph_in_compound", api=method)   # (builders refuse them first)
            bound = bound_args(call, params, call)
            for p in wanted:
                graph = [n for n in loads(bound[p]) if n in program.final] if p in bound else []
                if graph:
                    raise Refusal.of(bound[p], "layer_method_shape_from_graph", method=method, param=p, name=graph[0])
            lines = [f"{MADE} = {{}}  # \"SCOPE/name\" -> variable"] if first else []
            first = False
            lines.append(f"{layers.self_name}.{variables_method(method)}({_arguments(wanted, bound)})")
            made.before.setdefault(id(item.stmt), []).extend(lines)
    return made


def _arguments(wanted: list[str], bound: dict) -> str:
    out, by_keyword = [], False
    for p in wanted:
        if p not in bound:
            by_keyword = True
            continue
        text = cst.Module([]).code_for_node(bound[p])
        out.append(f"{p}={text}" if by_keyword else text)
    return ", ".join(out)


def _read(method: cst.FunctionDef, attributes: dict[str, str]) -> dict[str, str]:
    """The names of `__init__` the method reads (its `self.<attr>`, desugared): its free
    names among them (model_classes.desugar names no attribute like a global it reads)."""
    return {name: attributes[name] for name in free_names(method) if name in attributes}


def methods(node: BuilderModule, method: cst.FunctionDef, attributes: dict[str, str], tf: str,
            initial_value, layer_text=None) -> list[cst.FunctionDef]:
    """The method reading its variables from `self.made`, and the method making one
    scope's (`_build_net_variables`); `__init__`'s names read back as attributes. Its
    `tf.layers` calls: Keras layers kept in `self.made` by "SCOPE/name" too, made with
    the variables and called under `tf.keras.name_scope(SCOPE)`, so that they build on
    their first call with TF1's names (`layer_text`: a layer's constructor, emit.state)."""
    attributes = _read(method, attributes)
    self_name = cast(str, node.method_of)
    shaping = set().union(*(set(loads(v[2])) for v in node.variables))
    params = [p for p in method.params.params[1:] if p.name.value in shaping or p.name.value == node.scope_parameter]
    name_of = (lambda label: f'f"{{{node.scope_parameter}}}/{label}"') if node.scope_parameter else \
        (lambda label: f'"{node.scope}/{label}"')
    holder = f"{self_name}.{MADE}"
    at = {id(stmt): i for i, stmt in enumerate(node.inner)}
    made = [(at[id(v[4])], 0, f"{key(node, v[1], holder=holder)} = {tf}.Variable({initial_value(v[2], v[3])}, "
                                f"name={name_of(v[1])})") for v in node.variables]
    made += [(site.at, 1 + k, f"{key(node, site.label, holder=holder)} = {_layer(site, layer_text)}")
             for k, site in enumerate(node.layers)]
    lines = [line for *_, line in sorted(made, key=lambda m: m[:2])]
    kept = [method.params.params[0], *params]   # (the last without its comma: `def made(self):`)
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    head = cst.Module([]).code_for_node(method.with_changes(
        name=cst.Name(variables_method(method.name.value)), decorators=[], leading_lines=[],
        params=method.params.with_changes(params=kept),
        body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]))).splitlines()[0]
    doc = f'"""Makes the variables `{method.name.value}` reads under a scope (TF1 made them with the graph)."""'
    text = head + "\n    " + doc + "\n" + "".join(layout.placed(ln, 8, "    ") + "\n" for ln in lines)
    making = cast(cst.FunctionDef, cst.parse_statement(text))
    making = making.with_changes(body=names_as_attributes(making.body, attributes, self_name))
    by_stmt = {id(v[4]): v for v in node.variables}
    body = list(method.body.body)
    docstring = body[:1] if body and is_docstring(body[0]) else []
    inner = []
    for stmt in node.inner:
        if id(stmt) in by_stmt:
            local, label = by_stmt[id(stmt)][0], by_stmt[id(stmt)][1]
            stmt = stmt.with_changes(body=[cast(cst.SimpleStatementLine, cst.parse_statement(
                f"{local} = {key(node, label, holder=holder)}\n")).body[0]])
        elif node.layers:
            stmt = builder_layers.called(stmt, node, func_of=lambda site: cst.parse_expression(
                key(node, site.label, holder=holder)))
        if id(stmt) not in {id(d) for d in node.dropped}:
            inner.append(stmt)
    inner = layout.refit_body([s for s in node.inner if id(s) not in {id(d) for d in node.dropped}], inner,
                              12 if node.layers else 8)
    if node.layers:   # (the layers build on their first call, named under the scope)
        scope = node.scope_parameter if node.scope_parameter is not None else f'"{node.scope}"'
        inner = builder_layers.in_name_scope(inner, scope, tf)
    reading = method.with_changes(body=names_as_attributes(method.body.with_changes(body=[*docstring, *inner]),
                                                           attributes, self_name))
    return [reading, making.with_changes(leading_lines=[cst.EmptyLine(indent=False)])]


def _layer(site, layer_text) -> str:
    """A Keras layer's constructor named as TF1 named the layer in its scope."""
    text = layer_text(site.row, site.call, site.bound, site.helper)
    if name_param(site.row) not in site.bound:   # (Keras counts automatic names over the whole program)
        text = text[:-1] + ("" if text.endswith("()") else ", ") + f'name="{site.label}")'
    return text


def reattributed(method: cst.FunctionDef, attributes: dict[str, str], self_name: str) -> cst.FunctionDef:
    """A layer method that makes no variables: `__init__`'s names read back as attributes."""
    return method.with_changes(body=names_as_attributes(method.body, _read(method, attributes), self_name))


def _in_place(call: cst.Call) -> bool:
    """Contrib's batch norm given `updates_collections=None`: its moving statistics are updated
    by the layer's own output at each call in training mode, not through `UPDATE_OPS`."""
    return any(a.keyword is not None and a.keyword.value == "updates_collections"
               and isinstance(a.value, cst.Name) and a.value.value == "None" for a in call.args)
