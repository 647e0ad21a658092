"""Graph contexts that do not change what the graph computes:

    self.g = tf.Graph()            # a graph the class (or script) makes for itself
    with self.g.as_default():      # ... and only ever enters
        ...
    with tf.device("/cpu:0"):      # where ops run, not what they compute
        ...

The statements inside build the graph as if they were not indented (TF2 has
no graph to enter); the `tf.Graph()` statement goes with its `with`s. A
`tf.device` scope is dropped too, with a note: its statements are split between
`__init__` (the variables) and the step functions (the ops), so no single TF2
`with tf.device` could hold them, and TF2 places ops by itself (soft placement)
without changing their numbers.

A session of that graph (`tf.Session(graph=g)`) is a session like any other, and
`with sess.as_default():` of a session of the module only makes it the default one.
A graph that is used for anything else (`finalize()`, a summary writer,
`get_operation_by_name`), a graph made elsewhere, or a second graph stays
refused: there the graph is more than a container.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, matches, name_nodes
from tf1gradfix.cst.walk import walk

NOTE = "`{scope}` only chose where ops ran; TF2 places them itself with the same results: dropped"


def entered_graph(stmt: cst.With) -> cst.Name | None:
    """`G` of `with G.as_default():` (one item, no `as`, no arguments)."""
    item = stmt.items[0] if len(stmt.items) == 1 else None
    call = item.item if item is not None and item.asname is None else None
    func = call.func if isinstance(call, cst.Call) and not call.args else None
    if isinstance(func, cst.Attribute) and func.attr.value == "as_default" and isinstance(func.value, cst.Name):
        return func.value
    return None


def device_scope(stmt: cst.With, qualified) -> cst.Call | None:
    """The call of `with tf.device(spec):` (one item, no `as`)."""
    item = stmt.items[0] if len(stmt.items) == 1 else None
    call = item.item if item is not None and item.asname is None else None
    if isinstance(call, cst.Call) and matches(qualified(call.func), "device_scopes"):
        return call
    return None


def _statements(body):
    """The statements of `body` and of the `with` blocks in it (where a graph is entered)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.With):
            yield from _statements(stmt.body.body)


def _graph_binding(stmt: cst.CSTNode, qualified) -> str | None:
    """`G` of a statement `G = tf.Graph()`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and isinstance(small.value, cst.Call) and not small.value.args \
            and qualified(small.value.func) == "tensorflow.Graph":
        return small.targets[0].target.value
    return None


def owned(builder, body, module: cst.Module, attributes: dict[str, str] | None) -> dict[str, cst.CSTNode]:
    """The graph the block makes and enters (`G = tf.Graph()`, `with G.as_default():`),
    name -> its binding statement; refused where that graph is used otherwise, made
    twice, or a second graph is entered. `attributes`: a model class's name -> attribute
    (the graph is then `self.G` in the class's other methods and for its callers)."""
    qualified = builder.qualified
    statements = list(_statements(body))
    bindings: dict[str, list[cst.CSTNode]] = {}
    for stmt in statements:
        name = _graph_binding(stmt, qualified)
        if name is not None:
            bindings.setdefault(name, []).append(stmt)
    entered: dict[str, list[cst.Name]] = {}
    for stmt in statements:
        graph = entered_graph(stmt) if isinstance(stmt, cst.With) else None
        if graph is not None and graph.value in bindings:
            entered.setdefault(graph.value, []).append(graph)
    if len(entered) > 1:
        second = sorted(entered)[1]
        raise Refusal.of(entered[second][0], "graph_context_second", name=second, first=sorted(entered)[0])
    out: dict[str, cst.CSTNode] = {}
    for name, uses in entered.items():
        if len(bindings[name]) > 1:
            raise Refusal.of(bindings[name][1], "graph_context_made_twice", name=name)
        binding = bindings[name][0]
        allowed = {id(n) for n in uses} | {id(cast(cst.Assign, cast(cst.SimpleStatementLine, binding).body[0]).targets[0].target)}
        allowed |= {id(a.value) for a in _session_graphs(module, qualified) if a.value.value == name}
        attr = (attributes or {}).get(name)
        shown = f"self.{attr}" if attr is not None else name
        for used in name_nodes(module):   # (names read or bound; not keywords or attribute names)
            if used.value == name and id(used) not in allowed:
                raise Refusal.of(used, "graph_context_other_use", name=shown)
        for node in walk(module) if attr is not None else ():
            if type(node) is cst.Attribute and node.attr.value == attr:
                raise Refusal.of(node, "graph_context_other_use", name=shown)
        out[name] = binding
    return out


def _session_graphs(module: cst.Module, qualified) -> list:
    """The `graph=NAME` arguments of the module's session calls (`tf.Session(graph=g)`): a
    session of the graph, which goes with it."""
    return [a for call in walk(module) if type(call) is cst.Call and matches(qualified(call.func), "sessions")
            for a in call.args if a.keyword is not None and a.keyword.value == "graph" and isinstance(a.value, cst.Name)]


def without_graph(builder, call: cst.Call) -> cst.Call:
    """A session call without its `graph=` of the graph the block enters (checked: owned)."""
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "graph"
                                         and isinstance(a.value, cst.Name) and a.value.value in builder.graphs)]
    return call if len(args) == len(call.args) else call.with_changes(args=args)


def entered_session(builder, stmt: cst.With) -> str | None:
    """`S` of `with S.as_default():` where `S` is the module's one session (`S =
    tf.Session(...)`, `with tf.Session() as S`): it only makes `S` the default session,
    which TF2 does not have; its statements run as if unindented."""
    name = entered_graph(stmt)
    if name is None:
        return None
    made = [node for node in walk(builder.module) if type(node) is cst.Call and matches(builder.qualified(node.func), "sessions")]
    if len(made) != 1:   # (another session could be the default one: which session computes is then not ours to drop)
        return None
    for node in walk(builder.module):
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and node.targets[0].target.value == name.value and isinstance(node.value, cst.Call) \
                and matches(builder.qualified(node.value.func), "sessions"):
            return name.value
        if type(node) is cst.WithItem and node.asname is not None and isinstance(node.asname.name, cst.Name) \
                and node.asname.name.value == name.value and isinstance(node.item, cst.Call) \
                and matches(builder.qualified(node.item.func), "sessions"):
            return name.value
    return None


def kind(builder, stmt: cst.With) -> str | None:
    """"graph" for a `with` whose statements build the graph as if unindented (see the
    module's docstring), with a note for a device scope; refused for `with G.as_default()`
    of a graph the block does not make; None for any other `with`."""
    device = device_scope(stmt, builder.qualified)
    if device is not None:
        scope = cst.Module([]).code_for_node(device)
        builder.note(device, "TFG103", NOTE.format(scope=f"with {scope}"))
        return "graph"
    graph = entered_graph(stmt)
    if graph is None:
        return None
    if graph.value in builder.graphs:
        return "graph"
    if any(q is not None and q.startswith("tensorflow.") for _, q in builder.calls(stmt.body)):
        raise Refusal.of(graph, "graph_context_not_owned", name=graph.value)
    return None


def is_binding(builder, stmt: cst.CSTNode) -> bool:
    """Is `stmt` the `G = tf.Graph()` of the graph the block enters (dropped with its `with`s)?"""
    return any(stmt is binding for binding in builder.graphs.values())
