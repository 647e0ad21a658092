"""The command line every table generator shares: write the tables it builds from the
installed TensorFlow, or with `--check` write nothing and exit 1 where a shipped table
differs (the test suite runs the check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(description: str, build, argv: list[str] | None = None) -> int:
    """`build()` gives ({table path: its text}, a note on what was kept and left out)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare with the shipped tables, write nothing")
    args = parser.parse_args(argv)
    tables, note = build()
    if args.check:
        stale = [p.name for p, text in tables.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        print(f"{', '.join(stale)} differ(s) from the installed TensorFlow" if stale else "tables are up to date")
        return 1 if stale else 0
    for path, text in tables.items():
        Path(path).write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    print(note, file=sys.stderr)
    return 0
