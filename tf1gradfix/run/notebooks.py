"""Jupyter notebooks: their code cells checked and given the safe fixes, cell by cell.

The code cells are read in order as one module (a name imported in the
first cell is the name used in the tenth), with IPython's magics and shell
lines (`%matplotlib inline`, `!pip ...`, `%%bash` cells) held out as blank
statements so that lines keep their numbers; the Python that `%%time`,
`%time`, `%timeit` and `%%capture` run is part of the program
(notebook_magics.py). Findings are reported as
`notebook.ipynb:cell N:LINE:COL`, as other notebook-aware linters do.

A safe fix goes back into its own line's cell; a restructuring of the
program goes back cell by cell where it maps onto the same cells
(notebook_cells.py), and the notebook is refused (left as it is, with the
reason) where it does not. Everything else (outputs, metadata, markdown, the
JSON layout) is kept byte for byte, since the notebook is written back with
the layout it was read in; a notebook whose layout cannot be reproduced
exactly is reported and left as it is. The verifier proves a notebook by
running its code cells in order (`script`), both sides.
"""

from __future__ import annotations

from tf1gradfix.records import record, replace
from tf1gradfix.run import notebook_magics
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
from tf1gradfix.run.source_io import long_line

SUFFIX = ".ipynb"


@record
class _Cell:
    index: int          # 1-based among all cells (its place in the JSON)
    lines: list[str]    # the cell's source, each line with its own ending
    first: int          # its first line in the joined module
    number: int = 0     # 1-based among the code cells: the `cell N` shown, as ruff counts


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


