"""How a side's end is told (verify/side_runs.side_status): a program importing a module the
verifier's interpreter lacks is told where to install it, other errors as they were raised."""

from __future__ import annotations

import sys

from tf1gradfix.verify.side_runs import SideResult, side_status


def _ended_with(exception: str) -> SideResult:
    side = SideResult("original", "train.py", returncode=1)
    events = [{"kind": "start"}, {"kind": "error", "exception": exception}, {"kind": "end", "status": "error", "code": 1}]
    side_status(side, events, False, None, 60)
    return side


def test_a_missing_module_says_which_interpreter_runs_the_programs():
    side = _ended_with("ModuleNotFoundError: No module named 'scipy'")
    assert side.status == "failed"
    assert side.reason.startswith("raised ModuleNotFoundError: No module named 'scipy' (programs are run with ")
    assert sys.executable in side.reason and "additional_dependencies" in side.reason


def test_other_errors_are_told_as_raised():
    side = _ended_with("ValueError: shapes (2,3) and (4,1) not aligned")
    assert side.reason == "raised ValueError: shapes (2,3) and (4,1) not aligned"
