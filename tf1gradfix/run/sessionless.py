"""Why a file that builds graph code but opens no session is not restructured.

The restructuring starts from the runs of a `tf.Session` or `tf.InteractiveSession`
the file opens (owners.GraphCallScan). A file that opens none is not restructured on
its own, and says why, each reason with its line (rules/refusals.toml):

- its graph runs in a session of another kind (`tf.train.Supervisor`...): TFG916;
- graph code at module level, which no session of the file runs: TFG916;
- a model module, its graph code all in functions and classes: it runs the graph in
  no session (`module_without_session`) or in one it is handed, a parameter, an
  attribute set elsewhere, the default session (`module_runs_given_session`); both
  are TFG923, migrated with the script of the folder that opens the session (project.py);
- and whichever of these, what of its classes the rewrite cannot follow even then
  (TFG904): a base class, graph code in methods `__init__` does not reach.

A file with graph code always gets one reason at least. Python's `ast` only:
`check` and the no-session path never import LibCST.
"""

from __future__ import annotations

import ast

from tf1gradfix.detect.ast_names import dotted

# Codes of running the graph or initializing its variables, not building it (rules/codes.toml).
_RUNNING = frozenset({"TFG103", "TFG104", "TFG105", "TFG106", "TFG107"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def reasons(tree: ast.Module, hits, others, col) -> list[tuple]:
    """The diagnostics (line, col, code, message, safety) of a module that opens no session:
    one at least when it holds graph code. `hits`: its rule hits (ast_rules.Hit); `others`:
    (call, qualified name) of the sessions of other kinds it makes; `col(line, offset)`:
    the column of a UTF-8 byte offset."""
    graph = [h for h in hits if h.rule.safety == "proven"]   # (constructs only a restructuring fixes)
    if not graph:
        return []
    building = [h for h in graph if h.rule.code not in _RUNNING]
    out = [reason for cls in tree.body if isinstance(cls, ast.ClassDef)
           for reason in _class_reasons(cls, building, tree)]
    return sorted([*out, _session_reason(tree, graph, others, col)])


def _session_reason(tree: ast.Module, graph, others, col) -> tuple:
    from tf1gradfix.model.refusals import diagnostic

    if others:
        call, name = others[0]
        return diagnostic(call.lineno, col(call.lineno, call.col_offset), "session_of_other_kind", api=name)
    inside = [(min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)]), stmt.end_lineno)
              for stmt in tree.body if isinstance(stmt, _DEFS)]
    outside = [h for h in graph if not any(start <= h.line <= end for start, end in inside)]
    if outside:
        first = min(outside, key=lambda h: (h.line, h.col))
        return diagnostic(first.line, first.col, "graph_without_session")
    run = _first_run(tree, {id(h.node) for h in graph if h.rule.code == "TFG106"})
    if run is None:
        first = min(graph, key=lambda h: (h.line, h.col))
        return diagnostic(first.line, first.col, "module_without_session")
    call, session = run
    return diagnostic(call.lineno, col(call.lineno, call.col_offset), "module_runs_given_session", session=session)


def _first_run(tree: ast.Module, default: set[int]) -> tuple[ast.Call, str] | None:
    """The first call running the graph (`sess.run(...)`, `t.eval()`, `op.run()`), in the
    order of the source, and what its session is. `default`: the `.eval`/`.run` attributes
    the rules read as runs in the default session (TFG106)."""
    imported = set(_imports(tree))
    found: list[tuple[ast.Call, str]] = []

    def visit(node: ast.AST, function, cls) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                visit(child, child, cls)
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, None, child)
                continue
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                session = _session_of(child.func, function, cls, default, imported)
                if session is not None:
                    found.append((child, session))
            visit(child, function, cls)

    visit(tree, None, None)
    return min(found, key=lambda f: (f[0].lineno, f[0].col_offset), default=None)


def _session_of(func: ast.Attribute, function, cls, default: set[int], imported: set[str]) -> str | None:
    """What `func`'s call runs the graph in, described for the user; None: not a run."""
    root = func.value
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(root, ast.Name) and root.id in imported:
        return None   # (`subprocess.run`, `tf.app.run`)
    if id(func) in default or func.attr == "eval":
        return f"the default session, read by `.{func.attr}()`"
    if func.attr not in ("run", "partial_run"):
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name):
        return _name_origin(receiver.id, function)
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and cls is not None:
        return _attribute_origin(receiver.value.id, receiver.attr, cls)
    return None


