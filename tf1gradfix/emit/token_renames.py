"""Safe renames as byte edits of the source (as pyupgrade does), without LibCST.

`tf.set_random_seed` becomes `tf.random.set_seed`: the alias and the
outermost dot (with any whitespace or comment around it) stay as written,
the parts below the alias become plain `.part`s, and the last name is
swapped. This is the text `renames.renamed_chain` prints, byte for byte;
a chain whose dropped parts hold a bracket (LibCST would drop it with
them) is not edited here (`exact` is False) and is left to that path.
"""

from __future__ import annotations

import ast
from typing import cast

from tf1gradfix.detect.ast_names import line_starts

_INNER_OK = frozenset(b" \t\\\r\n.") | frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def renamed(data: bytes, plans: list[tuple[ast.Attribute, tuple[int, list[str]]]]) -> tuple[bytes, bool]:
    """(`data` with each planned chain renamed, whether that is exactly LibCST's printing)."""
    starts = line_starts(data)

    def at(line: int | None, col: int | None) -> int:   # (set on every parsed node)
        return starts[cast(int, line)] + cast(int, col)

    edits, exact = [], True
    for node, (old_parts, new_parts) in plans:
        base: ast.expr = node
        for _ in range(old_parts):
            base = cast(ast.Attribute, base).value
        base_end = at(base.end_lineno, base.end_col_offset)
        value_end = at(node.value.end_lineno, node.value.end_col_offset)
        end = at(node.end_lineno, node.end_col_offset)
        attr = end - len(node.attr)
        if (at(base.lineno, base.col_offset) != at(node.lineno, node.col_offset)
                or not set(data[base_end:value_end]) <= _INNER_OK or b")" in data[value_end:attr]):
            exact = False
        edits.append((base_end, value_end, "".join("." + p for p in new_parts[:-1]).encode()))
        edits.append((attr, end, new_parts[-1].encode()))
    out, done = [], 0
    for start, stop, text in sorted(edits):
        out += [data[done:start], text]
        done = stop
    out.append(data[done:])
    return b"".join(out), exact
