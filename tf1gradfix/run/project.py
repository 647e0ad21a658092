"""Projects of several files: a model module (a class or builder functions that build a
graph, no session) and the script of its folder that imports it (`from model import Net`).

The script is analyzed with the module's code in place of its import, between two
marker statements, so the class or builder is seen as if the script defined it; the
rewrite is split back at the markers and each file gets its own changes. Both files
are written, or neither. Never imports TensorFlow, never runs user code.
"""

from __future__ import annotations

import ast
import os
import re
from functools import partial

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.records import field, record, replace
from tf1gradfix.run import project_text as layout
from tf1gradfix.run.findings import CodeFilter, FileError, Finding



@record
class Info:
    """What the planning reads of one file (Python's parser only)."""
    tree: ast.Module
    session: bool
    builds: int | None   # line of its first graph construct a restructuring fixes, or variable made, if any


@record
class Project:
    script: str
    modules: list[str] = field(default_factory=list)   # paths, in the order the script imports them
    imports: list[ast.stmt | None] = field(default_factory=list)   # the script's import of each (None: a module's)
    refusal: tuple | None = None   # (path, diagnostic): why it cannot be migrated


def info(path: str, data: bytes) -> Info | None:
    """The file's tree, whether it opens a session and where it first builds graph code
    (None for a file that cannot be read as part of a project: no TensorFlow, not UTF-8)."""
    if b"tensorflow" not in data:
        return None
    try:
        data.decode("utf-8")   # (the files are read as one module: one encoding)
    except UnicodeDecodeError:
        return None
    from tf1gradfix.detect import ast_rules, prefilter
    from tf1gradfix.rules import catalog

    tree = prefilter.python_tree(data)
    if tree is None:
        return None
    hits, session, made = ast_rules.analyze_variables(tree, data, catalog.load())
    graph = [h.line for h in hits if h.rule.safety == "proven"]
    if not session:   # (a module of functions making variables builds a model: `weight_variable`)
        graph += made
    return Info(tree, session, min(graph) if graph else None)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _importers(folder: str, name: str, files: dict[str, Info | None]) -> list[str]:
    """Files of `folder` that import module `name` (listed or not)."""
    out = []
    try:
        entries = sorted(e for e in os.listdir(folder) if e.endswith(".py"))
    except OSError:
        return out
    for entry in entries:
        path = os.path.join(folder, entry)
        key = next((p for p in files if os.path.abspath(p) == path), None)
        tree = files[key].tree if key is not None and files[key] is not None else None
        if tree is None:
            data = _read(path)
            if data is None or name.encode() not in data:
                continue
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError, RecursionError):
                continue
        if any(_imports(node, name) for node in ast.walk(tree)):
            out.append(key or path)
    return out


def _imports(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module == name
    return isinstance(node, ast.Import) and any(a.name == name for a in node.names)


def plan(files: list[str]) -> list[Project]:
    """The projects among `files`: each script that opens a session and imports, from its
    folder, a listed module that builds graph code and opens none."""
    folders: dict[str, list[str]] = {}
    for path in files:
        if path != "-" and path.endswith(".py"):
            folders.setdefault(os.path.dirname(os.path.abspath(path)), []).append(path)
    projects: list[Project] = []
    for folder, paths in folders.items():
        found, read = _folder_projects(folder, paths)
        planned = {os.path.abspath(p) for project in found for p in (project.script, *project.modules)}
        projects += found + _unlisted(folder, paths, planned, read)
    return projects


def _folder_projects(folder: str, paths: list[str]) -> tuple[list[Project], dict[str, Info | None]]:
    """The projects among the listed files of one folder, and what was read of its files."""
    projects: list[Project] = []
    read = _candidates(paths) if len(paths) >= 2 else {}
    modules = {os.path.basename(p)[:-3]: p for p, i in read.items() if i and not i.session and i.builds}
    for path, found in read.items():
        if found is None or not found.session:
            continue
        project = Project(path)
        for stmt in found.tree.body:
            for name in _imported(stmt):
                if name in modules:
                    again = modules[name] in project.modules   # (read once, where first imported)
                    project.modules.append(modules[name]) if not again else None
                    project.imports.append(stmt) if not again else None
                    project.refusal = project.refusal or _import_refusal(path, stmt, name, read[modules[name]], again,
                                                                         found.tree)
        if project.modules:
            _add_nested(project, modules, read)
            projects.append(project)
    scripts = {os.path.abspath(p.script) for p in projects}   # (a module they share is migrated for all: project_groups)
    for project in projects:
        ours = {os.path.abspath(p) for p in (project.script, *project.modules)}
        for module in project.modules:
            name = os.path.basename(module)[:-3]
            others = [p for p in _importers(folder, name, read) if os.path.abspath(p) not in ours | scripts]
            if others and project.refusal is None:
                stmt = next(s for s in project.imports[project.modules.index(module):] if s is not None)
                project.refusal = (project.script, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_shared",
                                                              module=name, other=os.path.basename(others[0])))
    return projects, read


