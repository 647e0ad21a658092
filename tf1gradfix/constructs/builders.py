"""Builder functions: `tf.get_variable` under one `tf.variable_scope`, called
wherever the graph needs the same weights.

    def encoder(x, reuse):
        with tf.variable_scope("encoder", reuse=reuse):
            w = tf.get_variable("w", [4, 6])
            return tf.matmul(x, w)

In TF1 the first call creates `encoder/w` and every later call (with
`reuse=True` or `tf.AUTO_REUSE`) gets the same variable back. In TF2 the
function becomes a `tf.Module` whose constructor creates the variables under
the same names, once, and whose `__call__` is the function's computation; an
instance takes the function's name, so every call site reads as before.
The model gives each such function one `layer` node (its weights) that the
statements calling it depend on.

A layer function takes its scope as a parameter (`def dense(x, n_out, scope)`)
and makes new variables under each scope it is called with, shaped by its
arguments. Its module keeps them by `"SCOPE/name"` and makes each on the first
call under its scope, when the arguments that shape it are known, as
`tf.variable_scope(scope)` + `tf.get_variable` did.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builder_layers, builder_loops, graph_prints, named_initializers
from tf1gradfix.constructs.layers import name_param, symbol_of
from tf1gradfix.cst.syntax import (Refusal, bound_args, bound_names, is_docstring, literal_string, loads, names_as_attributes,
                               without_defaults)
from tf1gradfix.cst import layout
from tf1gradfix.cst.walk import post_order
from tf1gradfix.model.nodes import BuilderModule
from tf1gradfix.model.parts import BuilderVariable

# attributes tf.Module has already: a variable named like one is stored under `<name>_variable`
MODULE_ATTRIBUTES = frozenset({"name", "name_scope", "variables", "trainable_variables", "non_trainable_variables",
                               "submodules", "with_name_scope"})
GETTERS = ("tensorflow.get_variable", "tensorflow.Variable")
GET_VARIABLE = ("name", "shape", "dtype", "initializer", "regularizer", "trainable", "collections",
                "caching_device", "partitioner", "validate_shape", "use_resource", "custom_getter", "constraint")


def creates_variables(helper: cst.FunctionDef, calls) -> bool:
    """Does the function call `tf.get_variable`, or `tf.layers` under one `tf.variable_scope`
    or under none (a builder, when it is one)?"""
    found = calls(helper)
    if any(q == "tensorflow.get_variable" for _, q in found):
        return True
    block, _, _ = scope_block(helper)
    scope = block.items[0].item if block is not None and block.items else None
    if not any(builder_layers.is_layer_call(q) for _, q in found):
        return False
    return any(c is scope and q == "tensorflow.variable_scope" for c, q in found) or _unscoped(helper, found)


def _unscoped(helper: cst.FunctionDef, found) -> bool:
    """A function making layers at the scope it is called in: no `with` block at the
    top of its body, no `tf.variable_scope` (TF1 named its layers where it was called)."""
    return not any(isinstance(s, cst.With) for s in helper.body.body) \
        and not any(q in ("tensorflow.variable_scope", "tensorflow.get_variable", "tensorflow.Variable") for _, q in found)


def called_first(expr: cst.CSTNode, helpers: dict) -> list[str]:
    """The functions `expr` calls by name, in the order Python calls them (arguments
    before the call: `projection(encoder(x))` calls encoder first), which is the
    order a builder's variables were made in."""
    names = (n.func.value for n in post_order(expr) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name))
    return list(dict.fromkeys(name for name in names if name in helpers))


