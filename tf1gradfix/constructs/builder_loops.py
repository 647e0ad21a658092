"""`tf.layers` calls a builder function makes in a Python loop, or with settings
taken from its arguments (the MLP builder; constructs/builder_layers.py has the rest):

    def mlp(x, sizes, activation=tf.tanh):
        for size in sizes[:-1]:
            x = tf.layers.dense(x, units=size, activation=activation)
        return tf.layers.dense(x, units=sizes[-1])

TF1 made one layer each time such a call ran, named per kind inside the builder's
scope (dense, dense_1, ...: counted again each time the scope is entered, and over
the whole graph where there is no scope), and a call with `reuse` got the same
layers back by those names. The builder's module keeps its layers by that name in
`self.made` and makes each on the first call that reaches it, with that call's
settings; `self.layer(kind, make)` counts the call's layers of each kind as TF1 did.
That is TF1's program only when every call makes the same layers with the same
settings: the loops run over Python values, and the arguments the loops and the
settings read are the same at every call (`check_call`). A builder without a scope
is called once: TF1 made new layers (dense_2, ...) on each further call.
"""

from __future__ import annotations

import re

import libcst as cst

from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import Refusal, bound_args, bound_names, literal_string, loads, target_names
from tf1gradfix.cst.walk import post_order, walk
from tf1gradfix.model.nodes import BuilderModule, Layer, LayerLoop, Static
from tf1gradfix.model.parts import BuilderLayer

MADE = "made"     # the module's attribute: TF1's layer name -> its Keras layer
COUNT = "count"   # ... the layers of each kind the running call has reached
LAYER = "layer"   # ... the method giving a call its next layer of a kind
_MODULE = cst.Module([])
_LEAVING = (cst.Break, cst.Continue, cst.Return, cst.Yield, cst.Await)


def _rank(builder, call: cst.Call) -> float:
    """Where Python makes `call` among the module's calls (arguments first), as a fraction:
    the order of one statement's builder calls, also inside the functions it calls."""
    if builder.call_ranks is None:
        made = [n for n in post_order(builder.module) if type(n) is cst.Call]
        builder.call_ranks = {id(c): k / (len(made) + 1) for k, c in enumerate(made)}
    return builder.call_ranks.get(id(call), 0.0)


def check_loop(helper: cst.FunctionDef, loop: cst.For) -> None:
    """Refusal for a loop whose number of runs is not its iterable's length (an `else`,
    a `break`, `continue` or `return` in its body: a layer could be left out on a call)."""
    if loop.orelse is not None or loop.asynchronous is not None \
            or any(isinstance(n, _LEAVING) for n in walk(loop.body)):
        raise Refusal.of(loop, "builder_layer_loop_form", function=helper.name.value)


def bindings(builder, stmt: cst.BaseStatement, reads: dict[str, set[str]], graph: set[str]) -> None:
    """What each name the statement binds is computed from (`reads`), and which are
    graph values (`graph`: computed by a TensorFlow call); a loop's target from its iterable."""
    def bind(names, value: cst.CSTNode) -> None:
        made_by_tf = any((q or "").startswith("tensorflow") for _, q in builder.calls(value))
        for name in names:
            reads.setdefault(name, set()).update(loads(value))
            if made_by_tf:
                graph.add(name)

    if isinstance(stmt, cst.For) and isinstance(stmt.body, cst.IndentedBlock):
        bind(target_names(stmt.target) or bound_names(stmt), stmt.iter)
        for inner in stmt.body.body:
            bindings(builder, inner, reads, graph)
    elif isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                value = small.value if small.value is not None else small
                bind(bound_names(cst.SimpleStatementLine([small])), value)
    else:   # (any other block: each name it binds from all it reads)
        bind(bound_names(stmt), stmt)


def shaping(helper: cst.FunctionDef, layers: list[BuilderLayer], reads: dict[str, set[str]],
            graph: set[str]) -> tuple[str, ...]:
    """The parameters the layers' number and settings come from (through the locals
    computed from them); Refusal where one comes from a graph value of the builder."""
    params = {p.name.value for p in (*helper.params.params, *helper.params.kwonly_params)}
    out: set[str] = set()
    for site in layers:
        seen: set[str] = set()
        stack = list(site.reads)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in graph:
                raise Refusal.of(site.call, "builder_layer_setting_from_graph", api=_short(site.row), name=name,
                                 function=helper.name.value)
            if name in reads:
                stack += sorted(reads[name])
            elif name in params:
                out.add(name)
    return tuple(sorted(out))