def _unlisted(folder: str, paths: list[str], planned: set[str], read: dict[str, Info | None]) -> list[Project]:
    """Scripts given without a module of their folder that they import and that builds part
    of the model (`rewrite train.py`, `model.py` beside it): refused, for read alone the
    script's calls into the module look like plain functions, though they may make
    variables on every run. A plain byte search first: most scripts import no such module;
    `read`: the files already read (`info`), each read once."""
    listed = {os.path.abspath(p) for p in paths}
    try:
        siblings = {e[:-3]: os.path.join(folder, e) for e in sorted(os.listdir(folder))
                    if e.endswith(".py") and e[:-3].isidentifier() and os.path.join(folder, e) not in listed}
    except OSError:
        return []
    if not siblings:
        return []
    spelled = re.compile(rb"^[ \t]*(?:from|import)[ \t]+(" + b"|".join(re.escape(s.encode()) for s in siblings)
                         + rb")\b", re.M)
    out = []
    for path in paths:
        data = None if os.path.abspath(path) in planned else _read(path)
        if data is None or b"tensorflow" not in data or not spelled.search(data):
            continue
        script = read[path] if path in read else info(path, data)
        if script is None or not script.session:
            continue
        refusal = next(filter(None, (_unlisted_refusal(path, stmt, siblings, read) for stmt in script.tree.body)), None)
        if refusal is not None:
            out.append(Project(path, refusal=refusal))
    return out


def _unlisted_refusal(path: str, stmt: ast.stmt, siblings: dict[str, str], read: dict[str, Info | None]) -> tuple | None:
    """The refusal of a script's import of an unlisted module of its folder that builds."""
    for name in _imported(stmt):
        module = siblings.get(name)
        if module is not None and module not in read:
            data = _read(module)
            read[module] = info(module, data) if data is not None else None
        found = read.get(module) if module is not None else None
        if found is not None and not found.session and found.builds:
            return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_not_listed", module=name))
    return None


def _imported(stmt: ast.stmt) -> list[str]:
    """The modules a top-level import statement names (absolute imports only)."""
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    return [stmt.module] if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module else []


def _candidates(paths: list[str]) -> dict[str, Info | None]:
    """The files of one folder worth analyzing (`info`): those mentioning TensorFlow, when
    one of them spells an import of another's name (a plain byte search first: a run over
    a big tree parses nothing more)."""
    datas = {path: data for path in paths if (data := _read(path)) is not None and b"tensorflow" in data}
    stems = {os.path.basename(path)[:-3].encode() for path in datas}
    spelled = re.compile(rb"^[ \t]*(?:from|import)[ \t]+(" + b"|".join(re.escape(stem) for stem in stems) + rb")\b", re.M)
    if len(datas) < 2 or not any(spelled.search(data) for data in datas.values()):
        return {}
    return {path: info(path, data) for path, data in datas.items()}


def _import_refusal(path: str, stmt: ast.stmt, name: str, module: Info, again: bool = False,
                    script: ast.Module | None = None) -> tuple | None:
    """Why the script's import of the module cannot be followed, if it cannot (`again`: a
    second import of it). `import model` is followed when the script only reads
    `model.NAME` of names the module defines, and never binds `model` otherwise."""
    defined = layout.top_names(module.tree)
    if layout.is_star(stmt):
        if not again and script is not None and _star_reads(script, module.tree):
            return None
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_import_form", module=name))
    if isinstance(stmt, ast.Import) and not again and len(stmt.names) == 1 and script is not None \
            and layout.attribute_uses(script, stmt.names[0].asname or name, defined) is not None:
        return None
    if again or not isinstance(stmt, ast.ImportFrom) or any(a.asname or a.name not in defined for a in stmt.names):
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_import_form", module=name))
    return None


