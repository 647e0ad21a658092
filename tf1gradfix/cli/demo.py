"""`make demo`: the main job on the bundled examples.

Copies every fixtures/rewrite/<scenario>/input.py into a scratch folder,
reports what `check` finds, then runs `rewrite --verify`: each rewrite is
proven against its original before it is written, and the reports land in
the scratch folder. Exit 0 when every rewrite that was attempted is proven.
"""

from __future__ import annotations

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
    print(f"== {len(sources)} example programs copied to {examples}\n")
    print("== tf1gradfix check examples/")
    cli(["check", str(examples)])
    print("\n== tf1gradfix rewrite --verify examples/ (each rewrite is written only when proven EQUIVALENT)")
    code = cli(["rewrite", "--verify", "--report-dir", str(workdir / "reports"), str(examples)])
    print(f"\n== reports (JSON, JUnit, Markdown, loss plots): {workdir / 'reports'}")
    # Exit 1 here only means some examples are deliberately left for manual work.
    return 0 if code in (0, 1) and _all_proven(workdir / "reports") else 2


def copy_examples(sources: list[Path], examples: Path) -> None:
    """Each example as `<scenario>.py`, with the folders it reads beside it (a checkpoint)."""
    examples.mkdir(parents=True)
    for source in sources:
        shutil.copyfile(source, examples / f"{source.parent.name}.py")
        for data in source.parent.iterdir():
            if data.name not in FIXTURE_FILES and data.is_dir():
                shutil.copytree(data, examples / data.name, dirs_exist_ok=True)


def _all_proven(reports: Path) -> bool:
    import json

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
