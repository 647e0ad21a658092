"""Variable reuse in graph code outside builder functions: a `tf.variable_scope`
entered with `reuse=True` or `tf.AUTO_REUSE`, or again through the scope object
its first `with` bound, and a `tf.layers` call named like an earlier layer with
`reuse=True`, or one after `scope.reuse_variables()` in the block binding `scope`.

    with tf.variable_scope("enc") as enc:
        w = tf.get_variable("w", [3, 2])
    with tf.variable_scope(enc, reuse=True):
        w_again = tf.get_variable("w")           # the same variable: w_again = w
    h2 = tf.layers.dense(x2, 8, name="h", reuse=True)   # the layer named "h": h(x2)

TF1 finds the variable by its full name in the graph's store: the rewrite finds the
node the model made under that name and binds the new name to it (`w_again = w`), or
calls the Keras layer made for the first call. What TF1 would reject is refused:
an existing name without reuse, `reuse=True` where no such variable exists, a layer
reused with other settings (TF1 keeps the first layer's variables but the second
call's activation, which one Keras layer cannot do).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args, literal_string, name_nodes
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Layer, LayerNode, Variable

TRUE, AUTO = "true", "auto"   # the reuse modes of a scope entry (None: not reusing)
SCOPE_PARAMS = ["name_or_scope", "default_name", "values", "initializer", "regularizer", "caching_device",
                "partitioner", "custom_getter", "reuse"]


def entered(builder, stmt: cst.With, call: cst.Call, prefix: str) -> tuple[str, str, str | None]:
    """(label, the variable scope inside it `a/b/`, reuse mode) of `with tf.variable_scope(...)`
    at `prefix`: a string scope nests under `prefix`, a scope object is the full scope it was
    bound to. Refusal for other forms (what the name is not known for at rewrite time)."""
    bound = bound_args(call, SCOPE_PARAMS, call)
    given = bound.get("name_or_scope")
    item = stmt.items[0]
    if set(bound) - {"name_or_scope", "reuse"} or given is None:
        raise Refusal.of(stmt, "variable_scope_form")
    reuse = mode(builder, bound.get("reuse"))
    label = literal_string(given)
    objects = builder.scope_objects   # (OBJECT -> `NAME/` of `with tf.variable_scope("NAME") as OBJECT`)
    if label is not None and label:
        inner = f"{prefix}{label}/"
    elif isinstance(given, cst.Name) and given.value in objects:
        inner = objects[given.value]
        label = inner[:-1].rpartition("/")[2]
    else:
        raise Refusal.of(stmt, "variable_scope_form")
    if item.asname is not None:
        name = item.asname.name
        if not isinstance(name, cst.Name) or not _only_a_scope(builder, name.value, stmt):
            raise Refusal.of(stmt, "variable_scope_object_use", name=builder.module.code_for_node(name))
        objects[name.value] = inner
    return label, inner, reuse


def reuse_index(stmt: cst.With) -> int | None:
    """The place in the block of `scope.reuse_variables()` on the scope object its `with`
    binds: TF1 reuses the scope's variables from there to the block's end (what comes
    after it reads as under `reuse=True`). None: the block has no such statement."""
    asname = stmt.items[0].asname if len(stmt.items) == 1 else None
    if asname is None or not isinstance(asname.name, cst.Name) or not isinstance(stmt.body, cst.IndentedBlock):
        return None
    return next((k for k, s in enumerate(stmt.body.body) if reuses(s, asname.name.value)), None)


def reuses(stmt: cst.BaseStatement, name: str) -> bool:
    """`name.reuse_variables()`, a statement of its own."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    return isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
        and call.func.attr.value == "reuse_variables" and isinstance(call.func.value, cst.Name) \
        and call.func.value.value == name


def mode(builder, expr: cst.BaseExpression | None) -> str | None:
    """The reuse mode a `reuse=` argument states; Refusal for one the rewrite cannot read."""
    if expr is None or isinstance(expr, cst.Name) and expr.value in ("None", "False"):
        return None   # (TF1: False does not undo a reuse the enclosing scope set)
    if isinstance(expr, cst.Name) and expr.value == "True":
        return TRUE
    if builder.qualified(expr) == "tensorflow.AUTO_REUSE":
        return AUTO
    raise Refusal.of(expr, "variable_scope_reuse_form", value=builder.module.code_for_node(expr))


def inherited(item) -> str | None:
    """The reuse mode a statement runs under: reuse set by any enclosing variable scope holds
    in every scope inside it (`reuse=True` over `tf.AUTO_REUSE`), as after `reuse_variables()`."""
    modes = {e.reuse for e in item.entries if e.variable} | ({TRUE} if item.reused else set())
    return TRUE if TRUE in modes else AUTO if AUTO in modes else None


