"""The text of a project (project.py): the script with its modules' code in place of
their imports, between marker statements, and the rewrite of it split back into files.
`project` is a project_plan.Project throughout (not imported: project_plan.py imports this module)."""

from __future__ import annotations

import ast
import os
import re

_BEGIN, _END = b"__tf1gradfix_module_begin__", b"__tf1gradfix_module_end__"
_NESTED = b"__tf1gradfix_nested_import__"   # a module's import of an earlier module, while they are read as one
_REPEAT = b"__tf1gradfix_repeated_import__"   # the script's later import of a module's names (project_plan._repeat)
_BOM = b"\xef\xbb\xbf"
_MARKER = re.compile(rb"^(__tf1gradfix_module_(?:begin|end)__) = (\d+)[ \t]*(?:\r\n|\r|\n)?\Z")


def attribute_uses(tree: ast.Module, bound: str, defined) -> list[ast.Attribute] | None:
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


def top_names(tree: ast.Module) -> dict[str, ast.stmt]:
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


def star_names(tree: ast.Module) -> set[str] | None:
    """The names `from module import *` binds (its public top-level names), or None where
    the module spells them with `__all__`: read as one module, its code binds all of its
    names, which only holds for a star import of its public ones."""
    names = top_names(tree)
    if "__all__" in names:
        return None
    return {name for name in names if not name.startswith("_") and name != "*"}


def is_star(stmt: ast.stmt | None) -> bool:
    return isinstance(stmt, ast.ImportFrom) and len(stmt.names) == 1 and stmt.names[0].name == "*"


def bound_name(stmt: ast.Import) -> str:
    return stmt.names[0].asname or stmt.names[0].name


def unqualified(project, data: bytes, trees: dict, split_lines) -> tuple[bytes, dict]:
    """The script with `model.NAME` read as `NAME` for each module it imports as `import
    model` (what the module's code in place of the import binds); line -> [(column, size)]
    of each cut, for the findings' columns."""
    pairs = [(bound_name(stmt), trees[module]) for module, stmt in zip(project.modules, project.imports)
             if isinstance(stmt, ast.Import)]
    return cut_names(data, trees[project.script], pairs, split_lines)


def cut_names(data: bytes, tree: ast.Module, pairs: list, split_lines) -> tuple[bytes, dict]:
    """`data` with `bound.` cut before each NAME `tree` reads as `bound.NAME`, for each
    (bound, module tree) of `pairs`; line -> [(column, size)] of each cut."""
    cuts: dict[int, list] = {}
    lines = split_lines(data)
    for name, module in pairs:
        bound = name.encode()
        for node in attribute_uses(tree, name, top_names(module)) or []:
            line, col = node.value.lineno, node.value.col_offset
            if lines[line - 1][col:col + len(bound) + 1] == bound + b".":   # (else `model . Net`: left as it is, refused)
                cuts.setdefault(line, []).append((col, len(bound) + 1))
    for line, found in cuts.items():
        text = lines[line - 1]
        for col, size in sorted(found, reverse=True):
            text = text[:col] + text[col + size:]
        lines[line - 1] = text
    return b"".join(lines), {line: sorted(found) for line, found in cuts.items()}


def column(cuts: list, col: int) -> int:
    """A column of the unqualified script line as a column of the original one."""
    removed = 0
    for start, size in cuts:
        if col - 1 >= start - removed:
            removed += size
    return col + removed


def qualified(project, text: bytes, modules: dict) -> bytes | None:
    """`text` (the rewritten script) with `model.` put back before each name of a module
    imported as `import model`; None when a name cannot be told apart from the script's own."""
    from tf1gradfix.detect.prefilter import python_tree

    pairs = [(bound_name(stmt), python_tree(modules[module])) for module, stmt in zip(project.modules, project.imports)
             if isinstance(stmt, ast.Import)]
    return requalified(text, pairs)


