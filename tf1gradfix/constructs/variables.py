"""`tf.Variable(...)` and `tf.get_variable(...)` in graph code: a `tf.Variable` in
TF2, created once where the graph was built, under its TF1 name (scope included,
made unique in the graph as TF1 does: `Variable_1` for the second unnamed one)."""

from __future__ import annotations

import functools

import libcst as cst

from tf1gradfix.constructs import contrib, scope_reuse

from tf1gradfix.cst.syntax import Refusal, bound_args, literal_bool, literal_string, matches, without_defaults
from tf1gradfix.model.nodes import Statement, Static, Variable
from tf1gradfix.model.tf1_names import numbered
from tf1gradfix.rules.catalog import _read

FUNCTIONS = ("tensorflow.Variable", "tensorflow.get_variable")


def build(builder, s: Statement) -> bool:
    """A `Variable` for `v = tf.Variable(...)`; False if not one."""
    if s.q not in FUNCTIONS or not s.one or s.call is None:
        return False
    _model(builder, s.item, s.one, s.call, s.q, s.deps)
    return True


def _model(builder, item, name: str, call: cst.Call, q: str, deps) -> None:
    if q == "tensorflow.get_variable" and scope_reuse.variable(builder, item, name, call, _label(call)):
        return   # (TF1 gave back a variable it had: `name` is bound to it)
    check_name(builder, name, call)
    bound, trainable, full, unnamed = checked(builder, item, name, call, q, deps)
    builder.add(item, Variable, (name,), call, deps, source=q, bound=bound, full_name=full, trainable=trainable,
                unnamed=unnamed, resource=resource(builder, call))


def resource(builder, call: cst.Call) -> bool:
    """Is the variable a resource variable: `use_resource=True`, or a module that switches
    every variable to one (rules/graph_ops.toml resource_switches)?"""
    given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "use_resource"), None)
    if given is not None:
        return not (isinstance(given, cst.Name) and given.value in ("None", "False"))
    switched = builder.module_facts.get("resource_switched")
    if switched is None:   # (once per module, whose every block asks)
        switched = builder.module_facts["resource_switched"] = any(
            matches(q, "resource_switches") for _, q in builder.calls(builder.module))
    return switched


def _label(call: cst.Call) -> str | None:
    """The literal name a `tf.get_variable` call asks for, or None."""
    first = call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None
    given = first.value if first is not None else next((a.value for a in call.args if a.keyword is not None
                                                          and a.keyword.value == "name"), None)
    return literal_string(given) if given is not None else None


def counted(builder) -> str:
    """The name an unnamed `tf.Variable` has in TF2's traces: TF2 names every unnamed variable
    `Variable`, and the verifier numbers them in creation order (`Variable`, `Variable_1`...
    past the names the TF2 program gave before). It is TF1's name where nothing else took a
    `Variable` name in TF1; elsewhere the rewrite writes TF1's name."""
    k = 0
    while numbered("Variable", k) in builder.tf2_variable_names:
        k += 1
    return numbered("Variable", k)


def check_name(builder, name: str, call: cst.Call) -> None:
    earlier = builder.program.node(name)
    if earlier is not None and earlier.graph_input():
        # the first one still lives in TF1's collections (compute_gradients would list it)
        raise Refusal.of(call, "second_graph_input", name=name)


def checked(builder, item, name: str, call: cst.Call, q: str, deps, writes: bool = True):
    """(bound arguments, trainable, TF1 name, stays unnamed in TF2: `counted`) of a variable
    call the rewrite can keep; refuses the arguments and names it cannot (variable_groups.py
    and variable_factories.py share it: `writes` False, the call keeps the name it has)."""
    bound, trainable = arguments(builder, name, call, q, deps)
    label = literal_string(bound.get("name"))
    if bound.get("name") is not None and label is None:
        raise Refusal.of(call, "variable_name_not_literal")
    if label is None and q == "tensorflow.get_variable":
        raise Refusal.of(call, "variable_unnamed_in_scope")
    # TF1's name: a `tf.Variable` under the name scopes (`Variable`, `Variable_1`... unnamed), a
    # `tf.get_variable` under the variable scopes, made unique in the graph (model/tf1_names.py)
    scope = item.scope if q == "tensorflow.Variable" else item.prefix
    full = builder.unique_name(scope + (label or "Variable"))
    unnamed = label is None and counted(builder) == full
    tf2 = full if writes or unnamed else label or counted(builder)
    if tf2 != full and tf2 != full.rpartition("/")[2]:   # (kept as written, with a name TF1 did not give it)
        raise Refusal.of(call, "variable_name_numbered", tf1=full, tf2=tf2)
    builder.tf2_variable_names.add(tf2)
    return bound, trainable, full, unnamed