def _only_a_scope(builder, name: str, stmt: cst.With) -> bool:
    """Is `name` bound once, by this `as`, and read only as the scope of `tf.variable_scope`,
    or only by one `name.reuse_variables()` of the block (whose reuse a later `with` of the
    object would carry on: not followed)?"""
    at = reuse_index(stmt)
    if at is not None:
        calls = [s for s in cast(cst.IndentedBlock, stmt.body).body if reuses(s, name)]
        uses = [n for n in name_nodes(builder.module) if n.value == name]
        return len(calls) == 1 and len(uses) == 2
    binders, scopes = set(), set()
    for node in walk(builder.module):
        if type(node) is cst.With:
            for i in node.items:
                if i.asname is not None and isinstance(i.asname.name, cst.Name) and i.asname.name.value == name:
                    binders.add(id(i.asname.name))
        if type(node) is cst.Call and builder.qualified(node.func) == "tensorflow.variable_scope":
            first = bound_args(node, SCOPE_PARAMS, node).get("name_or_scope")
            if isinstance(first, cst.Name) and first.value == name:
                scopes.add(id(first))
    uses = [n for n in name_nodes(builder.module) if n.value == name]
    return len(binders) == 1 and all(id(n) in binders | scopes for n in uses)


# -- tf.get_variable -------------------------------------------------------------

def variable(builder, item, name: str, call: cst.Call, label: str | None) -> bool:
    """For `name = tf.get_variable("label", ...)`: True where TF1 reused a variable (the
    statement now binds `name` to it, or is dropped where `name` holds it already);
    False where TF1 made a new one. Refusal where TF1 raised."""
    reuse = inherited(item)
    full = item.prefix + (label or "")
    existing = next((n for n in builder.program.nodes if isinstance(n, Variable) and n.alias_of is None
                     and n.source == "tensorflow.get_variable" and n.full_name == full), None)
    if label is None or existing is None and reuse != TRUE:
        if existing is None and label is not None and any(isinstance(n, Variable) and n.full_name == full
                                                          for n in builder.program.nodes):
            raise Refusal.of(call, "variable_reused_other_kind", variable=full)
        return False
    if existing is None:
        raise Refusal.of(call, "variable_reuse_missing", variable=full)
    if reuse is None:
        raise Refusal.of(call, "variable_exists", variable=full)
    if builder.program.node(name) is existing:
        item.drop = True   # (the name holds the variable already)
        return True
    holder = existing.names[0]   # (still bound to it: graph code rebinding a variable's name is refused)
    builder.add(item, Variable, (name,), call, {existing.index}, source="tensorflow.Variable", bound={},
                full_name=None, trainable=False, alias_of=existing.index)
    stmt = cst.parse_statement(f"{name} = {holder}\n").with_changes(leading_lines=item.stmt.leading_lines)
    item.stmt = cast(Variable, item.node).stmt = stmt
    return True


# -- tf.layers ---------------------------------------------------------------------

def layer(builder, item, call: cst.Call, q: str, row: dict, bound: dict, label: str | None, param: str) -> Layer | None:
    """The layer an earlier call made that this one reuses (`reuse=True`, or a reusing
    variable scope), or None where this call makes a layer. Refusal where TF1 raised, or
    where the reused layer's settings differ from this call's. `param`: the v1 parameter naming it."""
    reuse = mode(builder, bound.get("reuse")) or inherited(item)
    if reuse is None:
        return None
    if label is None:
        raise Refusal.of(call, "layer_reuse_unnamed", api=q.replace("tensorflow", "tf", 1), param=param)
    full = item.prefix + label
    existing = next((n for n in builder.program.nodes if isinstance(n, LayerNode) and n.tf1_name() == full), None)
    if existing is None:
        if reuse == TRUE:
            raise Refusal.of(call, "layer_reuse_missing", layer=full)
        return None
    if not isinstance(existing, Layer) or existing.symbol != q or _settings(builder, existing.bound, existing.row) \
            != _settings(builder, bound, existing.row):
        raise Refusal.of(call, "layer_reuse_settings", layer=full)
    return existing


def _settings(builder, bound: dict, row: dict) -> dict[str, str]:
    """A layer call's settings as written, but its input, its name and `reuse`."""
    skip = {row["params"][0], "name", "scope", "reuse"}
    return {p: builder.module.code_for_node(v) for p, v in bound.items() if p not in skip}
