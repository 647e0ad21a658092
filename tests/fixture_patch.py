"""Wrong counterparts written as patches (fixtures/verify/*/NAME.patch).

A counterpart that differs from a correct program by a line or two is kept
as a unified diff against that program (the ``base`` of its expect.toml
entry, relative to the scenario folder): the mistake is all the file shows,
and a rewrite fixture's expected.py is not copied into fixtures/verify.

The applier is strict: no fuzz, no offsets. Every hunk must match its base
at the very lines its header names, so a patch whose base has changed
fails with the hunk and the line that differ, and whoever changed the base
writes the counterpart again on purpose:

    python tests/fixture_patch.py apply BASE OLD.patch   # the old program (against the old base)
    python tests/fixture_patch.py diff BASE NEW.py       # a patch from a program written in full

``diff`` names the base as expect.toml does, relative to NEW.py's folder.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
REGENERATE = "the base changed: write the counterpart again against it (README, Development: `NAME.patch`)"


class PatchError(ValueError):
    """A patch that is malformed or does not apply exactly."""


def _lines(text: str) -> list[str]:
    """Lines with their "\\n" (only "\\n" ends a line, unlike str.splitlines)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _parse(patch_text: str, where: str) -> list[tuple[str, int, int, int, int, list[tuple[str, str]]]]:
    """The hunks: (header, old start, old count, new start, new count, [(tag, line)]), checked against
    their headers."""
    rows = patch_text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    if len(rows) < 2 or not rows[0].startswith("--- ") or not rows[1].startswith("+++ "):
        raise PatchError(f"{where}: a patch starts with the lines '--- BASE' and '+++ NEW'")
    hunks: list[tuple[str, int, int, int, int, list[tuple[str, str]]]] = []
    i = 2
    while i < len(rows):
        m = _HUNK.match(rows[i])
        if not m:
            raise PatchError(f"{where}, line {i + 1}: expected a hunk header '@@ -L,N +L,N @@', found {rows[i]!r}")
        header = m.group(0)
        old_start, new_start = int(m.group(1)), int(m.group(3))
        old_count, new_count = int(m.group(2) or 1), int(m.group(4) or 1)
        body: list[tuple[str, str]] = []
        i += 1
        old_seen = new_seen = 0
        while i < len(rows) and (old_seen < old_count or new_seen < new_count):
            row = rows[i]
            tag, text = (row[:1] or " "), row[1:]
            if tag not in " -+":
                break
            body.append((tag, text + "\n"))
            old_seen += tag in " -"
            new_seen += tag in " +"
            i += 1
            if i < len(rows) and rows[i] == _NO_NEWLINE:
                body[-1] = (tag, text)
                i += 1
        if (old_seen, new_seen) != (old_count, new_count):
            raise PatchError(f"{where}, hunk {len(hunks) + 1} ({header}): its header counts {old_count} old and "
                             f"{new_count} new lines, its body has {old_seen} and {new_seen}")
        hunks.append((header, old_start, old_count, new_start, new_count, body))
    if not hunks:
        raise PatchError(f"{where}: no hunks (a counterpart that changes nothing is its base)")
    return hunks


def apply(base_text: str, patch_text: str, *, patch_name: str = "patch", base_name: str = "base") -> str:
    """``base_text`` with every hunk of ``patch_text`` applied where its header says, or PatchError."""
    base = _lines(base_text)
    out: list[str] = []
    done = 0  # base lines consumed
    for number, (header, old_start, old_count, new_start, new_count, body) in enumerate(_parse(patch_text, patch_name), 1):
        where = f"{patch_name}, hunk {number} ({header}) does not apply to {base_name}"
        at = old_start if old_count == 0 else old_start - 1
        if at < done:
            raise PatchError(f"{where}: it starts at line {old_start}, inside or before the hunk before it")
        if new_start - (1 if new_count else 0) != at + len(out) - done:
            raise PatchError(f"{where}: its new start {new_start} does not follow from its old start and the "
                             f"hunks before it")
        old = [text for tag, text in body if tag != "+"]
        if at + len(old) > len(base):
            raise PatchError(f"{where}: it reaches line {at + len(old)}, the base has {len(base)}; {REGENERATE}")
        for k, expected in enumerate(old):
            if base[at + k] != expected:
                moved = _found_at(base, old)
                hint = (f"; the hunk's lines stand at line {moved + 1} ({moved - at:+d} lines)" if moved is not None
                        else "; the hunk's lines are nowhere in the base")
                raise PatchError(f"{where}: line {at + k + 1} is {base[at + k]!r}, the hunk expects {expected!r}"
                                 f"{hint}; {REGENERATE}")
        out.extend(base[done:at])
        out.extend(text for tag, text in body if tag != "-")
        done = at + len(old)
    out.extend(base[done:])
    return "".join(out)


def _found_at(base: list[str], old: list[str]) -> int | None:
    """Where ``old`` stands in ``base`` as a whole, if anywhere (to say how far the base moved)."""
    for start in range(len(base) - len(old) + 1):
        if base[start:start + len(old)] == old:
            return start
    return None


def diff(base_text: str, new_text: str, base_label: str, new_label: str) -> str:
    """A patch that ``apply`` turns ``base_text`` into ``new_text`` with (three lines of context)."""
    rows = []
    for row in difflib.unified_diff(_lines(base_text), _lines(new_text), base_label, new_label, n=3):
        rows.append(row if row.endswith("\n") else f"{row}\n{_NO_NEWLINE}\n")
    return "".join(rows)


def counterpart_text(folder: Path, name: str, entry: Mapping[str, object] | None = None) -> str:
    """The TF2 program of the expect.toml entry ``name`` of a scenario folder: NAME.py as it is, or
    NAME.patch applied to the entry's ``base``."""
    patch = folder / f"{name}.patch"
    if not patch.is_file():
        return (folder / f"{name}.py").read_text(encoding="utf-8")
    if entry is None:
        entry = tomllib.loads((folder / "expect.toml").read_text(encoding="utf-8"))[name]
    base = entry.get("base")
    if not isinstance(base, str):
        raise PatchError(f"{patch}: its entry in expect.toml names no base (base = \"migrated.py\")")
    return apply((folder / base).read_text(encoding="utf-8"), patch.read_text(encoding="utf-8"),
                 patch_name=str(patch), base_name=base)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("apply", "diff"):
        print("usage: python tests/fixture_patch.py apply BASE NAME.patch | diff BASE NAME.py", file=sys.stderr)
        return 2
    command, base, other = argv
    base_text, other_text = (Path(p).read_text(encoding="utf-8") for p in (base, other))
    try:
        if command == "apply":
            sys.stdout.write(apply(base_text, other_text, patch_name=other, base_name=base))
        else:
            # labelled as expect.toml names the base: relative to the counterpart's folder
            label = os.path.relpath(base, Path(other).resolve().parent)
            sys.stdout.write(diff(base_text, other_text, label, Path(other).name))
    except PatchError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