def arguments(builder, name: str, call: cst.Call, q: str, deps) -> tuple[dict, bool]:
    """(bound arguments, trainable) of a variable call; refuses arguments the rewrite cannot
    keep, and an initial value read from a graph value (`deps`: the nodes the call reads)."""
    for i in deps:
        if not isinstance(builder.program.nodes[i], Static):
            raise Refusal.of(call, "variable_from_graph_value", name=name)
    if q == "tensorflow.Variable":
        bound = bound_args(call, ["initial_value", "trainable", "collections", "validate_shape",
                                  "caching_device", "name", "variable_def", "dtype"], call)
    else:
        bound = bound_args(call, ["name", "shape", "dtype", "initializer", "regularizer", "trainable",
                                  "collections", "caching_device", "partitioner", "validate_shape",
                                  "use_resource", "custom_getter", "constraint"], call)
    bound = without_defaults(bound, q)
    if builder.class_initializers is not None and q == "tensorflow.get_variable":   # (a constructor parameter's)
        bound = builder.class_initializers.resolved(bound)
    extra = set(bound) - {"initial_value", "trainable", "name", "dtype", "shape", "initializer"}
    if extra:
        raise Refusal.of(call, "variable_arguments", args=', '.join(sorted(extra)))
    return bound, literal_bool(bound.get("trainable"), "trainable") is not False


@functools.lru_cache(maxsize=None)
def initializer_rows() -> dict[str, dict]:
    """v1 initializer name -> its row of initializers.toml (the table emit.state writes from)."""
    raw = _read("initializers.toml")
    return {symbol: row for row in raw["initializer"].values() for symbol in row["v1"]}


def check_initial_value(program, qualified, code, where: cst.CSTNode, bound: dict) -> None:
    """Refusal for a `tf.get_variable` whose initial value the rewrite cannot write
    (emit.state writes it on these terms). `code`: a node's text, as the rewrite spells it."""
    shape, init = bound.get("shape"), bound.get("initializer")
    table = initializer_rows()
    if init is not None and not isinstance(init, cst.Call):
        if shape is not None or isinstance(init, cst.Name) and program.node(init.value) is not None \
                and not isinstance(program.node(init.value), Static):
            raise Refusal.of(init, "get_variable_initializer_form")
        return
    if shape is None:
        if init is not None and qualified(init.func) not in table:
            return   # a tensor value: its shape is the variable's
        raise Refusal.of(where, "get_variable_without_shape")
    if init is not None:
        check_initializer(qualified, code, init)


def check_initializer(qualified, code, init: cst.Call) -> cst.BaseExpression | None:
    """Refusal for a v1 initializer call the table does not map, or an argument it does
    not pass on; else the dtype the call names (it moves to where the initializer is called)."""
    contrib_row = contrib.initializer_row(qualified(init.func))
    if contrib_row is not None:
        return contrib.initializer(init, contrib_row, code, "tf")[1]   # (its own checks; the text is not kept)
    row = initializer_rows().get(qualified(init.func) or "")
    if row is None:
        raise Refusal.of(init, "initializer_unmapped", initializer=code(init.func))
    dtype = None
    for v1_name, expr in bound_args(init, row["params"], init).items():
        if v1_name == "dtype":
            dtype = expr
        elif v1_name not in row["map"] and v1_name not in ("verify_shape",):
            raise Refusal.of(init, "initializer_argument", param=v1_name)
    return dtype
