"""Which files form projects: each script that opens a session and imports, from its
folder, a listed model module that builds graph code and opens none (project.py).

Reads with Python's parser alone, and only the files whose bytes spell an import of a
sibling (a run over a big tree parses nothing more). A project whose import cannot be
followed (its form, a module another script of the folder shares, a module the
command line left out) is planned with its refusal, which the rewrite reports.
"""

from __future__ import annotations

import ast
import os
import re
import stat

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.records import field, record
from tf1gradfix.run import imported_scripts, own_runs
from tf1gradfix.run import project_text as layout


@record
class Info:
    """What the planning reads of one file (Python's parser only)."""
    tree: ast.Module
    session: bool
    builds: int | None   # line of its first graph construct a restructuring fixes, or variable made, if any
    own: list[ast.stmt] = field(default_factory=list)   # what only running it as a script runs (own_runs)
    lines: frozenset[int] = frozenset()   # every line of graph code `builds` is the first of


@record
class Project:
    script: str
    modules: list[str] = field(default_factory=list)   # paths, in the order the script imports them
    imports: list[ast.stmt | None] = field(default_factory=list)   # the script's import of each (None: a module's)
    repeats: list[ast.ImportFrom] = field(default_factory=list)   # the script's later imports of names of one
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
    own = own_runs.own_part(tree) if session else []
    if own:   # (a model module with a test of its own under `__main__`: a module to its importers)
        lib = ast_rules.analyze_variables(own_runs.library(tree, own), data, catalog.load())
        hits, made = (hits, made) if lib[1] else (lib[0], lib[2])
        own = own if not lib[1] else []
    graph = [h.line for h in hits if h.rule.safety == "proven"]
    if not session or own:   # (a module of functions making variables builds a model: `weight_variable`)
        graph += made
    return Info(tree, session, min(graph) if graph else None, own, frozenset(graph))


def _read(path: str) -> bytes | None:
    """The bytes of a regular file of at most MAX_FILE_BYTES (a FIFO named `x.py` would
    block its reader; a larger file is not code: source_io.py); None otherwise."""
    from tf1gradfix.run.source_io import MAX_FILE_BYTES

    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _known(path: str, read: dict[str, Info | None]) -> Info | None:
    """`info` of the file, read and analyzed once: kept in `read`."""
    if path not in read:
        data = _read(path)
        read[path] = info(path, data) if data is not None else None
    return read[path]


