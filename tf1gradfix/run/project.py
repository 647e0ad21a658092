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

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.records import field, record, replace
from tf1gradfix.run.findings import CodeFilter, FileError, Finding

_BEGIN, _END = b"__tf1gradfix_module_begin__", b"__tf1gradfix_module_end__"
_BOM = b"\xef\xbb\xbf"
_MARKER = re.compile(rb"^(__tf1gradfix_module_(?:begin|end)__) = (\d+)[ \t]*(?:\r\n|\r|\n)?\Z")


@record
class Info:
    """What the planning reads of one file (Python's parser only)."""
    tree: ast.Module
    session: bool
    builds: int | None   # line of its first graph construct a restructuring fixes, if any


@record
class Project:
    script: str
    modules: list[str] = field(default_factory=list)   # paths, in the order the script imports them
    imports: list[ast.stmt] = field(default_factory=list)   # the script's import of each
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
    hits, session = ast_rules.analyze(tree, data, catalog.load())
    graph = [h.line for h in hits if h.rule.safety == "proven"]
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
    projects = []
    for folder, paths in folders.items():
        if len(paths) < 2:
            continue
        read = _candidates(paths)
        if not read:
            continue
        modules = {os.path.basename(p)[:-3]: p for p, i in read.items() if i and not i.session and i.builds}
        for path, found in read.items():
            if found is None or not found.session:
                continue
            project = Project(path)
            for stmt in found.tree.body:
                names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else \
                    [stmt.module] if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 else []
                for name in names:
                    if name in modules:
                        again = modules[name] in project.modules   # (read once, where first imported)
                        project.modules.append(modules[name]) if not again else None
                        project.imports.append(stmt) if not again else None
                        project.refusal = project.refusal or _import_refusal(path, stmt, name, read[modules[name]], again,
                                                                             found.tree)
            if project.modules:
                ours = {os.path.abspath(p) for p in (path, *project.modules)}
                for module in project.modules:
                    name = os.path.basename(module)[:-3]
                    others = [p for p in _importers(folder, name, read) if os.path.abspath(p) not in ours]
                    if others and project.refusal is None:
                        stmt = project.imports[project.modules.index(module)]
                        project.refusal = (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_shared",
                                                            module=name, other=os.path.basename(others[0])))
                projects.append(project)
    return projects


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
    defined = _top_names(module.tree)
    if isinstance(stmt, ast.Import) and not again and len(stmt.names) == 1 and script is not None \
            and _attribute_uses(script, stmt.names[0].asname or name, defined) is not None:
        return None
    if again or not isinstance(stmt, ast.ImportFrom) or any(a.asname or a.name not in defined for a in stmt.names):
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_import_form", module=name))
    return None


def _attribute_uses(tree: ast.Module, bound: str, defined) -> list[ast.Attribute] | None:
    """Every `bound.NAME` read of `tree` (NAME one of `defined`), or None when `bound` is
    used or bound in any other way."""
    reads = {id(n.value): n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == bound and isinstance(n.ctx, ast.Load) and n.attr in defined}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == bound and id(node) not in reads:
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == bound:
            return None
        if isinstance(node, ast.arg) and node.arg == bound:
            return None
        if isinstance(node, (ast.Global, ast.Nonlocal)) and bound in node.names:
            return None
    return list(reads.values())


