"""A Python loop in graph code that edits gradients pair by pair:

    masked = []
    for g, var in grads_and_vars:
        if var is w:
            g = g * mask
        masked.append((g, var))

TF1 runs it once, at graph-building time, to build ops. In TF2 it runs in the
step function, after `tape.gradient`: the loop and the empty list it fills
become statements of the model (the list is made afresh in every call). Only
loops over graph values whose body neither runs the graph nor builds
variables, and lists started empty just before in the same block. A loop over a
variable collection (`for v in tf.trainable_variables(): l2 += tf.nn.l2_loss(v)`) is
one too: the collection is written as the list TF1 held there (graph_collections),
and the body may not read a variable's name (TF2's names differ).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import carried_values, graph_collections, summaries, var_lists
from tf1gradfix.cst.syntax import Refusal, loads, name_nodes
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Optimizer, Placeholder, Static, Tensor, TrainOp, Variable, VarList


def model(builder, item, position: int) -> bool:
    """Adds nodes for a graph loop at `item` (a compound statement); False if not one."""
    program = builder.program
    loop = item.stmt
    if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
        return False
    if builder.runs_graph(loop):   # (`for p in sess.run(params)`: host code)
        return False
    bound = _bound(loop)
    filled = _appended(loop) - bound
    listed = [(call, q) for call, q in builder.calls(loop.iter) if var_lists.is_collection(call, builder.qualified)]
    made = (bound - set(loads(loop.target))) | filled   # (a loop that only prints the variables: host code)
    if not builder.deps_of(loop.iter) and not (listed and made):
        return False
    collections, owned, read = graph_collections.model(builder, loop.iter, listed) if listed else ([], set(), set())
    for call in owned:
        builder.own(call)
    for name in bound | filled:
        node = program.node(name)
        if isinstance(node, (Placeholder, Variable, Optimizer, TrainOp, VarList)):
            raise Refusal.of(loop, "graph_loop_rebinds", kind=node.kind, name=name)
    for name in sorted(filled):
        start = carried_values.start(program, name, position)
        if start is None:
            raise Refusal.of(loop, "graph_loop_fills_other", name=name)
        builder.add(start, Tensor, (name,), start.stmt.body[0].value, (), calls=[])
    carried = (bound - set(loads(loop.target))) & _read(loop)
    for name in sorted(carried - filled):   # (`l2 += tf.nn.l2_loss(w)`: its start moves with it)
        node = program.node(name)
        if (node is None or isinstance(node, Static)) and not carried_values.carry(builder, name, position):
            raise Refusal.of(loop, "host_name_rebound_to_graph", name=name)
    for call, q in builder.calls(loop):
        if q is not None and (q.endswith("Optimizer") or q in ("tensorflow.Variable", "tensorflow.get_variable",
                                                               "tensorflow.placeholder", "tensorflow.gradients")
                              or q in summaries.summary_ops()):
            raise Refusal.of(call, "graph_in_loop", api=q)
    if collections:
        graph_collections.check_names(loop.body)
    deps = builder.deps_of(loop) | read
    builder.add(item, Tensor, tuple(sorted(filled)) + tuple(sorted(bound)), loop, deps,
                calls=[q for call, q in builder.calls(loop) if q and call not in owned], collections=collections)
    return True


def _bound(loop: cst.For) -> set[str]:
    names = set(loads(loop.target))

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(loads(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(loads(node.target))

    loop.body.visit(V())
    return names


def _read(loop: cst.For) -> set[str]:
    """Names the body reads (an augmented assignment reads its target; a plain one does not)."""
    targets = {id(t.target) for t in walk(loop.body) if type(t) is cst.AssignTarget}
    return {n.value for n in name_nodes(loop.body) if id(n) not in targets}


def _appended(loop: cst.For) -> set[str]:
    names = set()

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend") \
                    and isinstance(func.value, cst.Name):
                names.add(func.value.value)

    loop.body.visit(V())
    return names