def _star_reads(reader: ast.Module, module: ast.Module) -> bool:
    """`from module import *` can be read as the module's code in its place: the module
    does not spell its names with `__all__`, and the reader reads none of the private
    names (`_scale`) that code binds and the star import does not."""
    if layout.star_names(module) is None:
        return False
    private = {name for name in layout.top_names(module) if name.startswith("_")}
    return not any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in private for n in ast.walk(reader))


# Statements a model module may hold at its top level: what importing it runs is then
# only definitions, which run the same wherever they are.
_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def _module_refusal(path: str, tree: ast.Module, project: Project) -> tuple | None:
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
    for stmt in tree.body:
        if isinstance(stmt, _DEFINITIONS) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and not any(isinstance(n, ast.Call) for n in ast.walk(stmt)):
            continue   # (a constant: `BATCH = 32`)
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_runs_code", module=_stem(path)))
    return None


def _add_nested(project: Project, modules: dict[str, str], read: dict[str, Info | None]) -> None:
    """The modules the project's modules import with `from other import name` and the script
    does not, each before the first module importing it (no import of the script: None)."""
    k = 0
    while k < len(project.modules):
        found = read.get(project.modules[k])
        names = [name for stmt in (found.tree.body if found is not None else ()) for name in _imported(stmt)
                 if name in modules]
        new = [modules[n] for n in dict.fromkeys(names) if modules[n] not in project.modules]
        if new:   # (read first, then looked at again: they may import others)
            project.modules[k:k] = new
            project.imports[k:k] = [None] * len(new)
            continue
        k += 1


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


def _stem(path: str) -> str:
    return os.path.basename(path)[:-3]


def _binding(stmt: ast.stmt, name: str):
    """What an import binds `name` to, comparable across files (None: not an import)."""
    if isinstance(stmt, ast.Import):
        return next((("import", a.name) for a in stmt.names if (a.asname or a.name.partition(".")[0]) == name), None)
    if layout.is_star(stmt):   # (a name `_star_bound` found it binds)
        return ("from", stmt.level, stmt.module, name)
    if isinstance(stmt, ast.ImportFrom):
        return next((("from", stmt.level, stmt.module, a.name) for a in stmt.names if (a.asname or a.name) == name), None)
    return None


def _clash(project: Project, trees: dict[str, ast.Module]) -> tuple | None:
    """A name the module binds that the script (or another module) binds otherwise: one
    namespace for both would change what it means."""
    imported = {a.name for stmt in project.imports if isinstance(stmt, ast.ImportFrom) for a in stmt.names}
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
            if id(stmt) in linked:
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
    from tf1gradfix.run.engine import process_source, split_lines

    paths = [project.script, *project.modules]
    out = Result(paths, {p: [] for p in paths}, {}, {})
    trees = {p: python_tree(datas[p]) for p in paths}
    refusal = project.refusal or next(filter(None, (_module_refusal(m, trees[m], project) for m in project.modules)),
                                      None) or _clash(project, trees)
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
        pairs = layout.nested_pairs(module, project, trees)
        if pairs:
            read[module], cuts[module] = layout.cut_names(datas[module], trees[module], pairs, split_lines)
    combined, where = layout.combined(project, {**datas, **read}, split_lines, layout.nested(project, trees))
    result = process_source(project.script, combined, codes, fix=True)
    for finding in result.findings:
        path, line = where(finding.line)
        col = layout.column(cuts[path].get(line, []), finding.col) if path in cuts else finding.col
        out.findings[path].append(replace(finding, path=path, line=line, col=col))
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
        return _safe_only(out, {p: _safe_source(p, datas[p], codes) for p in paths})
    for p in paths:
        out.findings[p].sort(key=lambda f: (f.line, f.col, f.code))
    return out


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
