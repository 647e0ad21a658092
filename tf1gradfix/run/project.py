"""Projects of several files: a model module (a class or builder functions that build a
graph, no session) and the script of its folder that imports it (`from model import Net`).

The script is analyzed with the module's code in place of its import, between two
marker statements, so the class or builder is seen as if the script defined it; the
rewrite is split back at the markers and each file gets its own changes. Both files
are written, or neither. Never imports TensorFlow, never runs user code.

`plan` (project_plan.py) finds the projects among the files given; here, what keeps a
planned project's modules from being read in place of their imports, the project's
rewrite, and its outcomes, one per file.
"""

from __future__ import annotations

import ast
import os
from functools import partial

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.records import field, record, replace
from tf1gradfix.run import own_runs
from tf1gradfix.run import project_text as layout
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
from tf1gradfix.run.project_plan import Project, _imports, _read, _star_reads, _stem, info, plan

__all__ = ["Project", "plan", "process", "outcomes", "read_files", "processed", "finish", "write_all"]


# Statements a model module may hold at its top level: what importing it runs is then
# only definitions, which run the same wherever they are.
_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def _module_refusal(path: str, tree: ast.Module, project: Project, own: list[ast.stmt]) -> tuple | None:
    """Why a module cannot be read in place of its import, if it cannot: its import of another
    module of the folder (the script's or not) would stay an import of that file as it is."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        siblings = {name[:-3] for name in os.listdir(folder) if name.endswith(".py")}
    except OSError:
        siblings = set()
    stems = ({_stem(m) for m in project.modules} | siblings) - {_stem(path)}
    earlier = project.modules[:project.modules.index(path)] if path in project.modules else []
    ours = {_stem(m) for m in project.modules}
    for node in ast.walk(tree):
        other = next((name for name in stems if _imports(node, name)), None)
        if other is not None and other not in ours and node in tree.body \
                and _plain_names(os.path.join(folder, other + ".py"), node) is not None:
            continue   # (a module of host code alone: its import stays, the same for both)
        if other is not None and not _nested_import(node, tree, other, earlier):
            # (its import would stay one of the original module, TF1)
            return (path, diagnostic(node.lineno, node.col_offset + 1, "project_nested_import",
                                     module=_stem(path), other=other))
    stmt = next((s for s in tree.body if not _defines(s) and s not in own), None)   # (`own`: not run by an importer)
    if stmt is not None:
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_runs_code", module=_stem(path)))
    return None


# Calls a module's `if` may make to choose its definitions (`if "concat_v2" in dir(tf):`).
_ASKS = frozenset({"dir", "hasattr", "getattr", "isinstance", "len"})


def _defines(stmt: ast.stmt) -> bool:
    """Whether the statement only defines names: an import, a function, a class, a constant
    (`BATCH = 32`), a docstring, or an `if` choosing between such definitions by asking
    what a module has (`if "concat_v2" in dir(tf): def concat(...)`), which runs the same
    wherever the module's code is read."""
    if isinstance(stmt, _DEFINITIONS) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return not any(isinstance(n, ast.Call) for n in ast.walk(stmt))
    if isinstance(stmt, ast.If):
        asks = all(isinstance(n.func, ast.Name) and n.func.id in _ASKS for n in ast.walk(stmt.test)
                   if isinstance(n, ast.Call))
        return asks and all(_defines(s) for s in (*stmt.body, *stmt.orelse))
    return False


def _nested_import(node: ast.AST, tree: ast.Module, name: str, earlier: list[str]) -> bool:
    """`from other import a, b` at the module's top level, on one line, of names a module
    read before it defines (project_text.nested): read as one module, the names are bound."""
    module = next((m for m in earlier if _stem(m) == name), None)
    if module is None or not isinstance(node, (ast.ImportFrom, ast.Import)) or node not in tree.body or node.lineno != node.end_lineno:
        return False
    data = _read(module)
    other = ast.parse(data) if data is not None else None
    if other is not None and layout.is_star(node):
        return _star_reads(tree, other)
    if other is not None and isinstance(node, ast.Import):   # (`import other`, read as `other.NAME` only)
        return len(node.names) == 1 and node.names[0].asname is None \
            and layout.attribute_uses(tree, name, layout.top_names(other)) is not None
    defined = layout.top_names(other) if other is not None else {}
    return all(a.asname is None and a.name in defined for a in node.names)


