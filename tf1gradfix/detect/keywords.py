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
from functools import lru_cache

from tf1gradfix.records import record
from tf1gradfix.rules.catalog import _read

SAFE, RESTRUCTURED = "safe", "restructured"


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
    raw = _read("keyword_renames.toml")
    return {name: {old: (entry["to"], entry["reach"]) for old, entry in keywords.items()}
            for name, keywords in raw.items()}


def hits(source: bytes, tree: ast.AST | None = None) -> list[KeywordHit]:
    """Every old keyword of a table function called in `source` (UTF-8), in source order.
    Names are resolved as every rule resolves them (ast_names.Names: imports, aliases,
    shadowing). A call that already gives the new keyword is left alone (TF2 would still
    reject it: no rename can fix it)."""
    from tf1gradfix.detect.ast_names import line_starts
    from tf1gradfix.detect.prefilter import python_tree

    renames = table()
    tree = tree if tree is not None else python_tree(source)
    if tree is None or b"tensorflow" not in source:
        return []
    names, starts = names_of(tree, source), line_starts(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        qualified = names.qualified(node.func)
        entry = renames.get(qualified[len("tensorflow."):]) if qualified and qualified.startswith("tensorflow.") else None
        if not entry:
            continue
        given = {kw.arg for kw in node.keywords} | _positional(qualified[len("tensorflow."):], node)
        for kw in node.keywords:
            if kw.arg in entry and entry[kw.arg][0] not in given:
                new, reach = entry[kw.arg]
                offset = starts[kw.lineno] + kw.col_offset
                col = len(source[starts[kw.lineno]:offset].decode("utf-8", "replace")) + 1
                found.append(KeywordHit(kw.lineno, col, offset, qualified.replace("tensorflow", "tf", 1), kw.arg, new, reach))
    return sorted(found, key=lambda h: h.offset)


def _positional(name: str, call: ast.Call) -> set[str]:
    """The TF1 parameters `call` gives positionally, where the reorder table lists them
    (`tf.argmax(h, 1, dimension=None)`: `axis` is given, so `dimension` is not renamed)."""
    names = _tf1_parameters().get(name)
    if names is None or any(isinstance(a, ast.Starred) for a in call.args):
        return set()
    return set(names[:len(call.args)])


@lru_cache(maxsize=1)
def _tf1_parameters() -> dict[str, list[str]]:
    """function -> TF1's parameter names, of the functions the reorder table lists."""
    from tf1gradfix.rules.catalog import _read

    return {name: entry["names"] for name, entry in _read("renames.toml").get("reorders", {}).items()}


_LAST_NAMES: list = []   # [(tree, source, Names)] of the last tree read


def names_of(tree: ast.AST, source: bytes):
    """ast_names.Names of `tree`, kept for the last tree: the keyword and the argument
    tables read the same file's calls one after the other."""
    from tf1gradfix.detect.ast_names import Names
    from tf1gradfix.rules.catalog import load

    if _LAST_NAMES and _LAST_NAMES[0][0] is tree and _LAST_NAMES[0][1] is source:
        return _LAST_NAMES[0][2]
    names = Names(tree, load(), source)
    _LAST_NAMES[:] = [(tree, source, names)]
    return names