def _params(function) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _name_origin(name: str, function) -> str:
    if function is not None and name in _params(function):
        return f"`{name}`, a parameter of `{function.name}`"
    bound = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Store)] if function is not None else []
    return f"`{name}`, bound at line {bound[0].lineno}" if bound else f"`{name}`, which this function does not bind"


def _attribute_origin(instance: str, attr: str, cls: ast.ClassDef) -> str:
    """`self.sess`: set from a parameter of a method, set otherwise, or never set in the class."""
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS) or not _params(method):
            continue
        self_name, params = _params(method)[0], _params(method)[1:]
        for node in ast.walk(method):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(dotted(t) == f"{self_name}.{attr}" for t in targets):
                value = node.value
                if isinstance(value, ast.Name) and value.id in params:
                    return f"`{instance}.{attr}`, set from parameter `{value.id}` of `{cls.name}.{method.name}`"
                return f"`{instance}.{attr}`, set at line {node.lineno}"
    return f"`{instance}.{attr}`, which class `{cls.name}` never sets"


def _class_reasons(cls: ast.ClassDef, building, tree: ast.Module) -> list[tuple]:
    """What of a class holding graph code the rewrite of a model class cannot follow
    (constructs/model_classes.py), with or without a session: its base class, and graph
    code in methods its `__init__` does not reach."""
    from tf1gradfix.model.refusals import diagnostic

    inside = [h for h in building if cls.lineno <= h.line <= cls.end_lineno]
    if not inside:
        return []
    out = []
    bases = [b for b in cls.bases if dotted(b) != "object"]
    if bases or cls.keywords:
        base = bases[0] if bases else None
        source = _imports(tree).get((dotted(base) or "").partition(".")[0]) if base is not None else None
        if isinstance(source, (ast.Import, ast.ImportFrom)) and \
                _module_of(source, dotted(base)).partition(".")[0] not in ("tensorflow", "keras"):
            out.append(diagnostic(cls.lineno, cls.col_offset + 1, "class_base_elsewhere", cls=cls.name,
                                  base=dotted(base), module=_module_of(source, dotted(base))))
        else:
            out.append(diagnostic(cls.lineno, cls.col_offset + 1, "class_with_base", cls=cls.name))
    methods = {m.name: m for m in cls.body if isinstance(m, _FUNCTIONS)}
    holding = {name for name, m in methods.items() if any(m.lineno <= h.line <= m.end_lineno for h in inside)}
    named = {name: {n.attr for n in ast.walk(m) if isinstance(n, ast.Attribute) and n.attr in methods}
             for name, m in methods.items()}
    unreached = holding - _reached(named, "__init__")
    if unreached:
        called = {other for name, refs in named.items() for other in refs if other != name}
        roots = [m for name, m in methods.items() if name not in called and _reached(named, name) & unreached]
        root = min(roots or [methods[name] for name in unreached], key=lambda m: m.lineno)
        out.append(diagnostic(root.lineno, root.col_offset + 1, "class_graph_not_from_init", cls=cls.name,
                              method=root.name))
    return out


def _reached(named: dict[str, set[str]], start: str) -> set[str]:
    """The methods `start` names, and those they name, and so on (`start` itself too)."""
    seen, todo = set(), [start] if start in named else []
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(named[name] - seen)
    return seen


def _imports(tree: ast.Module) -> dict[str, ast.Import | ast.ImportFrom]:
    """Name -> the module-level import binding it."""
    return {a.asname or a.name.partition(".")[0]: stmt for stmt in tree.body
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) for a in stmt.names}


def _module_of(stmt: ast.Import | ast.ImportFrom, base: str | None) -> str:
    """The module the import binding a base class's name (`Base`, `m.Base`) reads."""
    if isinstance(stmt, ast.ImportFrom):
        return "." * stmt.level + (stmt.module or "")
    head = (base or "").partition(".")[0]
    return next((a.name for a in stmt.names if (a.asname or a.name.partition(".")[0]) == head), head)
