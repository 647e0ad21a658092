"""Lines of a module read another way (statements moved or copied) back to the user's.

A reading made by transforming the user's tree keeps the user's statement objects where
it does not change them, and says which of its new statements stands for which of the
user's (`source`). Each statement's lines then map to that statement's lines; a line
between statements follows the statement before it.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


def statement_lines(module: cst.Module, kinds: tuple[type, ...] = (cst.SimpleStatementLine,)) -> dict[int, tuple[int, int]]:
    """id of each statement of `kinds` -> its first and last line."""
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(node): (span.start.line, span.end.line) for node, span in positions.items() if isinstance(node, kinds)}


def origin(old: cst.Module | dict, new: cst.Module | dict, source: dict[int, int]) -> Callable[[int], int]:
    """`new`'s line -> `old`'s; `source`: id of a statement `new` made -> id of the user's it stands for.
    Either module may be given as its `statement_lines` already read."""
    old_lines = old if isinstance(old, dict) else statement_lines(old)
    new_lines = new if isinstance(new, dict) else statement_lines(new)
    anchors = sorted((*new_lines[key], *old_lines[source.get(key, key)]) for key in new_lines
                     if source.get(key, key) in old_lines)

    def back(line: int) -> int:
        mapped = line
        for start, end, old_start, old_end in anchors:
            if start <= line <= end:
                return old_start + line - start
            if end < line:
                mapped = old_end + line - end
        return mapped

    return back
