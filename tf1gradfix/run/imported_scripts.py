"""A file that opens a session of its own and that another file of its folder imports
graph code from (`from model import TextNet` where model.py also trains one at import, or
in a function its classes call): it cannot be read in place of its import (the session
would run in the importer), and rewritten alone its importer would import the TF2 form
it no longer builds. Both are refused, each naming the other (project_plan.py); a session
only `python model.py` opens is own_runs.py's, and migrated with the importers.

Reads with Python's parser alone, each file of the folder once, and only those whose bytes
spell an import of a listed file; an importer that opens no session of its own runs
nothing it imports in one (a function that builds and runs its own graph migrates whole).
"""

from __future__ import annotations

import ast
import os
import re

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.run import own_runs
from tf1gradfix.run import project_text as layout


def refusals(folder: str, paths: list[str], known, reader) -> dict[str, tuple]:
    """Path -> (path, diagnostic) of each such file and of each listed file importing from
    it. `known(path)`: project_plan's Info of a file (read and analyzed once); `reader(path)`:
    its bytes."""
    listed = {os.path.basename(p)[:-3]: p for p in paths if p.endswith(".py")}
    if not listed:
        return {}
    spelled = re.compile(rb"^[ \t]*(?:from|import)[ \t]+(" + b"|".join(re.escape(s.encode()) for s in listed)
                         + rb")\b", re.M)
    try:
        entries = sorted(e for e in os.listdir(folder) if e.endswith(".py"))
    except OSError:
        return {}
    by_path = {os.path.abspath(p): p for p in paths}
    out: dict[str, tuple] = {}
    for entry in entries:
        path = by_path.get(os.path.join(folder, entry), os.path.join(folder, entry))
        data = reader(path)
        importer = known(path) if data is not None and spelled.search(data) else None
        if importer is None or not importer.session:   # (one opening none runs nothing it imports itself)
            continue
        for stmt in importer.tree.body:
            found = _imported_graph(stmt, importer.tree, path, listed, known)
            if found is None:
                continue
            module, name, line, (session, uncalled) = found
            stem = os.path.basename(module)[:-3]
            if uncalled:   # (the session in a function nothing calls: said so, with the function)
                first = diagnostic(line, 1, "project_imported_session_uncalled", name=name,
                                   importer=os.path.basename(path), session=session, function=uncalled)
                second = diagnostic(stmt.lineno, stmt.col_offset + 1, "project_imports_session_uncalled", name=name,
                                    module=stem, session=session, function=uncalled)
            else:
                first = diagnostic(line, 1, "project_imported_session", name=name, importer=os.path.basename(path),
                                   session=session)
                second = diagnostic(stmt.lineno, stmt.col_offset + 1, "project_imports_session", name=name,
                                    module=stem, session=session)
            out.setdefault(module, (module, first))
            if path in paths or os.path.abspath(path) in by_path:
                out.setdefault(path, (path, second))
    return out


def _imported_graph(stmt: ast.stmt, tree: ast.Module, path: str, listed: dict, known):
    """(module path, name, line of its definition, the module's session: `_session_site`)
    of a name `stmt` imports from a listed file that opens a session of its own, where
    that name's definition builds graph code; else None."""
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module in listed:
        module = listed[stmt.module]
    elif isinstance(stmt, ast.Import) and len(stmt.names) == 1 and stmt.names[0].name in listed:
        module = listed[stmt.names[0].name]
    else:
        return None
    found = known(module) if os.path.abspath(module) != os.path.abspath(path) else None
    if found is None or not found.session or found.own or not found.lines:
        return None
    if isinstance(stmt, ast.ImportFrom):
        names = (layout.star_names(found.tree) or set()) if layout.is_star(stmt) else {a.name for a in stmt.names}
    else:
        uses = layout.attribute_uses(tree, layout.bound_name(stmt), layout.top_names(found.tree))
        names = set(layout.top_names(found.tree)) if uses is None else {n.attr for n in uses}
    session = _session_site(found.tree)
    for name, defined in layout.top_names(found.tree).items():
        if name in names and not isinstance(defined, (ast.Import, ast.ImportFrom)) \
                and any(defined.lineno <= line <= defined.end_lineno for line in found.lines):
            return module, name, defined.lineno, session
    return None


def _session_site(tree: ast.Module) -> tuple[int, str]:
    """(where the module first opens a session outside its own part, its first line if it
    opens one some other way; the top-level function opening it where nothing in the module
    names that function, else ""): a test nobody calls (`def test(): ...` with its call
    commented out), which `if __name__ == "__main__":` would make the module's own part."""
    own = own_runs.own_part(tree)
    line, where = min(((call.lineno, stmt) for stmt in tree.body if stmt not in own
                       for call in own_runs.session_calls(stmt)), default=(1, None), key=lambda hit: hit[0])
    if not isinstance(where, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return line, ""
    named = any(isinstance(n, ast.Name) and n.id == where.name for stmt in tree.body if stmt is not where
                for n in ast.walk(stmt))
    return line, "" if named else where.name
