"""The original run again after a divergence (verify/original_runs.py): what each outcome
does to the verdict. The runs themselves are exercised by the verify fixtures
(original_not_deterministic: NOT_COMPARABLE; gan_two_optimizers' wrong counterpart: the
original agrees with itself and DIVERGED stands)."""

from __future__ import annotations

import pytest

from tf1gradfix.verify import original_runs
from tf1gradfix.verify.original_runs import Rerun
from tf1gradfix.verify.orchestrate import VerifyResult, verify_pair
from tf1gradfix.verify.side_runs import SideResult


def _result(verdict: str = "DIVERGED") -> VerifyResult:
    return VerifyResult(verdict, "step 2, loss: original 1.0 vs migrated 1.5",
                        SideResult("original", "a.py"), SideResult("migrated", "b.py"))


def _never(trace_dir):
    raise AssertionError("the original must not run again")


@pytest.fixture
def outcome(monkeypatch):
    made: list[Rerun] = []

    def compare(result, trace_dir, events, again):
        return made[0]
    monkeypatch.setattr(original_runs, "_compare", compare)
    return made


def test_a_rerun_that_differs_names_the_original(outcome):
    outcome.append(Rerun("differs", "step 3, loss: first run 1.0 vs run again 1.2", 40))
    result = _result()
    original_runs.after_divergence(result, "auto", "/nowhere", [], _never)
    assert result.verdict == "NOT_COMPARABLE" and result.exit_code == 2
    assert result.reason.startswith("the original is not deterministic")
    assert "first run 1.0 vs run again 1.2" in result.reason
    assert result.reason.endswith("step 2, loss: original 1.0 vs migrated 1.5")   # (the migration's, kept)
    assert result.to_json()["original_rerun"]["status"] == "differs"


def test_a_rerun_that_agrees_keeps_the_divergence(outcome):
    outcome.append(Rerun("agreed", "", 40))
    result = _result()
    original_runs.after_divergence(result, "auto", "/nowhere", [], _never)
    assert result.verdict == "DIVERGED"
    assert result.reason.endswith("agrees with its first run (40 quantities): the difference is the migration's")


def test_a_failed_rerun_leaves_the_verdict(outcome):
    outcome.append(Rerun("failed", "the original timed out"))
    result = _result()
    original_runs.after_divergence(result, "auto", "/nowhere", [], _never)
    assert (result.verdict, result.reason) == ("DIVERGED", "step 2, loss: original 1.0 vs migrated 1.5")
    assert result.original_rerun is not None and result.original_rerun.status == "failed"


@pytest.mark.parametrize("verdict,mode", [("EQUIVALENT", "auto"), ("NOT_COMPARABLE", "auto"), ("DIVERGED", "off")])
def test_no_rerun_unless_diverged_and_asked(verdict, mode):
    result = _result(verdict)
    original_runs.after_divergence(result, mode, "/nowhere", [], _never)
    assert result.verdict == verdict and result.original_rerun is None


def test_an_unknown_mode_is_an_error(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("print(1)\n")
    with pytest.raises(ValueError, match="rerun_original must be one of auto, off"):
        verify_pair(program, program, rerun_original="sometimes")