def _plain_names(path: str, stmt: ast.stmt) -> set[str] | None:
    """The names an import of the module at `path` binds, when that module holds no graph
    code and opens no session (`utils.py` of printing and data helpers: its import stays
    as it is and means the same in the migration); None otherwise, or for a star import of
    a module with `__all__`."""
    data = _read(path)
    found = info(path, data) if data is not None else None
    if data is None or found is not None and (found.session or found.builds):
        return None
    if not layout.is_star(stmt):
        return set(layout.top_names(ast.Module(body=[stmt], type_ignores=[])))
    try:
        return layout.star_names(ast.parse(data))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _star_bound(path: str, tree: ast.Module) -> dict[str, ast.stmt]:
    """The top-level names of the file at `path`, with those each star import of a module
    of host code of its folder binds (`from utils import *`: utils' public names)."""
    out = dict(layout.top_names(tree))
    folder = os.path.dirname(os.path.abspath(path))
    for stmt in tree.body:
        if layout.is_star(stmt) and stmt.level == 0 and stmt.module:
            sibling = os.path.join(folder, stmt.module + ".py")
            for name in (_plain_names(sibling, stmt) or ()) if os.path.isfile(sibling) else ():
                out.setdefault(name, stmt)
    return out


def _binding(stmt: ast.stmt, name: str):
    """What an import binds `name` to, comparable across files (None: not an import)."""
    if isinstance(stmt, ast.Import):
        return next((("import", a.name) for a in stmt.names if (a.asname or a.name.partition(".")[0]) == name), None)
    if layout.is_star(stmt):   # (a name `_star_bound` found it binds)
        return ("from", stmt.level, stmt.module, name)
    if isinstance(stmt, ast.ImportFrom):
        return next((("from", stmt.level, stmt.module, a.name) for a in stmt.names if (a.asname or a.name) == name), None)
    return None


def _clash(project: Project, trees: dict[str, ast.Module], owns: dict[str, list[ast.stmt]]) -> tuple | None:
    """A name the module binds that the script (or another module) binds otherwise: one
    namespace for both would change what it means."""
    imported = {a.name for stmt in [*project.imports, *project.repeats] if isinstance(stmt, ast.ImportFrom)
                for a in stmt.names}
    imported |= {name for module, stmt in zip(project.modules, project.imports) if layout.is_star(stmt)
                 for name in layout.star_names(trees[module]) or ()}
    imported |= {a.asname or a.name for stmt in project.imports if isinstance(stmt, ast.Import) for a in stmt.names}
    imported |= {n.attr for module, stmt in zip(project.modules, project.imports) if isinstance(stmt, ast.Import)
                 for n in layout.attribute_uses(trees[project.script], layout.bound_name(stmt),
                                                layout.top_names(trees[module])) or []}
    seen = {name: (project.script, stmt) for name, stmt in _star_bound(project.script, trees[project.script]).items()
            if name not in imported}
    linked = {id(stmt) for _, stmt in layout.nested(project, trees)}   # (a module's import of an earlier one)
    for module in project.modules:
        for name, stmt in _star_bound(module, trees[module]).items():
            if id(stmt) in linked or stmt in owns[module]:
                continue
            if name in seen:
                other = seen[name][1]
                if _binding(stmt, name) is not None and _binding(stmt, name) == _binding(other, name):
                    continue   # (the same import in both: `import tensorflow as tf`)
                return (module, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_name_clash",
                                           name=name, script=os.path.basename(seen[name][0])))
            seen[name] = (module, stmt)
    return None


# -- one project through the engine ---------------------------------------------------

@record
class Result:
    """Per file (script first, then modules): findings, error, new bytes (None: unchanged).
    `refused`: the project is not restructured, and `new` holds each file's safe fixes alone."""
    paths: list[str]
    findings: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    new: dict = field(default_factory=dict)
    refused: bool = False


