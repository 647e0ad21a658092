"""Host functions that run the module's session: `def show(n): s = sess.run(G, {z: noise(n)})`.

A helper that samples or evaluates with the session the module opens is host code
like the loop that calls it: its runs become calls of the step functions, which
exist when it is called. That holds only where every call of the helper comes
after the whole graph is built and the helper is called from module-level code
alone (a call from another function could run it at any time); otherwise the
helper stays a function that may not read graph values (TFG911).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import session_params
from tf1gradfix.cst.syntax import free_names, loads, matches
from tf1gradfix.cst.walk import walk


def runs_session(program, stmt: cst.FunctionDef, position: int, given: str | None = None) -> bool:
    """Whether the module-level function `stmt` (item `position`) is host code of the
    module's session, scanned as such (sites.HostScan): it reads the session as a global,
    or receives it as its parameter `given` (`def evaluate(sess, data)`: session_params)."""
    if not isinstance(stmt.body, cst.IndentedBlock) or stmt.decorators or not (free_names(stmt) & program.sessions or given):
        return False
    name = stmt.name.value
    last_graph = max((pos for pos, item in enumerate(program.items) if item.node is not None), default=-1)
    calls = []
    for pos, item in enumerate(program.items):
        if pos == position or name not in loads(item.stmt):
            continue
        nested = [n for n in walk(item.stmt) if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda))]
        if item.node is not None or any(name in loads(n) for n in nested):
            return False   # (read by graph code, or by another function or class)
        calls.append(pos)
    return bool(calls) and min(calls) > last_graph


def local_names(stmt: cst.FunctionDef) -> set[str]:
    """The names a function binds or receives (they hide the module's)."""
    return set(loads(stmt.body)) - free_names(stmt) | {
        p.name.value for p in (*stmt.params.posonly_params, *stmt.params.params, *stmt.params.kwonly_params)}


def running(functions: dict[str, cst.FunctionDef], body, qualified) -> set[str]:
    """The functions of `functions` that call `.run` on a session the module-level
    statements `body` open (`sess = tf.Session()`, `with tf.Session() as sess:`): host
    code, not graph code a statement calling them builds (model.graph's helpers)."""
    sessions: set[str] = set()
    for stmt in body:
        for node in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef)):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and matches(qualified(node.value.func), "sessions"):
                sessions |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
            elif isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call) and matches(qualified(node.item.func), "sessions") \
                    and node.asname is not None and isinstance(node.asname.name, cst.Name):
                sessions.add(node.asname.name.value)
    given = _given(functions, body, sessions)
    return {name for name, func in functions.items()
            if any(type(c) is cst.Call and isinstance(c.func, cst.Attribute) and c.func.attr.value == "run"
                   and isinstance(c.func.value, cst.Name)
                   and c.func.value.value in (sessions & free_names(func)) | given.get(name, set())
                   for c in walk(func.body))}


def _given(functions: dict[str, cst.FunctionDef], body, sessions: set[str]) -> dict[str, set[str]]:
    """The parameters of `functions` that a call in `body` passes one of `sessions` to
    (`evaluate(sess, data)`: `evaluate`'s first), by position or keyword."""
    out: dict[str, set[str]] = {}
    for stmt in body:
        for call in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef)):
            if type(call) is not cst.Call or not isinstance(call.func, cst.Name) or call.func.value not in functions:
                continue
            for k, a in enumerate(call.args):
                if a.star or not (isinstance(a.value, cst.Name) and a.value.value in sessions):
                    continue
                name = session_params.parameter(functions[call.func.value], 0, k, a)
                if name is not None:
                    out.setdefault(call.func.value, set()).add(name)
    return out
