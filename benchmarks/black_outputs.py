"""Whether black leaves what the rewrite wrote as it is, on a folder of real programs:
each Python file is formatted with black first (as a user of black has it), rewritten
in process (no proof, nothing written), and the rewrite's own lines that black would
change are listed (the user's lines are not counted). tests/test_review_output.py runs
the same check (`black_changes`) on every fixture; this script is for corpora that
cannot ship with the tests.

    .venv/bin/python benchmarks/black_outputs.py --corpus DIR

Prints figures and the lines found, nothing else. Needs the `test` extra (black).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tf1gradfix.run.engine import process_source  # noqa: E402
from tf1gradfix.run.findings import CodeFilter  # noqa: E402


def black(source: str) -> str:
    import black as formatter   # (the `test` extra)

    return formatter.format_str(source, mode=formatter.Mode())


def rewritten(source: str) -> str | None:
    """What `rewrite --no-verify` writes for `source`, None when it writes nothing."""
    result = process_source("input.py", source.encode(), CodeFilter())
    return None if result.new_source is None else result.new_source.decode()


def black_changes(source: str, rewrite: Callable[[str], str | None] = rewritten) -> list[str] | None:
    """Lines of the rewrite of `source` (formatted with black first, as a user of black
    has it) that black changes, leaving out the user's own lines: the rewrite's. None
    where nothing is rewritten or the file reads `tensorflow.compat.v1` (its names are
    renamed after the layout: a longer name may need a new split)."""
    source = black(source)
    out = rewrite(source)
    if out is None or "import tensorflow.compat.v1 as" in source:
        return None
    renamed = process_source("input.py", source.encode(), CodeFilter(), restructure=False).new_source
    user = {ln.strip() for text in (source, renamed.decode() if renamed else "") for ln in text.splitlines()}
    a, b = out.splitlines(), black(out).splitlines()
    changed = []
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":   # (a line black adds: the rewrite's if a neighbour is)
            changed += [a[k] for k in (range(i1, i2) if i2 > i1 else (i1 - 1, i1)) if 0 <= k < len(a)]
    return [ln for ln in changed if ln.strip() not in user]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    args = parser.parse_args(argv)
    checked, changed, skipped = 0, 0, 0
    for path in sorted(args.corpus.rglob("*.py")):
        try:
            lines = black_changes(path.read_text(encoding="utf-8"))
        except Exception:   # (black cannot parse it, or it is not UTF-8: not a rewrite's question)
            skipped += 1
            continue
        if lines is None:
            continue
        checked += 1
        if lines:
            changed += 1
            print(f"{path.relative_to(args.corpus)}: {len(lines)} line(s) black changes, first: {lines[0].strip()[:100]}")
    print(f"{checked} rewritten files checked, {changed} with lines black changes, {skipped} files black cannot read")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