def node(builder, helper: cst.FunctionDef) -> BuilderModule:
    """The builder's module node, made on its first use."""
    program = builder.program
    for n in program.nodes:
        if isinstance(n, BuilderModule) and n.builder is helper:
            return n
    scope, inner, scope_object, default = _scope(builder, helper)
    params = {p.name.value for p in (*helper.params.params, *helper.params.kwonly_params)}
    per_call = scope in params   # a layer function: the scope, and so the variables, come with each call
    local: set[str] = set()
    computed_from: dict[str, set[str]] = {}   # local -> the names it is computed from (builder_loops.shaping)
    graph: set[str] = set()           # ... the locals that are graph values
    variables: list[BuilderVariable] = []
    layers: list = []
    dropped = []
    lazy = None   # (the first variable made from a call's values: made on the first call, by a function alone)
    taken = set(MODULE_ATTRIBUTES | {"made", "variable"})   # (attribute names a layer may not take)
    initializers = named_initializers.named(builder, helper, inner)
    plumbing = {id(made[1]) for made in initializers.values()}
    for at, stmt in enumerate(inner):
        if id(stmt) in plumbing or builder_layers.reuse_statement(builder, stmt, scope_object) \
                or graph_prints.in_builder(builder, stmt, graph | {v[0] for v in variables}):
            dropped.append(stmt)   # (`scope.reuse_variables()`; `print("h:", h)`: TF1 printed a description)
            continue
        if scope_object is not None and scope_object in loads(stmt):
            raise Refusal.of(stmt, "builder_scope_object_used", name=scope_object)
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        value = small.value if isinstance(small, cst.Assign) else None
        call = value if isinstance(value, cst.Call) and builder.qualified(value.func) == "tensorflow.get_variable" else None
        if call is None:
            for c, q in builder.calls(stmt):
                if q in ("tensorflow.get_variable", "tensorflow.Variable", "tensorflow.variable_scope"):
                    raise Refusal.of(c, "builder_weights_other_form", function=helper.name.value)
                if (q or "").startswith("tensorflow.layers.") and not builder_layers.is_layer_call(q):
                    raise Refusal.of(c, "builder_layer_unmapped", api=q.replace("tensorflow", "tf", 1),
                                     function=helper.name.value)
            if per_call and any(builder_layers.is_layer_call(q) for _, q in builder.calls(stmt)):
                raise Refusal.of(stmt, "builder_layers_scope_parameter", function=helper.name.value, scope=scope)
            made = builder_layers.sites(builder, helper, stmt, taken, layers, params | local, per_call)
            for site in made:
                site.at = at
            layers += made
            local |= bound_names(stmt)
            builder_loops.bindings(builder, stmt, computed_from, graph)
            continue
        small = cast(cst.Assign, small)   # (a `tf.get_variable` call is its value)
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            raise Refusal.of(stmt, "builder_get_variable_target")
        bound = named_initializers.resolved(
            without_defaults(bound_args(call, list(GET_VARIABLE), call), "tensorflow.get_variable"), initializers)
        if builder.class_initializers is not None:   # (a model class's constructor parameter)
            bound = builder.class_initializers.resolved(bound)
        extra = set(bound) - {"name", "shape", "dtype", "initializer"}
        if extra:
            raise Refusal.of(call, "variable_arguments", args=', '.join(sorted(extra)))
        label = literal_string(bound.get("name"))
        if label is None:
            raise Refusal.of(call, "variable_name_not_literal")
        reads = set(loads(call)) & (params | local)
        if reads and not per_call:   # made on the first call, with its values, as TF1's `tf.get_variable` made it
            lazy = lazy or (call, label, sorted(reads)[0])
        variables.append((small.targets[0].target.value, label, call, bound, stmt))
    if not variables and not layers:
        raise Refusal.of(helper, "builder_get_variable_unfollowed", function=helper.name.value)
    names = [v[0] for v in variables]
    if len(set(names)) != len(names) or set(names) & (params | local):
        raise Refusal.of(helper, "builder_variable_named_twice", function=helper.name.value)
    if any(attribute_name(n) == site.attribute for n in names for site in layers):
        raise Refusal.of(helper, "builder_variable_named_twice", function=helper.name.value)
    made_on_call = any(site.looped or site.reads for site in layers)
    if made_on_call:   # (builder_loops)
        if variables:
            raise Refusal.of(variables[0][2], "builder_layers_on_call_with_variables", function=helper.name.value)
        named = next((site for site in layers if name_param(site.row) in site.bound), None)
        if named is not None:
            raise Refusal.of(named.call, "builder_layer_named_on_call", api=named.row["auto_name"],
                             function=helper.name.value)
        counted = next((site for site in layers if site.row.get("statistics")), None)
        if counted is not None:   # (its updates are checked, and its helper written, for layers made once)
            raise Refusal.of(counted.call, "builder_statistics_on_call", api=symbol_of(counted.row),
                             function=helper.name.value)
    if lazy and (layers or builder.class_layers is not None or helper not in builder.module.body):
        raise Refusal.of(lazy[0], "builder_variable_from_changing", variable=lazy[1], name=lazy[2])
    return builder.append(BuilderModule(
        index=-1, names=(), stmt=helper, value=None, builder=helper, scope=None if per_call else scope, lazy=bool(lazy),
        scope_parameter=scope if per_call else None, scope_default=default, variables=variables, inner=inner, weights=True, trainable=True,
        var=helper.name.value, layers=layers, dropped=dropped, made_on_call=made_on_call,
        shaping=builder_loops.shaping(helper, layers, computed_from, graph) if made_on_call else ()))


