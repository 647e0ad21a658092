"""The host statements of a program, read by HostScan (sites.py): each run becomes a site,
and a graph value read outside a run is refused, naming what it is (a placeholder, a
variable, a session) and where."""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.constructs import global_step, graph_prints, retired_names
from tf1gradfix.cst.syntax import Refusal, binding_counts, graph_ops, stored_name_nodes
from tf1gradfix.model.nodes import Node, Placeholder, Saver, Tensor


class HostReads(cst.CSTVisitor):
    """One host statement of HostScan: its runs become sites, and no graph value
    (`names`) may be read outside a run."""

    def __init__(self, scan: Any, names: set[str]) -> None:
        super().__init__()
        self.scan, self.names = scan, names
        self.stores: set[cst.Name] = set()   # names the statement rebinds (`_, value = sess.run(...)`)

    def visit_Call(self, call: cst.Call) -> bool:
        return not self.scan._site(call) and not self.scan._variable_list(call) and not global_step.host_read(self.scan, call) \
            and not graph_prints.in_host(self.scan, call, self)

    def visit_Dict(self, node: cst.Dict) -> bool:
        if node in self.scan.feed_dict_nodes:
            for e in node.elements:
                e.value.visit(self)
            return False
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value in self.names and node.value.value not in self.scan.p.sessions \
                and node.attr.value in graph_ops()["host_attributes"].get(cast(Node, self.scan.p.node(node.value.value)).kind, ()):
            return False   # `c.get_shape()` of a constant or a variable: the same in TF2, where it exists on the host
        if (node.attr.value in self.scan.attributes or self.scan.host and node.attr.value in self.scan.host.session_attributes) \
                and not (isinstance(node.value, cst.Name) and node.value.value in module_objects(self.scan)):
            if isinstance(self.scan.p.node(self.scan.attributes.get(node.attr.value, "")), Saver):
                raise Refusal.of(node, "class_saver_used", name=node.attr.value)
            raise Refusal.of(node, "graph_value_outside_run", code=cst.Module([]).code_for_node(node))
        node.value.visit(self)
        return False

    def visit_Parameters(self, node: cst.Parameters) -> bool:
        return False

    def visit_With(self, node: cst.With) -> bool:
        if node in self.scan.opened:
            node.body.visit(self)
            return False
        return True

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return node not in self.scan.opened and node not in self.scan.skip

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        self.stores.update(stored_name_nodes(node.target))
        if self.scan.feed_key_store(node.target):   # (`feed[x] = v`: its key is renamed, the value read as any)
            return False
        return not (isinstance(node.target, cst.Name) and node.target.value in self.scan.feed_dicts)

    def visit_For(self, node: cst.For) -> None:
        self.stores.update(stored_name_nodes(node.target))

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node not in self.scan.session_args:   # (a session passed on: the argument goes)
            node.value.visit(self)
        return False

    def _statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        found: cst.CSTNode | None = node
        while found is not None and not isinstance(found, cst.SimpleStatementLine):
            found = self.scan.parent(found)
        return found

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.scan.feed_dicts and node not in self.scan.feed_returns:
            raise Refusal.of(node, "feed_dict_other_use", name=node.value)
        if node.value in self.names:
            graph = None if node.value in self.scan.p.sessions else self.scan.p.node(node.value)
            kind = "session" if graph is None else graph.kind
            if isinstance(graph, Tensor) and node in self.stores:
                return   # host code rebinding a tensor's name: the tensor lives in the step functions
            if node in self.stores and retired_names.fetched_store(self.scan, node, graph, self._statement(node)):
                self.names.discard(node.value)   # (an array from here on: what the run returned)
                return
            if isinstance(graph, Placeholder):
                raise Refusal.of(node, "placeholder_outside_feed", name=node.value)
            if isinstance(graph, Tensor) and graph.unsupported is not None:
                raise graph.unsupported   # (what the value is made with says more than where it is used)
            raise Refusal.of(node, "node_outside_run", kind=kind, name=node.value)


def module_objects(scan: Any) -> frozenset[str]:
    """Names a model class's host code binds only to a module or an attribute of one
    (`import flags`, `FLAGS = tf.flags.FLAGS`), at its top level and nowhere else: never an
    instance of the class, so `FLAGS.keep` is not the instance's `keep`."""
    found = getattr(scan, "_module_objects", None)
    if found is None:
        statements = scan.host.statements if scan.host else []
        modules: set[str] = set()
        for stmt in statements:
            for small in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()):
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    modules |= {cast(cst.Name, a.asname.name).value if a.asname else
                                cst.Module([]).code_for_node(a.name).split(".")[0] for a in small.names}
                elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                        and _dotted_root(small.value) in modules:
                    modules.add(small.targets[0].target.value)
        counts: dict[str, int] = {}
        for stmt in statements:
            for name, n in binding_counts(stmt).items():
                counts[name] = counts.get(name, 0) + n
        found = frozenset(name for name in modules if counts.get(name, 0) <= 1)
        scan._module_objects = found
    return found


def _dotted_root(expr: cst.BaseExpression) -> str | None:
    """`tf` of `tf.flags.FLAGS` (attributes only, nothing called)."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
