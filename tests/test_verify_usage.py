"""Usage errors are said: a program that needs arguments, and per-pair reports asked of `verify --base`."""

from __future__ import annotations

import pytest

from tf1gradfix.cli import main as cli
from tf1gradfix.verify import usage_errors
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult, verify_pair

ARGPARSE_TAIL = """usage: train.py [-h] --data DATA
train.py: error: the following arguments are required: --data
"""


def _side(tail: str, code: int) -> SideResult:
    side = SideResult("original", "train.py", status="ok", stderr_tail=tail)
    side.exit_code = code
    return side


def test_argparse_and_absl_complaints_are_read_from_the_stderr_tail():
    assert usage_errors.said(_side(ARGPARSE_TAIL, 2)) == "the following arguments are required: --data"
    assert usage_errors.said(_side("I1205 FATAL Flags parsing error: flag --lr=None: missing\n", 1)) \
        == "flag --lr=None: missing"
    assert usage_errors.said(_side(ARGPARSE_TAIL, 1)) is None            # not argparse's status
    assert usage_errors.said(_side("train.py: error: disk full\n", 2)) is None   # no usage line


def test_a_usage_error_becomes_the_reason_and_a_divergence_stays_one():
    result = VerifyResult("NOT_COMPARABLE", "nothing to compare", _side(ARGPARSE_TAIL, 2), _side(ARGPARSE_TAIL, 2))
    usage_errors.explain(result)
    assert result.verdict == "NOT_COMPARABLE" and result.reason.startswith("the program needs arguments")
    assert "--data" in result.reason and "-- ARGS" in result.reason
    diverged = VerifyResult("DIVERGED", "printed text", _side(ARGPARSE_TAIL, 2), _side("", 0))
    usage_errors.explain(diverged)
    assert diverged.verdict == "DIVERGED" and diverged.reason == "printed text"


@pytest.mark.parametrize("flag", [["--json", "r.json"], ["--junit", "r.xml"], ["--markdown", "r.md"],
                                  ["--plot", "r.png"]])
def test_verify_base_refuses_per_pair_reports(flag, capsys):
    assert cli.main(["verify", "--base", "HEAD", *flag]) == 2
    err = capsys.readouterr().err
    assert flag[0] in err and "--report-dir" in err


PROGRAM = """import argparse
import tensorflow as tf{compat}
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, required=True)
print("epochs", parser.parse_args().epochs)
"""


@pytest.mark.tf
def test_a_program_run_without_its_arguments_is_told_how_to_pass_them(tmp_path):
    (tmp_path / "original.py").write_text(PROGRAM.format(compat="\ntf = tf.compat.v1"))
    (tmp_path / "migrated.py").write_text(PROGRAM.format(compat=""))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py", timeout=120)
    assert result.verdict == "NOT_COMPARABLE" and result.exit_code == 2
    assert "the program needs arguments" in result.reason
    assert "the following arguments are required: --epochs" in result.reason
    given = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py", timeout=120, program_args=["--epochs", "3"])
    assert given.verdict == "EQUIVALENT", given.reason
