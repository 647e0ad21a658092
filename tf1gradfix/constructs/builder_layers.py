"""`tf.layers` calls in a builder function (constructs/builders.py).

    def critic(x, reuse=False):
        with tf.variable_scope("critic", reuse=reuse):
            h = tf.layers.dense(x, 8, tf.nn.relu)
            return tf.layers.dense(h, 1)

In TF1 each call site makes a layer whose variables are `critic/dense/*`,
`critic/dense_1/*` (unnamed layers are counted per kind inside the scope, and
the count starts again each time the scope is entered), and the calls with
`reuse` get them back. The builder's module creates one Keras layer per call
site in its constructor, named as TF1 named it, and calls it in `__call__`
under `tf.keras.name_scope("critic")`: the layer builds on its first call, so
its variables are `critic/dense/kernel`, ... as in TF1. Layers made in a `for`
loop, with settings from the builder's arguments, or without a scope are made on
the call instead (builder_loops.py). A call site run only on some calls, or in a
comprehension, made a different number of layers in TF1, and is refused.

Batch normalization keeps its `training=` (True, False, or a parameter of the
builder, passed on by `__call__`); which calls update the moving statistics,
and whether TF1 ran those updates, is checked per run (builder_statistics.py).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builder_loops
from tf1gradfix.constructs.layers import (at_call, check_layer_arguments, helper_of, layer_table, name_param,
                                          passed_on)
from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import Refusal, bound_names, literal_string, loads
from tf1gradfix.cst.walk import TargetedTransformer, children, walk
from tf1gradfix.model.nodes import BuilderModule, OptimizerCall, VarList
from tf1gradfix.model.parts import BuilderLayer, Listed

# where a call may run a number of times other than once per call of the builder
_REPEATING = (cst.For, cst.While, cst.If, cst.Try, cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp,
              cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)
REUSE_CALL = "reuse_variables"


def is_layer_call(q: str | None) -> bool:
    return q in layer_table()


def sites(builder, helper: cst.FunctionDef, stmt: cst.BaseStatement, taken: set[str], pending: list[BuilderLayer],
          changing: set[str], per_call: bool) -> list[BuilderLayer]:
    """The layers the statement's `tf.layers` calls make, in Python's call order (an
    argument's layer before its caller's). `taken`: attribute names in use; `pending`:
    the builder's layers so far (TF1's names count them); `changing`: names each call
    may bind differently, which settings made once may not read."""
    found = {id(c): q for c, q in builder.calls(stmt) if is_layer_call(q)}
    out: list[BuilderLayer] = []
    changing = changing | bound_names(stmt)   # (a loop's target, a name the statement rebinds)

    def post(node: cst.CSTNode, repeating: bool, loops: tuple[cst.For, ...]) -> None:
        if isinstance(node, cst.For) and not repeating and any(id(c) in found for c in walk(node)):
            builder_loops.check_loop(helper, node)   # a layer per run, made on the call (builder_loops)
            inside, loops = False, (*loops, node)
        else:
            inside = repeating or isinstance(node, _REPEATING) or (node is not stmt and isinstance(node, cst.BaseCompoundStatement))
        for child in children(node):
            post(child, inside, loops)
        if isinstance(node, cst.Call) and id(node) in found:
            q = found[id(node)]
            if repeating:
                raise Refusal.of(node, "builder_layer_not_once", api=_short(q), function=helper.name.value)
            site = _site(builder, helper, node, q, taken, [*pending, *out], changing, per_call)
            if loops and name_param(site.row) in site.bound:
                raise Refusal.of(node, "builder_layer_named_on_call", api=_short(q), function=helper.name.value)
            site.looped = bool(loops)
            site.reads = site.reads | {n for loop in loops for n in loads(loop.iter)}
            out.append(site)

    post(stmt, False, ())
    return out


def _site(builder, helper: cst.FunctionDef, call: cst.Call, q: str, taken: set[str], pending: list[BuilderLayer],
          changing: set[str], per_call: bool) -> BuilderLayer:
    row = layer_table()[q]
    bound, source = passed_on(builder, call, q, row, untrainable_refused=True)

    def flag(param: str, value: cst.BaseExpression) -> cst.BaseExpression:
        """True/False, or a parameter of the builder (builder_statistics.py checks each call's value)."""
        named = isinstance(value, cst.Name) and (value.value in ("True", "False") or value.value in parameters(helper))
        if not named:
            raise Refusal.of(value, "layer_training_form", api=q, param=param)
        return value
    call_args = at_call(row, bound, flag)
    given = bound.get(name_param(row))
    label = literal_string(given) if given is not None else _auto_name(row, pending)
    if label is None:
        raise Refusal.of(given, "variable_name_not_literal")
    if any(site.label == label for site in pending):
        raise Refusal.of(call, "layer_named_twice", layer=label)
    settings = [a.value for a in call.args if a.value is not source and not any(a.value is v for _, v in call_args)]
    reads = {n for s in settings for n in loads(s)} & changing   # (made on the call: builder_loops)
    check_layer_arguments(row, call, bound, builder.qualified, builder.module.code_for_node)
    base = (label if given is not None else label.lower()) if label.isidentifier() else row["auto_name"].lower()
    attribute = base
    k = 1
    while attribute in taken:
        attribute, k = f"{base}_layer" + (f"_{k}" if k > 1 else ""), k + 1
    taken.add(attribute)
    fused = helper_of(row, bound, None)   # (the rank of a builder's input is not known here)
    return BuilderLayer(attribute=attribute, label=label, call=call, row=row, bound=bound, source=source,
                        call_args=call_args, reads=frozenset(reads), helper=fused)


def parameters(helper: cst.FunctionDef) -> dict[str, cst.BaseExpression | None]:
    """The builder's parameters that its body never rebinds, with their defaults."""
    rebound = {n for stmt in helper.body.body for n in bound_names(stmt)}
    return {p.name.value: p.default for p in (*helper.params.params, *helper.params.kwonly_params)
            if p.name.value not in rebound}


def _auto_name(row: dict, pending: list[BuilderLayer]) -> str:
    """TF1's name for the k-th unnamed layer of a kind under the builder's scope."""
    k = sum(1 for site in pending if site.row is row and name_param(row) not in site.bound)
    return row["auto_name"] + (f"_{k}" if k else "")


def _short(q: str) -> str:
    return q.replace("tensorflow", "tf", 1)


def reuse_statement(builder, stmt: cst.BaseStatement, scope_object: str | None) -> bool:
    """`scope.reuse_variables()` or `tf.get_variable_scope().reuse_variables()`, alone or
    under an `if` with no `else`: the module shares its weights on every call already."""
    if isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1:
        return reuse_statement(builder, cast(cst.BaseStatement, stmt.body.body[0]), scope_object)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    if not isinstance(call, cst.Call) or call.args or not isinstance(call.func, cst.Attribute) \
            or call.func.attr.value != REUSE_CALL:
        return False
    owner = call.func.value
    if isinstance(owner, cst.Name):
        return owner.value == scope_object
    return isinstance(owner, cst.Call) and not owner.args and builder.qualified(owner.func) == "tensorflow.get_variable_scope"


def _marks(program) -> tuple[str, ...]:
    """How a list names a layer builder's variables (builders.variables_text)."""
    return tuple(builder_loops.variables_text(n) if n.made_on_call else f"*{n.var}."
                 for n in program.nodes if isinstance(n, BuilderModule) and n.layers)


def check_listed(program) -> None:
    """Refusal where a list holding a layer builder's variables is read other than as an
    update's `var_list`: a Keras layer has no variables before its first call, which in
    TF2 is in a step function, so a list read elsewhere (an assign loop, a regularizer,
    a fetch) could be read while it is still empty; an update lists them after its forward."""
    marks = _marks(program)
    lists = {n.index for n in program.nodes if isinstance(n, VarList) and any((m.text or "").startswith(marks) for m in n.members)} \
        if marks else set()
    for node in program.nodes:
        if lists & node.deps and not isinstance(node, (OptimizerCall, VarList)):
            raise Refusal.of(node.stmt, "builder_layers_listed")


def check_host_list(program, members: list[Listed], where: cst.CSTNode) -> None:
    """The same for a list whose values the host reads (`sess.run(d_vars)`, `len(...)`); and
    a layer function's variables, made at a step's first call under each scope (var_lists)."""
    made = next((program.nodes[m.node] for m in members if isinstance(program.nodes[m.node], BuilderModule)
                 and program.nodes[m.node].scope_parameter is not None), None)
    if made is not None:
        raise Refusal.of(where, "collection_of_builder_scopes", function=made.var)
    marks = _marks(program)
    if marks and any((m.text or "").startswith(marks) for m in members):
        raise Refusal.of(where, "builder_layers_listed")


# -- writing ---------------------------------------------------------------
def constructor_lines(node: BuilderModule, layer_text, column: int) -> str:
    """`self.dense = tf.keras.layers.Dense(..., name="dense")` per layer, in the constructor."""
    lines = ""
    for site in node.layers:
        text = layer_text(site.row, site.call, site.bound, site.helper)
        if name_param(site.row) not in site.bound:   # (Keras counts automatic names over the whole program; TF1 per scope)
            text = text[:-1] + ("" if text.endswith("()") else ", ") + f'name="{site.label}")'
        lines += layout.placed(f"self.{site.attribute} = {text}", column, " " * 8) + "\n"
    return lines


def called(stmt: cst.BaseStatement, node: BuilderModule, layer_text=None, func_of=None) -> cst.BaseStatement:
    """The statement with each layer call written as a call of the module's layer (made
    on the call: `self.layer(kind, make, ...)`, builder_loops; `layer_text` writes the layer;
    `func_of(site)`: where another class keeps it, a model class's `self.made[...]`)."""
    by_call = {site.call: site for site in node.layers}
    if not any(c in by_call for c in _calls(stmt)):
        return stmt

    class Calls(TargetedTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            site = by_call.get(original)
            if site is None:
                return updated
            position = next(i for i, a in enumerate(original.args) if a.value is site.source)
            args = [cst.Arg(updated.args[position].value)]
            for param, value in site.call_args:
                args.append(cst.Arg(value, keyword=cst.Name(param), equal=cst.AssignEqual(
                    cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
            args = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]] + args[-1:]
            func = builder_loops.layer_of(site, layer_text) if node.made_on_call \
                else func_of(site) if func_of is not None else cst.Attribute(cst.Name("self"), cst.Name(site.attribute))
            return updated.with_changes(func=func, args=args, whitespace_after_func=cst.SimpleWhitespace(""),
                                        whitespace_before_args=cst.SimpleWhitespace(""))

    return cast(cst.BaseStatement, stmt.visit(Calls(set(by_call))))


def _calls(node: cst.CSTNode):
    for child in children(node):
        if isinstance(child, cst.Call):
            yield child
        yield from _calls(child)


def in_name_scope(body: list[cst.BaseStatement], scope: str, tf: str) -> list[cst.BaseStatement]:
    """`with tf.keras.name_scope("SCOPE"):` around `__call__`'s statements: the layers
    build on their first call, and take their variables' names from this scope."""
    with_stmt = cst.parse_statement(f"with {tf}.keras.name_scope({scope}):\n    pass\n")
    assert isinstance(with_stmt, cst.With)
    return [with_stmt.with_changes(body=with_stmt.body.with_changes(body=body))]


def variables_text(node: BuilderModule, attribute) -> str:
    """The module's variables in the order TF1 made them: its `tf.get_variable` statements'
    and its layers', statement by statement (`attribute`: a variable's attribute name)."""
    if node.made_on_call:
        return builder_loops.variables_text(node)
    at = {id(s): i for i, s in enumerate(node.inner)}
    entries = [(at[id(v[4])], 0, f"{node.var}.{attribute(v[0])}") for v in node.variables]
    entries += [(site.at, 1 + k, f"*{node.var}.{site.attribute}.trainable_variables") for k, site in enumerate(node.layers)]
    return ", ".join(text for *_, text in sorted(entries))
