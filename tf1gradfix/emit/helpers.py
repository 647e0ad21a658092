"""Helpers a rewrite writes into the module (rules/helpers.toml): where TF1 computed
something no TF2 API computes with the same numbers, the output defines a small,
documented class (or class and function) once, after the module's imports, and its
layers (or calls) use it."""

from __future__ import annotations

import functools
import sys

import libcst as cst

from tf1gradfix.cst.syntax import bound_names
from tf1gradfix.model.nodes import BuilderModule, Layer, LayerLoop
from tf1gradfix.rules.catalog import _read


@functools.lru_cache(maxsize=None)
def table() -> dict[str, dict]:
    return _read("helpers.toml")["helper"]


def used(program) -> list[str]:
    """The helper classes the program's layers become, in the order they are first made."""
    keys = [n.helper for n in program.nodes if isinstance(n, Layer) and n.helper]
    keys += [site.helper for n in program.nodes if isinstance(n, BuilderModule) for site in n.layers if site.helper]
    keys += [site.helper for n in program.nodes if isinstance(n, LayerLoop) for site in n.sites if site.helper]
    return list(dict.fromkeys(keys))


def names_for(key: str, module: cst.Module, fresh) -> tuple[dict[str, str], list[str]]:
    """The names a helper's text spells besides its own and the TensorFlow alias: the other
    classes it defines (`names`, fresh), and each module it uses (`modules`) under the alias
    of the module's leading imports, else a fresh one with the import to add."""
    row = table()[key]
    fields = {field: fresh(base) for field, base in row.get("names", {}).items()}
    imports = []
    for field, path in row.get("modules", {}).items():
        alias = _leading_imports(module).get(path)
        if alias is not None and any(alias in bound_names(stmt) for stmt in module.body if not _imports(stmt, path)):
            alias = None   # (bound to something else too: `np = ...`)
        if alias is None:
            alias = fresh(field)
            imports.append(f"import {path}" if alias == path else f"import {path} as {alias}")
        fields[field] = alias
    return fields, imports


def _leading_imports(module: cst.Module) -> dict[str, str]:
    """Module -> the name `import MODULE [as NAME]` binds it to, among the leading imports."""
    found: dict[str, str] = {}
    for stmt in module.body[:_after_imports(list(module.body))]:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            for alias in small.names if isinstance(small, cst.Import) else ():
                path = cst.Module([]).code_for_node(alias.name)
                found.setdefault(path, cst.Module([]).code_for_node(alias.asname.name) if alias.asname else path)
    return found


def _imports(stmt, path: str) -> bool:
    """Is `stmt` an `import PATH [as NAME]` line?"""
    return _import(stmt) and isinstance(stmt.body[0], cst.Import) \
        and any(cst.Module([]).code_for_node(a.name) == path for a in stmt.body[0].names)


def _after_imports(body: list) -> int:
    """The position after the last import that comes before any definition or compound statement."""
    at = 0
    for k, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            break
        if any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body):
            at = k + 1
    return at


def defined(module: cst.Module, names: dict[str, str], tf: str, fields: dict[str, dict[str, str]] | None = None,
            imports: list[str] | tuple = ()) -> cst.Module:
    """`module` with the helpers defined after its last import that comes before any
    definition or compound statement (their free names: the TensorFlow alias, and the
    `fields` of names_for, whose `imports` go at the end of those imports)."""
    body = list(module.body)
    at = _after_imports(body)
    classes = []
    for key, name in names.items():
        text = table()[key]["text"].strip("\n").format(name=name, tf=tf, **(fields or {}).get(key, {}))
        for parsed in cst.parse_module(text + "\n").body:   # (a class, or a class and its function)
            classes.append(parsed.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    added = [cst.parse_statement(line + "\n") for line in imports]
    classes = [s for s in added if not _standard(s)] + classes
    if at < len(body):   # (two blank lines after a class, as black writes it)
        lines = list(body[at].leading_lines)
        blank = next((k for k, line in enumerate(lines) if line.comment is not None), len(lines))
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()] * max(0, 2 - blank) + lines)
    body = body[:at] + classes + body[at:]
    standard = [s for s in added if _standard(s)]
    first = next((k for k, stmt in enumerate(body[:at]) if _import(stmt) and not _future(stmt)), None)
    if standard and first is not None:   # (the standard library's first, as isort orders them)
        lead, stmt = body[first].leading_lines, body[first]
        gap = [] if _standard(stmt) else [cst.EmptyLine()]
        future = first > 0 and _future(body[first - 1])   # (a blank line after `from __future__`)
        standard[0] = standard[0].with_changes(leading_lines=lead or [cst.EmptyLine()] * future)
        body[first:first + 1] = standard + [stmt.with_changes(leading_lines=gap)]
    elif standard:
        body[at:at] = standard
    return module.with_changes(body=body)


def _import(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))


def _future(stmt) -> bool:
    small = stmt.body[0]
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"


def _standard(stmt) -> bool:
    """An import of the standard library."""
    if not _import(stmt):
        return False
    small = stmt.body[0]
    module = small.names[0].name if isinstance(small, cst.Import) else small.module
    return module is not None and cst.Module([]).code_for_node(module).partition(".")[0] in sys.stdlib_module_names
