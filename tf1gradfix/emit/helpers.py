"""Classes a rewrite writes into the module (rules/helpers.toml): where TF1 computed
something no TF2 API computes with the same numbers, the output defines a small,
documented class once, after the module's imports, and its layers use it."""

from __future__ import annotations

import functools

import libcst as cst

from tf1gradfix.model.nodes import BuilderModule, Layer
from tf1gradfix.rules.catalog import _read


@functools.lru_cache(maxsize=None)
def table() -> dict[str, dict]:
    return _read("helpers.toml")["helper"]


def used(program) -> list[str]:
    """The helper classes the program's layers become, in the order they are first made."""
    keys = [n.helper for n in program.nodes if isinstance(n, Layer) and n.helper]
    keys += [site.helper for n in program.nodes if isinstance(n, BuilderModule) for site in n.layers if site.helper]
    return list(dict.fromkeys(keys))


def defined(module: cst.Module, names: dict[str, str], tf: str) -> cst.Module:
    """`module` with the classes defined after its last import that comes before any
    definition or compound statement (their only free name is the TensorFlow alias)."""
    body = list(module.body)
    at = 0
    for k, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            break
        if any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body):
            at = k + 1
    classes = []
    for key, name in names.items():
        parsed = cst.parse_statement(table()[key]["text"].strip("\n").format(name=name, tf=tf) + "\n")
        classes.append(parsed.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    if at < len(body):   # (two blank lines after a class, as black writes it)
        lines = list(body[at].leading_lines)
        blank = next((k for k, line in enumerate(lines) if line.comment is not None), len(lines))
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()] * max(0, 2 - blank) + lines)
    return module.with_changes(body=body[:at] + classes + body[at:])
