"""The graph-building block as the model reads it: flattened, the scope, graph and session
`with`s it runs under removed, and the scopes TF1 enters before each statement.

A session `with` names a session; a graph or `control_dependencies(UPDATE_OPS)` `with`
is dropped (TF2 has no graph, and runs ops in order); a name or variable scope becomes
the scope entries of the statements inside it, whose unique names are taken in the
order TF1 enters them. Part of the model builder (graph.py's ModelBuilder, whose fields
these methods read and fill: they are declared here).
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.constructs import graph_contexts, scope_reuse
from tf1gradfix.constructs.class_settings import branch as settled_branch
from tf1gradfix.cst.syntax import Refusal, arg, enters_new_graph, literal_string, matches, name_nodes
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.program import Item, Program, ScopeEntry
from tf1gradfix.model.tf1_names import GraphNames, VariableScopes


class BlockReader:
    """The block's statements and scopes (a base of ModelBuilder)."""

    module: cst.Module
    program: Program
    decided: dict[int, Any]
    entered: tuple[ScopeEntry, ...]
    graph_names: GraphNames
    variable_scopes: VariableScopes
    options: Any
    update_ops_names: set[str]

    def qualified(self, expr: cst.BaseExpression) -> str | None:
        raise NotImplementedError   # (ModelBuilder.qualified)

    def _enter(self, item: Item) -> None:
        """The scopes TF1 leaves and enters before it runs `item`, in order: a variable scope
        left counts its inner scopes afresh, a scope entered takes its name scope's unique name."""
        kept = 0
        while kept < min(len(self.entered), len(item.entries)) and self.entered[kept] is item.entries[kept]:
            kept += 1
        for left in reversed(self.entered[kept:]):
            if left.variable:
                self.variable_scopes.close(left.prefix[:-1])
        scope = item.entries[kept - 1].scope if kept else ""
        for entry in item.entries[kept:]:
            if entry.variable:
                self.variable_scopes.open(entry.prefix[:-1])
            entry.scope = scope = self.graph_names.unique(f"{scope}{entry.label}") + "/"
        self.entered = item.entries
        item.scope = scope or ""

    def _flatten(self, body, prefix: str, lead: tuple, stats: bool = False, scope: tuple[ScopeEntry, ...] = (),
                 reused: bool = False) -> None:
        for stmt in body:
            decision = self.decided.get(id(stmt)) if type(stmt) is cst.If else None
            if decision is not None and decision.taken is not None:   # (inside a `with`: build_flow.built did the rest)
                self._flatten(settled_branch(stmt, decision.taken), prefix, tuple(lead) + tuple(stmt.leading_lines),
                              stats, scope, reused)
                lead = ()
                continue
            if isinstance(stmt, cst.With):
                kind, info = self._with_kind(stmt, prefix)
                if kind is not None:
                    inner = list(stmt.body.body)
                    carried = tuple(lead) + tuple(stmt.leading_lines)
                    if kind == "session":
                        self.program.sessions.add(info)
                        self._flatten(inner, prefix, carried, stats, scope, reused)
                    elif kind in ("graph", "update_ops"):   # TF2 has no graph, and runs ops in order
                        self._flatten(inner, prefix, carried, stats or kind == "update_ops", scope, reused)
                    elif kind == "name_scope":   # (its name: made unique in the graph when TF1 enters it, _enter)
                        self._flatten(inner, prefix, carried, stats, (*scope, ScopeEntry(False, info, prefix)), reused)
                    else:   # (a variable scope: its label, the scope inside it, its reuse, from where it reuses)
                        label, inside, reuse = info
                        entered = (*scope, ScopeEntry(True, label, inside, reuse=reuse))
                        at = scope_reuse.reuse_index(stmt)
                        at = len(inner) if at is None else at
                        self._flatten(inner[:at], inside, carried, stats, entered, reused)
                        if at < len(inner):   # (`scope.reuse_variables()` goes: what follows reuses)
                            above = tuple(getattr(inner[at], "leading_lines", ()))
                            self._flatten(inner[at + 1:], inside, above, stats, entered, True)
                    lead = ()
                    continue
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            collection = isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and isinstance(small.targets[0].target, cst.Name) and self._update_ops(small.value)
            if collection:   # `update_ops = tf.get_collection(UPDATE_OPS)`: read by a `with` only (see deps_of)
                self.update_ops_names.add(cast(cst.Name, cast(cst.Assign, small).targets[0].target).value)
            options = self.options is not None and stmt in self.options.statements   # `config = tf.ConfigProto()`
            self.program.items.append(Item(stmt, prefix, lead=lead, stats=stats, drop=collection or options, entries=scope,
                                           collects=bool(collection), reused=reused))
            lead = ()

    def _with_kind(self, stmt: cst.With, prefix: str = ""):
        if len(stmt.items) != 1 or stmt.asynchronous is not None:
            return None, None
        item = stmt.items[0]
        call = item.item
        if not isinstance(call, cst.Call):
            return None, None
        q = self.qualified(call.func)
        session = graph_contexts.entered_session(self, stmt)
        if session is not None:
            return "session", session
        if enters_new_graph(stmt, self.qualified) or graph_contexts.kind(self, stmt) == "graph":
            return "graph", None   # TF2 has no graphs to enter, and places ops itself
        if q == "tensorflow.control_dependencies" and item.asname is None and len(call.args) == 1 \
                and self._update_ops(call.args[0].value):
            return "update_ops", None
        if matches(q, "sessions"):
            if item.asname is None or not isinstance(item.asname.name, cst.Name):
                raise Refusal.of(stmt, "session_with_without_as")
            self.session_arguments(call, stmt)
            return "session", item.asname.name.value
        if q == "tensorflow.name_scope":
            scope = literal_string(arg(call, 0, "name"))
            if scope is None or len(call.args) != 1 or not scope or item.asname is not None and not (
                    isinstance(item.asname.name, cst.Name) and self.unused(item.asname.name.value)):
                raise Refusal.of(stmt, "name_scope_form")
            return "name_scope", scope
        if q == "tensorflow.variable_scope":
            return "scope", scope_reuse.entered(self, stmt, call, prefix)
        return None, None

    def session_arguments(self, call: cst.Call, where: cst.CSTNode) -> None:
        """Only `config=` options, dropped with a note (session_options), and the graph
        the block enters (graph_contexts)."""
        call = graph_contexts.without_graph(self, call)
        if call.args:   # (the builder has options wherever a session of the module has arguments)
            self.options.check(call, where, self)

    def unused(self, name: str) -> bool:
        """No statement of the module reads `name`, the `as` name of name scopes (a string)."""
        targets = {id(i.asname.name) for w in walk(self.module) if type(w) is cst.With for i in w.items
                   if i.asname is not None and isinstance(i.asname.name, cst.Name) and isinstance(i.item, cst.Call)
                   and self.qualified(i.item.func) == "tensorflow.name_scope"}
        return all(id(n) in targets for n in name_nodes(self.module) if n.value == name)

    def _update_ops(self, expr: cst.BaseExpression) -> bool:
        """`tf.get_collection(tf.GraphKeys.UPDATE_OPS)`, or a name bound to it."""
        if isinstance(expr, cst.Name):
            return expr.value in self.update_ops_names
        if not isinstance(expr, cst.Call) or not matches(self.qualified(expr.func), "collection_getters") or len(expr.args) != 1:
            return False
        key = expr.args[0].value
        return self.qualified(key) == "tensorflow.GraphKeys.UPDATE_OPS" or literal_string(key) == "update_ops"