def _scope(builder, helper: cst.FunctionDef):
    """("scope name", statements inside it, the `as NAME` of the scope or None, the default
    of `scope or "Linear"`): the body is one `with tf.variable_scope("NAME", reuse=...)`, after
    statements that make no variables (`shape = x.get_shape().as_list()`: the same before the
    scope as in it); for a layer function, the name of the parameter holding the scope."""
    stmt, lead, tail = scope_block(helper)
    if helper.decorators or helper.asynchronous is not None:
        raise Refusal.of(helper, "builder_body_not_one_scope", function=helper.name.value)
    if stmt is None and _unscoped(helper, builder.calls(helper)):   # its layers named where it is called
        return None, [s for k, s in enumerate(helper.body.body) if k or not is_docstring(s)], None, None
    if stmt is None or any(q == "tensorflow.variable_scope" or q in GETTERS or builder_layers.is_layer_call(q)
                           for s in lead for _, q in builder.calls(s)):
        raise Refusal.of(helper, "builder_body_not_one_scope", function=helper.name.value)
    alias = stmt.items[0].asname if len(stmt.items) == 1 else None
    scope_object = alias.name.value if alias is not None and isinstance(alias.name, cst.Name) else None
    call = stmt.items[0].item if len(stmt.items) == 1 and (alias is None or scope_object is not None) else None
    if not isinstance(call, cst.Call) or builder.qualified(call.func) != "tensorflow.variable_scope":
        raise Refusal.of(stmt, "builder_without_scope", function=helper.name.value)
    bound = bound_args(call, ["name_or_scope", "default_name", "values", "initializer", "regularizer",
                              "caching_device", "partitioner", "custom_getter", "reuse"], call)
    given = bound.get("name_or_scope")
    scope, default = literal_string(given), None
    either = given if isinstance(given, cst.BooleanOperation) and isinstance(given.operator, cst.Or) else None
    if either is not None and literal_string(either.right):   # (`scope or "Linear"`: the parameter, else the default)
        given, default = either.left, literal_string(either.right)
    if scope is None and isinstance(given, cst.Name) and given.value in {p.name.value for p in helper.params.params}:
        scope = given.value   # (a parameter: see _per_call_statements)
    if scope is None or set(bound) - {"name_or_scope", "reuse"} or default is not None and scope == default:
        raise Refusal.of(call, "builder_scope_form")
    return scope, [*lead, *stmt.body.body, *tail], scope_object, default