def process(project: Project, datas: dict[str, bytes], codes: CodeFilter) -> Result:
    """The rewrite of the whole project: the script analyzed with its modules' code in
    place of their imports; each file's findings and new bytes."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.rewrite_check import split_lines

    paths = [project.script, *project.modules]
    out = Result(paths, {p: [] for p in paths}, {}, {})
    trees = {p: python_tree(datas[p]) for p in paths}
    owns = {m: own_runs.own_part(trees[m]) for m in project.modules}   # (what only `python model.py` runs)
    refusal = project.refusal or next(filter(None, (_module_refusal(m, trees[m], project, owns[m])
                                                    for m in project.modules)), None) or _clash(project, trees, owns)
    if refusal is not None:
        path, (line, col, code, message, safety) = refusal
        if codes.wants(code):
            out.findings[path].append(Finding(path, line, col, code, message, safety, False))
        safe = {p: _safe_source(p, datas[p], codes) for p in paths}
        for p in paths:   # (what each file holds; the project's refusal is why it is not restructured)
            out.findings[p] += safe[p][1]
        return _safe_only(out, safe)
    script, cut = layout.unqualified(project, datas[project.script], trees, split_lines)
    read = {project.script: script}
    cuts = {project.script: cut}
    for module in project.modules:   # (its `import other` read as the other's code before it)
        if owns[module]:   # (not the importer's: the module's own entry point)
            read[module] = own_runs.blanked(datas[module], owns[module], split_lines)
        pairs = layout.nested_pairs(module, project, trees)
        if pairs:
            read[module], cuts[module] = layout.cut_names(read.get(module, datas[module]), trees[module], pairs,
                                                          split_lines)
    combined, where = layout.combined(project, {**datas, **read}, split_lines, layout.nested(project, trees))
    result = process_source(project.script, combined, codes, fix=True)
    for finding in result.findings:
        path, line = where(finding.line)
        col = layout.column(cuts[path].get(line, []), finding.col) if path in cuts else finding.col
        out.findings[path].append(replace(finding, path=path, line=line, col=col,
                                          message=layout.placed(finding.message, path, where)))
    if result.error is not None:
        path, line = where(result.error.line) if result.error.line else (project.script, None)
        out.errors[path] = replace(result.error, path=path, line=line)
    elif result.new_source is not None:
        parts = layout.split(result.new_source, len(project.modules), split_lines)
        problem = "the rewrite moved a module's boundary" if parts is None else layout.check_parts(project, parts, datas,
                                                                                             bool(cut))
        if problem is not None:
            out.errors[project.script] = FileError(project.script, f"internal error: {problem}; files left unchanged")
            out.findings = {p: [replace(f, fixed=False) for f in fs] for p, fs in out.findings.items()}
        else:
            out.new = {p: new for p, new in parts.items() if new != datas[p]}
    else:   # (the combined program is not restructured)
        _module_blocked(project, out, codes)
        return _safe_only(out, {p: _safe_source(p, datas[p], codes) for p in paths})
    for p in paths:
        out.findings[p].sort(key=lambda f: (f.line, f.col, f.code))
    return out


def _module_blocked(project: Project, out: Result, codes: CodeFilter) -> None:
    """A script not restructured only because a module it imports holds the reason says
    so, at its import of that module (the script would otherwise list findings and no
    reason): its program is its code and its modules', migrated together or not at all."""
    from tf1gradfix.run.findings import blocking_codes

    blocking = blocking_codes()
    if any(f.code in blocking for f in out.findings[project.script]):
        return
    first = next((s for s in project.imports if s is not None), None)
    for module, stmt in zip(project.modules, project.imports):
        hit = next((f for f in out.findings[module] if f.code in blocking), None)
        stmt = stmt or first   # (a module another module imports: where the script's imports begin)
        if hit is None or stmt is None:
            continue
        line, col, code, message, safety = diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_refused",
                                                      module=os.path.basename(module)[:-3], line=hit.line,
                                                      reason=f"{hit.code} {hit.message}")
        if codes.wants(code):
            out.findings[project.script].append(Finding(project.script, line, col, code, message, safety, False))
        return


def _safe_source(path: str, data: bytes, codes: CodeFilter) -> tuple[bytes | None, list[Finding]]:
    """The file with the safe fixes it would get on its own (None: none apply), and its
    findings, marked fixed where one applies: the one analysis of a project's file alone."""
    from tf1gradfix.run.engine import process_source

    safe = process_source(path, data, codes, fix=True, restructure=False)
    return (safe.new_source if safe.error is None and safe.new_source != data else None), safe.findings


def _safe_only(out: Result, safe: dict[str, tuple[bytes | None, list[Finding]]]) -> Result:
    """The project is not restructured: each file gets the safe fixes it would get on its
    own (`safe`: _safe_source of each; renames need no proof, and they do not depend on
    the other files)."""
    out.refused = True
    for p in out.paths:
        new, findings = safe[p]
        fixed = {(f.line, f.col, f.code) for f in findings if f.fixed}
        out.findings[p] = sorted((replace(f, fixed=(f.line, f.col, f.code) in fixed) for f in out.findings[p]),
                                 key=lambda f: (f.line, f.col, f.code))
        if new is not None:
            out.new[p] = new
    return out


# -- a project's outcomes, one per file ---------------------------------------------------