# Statements a model module may hold at its top level: what importing it runs is then
# only definitions, which run the same wherever they are.
_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def _module_refusal(path: str, tree: ast.Module, project: Project) -> tuple | None:
    """Why a module cannot be read in place of its import, if it cannot."""
    stems = {_stem(m) for m in project.modules}
    for node in ast.walk(tree):
        other = next((name for name in stems if _imports(node, name)), None)
        if other is not None:   # (its import would stay one of the original module, TF1)
            return (path, diagnostic(node.lineno, node.col_offset + 1, "project_nested_import",
                                     module=_stem(path), other=other))
    for stmt in tree.body:
        if isinstance(stmt, _DEFINITIONS) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and not any(isinstance(n, ast.Call) for n in ast.walk(stmt)):
            continue   # (a constant: `BATCH = 32`)
        return (path, diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_runs_code", module=_stem(path)))
    return None


def _stem(path: str) -> str:
    return os.path.basename(path)[:-3]


def _top_names(tree: ast.Module) -> dict[str, ast.stmt]:
    """Name -> the top-level statement binding it."""
    out: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[stmt.name] = stmt
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                out[a.asname or a.name.partition(".")[0]] = stmt
        else:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    out.setdefault(node.id, stmt)
    return out


def _binding(stmt: ast.stmt, name: str):
    """What an import binds `name` to, comparable across files (None: not an import)."""
    if isinstance(stmt, ast.Import):
        return next((("import", a.name) for a in stmt.names if (a.asname or a.name.partition(".")[0]) == name), None)
    if isinstance(stmt, ast.ImportFrom):
        return next((("from", stmt.level, stmt.module, a.name) for a in stmt.names if (a.asname or a.name) == name), None)
    return None


def _clash(project: Project, trees: dict[str, ast.Module]) -> tuple | None:
    """A name the module binds that the script (or another module) binds otherwise: one
    namespace for both would change what it means."""
    imported = {a.name for stmt in project.imports if isinstance(stmt, ast.ImportFrom) for a in stmt.names}
    imported |= {a.asname or a.name for stmt in project.imports if isinstance(stmt, ast.Import) for a in stmt.names}
    imported |= {n.attr for module, stmt in zip(project.modules, project.imports) if isinstance(stmt, ast.Import)
                 for n in _attribute_uses(trees[project.script], _bound(stmt), _top_names(trees[module])) or []}
    seen = {name: (project.script, stmt) for name, stmt in _top_names(trees[project.script]).items()
            if name not in imported}
    for module in project.modules:
        for name, stmt in _top_names(trees[module]).items():
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
    """Per file (script first, then modules): findings, error, new bytes (None: unchanged)."""
    paths: list[str]
    findings: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    new: dict = field(default_factory=dict)


def process(project: Project, datas: dict[str, bytes], codes: CodeFilter) -> Result:
    """The rewrite of the whole project: the script analyzed with its modules' code in
    place of their imports; each file's findings and new bytes."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.model.refusals import reasons
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
        alone = reasons()["module_without_session"].message
        for p in paths:   # (what each file holds, unfixed: neither is written)
            out.findings[p] += [replace(f, fixed=False) for f in process_source(
                p, datas[p], codes, fix=False, restructure=False).findings if f.message != alone]
        for p in paths:
            out.findings[p].sort(key=lambda f: (f.line, f.col, f.code))
        return out
    script, cut = _unqualified(project, datas[project.script], trees, split_lines)
    combined, where = _combined(project, {**datas, project.script: script}, split_lines)
    result = process_source(project.script, combined, codes, fix=True)
    for finding in result.findings:
        path, line = where(finding.line)
        col = finding.col if path != project.script else _column(cut.get(line, []), finding.col)
        out.findings[path].append(replace(finding, path=path, line=line, col=col))
    if result.error is not None:
        path, line = where(result.error.line) if result.error.line else (project.script, None)
        out.errors[path] = replace(result.error, path=path, line=line)
    elif result.new_source is not None:
        parts = _split(result.new_source, len(project.modules), split_lines)
        problem = "the rewrite moved a module's boundary" if parts is None else _check_parts(project, parts, datas,
                                                                                             bool(cut))
        if problem is not None:
            out.errors[project.script] = FileError(project.script, f"internal error: {problem}; files left unchanged")
            out.findings = {p: [replace(f, fixed=False) for f in fs] for p, fs in out.findings.items()}
        else:
            out.new = {p: new for p, new in parts.items() if new != datas[p]}
    for p in paths:
        out.findings[p].sort(key=lambda f: (f.line, f.col, f.code))
    return out


def _bound(stmt: ast.Import) -> str:
    return stmt.names[0].asname or stmt.names[0].name


def _unqualified(project: Project, data: bytes, trees: dict, split_lines) -> tuple[bytes, dict]:
    """The script with `model.NAME` read as `NAME` for each module it imports as `import
    model` (what the module's code in place of the import binds); line -> [(column, size)]
    of each cut, for the findings' columns."""
    cuts: dict[int, list] = {}
    lines = split_lines(data)
    for module, stmt in zip(project.modules, project.imports):
        if not isinstance(stmt, ast.Import):
            continue
        bound = _bound(stmt).encode()
        for node in _attribute_uses(trees[project.script], _bound(stmt), _top_names(trees[module])) or []:
            line, col = node.value.lineno, node.value.col_offset
            if lines[line - 1][col:col + len(bound) + 1] == bound + b".":   # (else `model . Net`: left as it is, refused)
                cuts.setdefault(line, []).append((col, len(bound) + 1))
    for line, found in cuts.items():
        text = lines[line - 1]
        for col, size in sorted(found, reverse=True):
            text = text[:col] + text[col + size:]
        lines[line - 1] = text
    return b"".join(lines), {line: sorted(found) for line, found in cuts.items()}


def _column(cuts: list, col: int) -> int:
    """A column of the unqualified script line as a column of the original one."""
    removed = 0
    for start, size in cuts:
        if col - 1 >= start - removed:
            removed += size
    return col + removed


def _qualified(project: Project, text: bytes, modules: dict) -> bytes | None:
    """`text` (the rewritten script) with `model.` put back before each name of a module
    imported as `import model`; None when a name cannot be told apart from the script's own."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.run.engine import split_lines

    tree = python_tree(text)
    if tree is None:
        return None
    bound_here = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound_here |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound_here |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound_here |= {(a.asname or a.name).partition(".")[0] for n in ast.walk(tree)
                   if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    inserts: dict[int, list] = {}
    for module, stmt in zip(project.modules, project.imports):
        if not isinstance(stmt, ast.Import):
            continue
        tree_of = python_tree(modules[module])
        names = {name for name, bound in _top_names(tree_of).items()
                 if not isinstance(bound, (ast.Import, ast.ImportFrom))} if tree_of is not None else set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
                if node.id in bound_here:
                    return None
                inserts.setdefault(node.lineno, []).append((node.col_offset, _bound(stmt).encode() + b"."))
    lines = split_lines(text)
    for line, found in inserts.items():
        for col, prefix in sorted(found, reverse=True):
            lines[line - 1] = lines[line - 1][:col] + prefix + lines[line - 1][col:]
    return b"".join(lines)


def _combined(project: Project, datas: dict[str, bytes], split_lines):
    """(the script with each import replaced by its module between markers; combined line ->
    (path, line))."""
    script = split_lines(datas[project.script])
    pieces: list[bytes] = []
    where: list[tuple[str, int]] = []   # index: combined line - 1
    at = 0
    for index, (module, stmt) in enumerate(zip(project.modules, project.imports)):
        start, end = stmt.lineno - 1, stmt.end_lineno
        pieces += script[at:start]
        where += [(project.script, n + 1) for n in range(at, start)]
        body = split_lines(datas[module].removeprefix(_BOM))
        if body and not body[-1].endswith((b"\n", b"\r")):
            body[-1] += b"\n"
        pieces += [_BEGIN + b" = %d\n" % index, *body, _END + b" = %d\n" % index]
        where += [(project.script, stmt.lineno)] + [(module, n + 1) for n in range(len(body))] + [(project.script, stmt.lineno)]
        at = end
    pieces += script[at:]
    where += [(project.script, n + 1) for n in range(at, len(script))]

    def locate(line: int) -> tuple[str, int]:
        return where[line - 1] if 1 <= line <= len(where) else (project.script, line)
    return b"".join(pieces), locate


def _split(new: bytes, count: int, split_lines) -> dict | None:
    """The script's lines and each module's, from the rewritten combined module; None when
    the markers are not where they were (each once, in order)."""
    lines = split_lines(new)
    marks = [(i, m.group(1), int(m.group(2))) for i, line in enumerate(lines) if (m := _MARKER.match(line))]
    if [(kind, n) for _, kind, n in marks] != [(k, n) for n in range(count) for k in (_BEGIN, _END)]:
        return None
    script, modules, at = [], [], 0
    for k in range(count):
        begin, end = marks[2 * k][0], marks[2 * k + 1][0]
        script.append(lines[at:begin])
        modules.append(lines[begin + 1:end])
        at = end + 1
    script.append(lines[at:])
    return {"script": script, "modules": modules}


def _check_parts(project: Project, parts: dict, datas: dict[str, bytes], cut: bool = False) -> str | None:
    """Each file's new bytes into `parts` (path -> bytes); why they cannot be written, if so.
    `cut`: the script was read with `model.` cut from its names (`_unqualified`)."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.run.engine import as_written, split_lines

    script_lines = split_lines(datas[project.script])
    new_script = []
    for k, chunk in enumerate(parts["script"]):
        new_script += chunk
        if k < len(project.imports):   # the script's own import, as it was
            stmt = project.imports[k]
            new_script += script_lines[stmt.lineno - 1:stmt.end_lineno]
    result = {}
    for module, lines in zip(project.modules, parts["modules"]):
        data = datas[module]
        text = b"".join(lines)
        if data.startswith(_BOM):   # (a BOM starts its file, not the combined module's middle)
            text = _BOM + text
        if not data.endswith((b"\n", b"\r")) and text.endswith(b"\n") and text[:-1] == data:
            text = data   # (the newline the combined module needed)
        result[module] = as_written(data, text, None)[0]
    script = b"".join(new_script)
    if any(isinstance(stmt, ast.Import) for stmt in project.imports):
        script = _qualified(project, script, result)
        if script is None:
            return "a name of an `import`ed module is also bound by the script"
    result = {project.script: as_written(datas[project.script], script, None)[0], **result}
    for path, text in result.items():
        tree = python_tree(text)
        if tree is None:
            return f"the rewrite of {os.path.basename(path)} does not parse"
        if path != project.script:
            defined = _top_names(tree)
            stmt = project.imports[project.modules.index(path)]
            if isinstance(stmt, ast.Import):   # (the names the script reads as `model.NAME`)
                used = {n.attr for n in ast.walk(python_tree(result[project.script])) if isinstance(n, ast.Attribute)
                        and isinstance(n.value, ast.Name) and n.value.id == _bound(stmt)}
            else:
                used = {a.name for a in stmt.names}
            lost = sorted(name for name in used if name not in defined)
            if lost:
                return f"the rewrite of {os.path.basename(path)} no longer defines `{lost[0]}`"
    parts.clear()
    parts.update(result)
    return None


# -- a project's outcomes, one per file ---------------------------------------------------

def outcomes(project: Project, mode: str, codes: CodeFilter, limit: int) -> list:
    """The outcome of each file of `project` (script first), in `mode` (batch.py): both
    files are changed, or neither. A proof (plain rewrite, --verify) is asked of the
    script's outcome, which carries its modules' new bytes (`companions`)."""
    from tf1gradfix.run import batch

    paths = [project.script, *project.modules]
    datas, snapshots = {}, {}
    for path in paths:
        read = batch._read(path, limit, snapshot=mode != batch.CHECK)
        if isinstance(read, FileError):
            return [batch.Outcome(p, error=read if p == path else None) for p in paths]
        datas[path], snapshots[path] = read
    try:
        result = process(project, datas, codes)
    except Exception as exc:  # noqa: BLE001 - a bug of ours must not cost the user a file or the run
        return [batch.Outcome(p, error=batch.internal_error(p, exc) if p == project.script else None) for p in paths]
    out = [batch.Outcome(p, result.findings[p], result.errors.get(p)) for p in paths]
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
        if mode == batch.GUARDED:
            for outcome in out[1:]:
                outcome.changed = False   # (until the proof writes it)
    elif mode == batch.WRITE:
        write_all(out, {p: (result.new[p], snapshots[p]) for p in result.new}, datas)
    return out


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
