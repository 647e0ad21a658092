"""`make demo` succeeds when every rewritten example is proven; the examples refused on
purpose are listed in the reports (NOT_RESTRUCTURED) and do not count against it."""

from __future__ import annotations

import json

from tf1gradfix.cli.demo import _all_proven


def _reports(tmp_path, verdicts):
    (tmp_path / "summary.json").write_text(json.dumps([{"path": f"e{i}.py", "verdict": v}
                                                       for i, v in enumerate(verdicts)]))
    return tmp_path


def test_refused_examples_do_not_count_and_an_unproven_one_does(tmp_path):
    assert _all_proven(_reports(tmp_path, ["EQUIVALENT", "NOT_RESTRUCTURED", "EQUIVALENT"]))
    assert not _all_proven(_reports(tmp_path, ["EQUIVALENT", "NOT_RESTRUCTURED", "DIVERGED"]))
    assert not _all_proven(_reports(tmp_path, ["NOT_RESTRUCTURED"]))
