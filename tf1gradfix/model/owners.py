"""Where a program builds and runs its graph: the graph-building calls, the
session calls and the calls reading graph-wide state, each with the function
(or module) it sits in; and the sessions host code opens.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import mnist_loader
from tf1gradfix.cst.syntax import Refusal, enters_new_graph, matches
from tf1gradfix.cst.walk import token_blind, walk

GRAPH_CALLS = ("tensorflow.placeholder", "tensorflow.placeholder_with_default",
               "tensorflow.Variable", "tensorflow.get_variable")


BLOCKS = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.ClassDef, cst.Lambda)
TRACKED = (cst.FunctionDef, cst.Else, cst.With) + BLOCKS
# The same as exact types: each node class is final, and a set lookup costs far
# less than `isinstance` against a tuple of ABCs on every node of the module.
_TRACKED_TYPES = frozenset(TRACKED)


@token_blind   # (it tracks blocks and calls only)
class GraphCallScan(cst.CSTVisitor):
    """One walk: the graph-building calls, the session calls, the calls that read
    graph-wide state, and for each its innermost function and the compound
    statements between them (instead of a parent table for the whole tree)."""

    def __init__(self, names):
        super().__init__()
        self.names = names
        self.creations: list[cst.Call] = []
        self.sessions: list[cst.Call] = []
        self.graph_wide: list[tuple[cst.Call, str, bool]] = []   # (call, name, inside `with tf.Graph().as_default()`)
        self.graph_wide_in: dict[int, list[tuple[cst.Call, str, bool]]] = {}   # id(function) -> its graph_wide entries
        self.session_arguments = False   # does a session call take arguments (`tf.Session(config=...)`)?
        self.writers = False   # does the module make a summary writer (tf.summary.FileWriter)?
        self.loaders: list[cst.Call] = []       # TF1's MNIST tutorial loader (mnist_loader.py)
        self.graph_seeds: list[cst.Call] = []   # calls setting the graph-level seed it reads
        self.owner_of: dict[cst.Call, cst.FunctionDef | None] = {}
        self.between: dict[cst.Call, tuple] = {}
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _TRACKED_TYPES:
            self.stack.append(node)
        elif kind is cst.Call:
            self._call(cast(cst.Call, node))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) in _TRACKED_TYPES:
            self.stack.pop()

    def _call(self, call: cst.Call) -> None:
        q = self.names.qualified(call.func)
        if q is None:
            return
        if matches(q, "summary_writers"):
            self.writers = True
        if q in mnist_loader.GRAPH_SEEDS or q in mnist_loader.LOADERS:
            (self.graph_seeds if q in mnist_loader.GRAPH_SEEDS else self.loaders).append(call)
        if q in GRAPH_CALLS:
            self.creations.append(call)
        elif matches(q, "sessions"):
            self.sessions.append(call)
            self.session_arguments = self.session_arguments or bool(call.args)
        elif not matches(q, "graph_wide"):
            return
        functions = [i for i, n in enumerate(self.stack) if isinstance(n, cst.FunctionDef)]
        start = functions[-1] + 1 if functions else 0
        self.owner_of[call] = cast(cst.FunctionDef, self.stack[functions[-1]]) if functions else None
        self.between[call] = tuple(n for n in reversed(self.stack[start:]) if not isinstance(n, cst.With))
        if matches(q, "graph_wide"):
            inside = any(isinstance(n, cst.With) and enters_new_graph(n, self.names.qualified) for n in self.stack[start:])
            self.graph_wide.append((call, q, inside))
            self.graph_wide_in.setdefault(id(self.owner_of[call]), []).append((call, q, inside))


def nested_sessions(statements, program, meta, builder) -> dict[cst.CSTNode, str]:
    """Sessions opened in host `statements` (`if __name__ == ...:`, a model class's
    callers): their `with` nodes and `sess = tf.Session()` statements, the `with
    sess.as_default():` of one of them, and the program's one `with tf.Graph().as_default():`
    around one (flattened: TF2 has no graph to enter); names join the program's.
    `builder`: the ModelBuilder, which checks a session's arguments."""
    found: dict[cst.CSTNode, str] = {}   # node -> the name it binds the session to
    names = meta.names

    class V(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            item = node.items[0] if len(node.items) == 1 else None
            if item is not None and isinstance(item.item, cst.Call) and matches(names.qualified(item.item.func), "sessions"):
                if item.asname is None or not isinstance(item.asname.name, cst.Name):
                    raise Refusal.of(node, "session_with_without_as")
                builder.session_arguments(item.item, node)
                program.sessions.add(item.asname.name.value)
                found[node] = item.asname.name.value
            elif item is not None and item.asname is None and (held := default_session(item, program.sessions)):
                found[node] = held   # (`with sess.as_default():` only makes it the default session)
            elif graphs == 1 and enters_new_graph(node, names.qualified):
                found[node] = ""   # (the program's one graph: TF2 has none to enter)

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            small = node.body[0] if len(node.body) == 1 else None
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) \
                    and matches(names.qualified(small.value.func), "sessions"):
                target = small.targets[0].target if len(small.targets) == 1 else None
                if not isinstance(target, cst.Name):
                    raise Refusal.of(node, "session_target")
                builder.session_arguments(small.value, node)
                program.sessions.add(target.value)
                found[node] = target.value

    graphs = sum(type(n) is cst.With and enters_new_graph(n, names.qualified) for n in walk(builder.module))
    for stmt in statements:
        stmt.visit(V())
    return {node: name for node, name in found.items() if name or _opens(node, found)}


