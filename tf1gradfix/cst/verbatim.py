"""Generated functions put into the rewritten tree as text, not parsed again.

The step functions are written as text. Parsing that text with LibCST only to
print it again, a few lines later, cost a tenth of the rewrite. A `Verbatim`
statement prints the text the way LibCST would print the parsed statement in
the same place: every line moved by the indentation of where it stands.

That holds only for text LibCST would print that way, which `fits` decides
conservatively; any other text is parsed as before. What it excludes, and why:

* a module whose indentation or line ending is not 4 spaces and LF: blocks
  of the text would be printed with the module's own;
* comments, backslashes, tabs, form feeds, CR, triple quotes: comment lines
  and string contents are not moved with the block;
* lines of only whitespace, and empty lines inside brackets or at the top
  level: LibCST may print those with or without the indentation;
* a continuation line (inside brackets) indented less than its statement:
  LibCST prints it as it is, not moved;
* more than one top-level statement, or `else`/`except`/... at the top level:
  the caller replaces the blank lines before each top-level statement.

tests/test_verbatim.py checks every statement of every fixture against the
parsed-and-printed result, in three places.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

_EXCLUDED = re.compile(r"#|\\|\t|\r|\f|\v|\x1c|\x1d|\x1e|\x85|\u2028|\u2029|'''|\"\"\"")
# The only tokens that change the bracket depth: brackets, and strings (one line each, no escapes here).
_DEPTH_TOKENS = re.compile(r"[(\[{]|[)\]}]|\"[^\"\n]*\"|'[^'\n]*'|\n")
_CLAUSES = re.compile(r"(else|elif|except|finally|case)\b")


def fits(text: str, module: cst.Module) -> bool:
    """Whether `text` (one top-level statement, no final newline) prints as Verbatim prints it."""
    if module.default_indent != "    " or module.default_newline != "\n" or not text or text[-1] == "\n":
        return False
    if _EXCLUDED.search(text):
        return False
    continuation = _continuation_lines(text)
    if continuation is None:
        return False
    statement_indent = 0
    head = True   # still in the decorators and the first line of the one top-level statement
    for number, line in enumerate(text.split("\n")):
        if not line.strip():
            if line or number in continuation or head:
                return False
            continue
        indent = len(line) - len(line.lstrip(" "))
        if number in continuation:
            if indent < statement_indent:
                return False
            continue
        if indent == 0:
            if not head or _CLAUSES.match(line):
                return False
            head = line.startswith("@")
        else:
            head = False
        statement_indent = indent
    return True


def _continuation_lines(text: str) -> set[int] | None:
    """Numbers of the lines that start inside brackets (None: a bracket or a quote is unpaired)."""
    depth, line, out = 0, 0, set()
    quotes = 0   # quote characters inside the strings seen
    for match in _DEPTH_TOKENS.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
            if depth:
                out.add(line)
        elif token in "([{":
            depth += 1
        elif token in ")]}":
            depth -= 1
            if depth < 0:
                return None
        else:
            quotes += token.count('"') + token.count("'")
    if depth or quotes != text.count('"') + text.count("'"):
        return None
    return out


@dataclass(frozen=True)
class Verbatim(cst.BaseStatement):
    """One generated statement, as text, after its leading lines (blank lines, comments)."""

    text: str
    leading_lines: Sequence[cst.EmptyLine] = ()

    def _visit_and_replace_children(self, visitor) -> Verbatim:
        return self   # the leading lines are never edited in place, and the text is not a tree

    def _codegen_impl(self, state) -> None:
        for empty in self.leading_lines:
            empty._codegen(state)
        for line in self.text.split("\n"):
            if line:
                state.add_indent_tokens()
                state.add_token(line)
            state.add_token(state.default_newline)
