"""`rewrite --verify`: a rewrite is written only when the verifier proves it."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fixture_patch import counterpart_text
from tf1gradfix.run.batch import unwritable
from tf1gradfix.cli.main import main
from tf1gradfix.cli.rewrite_verify import prove_and_write

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "fixtures" / "rewrite" / "stop_gradient_product"
WRONG_SCENARIO = ROOT / "fixtures" / "verify" / "stop_gradient_product"   # wrong_stop_gradient_removed.patch


@pytest.mark.tf
def test_proven_rewrite_is_written_with_reports(tmp_path, capsys):
    program = tmp_path / "train.py"
    shutil.copyfile(SCENARIO / "input.py", program)
    reports = tmp_path / "reports"
    assert main(["rewrite", "--verify", "--report-dir", str(reports), str(program)]) == 0
    out = capsys.readouterr().out
    assert "EQUIVALENT (written)" in out
    assert program.read_bytes() == (SCENARIO / "expected.py").read_bytes()
    data = json.loads((reports / "train.py.json").read_text())
    assert data["verdict"] == "EQUIVALENT" and data["comparison"]["steps"] > 0
    assert ET.parse(reports / "junit.xml").getroot().tag == "testsuites"
    assert (reports / "train.py.png").stat().st_size > 0
    assert "EQUIVALENT" in (reports / "summary.md").read_text()
    assert not list(tmp_path.glob(".*candidate*")), "candidate file left behind"


@pytest.mark.tf
def test_diverging_rewrite_is_not_written(tmp_path):
    """The gate itself: a candidate that drops stop_gradient must not replace the original."""
    original = tmp_path / "train.py"
    shutil.copyfile(WRONG_SCENARIO / "original.py", original)
    before = original.read_bytes()
    candidate = counterpart_text(WRONG_SCENARIO, "wrong_stop_gradient_removed").encode()
    [row] = prove_and_write([(str(original), candidate)], write=True, report_dir=None,
                            rtol=1e-3, atol=1e-6, timeout=300, unwritable=unwritable)
    assert row.verdict == "DIVERGED" and not row.written
    assert original.read_bytes() == before


def test_verify_refuses_stdin(capsys):
    assert main(["rewrite", "--verify", "-"]) == 2
    assert "standard input" in capsys.readouterr().err
