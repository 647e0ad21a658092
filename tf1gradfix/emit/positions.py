"""Where a node of the program is in the source: the line and column a refusal or a note names.

A node the rewrite made has no position of its own: an input method's statement, read
at its call, is placed where the method's statement is (input_methods.origin), and
anything else at the top of the file.
"""

from __future__ import annotations

from libcst.metadata import PositionProvider

from tf1gradfix.constructs import input_methods


def span(meta, node) -> tuple[int, int]:
    """The first and last line of `node`."""
    try:
        p = meta.get_metadata(PositionProvider, node)
        return p.start.line, p.end.line
    except (KeyError, AttributeError):
        line = position(meta, node)[0]
        return line, line


def position(meta, node) -> tuple[int, int]:
    try:
        p = meta.get_metadata(PositionProvider, node).start
        return p.line, p.column + 1
    except (KeyError, AttributeError):
        old = input_methods.origin(getattr(meta, "origins", {}), node)   # (an input method's statement, read at a call)
        return position(meta, old) if old is not None else (1, 1)
