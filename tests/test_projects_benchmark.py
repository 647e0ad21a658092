"""benchmarks/projects.py (`make projects`): the rows it prints per entry point, read from
one `rewrite --verify` run's summary.json and findings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import projects  # noqa: E402


def test_rows_per_entry_point_then_the_other_files(tmp_path):
    folder = tmp_path / "repo"
    summary = [
        {"path": str(folder / "train.py"), "verdict": "EQUIVALENT", "reason": "", "written": True,
         "together": [str(folder / "model.py")]},
        {"path": str(folder / "eval.py"), "verdict": "NOT_RESTRUCTURED",
         "reason": "line 7: TFG921 `saver.export_meta_graph(...)`: only ...; line 9: TFG105 ..."},
    ]
    document = {"findings": [
        {"path": str(folder / "train.py"), "safety": "proven", "fixed": True},
        {"path": str(folder / "sample.py"), "safety": "manual", "fixed": False},
        {"path": str(folder / "utils.py"), "safety": "safe", "fixed": True},
    ]}
    manifest = {"folder": "repo", "entry-points": ["train.py", "eval.py", "sample.py"]}
    rows = projects._files(folder, manifest, document, summary)
    shown = projects.render(projects.ProjectRow("repo", 1.0, 1, rows))
    assert shown.splitlines()[1:] == [
        "  entry train.py: restructured EQUIVALENT (written) with model.py",
        "  entry eval.py: not restructured; first blocker line 7: TFG921 `saver.export_meta_graph(...)`: only ...",
        "  entry sample.py: not restructured; first blocker none of its own (a module it imports is refused)",
        "        model.py: migrated with train.py (written)",
        "        utils.py: renamed",
    ], shown