def check_call(builder, node: BuilderModule, call: cst.Call, prefix: str = "") -> None:
    """One call of a builder whose layers are made on its call (or that has no scope):
    Refusal where it would make other layers than TF1's first call made, or new ones.
    A layer function's call records the scope it names (under the variable scope
    `prefix` of the function calling it), for the collections listing its variables."""
    if any(c is call for c in node.call_sites):
        return
    node.call_sites.append(call)
    helper = node.builder
    if node.scope_parameter is not None:
        named = bound_args(call, [p.name.value for p in helper.params.params], call).get(node.scope_parameter)
        scope = node.scope_default if named is None else literal_string(named)
        node.scoped.append((len(builder.program.nodes) + _rank(builder, call), None if scope is None else prefix + scope))
    if node.scope is None and node.scope_parameter is None and len(node.call_sites) > 1:
        raise Refusal.of(call, "builder_unscoped_called_again", function=helper.name.value)
    if not node.made_on_call:
        return
    params = [p.name.value for p in helper.params.params]
    given = bound_args(call, params, call)
    code = builder.module.code_for_node
    texts = []
    for name in node.shaping:
        value = given.get(name)
        if value is not None:
            for read in loads(value):
                prior = builder.program.node(read)
                if prior is not None and not isinstance(prior, Static):
                    raise Refusal.of(value, "builder_layers_from_graph", function=helper.name.value, param=name)
        texts.append(code(value) if value is not None else None)
    if node.call_texts is None:
        node.call_texts = tuple(texts)
        return
    if tuple(texts) != node.call_texts:
        param = next(p for p, a, b in zip(node.shaping, texts, node.call_texts) if a != b)
        raise Refusal.of(call, "builder_layer_calls_differ", function=helper.name.value, param=param)
    owner = builder.program.owner
    body = owner.body if isinstance(owner, cst.Module) else owner.body.body
    owner_params = set() if isinstance(owner, cst.Module) else {p.name.value for p in owner.params.params}
    for name in sorted({n for t in texts if t is not None for n in loads(cst.parse_expression(t))}):
        binders = sum(1 for s in body if name in bound_names(s)) + (name in owner_params)
        if binders > 1:   # (the same text, another value)
            raise Refusal.of(call, "builder_layer_calls_differ", function=helper.name.value, param=name)


def check_unscoped(program) -> None:
    """Refusal for a builder without a scope in a program making other layers at the top,
    or a variable scope named like its layers (`dense_1`): TF1 counted their names
    together, the module counts its own."""
    unscoped = [n for n in program.nodes if isinstance(n, BuilderModule) and n.scope is None and n.scope_parameter is None]
    if not unscoped:
        return
    kinds = "|".join(sorted({re.escape(site.row["auto_name"]) for n in unscoped for site in n.layers}))
    scopes = {n.scope for n in program.nodes if isinstance(n, BuilderModule) and n.scope is not None} \
        | {item.prefix.split("/")[0] for item in program.items if item.prefix}
    if len(unscoped) > 1 or any(isinstance(n, (Layer, LayerLoop)) for n in program.nodes) \
            or any(re.fullmatch(rf"(?:{kinds})(?:_\d+)?", s) for s in scopes):
        raise Refusal.of(unscoped[-1].builder, "builder_unscoped_with_layers", function=unscoped[-1].var)


def _short(row: dict) -> str:
    return "tf.layers." + row["auto_name"]


# -- writing ---------------------------------------------------------------
def init_line() -> str:
    return f"        self.{MADE} = {{}}  # TF1's layer name -> layer, made on the first call\n"


def count_statement() -> cst.BaseStatement:
    """`__call__`'s first statement: TF1 counted a call's layers of a kind from 0 again."""
    return cst.parse_statement(f"self.{COUNT} = {{}}  # this call's layers of each kind so far\n")


def layer_method() -> str:
    return (f"\n    def {LAYER}(self, kind, make, *settings, **named_settings):\n"
            f"        \"\"\"The call's next layer of `kind`, named as TF1 named it (dense, dense_1, ...).\"\"\"\n"
            f"        k = self.{COUNT}.get(kind, 0)\n"
            f"        self.{COUNT}[kind] = k + 1\n"
            f"        name = kind if k == 0 else f\"{{kind}}_{{k}}\"\n"
            f"        if name not in self.{MADE}:  # the first call reaching it makes it\n"
            f"            self.{MADE}[name] = make(*settings, name=name, **named_settings)\n"
            f"        return self.{MADE}[name]\n")


def layer_of(site: BuilderLayer, layer_text) -> cst.BaseExpression:
    """`self.layer("dense", tf.keras.layers.Dense, SETTINGS)`: its Keras layer's class and settings."""
    text = layer_text(site.row, site.call, site.bound)
    head, settings = text[:text.index("(")], text[text.index("(") + 1:-1]
    return cst.parse_expression(f'self.{LAYER}("{site.row["auto_name"]}", {head}' + (f", {settings})" if settings else ")"))


def laid_out(stmt: cst.BaseStatement, indent: int) -> cst.BaseStatement:
    """A statement whose layer call became `self.layer(...)` laid out as `layout.fit` does
    where it no longer fits on its line (the user's own line breaks went with the call)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        text = _MODULE.code_for_node(stmt.with_changes(leading_lines=())).rstrip("\n")
        if "\n" in text or indent + len(text) <= layout.WIDTH:
            return stmt
        return cst.parse_statement(layout.fit(text, indent) + "\n").with_changes(leading_lines=stmt.leading_lines)
    body = getattr(stmt, "body", None)
    if isinstance(stmt, cst.BaseCompoundStatement) and isinstance(body, cst.IndentedBlock):
        inner = [laid_out(s, indent + 4) for s in body.body]
        return stmt.with_changes(body=body.with_changes(body=inner))
    return stmt


def variables_text(node: BuilderModule) -> str:
    """Its variables in the order TF1 made them (the layers' order in `made`)."""
    return f"*[w for layer in {node.var}.{MADE}.values() for w in layer.trainable_variables]"
