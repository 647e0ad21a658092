"""The global step: `tf.train.get_or_create_global_step()` (or
`create_global_step()`) makes an int64 variable named "global_step", not
trainable; `tf.train.get_global_step()` returns that same variable (or one
named "global_step"). In TF2 the first becomes that `tf.Variable`, the second
another name for it; `minimize(global_step=...)` adds one after the update.

The statement is replaced in the model's item, so the variable is then
emitted as written (a variable statement that already has its name).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, matches
from tf1gradfix.model.nodes import Statement, Variable

NAME = "global_step"


def model(builder, item, name: str, call: cst.Call | None, q: str | None) -> bool:
    """Adds the node for a global-step statement; False if `q` is not one."""
    program = builder.program
    if call is None or not (matches(q, "global_step_creators") or matches(q, "global_step_getters")):
        return False
    if call.args:
        raise Refusal.of(call, "global_step_other_graph")
    q = cast(str, q)   # (a creator or getter of the table: named)
    existing = find(program)
    earlier = program.node(name)
    if earlier is not None and earlier.graph_input():
        raise Refusal.of(call, "second_graph_input", name=name)
    if matches(q, "global_step_getters") or q.endswith("get_or_create_global_step") and existing is not None:
        if existing is None:
            raise Refusal.of(call, "global_step_read_before_created")
        stmt = _statement(item, f"{name} = {existing.names[0]}")
        builder.add(item, Variable, (name,), call, {existing.index}, source="tensorflow.Variable",
                    bound={}, full_name=None, trainable=False, alias_of=existing.index)
        item.stmt = item.node.stmt = stmt
        return True
    if existing is not None:
        raise Refusal.of(call, "second_global_step")
    tf = program.tf_alias
    full = builder.unique_name(item.prefix + NAME)   # (get_variable's name, made unique in the graph)
    builder.tf2_variable_names.add(full)
    bound = {"initial_value": cst.Integer("0"), "name": cst.SimpleString(f'"{full}"'),
             "trainable": cst.Name("False"), "dtype": cst.parse_expression(f"{tf}.int64")}
    stmt = _statement(item, f'{name} = {tf}.Variable(0, name="{full}", trainable=False, dtype={tf}.int64)')
    builder.add(item, Variable, (name,), call, (), source="tensorflow.Variable", bound=bound,
                full_name=full, trainable=False, global_step=True)
    item.stmt = item.node.stmt = stmt
    return True


def find(program) -> Variable | None:
    """The program's global step variable: made by a global-step call, or named "global_step"."""
    for node in program.nodes:
        if isinstance(node, Variable) and node.alias_of is None and (node.global_step or node.full_name == NAME):
            return node
    return None


def resolve(program, node):
    """The variable an alias (`step = tf.train.get_global_step()`) stands for."""
    while isinstance(node, Variable) and node.alias_of is not None:
        node = program.nodes[node.alias_of]
    return node


def _statement(item, text: str) -> cst.SimpleStatementLine:
    return cast(cst.SimpleStatementLine, cst.parse_statement(text + "\n").with_changes(leading_lines=item.stmt.leading_lines))


def build(builder, s: Statement) -> bool:
    """The global step's `Variable` (or another name for it); False if not one."""
    return s.one is not None and model(builder, s.item, s.one, s.call, s.q)


def host_read(scan, call: cst.Call) -> bool:
    """`tf.train.global_step(sess, step)` in host code (`scan`: sites.HostScan): the counter's
    value, a Python int as TF1 gave it, written in its place; False for another call."""
    if scan.meta.names.qualified(call.func) != "tensorflow.train.global_step":
        return False
    sess, step = arg(call, 0, "sess"), arg(call, 1, "global_step_tensor")
    scan._receiver = None
    name = scan._graph_name(step) if step is not None else None
    node = scan.p.node(name) if name is not None else None
    if not (isinstance(sess, cst.Name) and sess.value in scan._sessions) or not isinstance(node, Variable) \
            or len(call.args) != 2:
        raise Refusal.of(call, "global_step_call_form")
    scan.variable_lists[call] = f"int({cst.Module([]).code_for_node(cast(cst.BaseExpression, step))}.numpy())"
    return True
