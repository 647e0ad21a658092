"""Whether black leaves what the rewrite wrote as it is, on a folder of real programs:
each Python file is formatted with black first (as a user of black has it), rewritten
in process (no proof, nothing written), and the rewrite's own lines that black would
change are listed (the user's lines are not counted). The fixtures get the same check
in tests/test_review_output.py; this one is for corpora that cannot ship with the tests.

    .venv/bin/python benchmarks/black_outputs.py --corpus DIR

Prints figures and the lines found, nothing else. Needs the `test` extra (black).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_review_output import _rewritten_lines_black_changes  # noqa: E402  (the fixtures' check)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    args = parser.parse_args(argv)
    checked, changed, skipped = 0, 0, 0
    for path in sorted(args.corpus.rglob("*.py")):
        try:
            lines = _rewritten_lines_black_changes(path.read_text(encoding="utf-8"))
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
