"""One SHA-256 over what the command line prints, to prove a refactoring changed nothing a user sees.

For every fixture source and every Python file under --corpus DIR, runs
`check`, `check --format json` and `rewrite --diff --no-verify` in process
(through cli.main.main, as the console script does), records the exit code,
stdout and stderr of each, writes one hash per file and command to --per-file
and prints the hash over all of them.

    .venv/bin/python benchmarks/cli_hashes.py --corpus /work/corpus_tune --per-file before.tsv
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COMMANDS = (("check",), ("check", "--format", "json"), ("rewrite", "--diff", "--no-verify"))


def run(argv: list[str]) -> bytes:
    from tf1gradfix.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code
    return f"{code}\n{out.getvalue()}\n--\n{err.getvalue()}".encode()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--per-file", type=Path, required=True)
    args = parser.parse_args(argv)
    files = sorted((ROOT / "fixtures").rglob("*.py"))
    if args.corpus is not None:
        files += sorted(args.corpus.rglob("*.py"))
    total = hashlib.sha256()
    lines = []
    for path in files:
        for command in COMMANDS:
            digest = hashlib.sha256(run([*command, str(path)])).hexdigest()
            total.update(digest.encode())
            lines.append(f"{digest}\t{' '.join(command)}\t{path}")
    args.per_file.write_text("\n".join(lines) + "\n")
    print(total.hexdigest())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