def _source_lines(cell: dict) -> list[str]:
    """A code cell's lines; ValueError for a source that is no text (nbformat: a string or a
    list of strings)."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise ValueError("a code cell's source is not text")
    return _lines(source)


def _lines(text: str) -> list[str]:
    """`text`'s lines as Python reads them: split at \\n, \\r\\n and \\r only, never at a U+2028
    or a form feed inside a string (str.splitlines would)."""
    from tf1gradfix.run.rewrite_check import split_lines

    return [line.decode("utf-8", "surrogatepass") for line in split_lines(text.encode("utf-8", "surrogatepass"))]


def _joined(cells: list[_Cell]) -> notebook_magics.Joined:
    """The code cells as one module (notebook_magics.join)."""
    return notebook_magics.join([cell.lines for cell in cells])


def _language(notebook: dict) -> str:
    """The notebook's kernel language, lower case ("" when it does not say)."""
    meta = notebook.get("metadata") if isinstance(notebook, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        value = meta.get(key)
        if isinstance(value, dict) and isinstance(value.get(field_name), str):
            return value[field_name].lower()
    return ""


def _layout(text: str, notebook: dict):
    """The json.dumps settings that write `notebook` back as `text`, or None."""
    import json
    for indent in (1, 2, 4, None):
        for sort in (True, False):
            for ascii_only in (False, True):
                written = json.dumps(notebook, indent=indent, sort_keys=sort, ensure_ascii=ascii_only)
                for end in ("\n", ""):
                    if written + end == text:
                        return dict(indent=indent, sort_keys=sort, ensure_ascii=ascii_only), end
    return None


def process(path: str, data: bytes, codes: CodeFilter, fix: bool = True, restructure: bool = True,
            check: bool = False):
    """A FileResult for a notebook: findings placed in cells, new notebook bytes if fixed
    (`restructure`, `check`: as for engine.process_source)."""
    import json  # (in the functions: batch imports this module for every run, notebooks or not)

    from tf1gradfix.run.engine import FileResult, process_source

    result = FileResult(path)
    try:
        text = data.decode("utf-8")
        notebook = json.loads(text)
        raw_cells = notebook["cells"]
        assert isinstance(raw_cells, list)
    except RecursionError:
        result.error = FileError(path, "not a Jupyter notebook (nbformat 4 JSON): nested too deeply to read")
        return result
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AssertionError) as exc:
        result.error = FileError(path, f"not a Jupyter notebook (nbformat 4 JSON): {exc}")
        return result
    if _language(notebook) not in ("python", ""):
        return result   # (an R or Julia notebook holds no Python to check)
    cells, line = [], 1
    for number, raw in enumerate(raw_cells, start=1):
        if isinstance(raw, dict) and raw.get("cell_type") == "code":
            try:
                lines = _source_lines(raw)
            except ValueError as exc:
                result.error = FileError(f"{path}:cell {len(cells) + 1}", f"not a Jupyter notebook (nbformat 4 JSON): {exc}")
                return result
            cells.append(_Cell(number, lines, line, len(cells) + 1))
            line += len(lines)
    joined = _joined(cells)
    module = joined.text
    too_long = long_line(module.encode("utf-8"))
    if too_long:
        result.error = FileError(path, f"in its code cells, {too_long}")
        return result
    inner = process_source(path, module.encode("utf-8"), codes, fix=fix, restructure=restructure, check=check)
    if inner.error is not None:
        cell, at = _place(cells, inner.error.line)
        result.error = replace(inner.error, path=f"{path}:cell {cell.number}" if cell else path, line=at)
        return result
    placed = []
    for finding in inner.findings:
        cell, at = _place(cells, finding.line)
        shift = len(joined.prefix.get(finding.line - 1, "")) if finding.line and finding.col else 0   # (`%time `)
        placed.append(replace(finding, path=f"{path}:cell {cell.number}" if cell else path, line=at or finding.line,
                              col=finding.col + shift if shift else finding.col))
    result.findings = placed
    if inner.new_source is None:
        return result
    layout = _layout(text, notebook)
    cells_text = [line.rstrip("\r\n") + "\n" for cell in cells for line in cell.lines]
    new_lines = _lines(inner.new_source.decode("utf-8"))
    old_lines = _lines(module)
    if layout is not None and any(f.fixed and f.safety != "safe" for f in inner.findings):   # (restructured)
        placed_cells = _restructured(cells, joined, new_lines)
        if isinstance(placed_cells, tuple):
            return _refused(path, data, codes, *placed_cells)
        emptied = []
        for cell, lines in zip(cells, placed_cells):
            if lines != cell.lines:
                raw = raw_cells[cell.index - 1]
                raw["source"] = lines if isinstance(raw.get("source"), list) else "".join(lines)
                if not "".join(lines).strip():   # (its outputs were the old code's: the cell goes)
                    emptied.append(raw)
        notebook["cells"] = [raw for raw in raw_cells if not any(raw is e for e in emptied)]
        settings, end = layout
        result.new_source = (json.dumps(notebook, **settings) + end).encode("utf-8")
        return result
    if layout is None or len(new_lines) != len(old_lines):
        why = ("its JSON layout cannot be written back exactly" if layout is None
               else "a fix changed the number of lines")
        result.error = FileError(path, f"notebook not rewritten: {why}; fix it by hand or save it from Jupyter first")
        result.findings = [replace(f, fixed=False) for f in placed]
        return result
    for n, magic in joined.prefix.items():   # (a fixed line magic's Python: its magic in front again)
        indent = len(new_lines[n]) - len(new_lines[n].lstrip())
        new_lines[n] = new_lines[n][:indent] + magic + new_lines[n][indent:]
        old_lines[n] = cells_text[n]
    for cell in cells:
        raw = raw_cells[cell.index - 1]
        edited = [new if new != old else keep
                  for old, new, keep in zip(old_lines[cell.first - 1:cell.first - 1 + len(cell.lines)],
                                            new_lines[cell.first - 1:cell.first - 1 + len(cell.lines)], cell.lines)]
        if edited == cell.lines:
            continue
        # (a fixed line keeps the ending it had in the cell: the last line of a cell has none)
        edited = [e.rstrip("\n") + ("\n" if k.endswith("\n") else "") if e != k else e for e, k in zip(edited, cell.lines)]
        raw["source"] = edited if isinstance(raw.get("source"), list) else "".join(edited)
    settings, end = layout
    result.new_source = (json.dumps(notebook, **settings) + end).encode("utf-8")
    return result