def _opens(node: cst.CSTNode, found: dict) -> bool:
    """Does the `with` hold a session `with` or statement of `found`?"""
    return any(inner in found and found[inner] for inner in walk(node))


def default_session(item: cst.WithItem, sessions) -> str | None:
    """`S` of the item `S.as_default()`, `S` one of `sessions`."""
    call = item.item
    if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value == "as_default" and isinstance(call.func.value, cst.Name) \
            and call.func.value.value in sessions:
        return call.func.value.value
    return None


def owner_of(scan: GraphCallScan, call: cst.Call, module: cst.Module, session: bool = False, decided=None):
    """The function (or module) whose body builds the graph; a session may also sit
    in a condition such as `if __name__ == "__main__":`, never in a loop; a variable may sit in
    one `for` loop (constructs/variable_loops.py). `decided`:
    id of an `if` a model class's construction decides -> its Decision (class_settings):
    no condition for the graph."""
    owner, between = scan.owner_of[call], scan.between[call]
    for position, node in enumerate(between):
        if session and isinstance(node, (cst.If, cst.Else)):
            continue
        test = between[position + 1] if isinstance(node, cst.Else) and position + 1 < len(between) else node
        decision = (decided or {}).get(id(test)) if type(test) is cst.If else None
        if decision is not None and decision.taken is None:
            raise decision.refusal(test)
        if decision is not None:
            continue
        if position == 0 and type(node) is cst.For and not session and scan.names.qualified(call.func) in GRAPH_CALLS[2:]:
            continue   # (a variable made in one host loop: constructs/variable_loops.py reads the loop or refuses it)
        if isinstance(node, BLOCKS):
            raise Refusal.of(call, "graph_in_compound_or_class")
    return owner or module


def check_class_owners(cls: cst.ClassDef, owners: dict, classes: dict, groups: dict, opened: dict) -> None:
    """A model class's `__init__` builds the graph; any other owner only runs it."""
    for key in owners:
        if classes.get(key) is not cls and len(opened[key]) != len(groups[key]):
            raise Refusal.of(groups[key][0], "graph_outside_class", cls=cls.name.value)


def check_independent(scan: GraphCallScan, owner, calls: list, sessions: list) -> None:
    """A function may be rewritten alone when it builds and runs its own graph
    and reads nothing graph-wide that another function could have added to."""
    if isinstance(owner, cst.Module):
        raise Refusal.of(calls[0], "graph_in_several_functions")
    if not sessions or len(sessions) == len(calls):
        raise Refusal.of(calls[0], "graph_built_and_run_apart", function=owner.name.value)
    for call, q, graph_with in scan.graph_wide_in.get(id(owner), ()):   # (its own: not a scan of all per function)
        if not graph_with:
            raise Refusal.of(call, "default_graph_shared", api=q)


def tf_alias(module: cst.Module, code) -> tuple[str, cst.SimpleStatementLine | None]:
    """(the name TF2 code is spelled with, the `import tensorflow.compat.v1 as NAME` statement
    that becomes the TF2 import, if that is where the name comes from): `import tensorflow
    [as NAME]` first. `code`: a node's source text."""
    compat = None
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Import):
            for alias in stmt.body[0].names:
                if code(alias.name) == "tensorflow":
                    return (cast(cst.Name, alias.asname.name).value if alias.asname else "tensorflow"), None
                if code(alias.name) == "tensorflow.compat.v1" and alias.asname is not None \
                        and len(stmt.body) == 1 and len(stmt.body[0].names) == 1 and compat is None:
                    compat = stmt
    if compat is not None:
        return cast(cst.Name, cast(cst.AsName, cast(cst.Import, compat.body[0]).names[0].asname).name).value, compat
    raise Refusal.of(module.body[0] if module.body else None, "no_tensorflow_import")
