"""What a model module runs only when it is run as a script: its `if __name__ ==
"__main__":` block and the functions only that block reaches (a `test()` that builds the
model and trains it a few steps in a session of its own).

A script importing the module never runs that code, so the module is read in its place
without it (project.py); the module is itself one more entry point of its group, rewritten
as a program of its own and proven as `python model.py` runs it (project_plan.py,
project_groups.py). Python's parser only.
"""

from __future__ import annotations

import ast


def is_main_block(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side), with no `else`."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not isinstance(stmt.test, ast.Compare):
        return False
    test = stmt.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    named = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    return named and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def own_part(tree: ast.Module) -> list[ast.stmt]:
    """The module's top-level statements that run only when it is run as a script: its
    `__main__` blocks and the top-level functions they reach that open a session (or call
    one that does) and that nothing else of the module names, in source order; empty
    without a `__main__` block. Helpers of host code stay the module's, where an importer
    may read them (`from model import batches`)."""
    mains = [s for s in tree.body if is_main_block(s)]
    if not mains:
        return []
    functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    own = _reached(mains, functions)
    while True:   # (a function anything else names is not its own, nor what only it reaches)
        running = {name for name in own if session_calls(functions[name])}
        while grown := {name for name in own - running if _names(functions[name]) & running}:
            running |= grown
        rest = [s for s in tree.body if s not in mains and getattr(s, "name", None) not in running]
        kept = running - {name for s in rest for name in _names(s)}
        if kept == own:
            break
        own = kept
    return [s for s in tree.body if s in mains or isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            and s.name in own]


# What opening a session is called, however the module spells TensorFlow.
_SESSIONS = frozenset({"Session", "InteractiveSession", "MonitoredSession", "MonitoredTrainingSession",
                       "SingularMonitoredSession"})


def session_calls(stmt: ast.AST) -> list[ast.Call]:
    """The calls opening a session in `stmt` (`tf.Session()`, `tf.compat.v1.InteractiveSession()`)."""
    return [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and (
        n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) in _SESSIONS]


def _names(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}


def _reached(mains: list[ast.stmt], functions: dict[str, ast.stmt]) -> set[str]:
    """The top-level functions the `__main__` blocks name, directly or through them
    (`tf.app.run()` with no arguments names the module's `main`)."""
    seen: set[str] = set()
    todo = list(mains)
    while todo:
        stmt = todo.pop()
        names = [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)]
        if stmt in mains and any(_app_run(n) for n in ast.walk(stmt)):
            names.append("main")
        for name in names:
            if name in functions and name not in seen:
                seen.add(name)
                todo.append(functions[name])
    return seen


def _app_run(node: ast.AST) -> bool:
    """`tf.app.run()` (or `tf.compat.v1.app.run()`): it calls `__main__.main`."""
    return isinstance(node, ast.Call) and not node.args and not node.keywords \
        and isinstance(node.func, ast.Attribute) and node.func.attr == "run" \
        and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "app"


def library(tree: ast.Module, own: list[ast.stmt]) -> ast.Module:
    """The module as an importer sees it: without its own part."""
    return ast.Module(body=[s for s in tree.body if s not in own], type_ignores=[])


def blanked(data: bytes, own: list[ast.stmt], split_lines) -> bytes:
    """`data` with the lines of its own part (decorators included) left empty: the module's
    code as an importer runs it, each line where it was."""
    lines = split_lines(data)
    for stmt in own:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        for k in range(first - 1, stmt.end_lineno):
            ending = lines[k][len(lines[k].rstrip(b"\r\n")):]
            lines[k] = ending or b"\n"
    return b"".join(lines)