def _restructured(cells: list[_Cell], joined: notebook_magics.Joined, new: list[str]):
    """Each cell's new source lines, or (cell, reason) where the program does not map back."""
    from tf1gradfix.run import notebook_cells

    old = _lines(joined.text)
    cell_of = [n for n, cell in enumerate(cells) for _ in cell.lines]
    originals = [line for cell in cells for line in cell.lines]
    touched = notebook_magics.touched(joined, "".join(new))
    if touched is not None:
        at, text, name = touched
        return cells[cell_of[at]], (f"the IPython line `{text.strip()}` uses `{name}`, which the rewrite "
                                    "removes, and IPython's syntax is not rewritten")
    magic = set(joined.held)
    placed = notebook_cells.split(old, cell_of, magic, new, [cell.number for cell in cells], joined.prefix)
    if isinstance(placed, tuple):
        return cells[placed[0]], placed[1]
    out = []
    for cell, lines in zip(cells, placed):
        if [text for text, _ in lines] == old[cell.first - 1:cell.first - 1 + len(cell.lines)]:
            out.append(cell.lines)   # (untouched, byte for byte)
            continue
        header = cell.first - 1 if cell.first - 1 in magic and cell.lines[0].lstrip().startswith("%%") else None
        if header is not None:   # (a `%%time` line heads its cell: new code goes below it)
            lines = [line for line in lines if line[1] == header] + [line for line in lines if line[1] != header]
        body = "".join(originals[i].rstrip("\r\n") + "\n" if i in magic else text for text, i in lines)
        body = body.strip("\n") + ("\n" if cell.lines and cell.lines[-1].endswith("\n") else "")
        out.append(_lines(body))
    return out


def _refused(path: str, data: bytes, codes: CodeFilter, cell: _Cell, why: str):
    """The notebook left as it is: its findings as a refused program's, and the reason."""
    from tf1gradfix.model.refusals import diagnostic

    result = process(path, data, codes, restructure=False)
    line, col, code, message, safety = diagnostic(1, 1, "notebook_cells", why=why)
    result.findings = [replace(f, fixed=False) for f in result.findings] + [
        Finding(f"{path}:cell {cell.number}", line, col, code, message, safety, False)]
    result.new_source = None
    return result


def script(data: bytes) -> bytes:
    """The program a notebook runs, for the verifier: its code cells in order, the Python
    of `%time`-like magics as Python and other IPython lines as `pass` (as they are read
    for the findings). Raises ValueError for what is no notebook."""
    import json  # (in the functions: see process)

    try:
        raw_cells = json.loads(data.decode("utf-8"))["cells"]
        cells = [_Cell(n, _source_lines(raw), 0) for n, raw in enumerate(raw_cells, start=1)
                 if isinstance(raw, dict) and raw.get("cell_type") == "code"]
    except (UnicodeDecodeError, KeyError, TypeError, RecursionError) as exc:
        raise ValueError(f"not a Jupyter notebook: {exc or 'nested too deeply to read'}") from None
    return _joined(cells).text.encode("utf-8")


def cell_diff(path: str, old: bytes, new: bytes) -> str:
    """`--diff` of a notebook as ruff shows it: a Python diff per code cell that changed,
    `a/NB.ipynb:cell N` with N counted among the code cells; a removed cell diffs to nothing."""
    import difflib
    import json

    def sources(data: bytes) -> list[str]:
        return ["".join(cell["source"]) if isinstance(cell.get("source"), list) else cell.get("source", "")
                for cell in json.loads(data.decode("utf-8"))["cells"] if cell.get("cell_type") == "code"]

    before, after = sources(old), sources(new)
    out = []

    def diff(number: int, a: str, b: str) -> None:
        lines = [line if line.endswith("\n") else line + "\n"
                 for line in difflib.unified_diff(_lines(a), _lines(b), f"a/{path}:cell {number}",
                                                  f"b/{path}:cell {number}")]
        out.extend(lines)

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        pairs = list(zip(range(i1, i2), range(j1, j2)))
        for i, j in pairs:
            diff(i + 1, before[i], after[j])
        for i in range(i1 + len(pairs), i2):
            diff(i + 1, before[i], "")
    return "".join(out)


def _place(cells: list[_Cell], line: int | None) -> tuple[_Cell | None, int | None]:
    """(cell, line within it) of a line of the joined module."""
    if line is None:
        return None, None
    for cell in cells:
        if cell.first <= line < cell.first + len(cell.lines):
            return cell, line - cell.first + 1
    return None, None
