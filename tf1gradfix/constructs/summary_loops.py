"""Summaries made in a loop over graph values:

    for value in [loss, accuracy, weight]:
        tf.summary.scalar(value.op.name, value)

TF1 runs the loop once, while the graph is built: it makes one summary op per value,
in order, each under a tag made unique in the graph (`loss_1`: the op `loss` holds the
name). That is the list of summaries the loop unrolls to, and a merge reads them as it
reads summaries made one by one (summaries.py): in TF2 the values are computed in the
step that fetches the merge and written under the same tags. The loop runs over a
list or tuple literal of names of graph values, and its body is summary calls only,
each a statement whose tag summaries.py reads (a string, or `value.op.name` /
`value.name`, TF1's name of the value's op). The loop name is read by nothing after
the loop (TF1 left the last value in it; TF2 has no loop).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import made_ops, nested_calls, summaries
from tf1gradfix.cst.syntax import Refusal, name_nodes, names_renamed
from tf1gradfix.model.nodes import OPS, Summary


def model(builder, item) -> bool:
    """A `Summary` member for a loop making summaries (all of them, in the order TF1
    made them); False if `item` is not such a loop."""
    loop = item.stmt
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, (cst.List, cst.Tuple)):
        return False
    found = [_summary_call(builder, stmt) for stmt in loop.body.body]
    calls = [call for call in found if call is not None]
    if not calls or len(calls) != len(found):
        return False
    if not isinstance(loop.target, cst.Name) or loop.orelse is not None or loop.asynchronous is not None:
        raise Refusal.of(loop, "summary_loop_form")
    name = loop.target.value
    inside = {id(n) for n in name_nodes(loop)}
    if any(n.value == name and id(n) not in inside for n in name_nodes(builder.module)):
        raise Refusal.of(loop, "summary_loop_name_read", name=name)
    layout, deps = [], set()
    for element in loop.iter.elements:
        held = element.value
        if not isinstance(held, cst.Name) or builder.program.node(held.value) is None \
                or isinstance(element, cst.StarredElement):
            raise Refusal.of(element, "summary_loop_form")
        for call in calls:
            target, given, value = summaries.arguments(call, builder.qualified(call.func))
            tag = summaries.asked_tag(builder, given, {name: held.value}, Refusal.of(given, "summary_loop_tag"))
            value = held if isinstance(value, cst.Name) and value.value == name else names_renamed(value, {name: held.value})
            made_ops.name_ops(builder, value, item.scope)
            layout.append((target, summaries.tf1_tag(builder, tag, call, item.scope), value))
            deps |= builder.deps_of(value)
    for i in deps:
        if isinstance(builder.program.nodes[i], OPS):
            raise Refusal.of(loop, "summary_of_op", kind=builder.program.nodes[i].kind)
    node = builder.add(item, Summary, (), loop, deps, calls=[], summary=layout, member=True)
    builder.own(loop)   # the steps write the values of `layout`, names renamed: those are checked
    for _, _, value in layout:
        nested_calls.check(builder, node, value)
    return True


def _summary_call(builder, stmt) -> cst.Call | None:
    """The summary op a statement of the loop's body calls, alone; None for anything else."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    if not isinstance(call, cst.Call) or builder.qualified(call.func) not in summaries.summary_ops():
        return None
    return call