def outcomes(project: Project, mode: str, codes: CodeFilter, limit: int) -> list:
    """The outcome of each file of `project` (script first), in `mode` (batch.py): both
    files are changed, or neither. A proof (plain rewrite, --verify) is asked of the
    script's outcome, which carries its modules' new bytes (`companions`)."""
    read = read_files(project, mode, limit)
    if isinstance(read, list):
        return read
    return finish(project, processed(project, read[0], codes), mode, codes, *read)


def read_files(project: Project, mode: str, limit: int) -> tuple[dict, dict] | list:
    """(path -> bytes, path -> snapshot) of the project's files, or the outcomes of a file
    that cannot be read."""
    from tf1gradfix.run import batch

    paths = [project.script, *project.modules]
    datas, snapshots = {}, {}
    for path in paths:
        read = batch._read(path, limit, snapshot=mode != batch.CHECK)
        if isinstance(read, FileError):
            return [batch.Outcome(p, error=read if p == path else None) for p in paths]
        datas[path], snapshots[path] = read
    return datas, snapshots


def processed(project: Project, datas: dict, codes: CodeFilter) -> Result:
    """`process`, with a bug of ours reported as the script's internal error."""
    from tf1gradfix.run import batch

    try:
        return process(project, datas, codes)
    except Exception as exc:  # noqa: BLE001 - a bug of ours must not cost the user a file or the run
        paths = [project.script, *project.modules]
        return Result(paths, {p: [] for p in paths}, {project.script: batch.internal_error(project.script, exc)}, {})


def finish(project: Project, result: Result, mode: str, codes: CodeFilter, datas: dict, snapshots: dict) -> list:
    """The outcomes of the project's files from its `result`, in `mode`."""
    from tf1gradfix.run import batch

    paths = [project.script, *project.modules]
    out = [batch.Outcome(p, result.findings[p], result.errors.get(p)) for p in paths]
    if result.refused:
        for outcome in out:
            if outcome.path in result.new:
                _safe_fixes(outcome, mode, datas[outcome.path], result.new[outcome.path], snapshots[outcome.path])
        return out
    if not result.new:
        return out
    for outcome in out:
        outcome.changed = outcome.path in result.new
    script = out[0]
    if mode == batch.DIFF:
        for outcome in out:
            if outcome.changed:
                outcome.diff = batch.unified_diff(batch.shown(outcome.path), datas[outcome.path], result.new[outcome.path])
    elif mode in (batch.PROPOSE, batch.GUARDED):
        script.new_source = result.new.get(project.script, datas[project.script])
        script.snapshot = snapshots[project.script]
        script.changed = True
        script.companions = {p: (result.new[p], snapshots[p]) for p in project.modules if p in result.new}
        script.restructured = mode == batch.GUARDED
        if mode == batch.GUARDED:   # (a failed or skipped proof leaves each file its safe fixes, made then)
            for outcome in out:
                outcome.safe_later = partial(_safe_bytes, outcome.path, datas[outcome.path], codes)
                outcome.snapshot = snapshots[outcome.path]
            for outcome in out[1:]:
                outcome.changed = False   # (until the proof writes it)
    elif mode == batch.WRITE:
        write_all(out, {p: (result.new[p], snapshots[p]) for p in result.new}, datas)
    return out


def _safe_bytes(path: str, data: bytes, codes: CodeFilter) -> bytes | None:
    return _safe_source(path, data, codes)[0]


def _safe_fixes(outcome, mode: str, old: bytes, new: bytes, snapshot) -> None:
    """A file of a refused project, with its own safe fixes: shown, proposed or written as
    a file on its own would be (batch.run_source), independently of the other files."""
    from tf1gradfix.run import batch

    outcome.changed = True
    if mode == batch.DIFF:
        outcome.diff = batch.unified_diff(batch.shown(outcome.path), old, new)
    elif mode == batch.PROPOSE:
        outcome.new_source, outcome.snapshot = new, snapshot
    elif mode in (batch.WRITE, batch.GUARDED):
        batch.write_outcome(outcome, new, snapshot)


def write_all(outcomes: list, new: dict, datas: dict) -> None:
    """Write every file of `new` (path -> (bytes, snapshot)) or none: a failed write puts back
    the files already written; the outcomes say what happened."""
    from tf1gradfix.run import batch

    written = []
    for outcome in outcomes:
        if outcome.path not in new:
            continue
        source, snapshot = new[outcome.path]
        batch.write_outcome(outcome, source, snapshot)
        if outcome.error is not None:
            for path in written:
                batch.write_atomic(batch.Path(path), datas[path])
            for other in outcomes:
                other.changed = False
                other.findings = [replace(f, fixed=False) for f in other.findings]
            return
        written.append(outcome.path)
