"""What a run reports: findings on code, errors on files, and the filters over them."""

from __future__ import annotations

import functools
import re

from tf1gradfix.records import as_dict, record


@record(frozen=True)
class Finding:
    """One TF1 construct at a place in a file (line and col are 1-based)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    safety: str
    fixed: bool | None = False  # None: `check` of a session program, where only `rewrite` can tell

    def to_json(self) -> dict:
        return as_dict(self)


@record(frozen=True)
class FileError:
    """A file that could not be read, decoded, parsed or written; it was left untouched."""

    path: str
    message: str
    line: int | None = None
    col: int | None = None

    def to_json(self) -> dict:
        return as_dict(self)


def code_matches(code: str, prefixes) -> bool:
    """`code` starts with one of `prefixes`, or was split from a code that does
    (TFG910 from TFG905: `--ignore TFG905`, `TFG90` and `TFG9` still match it)."""
    old = _split_from().get(code)
    return any(p == "ALL" or code.startswith(p) or old is not None and old.startswith(p) for p in prefixes)


@functools.lru_cache(maxsize=None)
def _split_from() -> dict[str, str]:
    from tf1gradfix.rules.catalog import load

    return {r.code: r.split_from for r in load().rules if r.split_from}


@record(frozen=True)
class CodeFilter:
    """--select / --ignore by code prefix (`ALL` matches everything)."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()

    def wants(self, code: str) -> bool:
        return code_matches(code, self.select) and not code_matches(code, self.ignore)


_SUPPRESS = re.compile(r"#\s*tf1gradfix:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


def suppressions(text: str) -> dict[int, frozenset[str] | None]:
    """Line number -> codes suppressed there (None: all codes).

    `# tf1gradfix: ignore[TFG101]` on a line silences those codes on that line.
    """
    found: dict[int, frozenset[str] | None] = {}
    if "tf1gradfix:" not in text:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        match = _SUPPRESS.search(line)
        if match:
            codes = match.group("codes")
            found[number] = None if codes is None else frozenset(
                c.strip().upper() for c in codes.split(",") if c.strip()
            )
    return found


def is_suppressed(finding_line: int, code: str, table: dict[int, frozenset[str] | None]) -> bool:
    if finding_line not in table:
        return False
    codes = table[finding_line]
    return codes is None or code_matches(code, codes)


_CELL = ".ipynb:cell "


def split_cell(path: str) -> tuple[str, int | None]:
    """(the file, the cell) of a place: `x.ipynb:cell 4` is cell 4 of x.ipynb."""
    if _CELL not in path:
        return path, None
    file, cell = path.rsplit(":cell ", 1)
    return file, int(cell)


def blocking_codes() -> frozenset[str]:
    """The codes of the restructuring's refusals (its manual findings)."""
    from tf1gradfix.rules.catalog import load

    return frozenset(r.code for r in load().rules if r.reported_by == "restructure" and r.safety == "manual")
