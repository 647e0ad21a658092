"""A restructured notebook program put back into the notebook's code cells.

The restructuring rewrites the code cells read as one program; written back,
each new line goes to the cell its statement came from: a line the rewrite kept
stays in its cell (the line diff's equal runs), a rewritten line goes to the cell
of the old line it most resembles (the same statement removed elsewhere: moved),
and a line of new code (the step functions) to the cell of the line before it
among those that replace old lines (the first of the cells they replace when it
comes first), or, inserted, to the cell of the line before it. The result is refused unless it is the same
cells in the same order: no line may land in a cell before the cell of a line
above it (a statement moved across cells), every IPython line must stay where
it was, and each new cell must be whole statements (a cell that runs alone).
A line magic's Python (`%time STATEMENT`) gets its magic back in front of the
line that holds its statement after the rewrite (notebook_magics.stand_in).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import keyword
import re
from typing import cast

SIMILAR = 0.6   # (difflib ratio) a rewritten line and the old line it stands for
_COMMON = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"tf"}   # (names that tell no statement apart)


def _names(line: str) -> set[str]:
    """The program's own names on a line: a rewritten statement keeps them."""
    return set(re.findall(r"[A-Za-z_]\w*", line)) - _COMMON


def split(old: list[str], cell_of: list[int], magic: set[int], new: list[str], numbers: list[int],
          prefix: dict[int, str] | None = None):
    """The new lines of each code cell, each as (text, the old line it is unchanged or
    None), or (code cell, reason) when the program does
    not map back. `old`: the joined program's lines, `cell_of`: each one's code cell
    (a position), `magic`: the old lines that are IPython's (`pass` in the program),
    `numbers`: each code cell's number among the code cells (as findings show it), for the reason, `prefix`: the
    old lines that are a line magic's Python, with their magic (`%time `)."""
    from tf1gradfix.run.notebook_magics import stand_in

    owner: list[int | None] = [None] * len(new)
    origin: dict[int, int] = {}   # new line -> the old line it is, unchanged
    stands: dict[int, int] = {}   # new line -> the old line it stands for, rewritten
    removed = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    chunks = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                owner[j1 + k], origin[j1 + k] = cell_of[i1 + k], i1 + k
        else:
            removed += range(i1, i2)
            chunks.append((i1, i2, j1, j2))
    for i1, i2, j1, j2 in chunks:
        last = min((cell_of[i] for i in range(i1, i2)), default=None)   # (new code: the first cell it replaces)
        for j in range(j1, j2):
            owner[j], like = _resembled(new[j], old, cell_of, range(i1, i2), removed)
            if like is not None:
                stands[j] = like
            if owner[j] is None and new[j].strip():
                owner[j] = last   # (or the cell of the line before it in the chunk)
            last = owner[j] if owner[j] is not None else last
    moved = [i for i in magic if i not in origin.values()]
    if moved:
        return cell_of[moved[0]], "an IPython line (`%`, `!`) of the cell would not stay where it was"
    for j in range(len(new)):   # new code, blank lines: with the line before
        if owner[j] is None:
            owner[j] = owner[j - 1] if j else 0
        elif j and owner[j] < owner[j - 1]:
            return owner[j], f"a statement of this cell would move below cell {numbers[owner[j - 1]]}"
    magics: dict[int, str] = {}   # new line -> the magic to put back in front of it
    for i, magic_text in (prefix or {}).items():
        near = next(([j for j in range(j1, j2) if owner[j] == cell_of[i] and new[j].strip()]
                     for i1, i2, j1, j2 in chunks if i1 <= i < i2), [])
        j = stand_in(new, origin, stands, i, near)
        if isinstance(j, str):
            return cell_of[i], j
        if j is not None:
            magics[j] = magic_text
    cells: list[list[tuple[str, int | None]]] = [[] for _ in range(max(cell_of, default=0) + 1)]
    for n in range(len(cells)):
        try:
            ast.parse("".join(line for j, line in enumerate(new) if owner[j] == n))
        except SyntaxError:
            return n, "a statement of the rewrite would be split between this cell and the next"
    for j, line in enumerate(new):
        if j in magics:
            indent = line[:len(line) - len(line.lstrip())]
            line = indent + magics[j] + line[len(indent):]
        cells[cast(int, owner[j])].append((line, origin.get(j)))
    return cells


def _resembled(line: str, old: list[str], cell_of: list[int], chunk: range,
               removed: list[int]) -> tuple[int | None, int | None]:
    """(the cell, the index) of the old line `line` stands for: the most alike of the lines it
    replaced that share a name of the program with it, else the same line removed elsewhere
    (a statement moved); (None, None) for new code."""
    text = line.strip()
    if not text:
        return None, None
    best, cell, like, names = SIMILAR, None, None, _names(text)
    for i in chunk:
        if not names & _names(old[i]):
            continue
        matcher = difflib.SequenceMatcher(None, old[i].strip(), text, autojunk=False)
        if matcher.real_quick_ratio() >= best and matcher.quick_ratio() >= best and matcher.ratio() >= best:
            best, cell, like = matcher.ratio(), cell_of[i], i
    if cell is None and len(text) >= 8 and any(c.isalnum() for c in text):
        like = next((i for i in removed if old[i].strip() == text), None)
        cell = None if like is None else cell_of[like]
    return cell, like
