"""`make demo`: the main job on the bundled examples.

Copies every fixtures/rewrite/<scenario>/input.py into a scratch folder,
reports what `check` finds, then runs `rewrite --verify`: each rewrite is
proven against its original before it is written, and the reports land in
the scratch folder. What the commands print goes to a log there; the terminal
gets a short summary (files, verdict counts, where the reports and the log are).
Exit 0 when every rewrite that was attempted is proven.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from tf1gradfix.cli.main import main as cli

EXAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite"
FIXTURE_FILES = {"input.py", "expected.py", "expected.diag", "__pycache__"}


def run(workdir: Path) -> int:
    sources = sorted(EXAMPLES.glob("*/input.py"))
    if not sources:
        print(f"tf1gradfix demo: no examples under {EXAMPLES} (run it from a source checkout)", file=sys.stderr)
        return 2
    examples = workdir / "examples"
    copy_examples(sources, examples)
    log = workdir / "demo.log"
    print(f"tf1gradfix demo: {len(sources)} example programs in {examples}; checking them, then "
          f"`rewrite --verify` (each rewrite written only when proven EQUIVALENT: a few minutes)", flush=True)
    with open(log, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        print("== tf1gradfix check examples/")
        cli(["check", str(examples)])
        print("\n== tf1gradfix rewrite --verify examples/")
        code = cli(["rewrite", "--verify", "--report-dir", str(workdir / "reports"), str(examples)])
    print(summary_lines(workdir / "reports", log))
    # Exit 1 here only means some examples are deliberately left for manual work.
    return 0 if code in (0, 1) and _all_proven(workdir / "reports") else 2


def summary_lines(reports: Path, log: Path) -> str:
    """What the demo ends with: files per verdict and where to read the rest."""
    summary = reports / "summary.json"
    rows = json.loads(summary.read_text(encoding="utf-8")) if summary.exists() else []
    counts: dict = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    verdicts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return "\n".join([f"{len(rows)} file{'s' if len(rows) != 1 else ''}: {verdicts or 'no verdict'}",
                      f"reports (Markdown, JUnit, JSON, loss plots): {reports}",
                      f"everything check and rewrite printed: {log}"])


def copy_examples(sources: list[Path], examples: Path) -> None:
    """Each example as `<scenario>.py`, with the folders it reads beside it (a checkpoint)."""
    examples.mkdir(parents=True)
    for source in sources:
        shutil.copyfile(source, examples / f"{source.parent.name}.py")
        for data in source.parent.iterdir():
            if data.name not in FIXTURE_FILES and data.is_dir():
                shutil.copytree(data, examples / data.name, dirs_exist_ok=True)


def _all_proven(reports: Path) -> bool:
    summary = reports / "summary.json"
    if not summary.exists():
        return False
    rows = json.loads(summary.read_text(encoding="utf-8"))
    proven = [row for row in rows if row["verdict"] != "NOT_RESTRUCTURED"]   # (the examples refused on purpose)
    return bool(proven) and all(row["verdict"] == "EQUIVALENT" for row in proven)


def main() -> int:
    workdir = Path(tempfile.mkdtemp(prefix="tf1gradfix-demo-"))
    return run(workdir)


if __name__ == "__main__":
    raise SystemExit(main())
