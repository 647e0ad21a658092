"""Variables made in one dict, list or tuple literal (`weights = {'h1': tf.Variable(...),
'out': tf.Variable(...)}`): the statement stays where the graph was built, so TF2 makes
the same variables once, in the same order (a literal's values are evaluated in source
order, as TF1 created them); graph code reads them by subscript as before, and a loss
trains the trainable members, listed by subscript (`weights['h1'], weights['out']`).

Each member is checked as a variable statement is (variables.py); a literal mixing
variables with other values, or keys that are not literals, is refused.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import host_values, variables
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.model.nodes import Statement, VariableGroup
from tf1gradfix.model.parts import GroupMember

_KEYS = (cst.SimpleString, cst.Integer)


def build(builder, s: Statement) -> bool:
    """A `VariableGroup` for `name = {key: tf.Variable(...), ...}` or `[tf.Variable(...), ...]`,
    or `[tf.Variable(...) for i in <values the file fixes>]`."""
    if s.one is not None and isinstance(s.value, cst.ListComp) and comprehension(builder, s):
        return True
    entries = _entries(s.value)
    if s.one is None or entries is None:
        return False
    qualified = {id(call): q for call, q in s.tf_calls}
    made = [e for _, e in entries if isinstance(e, cst.Call) and qualified.get(id(e)) in variables.FUNCTIONS]
    if not made:
        return False
    if len(made) != len(entries):
        other = next(e for _, e in entries if e not in made)
        raise Refusal.of(other, "variable_group_mixed", name=s.one)
    variables.check_name(builder, s.one, made[0])
    members = []
    for key, element in entries:
        call = cast(cst.Call, element)   # (every element is one of `made`)
        q = qualified[id(call)]
        if q != "tensorflow.Variable":   # get_variable's store and scopes are followed one statement at a time
            raise Refusal.of(call, "graph_input_in_expression", api=q)
        _, trainable, full, _ = variables.checked(builder, s.item, s.one, call, q, s.deps, writes=False)
        members.append(GroupMember(key=key, call=call, full_name=full, trainable=trainable))
    builder.add(s.item, VariableGroup, (s.one,), s.value, s.deps, members=members)
    return True


def _entries(value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]] | None:
    """(key source, element) of a dict with literal keys or a list/tuple, else None."""
    code = cst.Module([]).code_for_node
    if isinstance(value, cst.Dict) and value.elements:
        if not all(isinstance(e, cst.DictElement) and isinstance(e.key, _KEYS) for e in value.elements):
            return None
        keys = [code(e.key) for e in value.elements if isinstance(e, cst.DictElement)]
        if len(set(keys)) != len(keys):
            return None
        return [(k, e.value) for k, e in zip(keys, value.elements)]
    if isinstance(value, (cst.List, cst.Tuple)) and value.elements:
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [(str(i), e.value) for i, e in enumerate(value.elements)]
    return None


def comprehension(builder, s: Statement) -> bool:
    """`ws = [tf.Variable(...) for i in range(3)]`: one member per iteration, named as TF1
    named each (the name computed with the iteration's values, host_values); the statement
    stays as written, so TF2 makes the same variables in the same order. False where the
    element is not a `tf.Variable` call; Refusal where the iterations are not fixed."""
    value = cast(cst.ListComp, s.value)
    call, comp = value.elt, value.for_in
    if not isinstance(call, cst.Call) or builder.qualified(call.func) != "tensorflow.Variable":
        return False
    if comp.ifs or comp.inner_for_in is not None or comp.asynchronous is not None:
        raise Refusal.of(value, "variable_comprehension_form")
    try:
        items = host_values.value(builder, comp.iter, {})
        if not isinstance(items, tuple) or not items:
            raise host_values.NotFixed
        envs = [host_values.unpack(comp.target, item) for item in items]
        bound, trainable = variables.arguments(builder, cast(str, s.one), call, "tensorflow.Variable", s.deps)
        labels = [None if bound.get("name") is None else host_values.value(builder, bound["name"], env) for env in envs]
    except host_values.NotFixed:
        raise Refusal.of(comp.iter, "variable_comprehension_form") from None
    variables.check_name(builder, cast(str, s.one), call)
    members = []
    for k, label in enumerate(labels):
        if label is not None and not isinstance(label, str):
            raise Refusal.of(call, "variable_name_not_literal")
        full = builder.unique_name(s.item.scope + (label or "Variable"))
        tf2 = label or variables.counted(builder)
        if tf2 != full and tf2 != full.rpartition("/")[2]:   # (TF1 numbered it, or a scope named it)
            raise Refusal.of(call, "variable_name_numbered", tf1=full, tf2=tf2)
        builder.tf2_variable_names.add(tf2)
        members.append(GroupMember(key=str(k), call=call, full_name=full, trainable=trainable))
    builder.add(s.item, VariableGroup, (s.one,), s.value, s.deps, members=members)
    return True
