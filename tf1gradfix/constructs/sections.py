"""Scripts in sections: a module that builds a graph, runs it in a session, closes
the session, then builds more graph code (often rebinding the same names) and
runs that in a new session. Each section is rewritten as a program of its own,
in order, when no later section reads a graph value of an earlier one (a new
session would hold its own values of the earlier variables; TF2 has one).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_names, loads, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import LayerNode, Variable, VariableGroup
from tf1gradfix.rules.catalog import host_value


def split(module: cst.Module, qualified) -> list[list[cst.BaseStatement]]:
    """The module's statements cut after each closed session (a session `with`, or
    `sess.close()`), where more graph code follows; one list when there is no cut."""
    sessions = {cast(cst.Name, cast(cst.Assign, cast(cst.SimpleStatementLine, stmt).body[0]).targets[0].target).value
                for stmt in module.body if _session_assignment(stmt, qualified)}
    sections: list[list[cst.BaseStatement]] = [[]]
    for stmt in module.body:
        sections[-1].append(stmt)
        if _closes_session(stmt, sessions, qualified):
            sections.append([])
    merged = [sections[0]]
    for section in sections[1:]:
        if section and _builds_graph(section, qualified):
            merged.append(section)
        else:   # only host code after the session: it stays with it
            merged[-1] += section
    return merged


def check_reads(section: list[cst.BaseStatement], earlier: set[str]) -> None:
    """A section may rebind the names of earlier sections' graphs, never read them."""
    bound: set[str] = set()
    for stmt in section:
        own = bound_names(stmt)
        read = (set(loads(stmt)) - bound - own) & earlier
        if read:
            raise Refusal.of(stmt, "section_read_after_close", name=sorted(read)[0])
        bound |= own


def check_shared_graph(part, inside: set[int], program, taken: set[str] | None, graph_wide, qualified) -> set[str]:
    """Without `tf.reset_default_graph()` a later section builds into the same TF1 graph
    as the earlier ones: what reads the whole graph (collections, the variable store)
    sees their variables too, and a variable named like an earlier one is renamed
    (`w_1`). Refused there. `inside`: ids of the section's nodes; `taken`: the TF1 names of earlier sections' variables (None
    for the first section); returns them with this section's."""
    made = [n for n in program.nodes if isinstance(n, (Variable, LayerNode))]
    names = {_tf1_name(n) for n in made} | {m.full_name or "Variable" for n in program.nodes
                                            if isinstance(n, VariableGroup) for m in n.members}
    if taken is None or any(_is_reset(stmt, qualified) for stmt in part):
        return names
    for call, q, _ in graph_wide:
        if id(call) in inside:
            raise Refusal.of(call, "section_without_reset", api=q)
    for node in made:
        name = _tf1_name(node)
        if name in taken:
            raise Refusal.of(node.value, "section_variable_name_reused", name=name)
    for group in (n for n in program.nodes if isinstance(n, VariableGroup)):
        for m in group.members:
            if (m.full_name or "Variable") in taken:
                raise Refusal.of(m.call, "section_variable_name_reused", name=m.full_name or "Variable")
    return taken | names


def _tf1_name(node) -> str:
    """The TF1 name of a variable or of a layer's weights ("Variable" where none is given)."""
    return (node.full_name if isinstance(node, Variable) else node.tf1_name()) or "Variable"


def _is_reset(stmt, qualified) -> bool:
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
        and matches(qualified(small.value.func), "graph_resets")


def _session_assignment(stmt, qualified) -> bool:
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
        and isinstance(small.value, cst.Call) and matches(qualified(small.value.func), "sessions")


def _closes_session(stmt, sessions: set[str], qualified) -> bool:
    if isinstance(stmt, cst.With):
        item = stmt.items[0] if len(stmt.items) == 1 else None
        return item is not None and isinstance(item.item, cst.Call) and matches(qualified(item.item.func), "sessions")
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "close" \
        and isinstance(call.func.value, cst.Name) and call.func.value.value in sessions


def _builds_graph(section, qualified) -> bool:
    """A top-level statement of the section calls TensorFlow (outside a session block;
    not its host functions: kinds.toml `host`; nor a session or an initializer, which
    only run what is built: a session that only initializes is read with the section
    before it, constructs/abandoned_sessions.py)."""
    return any(isinstance(stmt, cst.SimpleStatementLine) and any(
        type(node) is cst.Call and (q := qualified(node.func) or "").startswith("tensorflow.") and not host_value(q)
        and not matches(q, "sessions") and not matches(q, "initializers")
        for node in walk(stmt)) for stmt in section)
