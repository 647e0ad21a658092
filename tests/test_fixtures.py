"""The before/after driver: every fixtures/rewrite/<scenario>/ folder.

For each scenario: the rewrite of input.py equals expected.py, the output
parses and compiles, a second rewrite changes nothing, and the diagnostics
equal expected.diag (one `input.py:line:col: CODE [*] message` per line: the code,
whether it was fixed and the message; the fix labels are tests/test_cli_labels.py's).
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

SCENARIOS = sorted(p.parent for p in (Path(__file__).resolve().parent.parent / "fixtures" / "rewrite").glob("*/input.py"))


def rewrite(data: bytes):
    result = process_source("input.py", data, CodeFilter())
    assert result.error is None, result.error
    output = result.new_source if result.new_source is not None else data
    diag = "".join(f"input.py:{f.line}:{f.col}: {f.code}{' [*]' if f.fixed else ''} {f.message}\n" for f in result.findings)
    return output, diag


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_fixture(scenario: Path, update_fixtures: bool):
    data = (scenario / "input.py").read_bytes()
    output, diag = rewrite(data)
    if update_fixtures:
        (scenario / "expected.py").write_bytes(output)
        (scenario / "expected.diag").write_text(diag, encoding="utf-8")
    assert output == (scenario / "expected.py").read_bytes()
    assert diag == (scenario / "expected.diag").read_text(encoding="utf-8")
    cst.parse_module(output)
    compile(output, str(scenario / "expected.py"), "exec")
    again, _ = rewrite(output)
    assert again == output, "a second rewrite changed the output"


def test_there_are_scenarios():
    assert len(SCENARIOS) >= 3
