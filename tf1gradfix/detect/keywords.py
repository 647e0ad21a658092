"""Calls of TF1 functions with keywords TF2 renamed (`dim`, `keep_dims`, `reduction_indices`...).

TF2 rejects the old keywords with a TypeError, so they are found in every file, session
program or module, and every call the rewrite writes or keeps gets the new ones. The
table (rules/keyword_renames.toml) is generated from TensorFlow's own upgrade tables by
scripts/gen_keyword_renames.py, each entry with its reach: `safe` (the tf.compat.v1
function takes the new keyword too, so a file that stays TF1 keeps running) or
`restructured` (only TF2's does). Python's `ast` alone: `check` never loads LibCST.
"""

from __future__ import annotations

import ast
import tomllib
from functools import lru_cache
from pathlib import Path

from tf1gradfix.records import record

TABLE = Path(__file__).resolve().parents[1] / "rules" / "keyword_renames.toml"
SAFE, RESTRUCTURED = "safe", "restructured"
_TF1_ROOTS = ("compat.v1.",)   # (tf.compat.v1.reduce_sum is TF1's reduce_sum: the table's key)


@record(frozen=True)
class KeywordHit:
    line: int          # 1-based, of the keyword
    col: int           # 1-based, in characters
    offset: int        # byte offset of the keyword's name in the source
    function: str      # `tf.reduce_sum`, as the table names it
    old: str
    new: str
    reach: str         # SAFE or RESTRUCTURED


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, tuple[str, str]]]:
    """function (without `tf.`) -> old keyword -> (new keyword, reach)."""
    raw = tomllib.loads(TABLE.read_text("utf-8"))
    return {name: {old: (entry["to"], entry["reach"]) for old, entry in keywords.items()}
            for name, keywords in raw.items()}


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to TensorFlow namespaces -> the prefix they stand for (`` for tf itself)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tensorflow" or alias.name.startswith("tensorflow."):
                    if alias.asname:
                        bound[alias.asname] = alias.name[len("tensorflow."):] + "." if "." in alias.name else ""
                    elif alias.name == "tensorflow":
                        bound["tensorflow"] = ""
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "tensorflow" or node.module.startswith("tensorflow.")):
            base = node.module[len("tensorflow."):] + "." if "." in node.module else ""
            for alias in node.names:
                bound[alias.asname or alias.name] = base + alias.name + "."
    return bound


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _function(call: ast.Call, aliases: dict[str, str]) -> str | None:
    text = _dotted(call.func)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    if head not in aliases:
        return None
    name = (aliases[head] + rest) if rest else aliases[head].rstrip(".")
    for root in _TF1_ROOTS:
        if name.startswith(root):
            name = name[len(root):]
    return name or None


def _line_starts(source: bytes) -> list[int]:
    starts, at = [0], 0
    for line in source.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


def hits(source: bytes, tree: ast.AST | None = None) -> list[KeywordHit]:
    """Every old keyword of a table function called in `source` (UTF-8), in source order.
    A call that already gives the new keyword is left alone (TF2 would still reject it:
    the caller reports it, no rename can fix it)."""
    renames = table()
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
    aliases = _aliases(tree)
    if not aliases:
        return []
    starts = _line_starts(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        name = _function(node, aliases)
        entry = renames.get(name) if name else None
        if not entry:
            continue
        given = {kw.arg for kw in node.keywords}
        for kw in node.keywords:
            if kw.arg in entry and entry[kw.arg][0] not in given:
                new, reach = entry[kw.arg]
                offset = starts[kw.lineno - 1] + kw.col_offset
                col = len(source[starts[kw.lineno - 1]:offset].decode("utf-8", "replace")) + 1
                found.append(KeywordHit(kw.lineno, col, offset, f"tf.{name}", kw.arg, new, reach))
    return sorted(found, key=lambda h: h.offset)

