"""IPython's lines in a notebook's code cells, and the Python some of them run.

`%%time`, `%time`, `%timeit`, `%%capture` and the other magics of magics.toml
run Python in the user's namespace: that Python is part of the program (a
training loop under `%%time` trains), so it is read, migrated and run as the
code it is, and its magic is put back in front of it when the notebook is
written. Every other IPython line (`%matplotlib`, `!pip`, `%%bash` cells) is
held out as `pass`; the names it mentions are kept so that a restructuring
that would change one of them refuses the notebook instead of breaking it.
"""

from __future__ import annotations

import ast
import functools
import re

from tf1gradfix.records import field, record

_MAGIC = re.compile(r"^\s*([%!?]|[\w.]+\?\s*$)")
_LINE = re.compile(r"^(\s*)%(\w+)\b[ \t]*(.*)$")
_CELL = re.compile(r"^\s*%%(\w+)\b[ \t]*(.*)$")
_WORD = re.compile(r"[A-Za-z_]\w*")


@record
class Joined:
    """A notebook's code cells as one program, line for line."""
    text: str
    held: dict[int, str] = field(default_factory=dict)     # (0-based line -> the IPython line `pass` stands for)
    prefix: dict[int, str] = field(default_factory=dict)   # (line -> the magic before its Python, `%time `)
    opaque: dict[int, str] = field(default_factory=dict)   # (held lines that are no Python: their text)


@functools.lru_cache(maxsize=None)
def _table() -> dict:
    from tf1gradfix.rules.catalog import _read

    return _read("magics.toml")


def _python_after_options(kind: str, name: str, rest: str) -> str | None:
    """The Python a `kind` ("line"/"cell") magic `name` runs after its options, or None
    when it is no magic of the table (or its arguments are not understood)."""
    row = _table()[kind].get(name)
    if row is None:
        return None
    valued = set(row["options"])
    while rest.startswith("-") and not rest.startswith("--"):
        flag, _, after = rest.partition(" ")
        if len(flag) < 2 or not flag[1].isalpha():
            return None
        if flag[1] in valued and len(flag) == 2:
            _, _, after = after.lstrip().partition(" ")   # (`-n 10`)
        rest = after.lstrip()
    while kind == "cell" and rest.startswith("--"):   # (`%%capture --no-stdout`)
        _, _, rest = rest.partition(" ")
        rest = rest.lstrip()
    return rest


def _cell_runs_python(first: str) -> bool:
    """Whether a cell whose first line is `first` (a `%%` line) runs its body as Python."""
    match = _CELL.match(first)
    if match is None:
        return False
    rest = _python_after_options("cell", match.group(1), match.group(2).strip())
    if rest is None:
        return False
    # (`%%capture out` names the captured output; `%%timeit setup` and `%%time x` run more code)
    return rest == "" or (match.group(1) == "capture" and rest.isidentifier())


def join(cells: list[list[str]]) -> Joined:
    """The code cells (each a list of source lines) as one program: a Python-running magic
    contributes its Python, any other IPython line (or whole `%%` cell) becomes `pass`."""
    out: list[str] = []
    joined = Joined("")
    for lines in cells:
        header = bool(lines) and lines[0].lstrip().startswith("%%")
        python_cell = header and _cell_runs_python(lines[0].rstrip("\r\n"))
        starts = _statement_starts(lines)
        for n, line in enumerate(lines):
            body = line.rstrip("\r\n")
            at = len(out)
            if header and (n == 0 or not python_cell):
                out.append("pass\n")
                joined.held[at] = body
                if not python_cell:
                    joined.opaque[at] = body
                continue
            if not _MAGIC.match(body) or (starts is not None and n not in starts):
                out.append(body + "\n")
                continue
            match = _LINE.match(body)
            python = match and _python_after_options("line", match.group(2), match.group(3))
            if python and _one_statement(python):
                out.append(match.group(1) + python + "\n")
                joined.prefix[at] = body[len(match.group(1)):len(body) - len(python)]
                continue
            out.append("pass\n")
            joined.held[at] = joined.opaque[at] = body
    joined.text = "".join(out)
    return joined


def _statement_starts(lines: list[str]) -> set[int] | None:
    """The lines of a cell that begin a statement (IPython reads a magic only there: `% 3`
    continuing `x = 10 \\`, or a `%` line inside a string, is Python), or None when the cell
    cannot be tokenized (then every line that looks like IPython's is taken for it)."""
    import io
    import tokenize

    # (what looks like IPython's, made a name for the tokenizer: `!pip` or `%time` as `_pip`)
    shaped = [_SHAPED.sub(lambda m: (m.group(1) or "") + "_", line, count=1) if _MAGIC.match(line) else line
              for line in lines]
    starts: set[int] = set()
    depth, broken, last_line = 0, True, -1
    skipped = (tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER)
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(shaped)).readline):
            if tok.type in skipped:
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                broken = broken or tok.type == tokenize.NEWLINE or depth == 0
                continue
            if tok.start[0] != last_line and broken:
                starts.add(tok.start[0] - 1)
            broken, last_line = False, tok.end[0]
            if tok.type == tokenize.OP:
                depth += (tok.string in "([{") - (tok.string in ")]}")
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return starts


_SHAPED = re.compile(r"^(\s*)[%!?]|\?(?=\s*$)")


def _one_statement(text: str) -> bool:
    try:
        return len(ast.parse(text).body) == 1
    except SyntaxError:
        return False


def module_names(text: str) -> set[str]:
    """The names a program binds at its top level (not inside functions or classes)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif not isinstance(child, (ast.Lambda, ast.expr_context)):
                todo.append(child)
    return names


def touched(joined: Joined, new_text: str) -> tuple[int, str, str] | None:
    """(line, the IPython line, a name) of the first IPython line that is no Python and
    uses a name the program binds before the rewrite and no longer after it (`%prun
    sess.run(...)` once `sess` is gone), or None."""
    gone = module_names(joined.text) - module_names(new_text)
    for at in sorted(joined.opaque):
        used = [word for word in _WORD.findall(joined.opaque[at]) if word in gone]
        if used:
            return at, joined.opaque[at], used[0]
    return None


def stand_in(new: list[str], origin: dict[int, int], stands: dict[int, int], old_line: int,
             near: list[int]) -> int | None | str:
    """The new line that holds old line `old_line`'s Python (unchanged, rewritten alike, or
    the one line its cell gets in its place: `near`), None when the rewrite removed the
    statement, or a reason when its rewrite is no single line a line magic can run."""
    unchanged = [j for j, i in origin.items() if i == old_line]
    if unchanged:
        return unchanged[0]
    rewritten = [j for j, i in stands.items() if i == old_line] or near
    if not rewritten:
        return None
    if len(rewritten) > 1 or not _one_statement(new[rewritten[0]].strip()):
        return "the Python of a line magic (`%time`) would be rewritten into more than one line"
    return rewritten[0]
