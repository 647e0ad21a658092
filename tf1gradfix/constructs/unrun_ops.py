"""A graph statement whose result nobody keeps: `tf.assign(w, 0.0)`, `tf.reduce_sum(x)`.

TF1 adds the op to the graph and nothing else: no run can fetch it (no name holds
it), so it never executes, and an assign built this way never changes its
variable. The rewrite drops the statement with a note. Kept refused: ops that do
something when built (variables, collections, summaries, layers, random ops,
whose seeds follow the graph's op count), a program that reaches ops another way
(by their graph names, a graph dump), and arguments that compute something
(a call, an operator) whose errors or effects TF1 would have seen there.
"""

from __future__ import annotations

import libcst as cst
import libcst.helpers

from tf1gradfix.cst.syntax import loads, matches
from tf1gradfix.cst.walk import walk

LOOKUPS = {"get_tensor_by_name", "get_operation_by_name", "as_graph_def", "get_operations", "as_graph_element"}


def model(builder, item, call: cst.Call, q: str) -> bool:
    """Drops the statement (True) when TF1 only built its op; False otherwise."""
    if not q.startswith("tensorflow.") or not _inert(q) or not _plain_args(builder, call) or _reaches_by_name(builder):
        return False
    item.drop = True
    builder.note(call, "TFG209", f"`{q.replace('tensorflow.', builder.program.tf_alias + '.', 1)}(...)` dropped: its "
                 "result is kept by no name, so TF1 built the op and never ran it; TF2 would run it at once")
    return True


def _inert(q: str) -> bool:
    """An op known to do nothing until run (graph_ops.toml `unrun_ops`, `pure`): no
    call that creates state, fills a collection, draws numbers or acts on the host."""
    return matches(q, "unrun_ops") or matches(q, "pure")


def _plain_args(builder, call: cst.Call) -> bool:
    """Arguments that are names bound before, literals, attributes (`tf.float32`) or
    lists and tuples of them: dropping them drops no computation."""
    for a in call.args:
        for node in walk(a.value):
            if isinstance(node, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript, cst.Lambda,
                                 cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.GeneratorExp, cst.ListComp)):
                return False
        if any(name not in builder.program.final and name not in _bound(builder) for name in loads(a.value)):
            return False
    return True


def _bound(builder) -> set[str]:
    """Names any statement of the module binds (a name never bound would raise in TF1)."""
    if not hasattr(builder, "_unrun_bound"):
        builder._unrun_bound = _module_bound(builder.module)
    return builder._unrun_bound


def _module_bound(module: cst.Module) -> set[str]:
    out: set[str] = set()
    for node in walk(module):
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            out.add(node.target.value)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            out |= {(al.asname.name.value if al.asname and isinstance(al.asname.name, cst.Name)
                     else (cst.helpers.get_full_name_for_node(al.name) or "").split(".")[0]) for al in node.names}
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            out.add(node.name.value)
        elif isinstance(node, cst.For) and isinstance(node.target, cst.Name):
            out.add(node.target.value)
    return out


def _reaches_by_name(builder) -> bool:
    """Does the program reach ops other than through names (graph lookups, a dump)?"""
    return any(isinstance(n, cst.Attribute) and n.attr.value in LOOKUPS for n in walk(builder.module))