def requalified(text: bytes, pairs: list) -> bytes | None:
    """`text` with `bound.` put back before each name a (bound, module tree) of `pairs`
    defines (not one it imports); None when such a name is also bound in `text`."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.run.rewrite_check import split_lines

    tree = python_tree(text)
    if tree is None:
        return None
    bound_here = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound_here |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound_here |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound_here |= {(a.asname or a.name).partition(".")[0] for n in ast.walk(tree)
                   if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    inserts: dict[int, list] = {}
    for bound, tree_of in pairs:
        names = {name for name, stmt in top_names(tree_of).items()
                 if not isinstance(stmt, (ast.Import, ast.ImportFrom))} if tree_of is not None else set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
                if node.id in bound_here:
                    return None
                inserts.setdefault(node.lineno, []).append((node.col_offset, bound.encode() + b"."))
    lines = split_lines(text)
    for line, found in inserts.items():
        for col, prefix in sorted(found, reverse=True):
            lines[line - 1] = lines[line - 1][:col] + prefix + lines[line - 1][col:]
    return b"".join(lines)


def nested(project, trees: dict) -> list[tuple[str, ast.ImportFrom | ast.Import]]:
    """Each module's `from other import a, b` (or `import other`, read as `other.NAME`) of a
    module before it in the project (its code is read first, so the names are bound
    already): (module, statement), in order. One line each, names the other module defines,
    no alias (project._module_refusal checks)."""
    out = []
    for k, module in enumerate(project.modules):
        earlier = {os.path.basename(m)[:-3] for m in project.modules[:k]}
        out += [(module, stmt) for stmt in trees[module].body
                if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module in earlier
                or isinstance(stmt, ast.Import) and len(stmt.names) == 1 and stmt.names[0].name in earlier]
    return out


def nested_pairs(module: str, project, trees: dict) -> list[tuple[str, ast.Module]]:
    """(bound, tree of the module it names) of each `import other` of `module` (nested)."""
    stems = {os.path.basename(m)[:-3]: m for m in project.modules}
    return [(bound_name(stmt), trees[stems[bound_name(stmt)]]) for path, stmt in nested(project, trees)
            if path == module and isinstance(stmt, ast.Import)]


def _without_nested(module: str, body: list[bytes], imports: list, first: int) -> list[bytes]:
    """The module's lines with each nested import's line a marker (`first`: the index of its
    first import among all of them), so the module's code is read without importing the
    original module again."""
    out = list(body)
    for k, (path, stmt) in enumerate(imports):
        if path == module:
            ending = body[stmt.lineno - 1][len(body[stmt.lineno - 1].rstrip(b"\r\n")):]
            out[stmt.lineno - 1] = _NESTED + b" = %d" % (first + k) + (ending or b"\n")
    return out


def restore_nested(module: str, text: bytes, imports: list, original: bytes, split_lines) -> bytes | None:
    """The module's rewritten text with each marker its import line again (None: a marker
    is not where the rewrite should have kept it, once)."""
    lines = split_lines(text)
    old = split_lines(original.removeprefix(_BOM))
    for k, (path, stmt) in enumerate(imports):
        if path != module:
            continue
        marker = _NESTED + b" = %d" % k
        found = [i for i, line in enumerate(lines) if line.rstrip(b"\r\n") == marker]
        if len(found) != 1:
            return None
        lines[found[0]] = old[stmt.lineno - 1]
    return b"".join(lines)


def combined(project, datas: dict[str, bytes], split_lines, imports=()):
    """(the script with each import replaced by its module between markers; combined line ->
    (path, line))."""
    script = split_lines(datas[project.script])
    for k, stmt in enumerate(project.repeats):   # (its module's code binds them already)
        ending = script[stmt.lineno - 1][len(script[stmt.lineno - 1].rstrip(b"\r\n")):]
        script[stmt.lineno - 1] = _REPEAT + b" = %d" % k + (ending or b"\n")
    pieces: list[bytes] = []
    where: list[tuple[str, int]] = []   # index: combined line - 1
    at = 0
    for index, (module, stmt) in enumerate(zip(project.modules, project.imports)):
        if stmt is None:   # (imported by a module only: read just before it, where the script imports that)
            stmt = next(s for s in project.imports[index:] if s is not None)
            start, end = stmt.lineno - 1, stmt.lineno - 1
        else:
            start, end = stmt.lineno - 1, stmt.end_lineno
        pieces += script[at:start]
        where += [(project.script, n + 1) for n in range(at, start)]
        body = split_lines(datas[module].removeprefix(_BOM))
        if body and not body[-1].endswith((b"\n", b"\r")):
            body[-1] += b"\n"
        body = _without_nested(module, body, [(p, s) for p, s in imports], 0)
        pieces += [_BEGIN + b" = %d\n" % index, *body, _END + b" = %d\n" % index]
        where += [(project.script, stmt.lineno)] + [(module, n + 1) for n in range(len(body))] + [(project.script, stmt.lineno)]
        at = end
    pieces += script[at:]
    where += [(project.script, n + 1) for n in range(at, len(script))]

    def locate(line: int) -> tuple[str, int]:
        return where[line - 1] if 1 <= line <= len(where) else (project.script, line)
    return b"".join(pieces), locate


def placed(message: str, path: str, locate) -> str:
    """A finding's message for the file `path` it is reported in: each `line N` it names (a
    line of the combined text) as the line of the file it is in, named when another."""
    def one(found: re.Match) -> str:
        where, line = locate(int(found.group(1)))
        return f"line {line}" if where == path else f"line {line} of {os.path.basename(where)}"
    return _LINE.sub(one, message)


_LINE = re.compile(r"\bline (\d+)\b")


def split(new: bytes, count: int, split_lines) -> dict | None:
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


def check_parts(project, parts: dict, datas: dict[str, bytes], cut: bool = False) -> str | None:
    """Each file's new bytes into `parts` (path -> bytes); why they cannot be written, if so.
    `cut`: the script was read with `model.` cut from its names (`unqualified`)."""
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.run.rewrite_check import as_written, split_lines

    script_lines = split_lines(datas[project.script])
    new_script = []
    for k, chunk in enumerate(parts["script"]):
        new_script += chunk
        if k < len(project.imports) and project.imports[k] is not None:   # the script's own import, as it was
            stmt = project.imports[k]
            new_script += script_lines[stmt.lineno - 1:stmt.end_lineno]
    for k, stmt in enumerate(project.repeats):   # (the script's later imports of a module's names, as they were)
        found = [i for i, line in enumerate(new_script) if line.rstrip(b"\r\n") == _REPEAT + b" = %d" % k]
        if len(found) != 1:
            return "the rewrite moved an import of the script"
        new_script[found[0]] = script_lines[stmt.lineno - 1]
    result = {}
    originals = {m: python_tree(datas[m]) for m in project.modules}
    imports = nested(project, originals)
    for module, lines in zip(project.modules, parts["modules"]):
        data = datas[module]
        text = b"".join(lines)
        if imports:
            text = restore_nested(module, text, imports, data, split_lines)
            if text is None:
                return f"the rewrite moved an import of {os.path.basename(module)}"
            pairs = [(bound, python_tree(result[p])) for p in result for bound, _ in
                     nested_pairs(module, project, originals) if os.path.basename(p)[:-3] == bound]
            text = requalified(text, pairs) if pairs else text
            if text is None:
                return f"a name of a module {os.path.basename(module)} imports is also bound by it"
        if data.startswith(_BOM):   # (a BOM starts its file, not the combined module's middle)
            text = _BOM + text
        if not data.endswith((b"\n", b"\r")) and text.endswith(b"\n") and text[:-1] == data:
            text = data   # (the newline the combined module needed)
        result[module] = as_written(data, text, None)[0]
    script = b"".join(new_script)
    if any(isinstance(stmt, ast.Import) for stmt in project.imports):
        script = qualified(project, script, result)
        if script is None:
            return "a name of an `import`ed module is also bound by the script"
    result = {project.script: as_written(datas[project.script], script, None)[0], **result}
    for path, text in result.items():
        tree = python_tree(text)
        if tree is None:
            return f"the rewrite of {os.path.basename(path)} does not parse"
        if path != project.script:
            defined = top_names(tree)
            stmt = project.imports[project.modules.index(path)]
            if stmt is None:   # (imported by a module: its import is checked as the module's, nested)
                continue
            if isinstance(stmt, ast.Import):   # (the names the script reads as `model.NAME`)
                used = {n.attr for n in ast.walk(python_tree(result[project.script])) if isinstance(n, ast.Attribute)
                        and isinstance(n.value, ast.Name) and n.value.id == bound_name(stmt)}
            elif is_star(stmt):   # (the module's public names the script reads)
                public = star_names(python_tree(datas[path])) or set()
                used = {n.id for n in ast.walk(python_tree(result[project.script]))
                        if isinstance(n, ast.Name) and n.id in public}
            else:
                used = {a.name for a in stmt.names}
            lost = sorted(name for name in used if name not in defined)
            if lost:
                return f"the rewrite of {os.path.basename(path)} no longer defines `{lost[0]}`"
    parts.clear()
    parts.update(result)
    return None