def scope_block(helper: cst.FunctionDef) -> tuple[cst.With | None, list[cst.BaseStatement], list[cst.BaseStatement]]:
    """The body's one `with` block (after an optional docstring and statements before it),
    those statements, and the `return` after it if there is one (the same as the block's last
    statement: nothing runs in between)."""
    body = [s for k, s in enumerate(helper.body.body) if k or not is_docstring(s)]
    lead = []
    while body and isinstance(body[0], cst.SimpleStatementLine) and all(isinstance(s, cst.Assign) for s in body[0].body):
        lead.append(body.pop(0))
    tail = body[1:]
    returns = len(tail) == 1 and isinstance(tail[0], cst.SimpleStatementLine) and len(tail[0].body) == 1 \
        and isinstance(tail[0].body[0], cst.Return)
    if not body or not isinstance(body[0], cst.With) or tail and not returns:
        return None, [], []
    return body[0], cast(list[cst.BaseStatement], lead), cast(list[cst.BaseStatement], tail)


def attribute_name(local: str) -> str:
    """The module attribute holding a builder's variable (`tf.Module`'s own names are taken)."""
    return local + "_variable" if local in MODULE_ATTRIBUTES else local


def variables_text(node: BuilderModule) -> str:
    """A builder module's variables, in the order TF1 made them (`tf.Module.trainable_variables`
    sorts them by attribute name instead)."""
    if node.method_of is not None:   # a model class's layer method
        from tf1gradfix.constructs import layer_methods
        return layer_methods.variables_text(node, node.single)
    if node.scope_parameter is not None or node.lazy:   # a layer function's: made call by call
        return f"*{node.var}.made.values()"
    if node.layers:
        return builder_layers.variables_text(node, attribute_name)
    return ", ".join(f"{node.var}.{attribute_name(v[0])}" for v in node.variables)