def _tests(tree: ast.Module) -> bool:
    """Is it a test file: a class deriving from a `TestCase` (`tf.test.TestCase`,
    `unittest.TestCase`, `test_util.TensorFlowTestCase`)?"""
    bases = [b for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases]
    return any((b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")).endswith("TestCase") for b in bases)


def _importers(folder: str, name: str, files: dict[str, Info | None]) -> list[tuple[str, ast.Module]]:
    """(path, tree) of the files of `folder` that import module `name` (listed or not)."""
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
            out.append((key or path, tree))
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
        found += _unlisted(folder, paths, planned, read)
        projects += _imported_scripts(folder, paths, found, read)
    return projects


def _imported_scripts(folder: str, paths: list[str], found: list[Project], read: dict) -> list[Project]:
    """`found`, where a file opening a session of its own is imported from for graph code
    (imported_scripts.py): its project, or one of its own, refused; the importer's too."""
    refused = imported_scripts.refusals(folder, paths, lambda path: _known(path, read), _read)
    for project in found:
        if project.script in refused and project.refusal is None:
            project.refusal = refused[project.script]
    scripts = {project.script for project in found}
    return found + [Project(path, refusal=why) for path, why in refused.items() if path not in scripts and path in paths]


def _folder_projects(folder: str, paths: list[str]) -> tuple[list[Project], dict[str, Info | None]]:
    """The projects among the listed files of one folder, and what was read of its files."""
    projects: list[Project] = []
    read = _candidates(paths) if len(paths) >= 2 else {}
    modules = {os.path.basename(p)[:-3]: p for p, i in read.items() if i and (not i.session or i.own) and i.builds}
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
                    if again and _repeat(stmt, project.imports[project.modules.index(modules[name])],
                                         read[modules[name]], found.tree):
                        project.repeats.append(stmt)
                        continue
                    project.refusal = project.refusal or _import_refusal(path, stmt, name, read[modules[name]], again,
                                                                         found.tree)
        if project.modules:
            _add_nested(project, modules, read, found.tree)
        projects.append(project)
    used = {m for p in projects for m in p.modules}   # (a module run as a script is one more: own_runs)
    projects = [p for p in projects if p.script in used] + [p for p in projects if p.modules and p.script not in used]
    scripts = {os.path.abspath(p.script) for p in projects}   # (a module they share is migrated for all: project_groups)
    for project in projects:
        ours = {os.path.abspath(p) for p in (project.script, *project.modules)}
        for module in project.modules:
            name = os.path.basename(module)[:-3]
            others = [(p, t) for p, t in _importers(folder, name, read) if os.path.abspath(p) not in ours | scripts]
            if others and project.refusal is None:
                stmt = next(s for s in project.imports[project.modules.index(module):] if s is not None)
                line, col, other = stmt.lineno, stmt.col_offset + 1, os.path.basename(others[0][0])
                if _tests(others[0][1]):   # (said as what it is: the module's tests)
                    found = diagnostic(line, col, "project_module_tested", module=name, other=other)
                else:
                    found = diagnostic(line, col, "project_module_shared", module=name, other=other)
                project.refusal = (project.script, found)
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
        found = _known(module, read) if module is not None else None
        if found is not None and (not found.session or found.own) and found.builds:
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
    defined = {name: s for name, s in layout.top_names(module.tree).items() if s not in module.own}
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


def _repeat(stmt: ast.stmt, first: ast.stmt | None, module: Info, script: ast.Module) -> bool:
    """A later `from model import a, b` of a module the script imported that way already
    (`from utils import load` then `from utils import show`), or read already for a module
    it imports (`first` None): the module's code read in place of the first import binds
    every name it defines, so the later import binds them again to the same objects, as
    long as the script binds them no other way. It stays in the script (one line, put
    back as it was)."""
    if not (isinstance(stmt, ast.ImportFrom) and (first is None or isinstance(first, ast.ImportFrom)
                                                  and not layout.is_star(first))
            and not layout.is_star(stmt) and stmt.lineno == stmt.end_lineno):
        return False
    defined = layout.top_names(module.tree)
    names = {a.name for a in stmt.names}
    if any(a.asname is not None or a.name not in defined for a in stmt.names):
        return False
    for node in ast.walk(script):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "module", None) != stmt.module \
                and names & {(a.asname or a.name).partition(".")[0] for a in node.names}:
            return False
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in names \
                or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names \
                or isinstance(node, ast.arg) and node.arg in names \
                or isinstance(node, (ast.Global, ast.Nonlocal)) and names & set(node.names):
            return False
    return True


def _star_reads(reader: ast.Module, module: ast.Module) -> bool:
    """`from module import *` can be read as the module's code in its place: the module
    does not spell its names with `__all__`, and the reader reads none of the private
    names (`_scale`) that code binds and the star import does not."""
    if layout.star_names(module) is None:
        return False
    private = {name for name in layout.top_names(module) if name.startswith("_")}
    return not any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in private for n in ast.walk(reader))


def _add_nested(project: Project, modules: dict[str, str], read: dict[str, Info | None], script: ast.Module) -> None:
    """The modules the project's modules import with `from other import name`, each before
    the first module importing it (no import of the script: None). One the script imports
    later (`from utils import load` after `from model import Net`, model.py reading
    `from utils import *`) is read there instead, and the script's own import of it becomes
    a later import of names already bound (`_repeat`), or the project is refused at it."""
    k = 0
    while k < len(project.modules):
        found = read.get(project.modules[k])
        names = [name for stmt in (found.tree.body if found is not None else ()) for name in _imported(stmt)
                 if name in modules]
        later = [modules[n] for n in dict.fromkeys(names) if modules[n] in project.modules[k + 1:]]
        for path in later:   # (its code is read before the module importing it, where the names are needed)
            at = project.modules.index(path)
            stmt = project.imports[at]
            del project.modules[at], project.imports[at]
            info = read[path]
            if stmt is not None and info is not None and _repeat(stmt, None, info, script):
                project.repeats.append(stmt)
            elif stmt is not None:
                project.refusal = project.refusal or (project.script, diagnostic(
                    stmt.lineno, stmt.col_offset + 1, "project_import_form", module=_stem(path)))
        new = [modules[n] for n in dict.fromkeys(names) if modules[n] not in project.modules]
        if new:   # (read first, then looked at again: they may import others)
            project.modules[k:k] = new
            project.imports[k:k] = [None] * len(new)
            continue
        k += 1


def _stem(path: str) -> str:
    return os.path.basename(path)[:-3]
