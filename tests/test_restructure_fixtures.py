"""Whole-program rewrites of TF1 Session programs (fixtures/rewrite/*/).

`tests/test_fixtures.py` checks every fixture's text (expected.py,
expected.diag, parse, idempotence). Here: the restructured fixtures are
proven equivalent by the verifier, refusals leave the file byte-for-byte
intact with a manual diagnostic, and restructure() itself is idempotent.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, code_matches
from tf1gradfix.emit.restructure import restructure

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite"
ALL = sorted(p.parent for p in ROOT.glob("*/input.py"))


def _restructured(scenario: Path):
    return restructure(cst.parse_module((scenario / "input.py").read_bytes()), "input.py")


RESTRUCTURED = [p for p in ALL if _restructured(p).new_module is not None]
REFUSED = [p for p in ALL if p.name.startswith("refuse_")]


def test_there_are_restructured_and_refused_scenarios():
    assert len(RESTRUCTURED) >= 1 and len(REFUSED) >= 1


@pytest.mark.parametrize("scenario", RESTRUCTURED, ids=lambda p: p.name)
def test_restructure_is_idempotent(scenario: Path):
    again = restructure(cst.parse_module((scenario / "expected.py").read_bytes()), "expected.py")
    assert again.new_module is None and again.diagnostics == []


@pytest.mark.parametrize("scenario", RESTRUCTURED, ids=lambda p: p.name)
def test_restructured_findings_are_fixed(scenario: Path):
    result = process_source("input.py", (scenario / "input.py").read_bytes(), CodeFilter())
    assert result.new_source is not None
    assert all(f.fixed for f in result.findings if f.code.startswith(("TFG1", "TFG2")))


@pytest.mark.parametrize("scenario", REFUSED, ids=lambda p: p.name)
def test_refusal_leaves_file_intact(scenario: Path):
    data = (scenario / "input.py").read_bytes()
    shaped = _restructured(scenario)
    assert shaped.new_module is None
    assert shaped.diagnostics and all(d[4] == "manual" for d in shaped.diagnostics)
    result = process_source("input.py", data, CodeFilter())
    assert result.new_source is None or b"Session" in result.new_source
    assert (scenario / "expected.py").read_bytes() == (result.new_source or data)
    assert any(f.code in ("TFG902", "TFG903", "TFG904", "TFG906", "TFG907") or code_matches(f.code, ("TFG905",)) for f in result.findings)


@pytest.mark.tf
@pytest.mark.parametrize("scenario", RESTRUCTURED, ids=lambda p: p.name)
def test_restructured_is_equivalent(scenario: Path):
    from tf1gradfix.verify import orchestrate

    result = orchestrate.verify_pair(scenario / "input.py", scenario / "expected.py")
    assert result.verdict == orchestrate.EQUIVALENT, (result.verdict, result.reason)
    # a legacy training bug's fixture: the verifier shows what TF1 did, in numbers, for each
    found = sorted({d[2] for d in _restructured(scenario).diagnostics if d[2].startswith("TFG8")})
    assert sorted({line.split(": ")[1] for line in result.legacy}) == found, result.legacy
    # The verifier compares printed numbers; lines without any must be the same text
    # (a fetched string tensor prints as bytes on both sides).
    words_o, words_m = _lines_without_numbers(result.original.stdout_tail), _lines_without_numbers(result.migrated.stdout_tail)
    common = min(len(words_o), len(words_m))
    assert words_o[len(words_o) - common:] == words_m[len(words_m) - common:]


def _lines_without_numbers(tail: str) -> list[str]:
    """The complete lines of an output's tail that hold no digit."""
    lines = tail.splitlines()
    if len(tail) >= 900:   # (a tail: its first line may be cut)
        lines = lines[1:]
    return [line for line in lines if not any(c.isdigit() for c in line)]


RUN_ALL = """\
import contextlib, io, os, runpy, sys
import tensorflow as tf
from tf1gradfix.verify import mnist_data
mnist_data.install_v2(tf)   # (the synthetic MNIST the verifier gives the MNIST loader's helper: no network)
failed = []
for path in sys.argv[1:]:
    try:
        sys.argv = [path]   # (each program run as it is run alone: no arguments of its own)
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exit:
        if exit.code not in (None, 0):
            failed.append(f"{path}: exit {exit.code}")
    except Exception as exc:
        failed.append(f"{path}: {exc!r}")
print("\\n".join(failed))
"""


@pytest.mark.tf
def test_rewrites_run_with_real_tf_functions(tmp_path):
    """The verifier runs migrated programs with `tf.config.run_functions_eagerly(True)`
    so it can read traced values; a rewrite must also run as written, where each
    `tf.function` is traced into a graph (variables made only on the first trace,
    no Python bool of a tensor)."""
    import os
    import subprocess
    import sys

    paths = [str(p / "expected.py") for p in RESTRUCTURED]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", RUN_ALL, *paths], capture_output=True, text=True, env=env,
                          timeout=900, cwd=tmp_path)   # (files the programs write stay out of the checkout)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", done.stdout