def class_statements(node: BuilderModule, name: str, tf: str, initial_value, gap: int,
                     layer_text=None, written=lambda stmt: stmt) -> list[cst.BaseStatement]:
    """`class Encoder(tf.Module)` (variables and layers in `__init__`, the computation in
    `__call__`) and `encoder = Encoder()`, in place of the function; its
    docstring becomes the class's, the comments above the scope stay in `__call__`. `name`: the class's;
    `layer_text(row, call, bound, helper)`: a Keras layer's constructor (emit.state); `written(stmt)`:
    a statement of the computation as TF2 reads it (dropout's rate: constructs/dropout.py)."""
    helper = node.builder
    first = cast("list[cst.SimpleStatementLine | cst.BaseCompoundStatement]", list(helper.body.body))
    docstring = first[0] if first and is_docstring(first[0]) else None
    scope_comments = [ln for ln in (first[1] if docstring else first[0]).leading_lines if ln.comment is not None] \
        if node.scope is not None or node.scope_parameter is not None else []   # (no scope: they stay where they are)
    if node.scope_parameter is not None or node.lazy:   # (`__call__`'s statements: in a class of the module or of a function)
        text, body = _per_call_statements(node, name, tf, initial_value, 8 if gap == 2 else 12)
        body = [written(stmt) for stmt in body]
    else:
        attribute = {v[0]: attribute_name(v[0]) for v in node.variables}
        column = 12 if gap == 2 else 16   # (a module's class, or one in a function)
        init = "".join("            " + layout.fit(
            f"self.{attribute[local]} = {tf}.Variable({initial_value(call, bound)}, name=\"{label}\")", column).replace(
            "\n", "\n            ") + "\n" for local, label, call, bound, _ in node.variables)
        made = f"        with self.name_scope:\n{init}" if init else ""
        if node.made_on_call:
            made += builder_loops.init_line()
        elif node.layers:
            made += builder_layers.constructor_lines(node, layer_text, column - 4)
        text = (f"class {name}({tf}.Module):\n"
                f"    def __init__(self):\n"
                f"        super().__init__(name=\"{node.scope or helper.name.value}\")\n"
                f"{made}\n"
                f"    def __call__(self):\n        pass\n"
                + (builder_loops.layer_method() if node.made_on_call else ""))
        skip = {id(v[4]) for v in node.variables} | {id(s) for s in node.dropped}
        body = [names_as_attributes(written(builder_layers.called(s, node, layer_text)), attribute)
                for s in node.inner if id(s) not in skip]
        # (the calls of its layers: laid out again where the user's were laid out as black would)
        depth = (0 if gap == 2 else 4) + (4 if node.layers and node.scope is not None else 0)   # (in_name_scope)
        body = layout.refit_body([s for s in node.inner if id(s) not in skip], body, depth + 8, depth + 4)
        if node.made_on_call:   # (`self.layer(...)` lines, longer than the user's)
            body = [builder_loops.laid_out(s, depth + 8) for s in body]
            body.insert(0, builder_loops.count_statement())
        if node.layers and node.scope is not None:
            body = builder_layers.in_name_scope(body, f'"{node.scope}"', tf)
    cls = cast(cst.ClassDef, cst.parse_statement(text))
    if body:
        head_line = cast("cst.SimpleStatementLine | cst.BaseCompoundStatement", body[0])
        body[0] = head_line.with_changes(leading_lines=[*scope_comments, *head_line.leading_lines])
    params = helper.params.with_changes(params=[cst.Param(cst.Name("self")), *helper.params.params])
    call = helper.with_changes(name=cst.Name("__call__"), params=params, leading_lines=[cst.EmptyLine(indent=False)],
                               body=helper.body.with_changes(body=body))
    init_method, *others = [m for m in cast("list[cst.FunctionDef]", cls.body.body) if m.name.value != "__call__"]
    head = [init_method] if docstring is None else [docstring, init_method.with_changes(leading_lines=[cst.EmptyLine(indent=False)])]
    cls = cls.with_changes(body=cls.body.with_changes(body=[*head, call, *others]), leading_lines=helper.leading_lines)
    instance = cst.parse_statement(f"{helper.name.value} = {name}()\n").with_changes(
        leading_lines=[cst.EmptyLine(indent=False)] * gap)
    return [cls, instance]


def _per_call_statements(node: BuilderModule, name: str, tf: str, initial_value,
                         column: int) -> tuple[str, list[cst.BaseStatement]]:
    """A layer function's module: variables kept by `"SCOPE/name"`, each made on the
    first call under its scope; `w = tf.get_variable("w", ...)` reads it from there."""
    scope = node.scope_parameter
    text = (f"class {name}({tf}.Module):\n"
            f"    def __init__(self):\n"
            f"        super().__init__(name=\"{node.builder.name.value}\")\n"
            f"        self.made = {{}}  # \"SCOPE/name\" -> variable\n\n"
            f"    def __call__(self):\n        pass\n\n"
            f"    def variable(self, name, initial_value):\n"
            f"        if name not in self.made:  # the first call under this scope\n"
            f"            self.made[name] = {tf}.Variable(initial_value(), name=name)\n"
            f"        return self.made[name]\n")
    made = {id(v[4]): v for v in node.variables}
    body = []
    for stmt in node.inner:
        if any(stmt is d for d in node.dropped):
            continue
        if id(stmt) in made:
            local, label, call, bound, _ = made[id(stmt)]
            within = scope if node.scope_default is None else f"{scope} or {node.scope_default!r}"
            key = f"f\"{{{within}}}/{label}\"" if scope is not None else f"\"{node.scope}/{label}\""
            line = layout.fit(f"{local} = self.variable({key}, lambda: {initial_value(call, bound)})", column)
            stmt = stmt.with_changes(body=[cast(cst.SimpleStatementLine, cst.parse_statement(line + "\n")).body[0]])
        body.append(stmt)
    return text, body
