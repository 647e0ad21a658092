"""No file is left silent: a file with TF1 graph findings (constructs only a restructuring
fixes) that is not restructured always says why, with a TFG9xx reason and its line.

Checked over every fixture source and the generated files the benchmarks rewrite
(benchmarks/corpus.py), and by construction: the restructuring's result cannot give up
without a refusal or the mark that the module opens no session (run/sessionless.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.run.findings import blocking_codes
from tf1gradfix.emit.restructure import Restructured
from tf1gradfix.rules.catalog import load
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import corpus  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def _sources() -> list[tuple[str, bytes]]:
    items = [(str(p.relative_to(ROOT)), p.read_bytes()) for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    items += [(f"variant/{name}", text.encode()) for name, text in corpus.tf1_variants(3, seed=1)]
    rng = random.Random(7)
    items += [(f"plain/{i}.py", corpus.plain_module(i, rng).encode()) for i in range(20)]
    items += [(f"modern/{name}.py", text.encode()) for name, text in sorted(corpus.MODERN_SYNTAX.items())]
    return items


def silent(display: str, data: bytes) -> list[str]:
    """The graph findings of a file left with no reason (empty: it is restructured, or says why)."""
    proven = {r.code for r in load().rules if r.safety == "proven"}
    result = process_source(display, data, CodeFilter())
    if result.error is not None:
        return []
    reasons = [f for f in result.findings if f.code in blocking_codes() and not f.fixed]
    left = [f"{f.line}:{f.code}" for f in result.findings if f.code in proven and not f.fixed]
    return [] if reasons else left


def test_every_file_left_with_graph_findings_says_why():
    sources = _sources()
    assert len(sources) > 600
    found = {name: left for name, data in sources if (left := silent(name, data))}
    assert found == {}


CASES = tomllib.loads((ROOT / "tests" / "refusal_cases.toml").read_text(encoding="utf-8"))
SESSIONLESS = ["module_without_session", "module_runs_given_session", "session_of_other_kind",
               "graph_without_session", "class_base_elsewhere", "class_graph_not_from_init"]


@pytest.mark.parametrize("reason", SESSIONLESS)
def test_a_file_read_by_libcst_says_the_same(reason):
    """A file with an encoding declaration goes through LibCST (engine._analyzed): its
    reasons are those Python's parser alone finds (engine._without_libcst), a line lower."""
    program = CASES[reason]["program"].lstrip("\n")
    plain = process_source("case.py", program.encode(), CodeFilter()).findings
    declared = process_source("case.py", b"# -*- coding: utf-8 -*-\n" + program.encode(), CodeFilter()).findings
    assert [(f.line + 1, f.col, f.code, f.message) for f in plain if f.code in blocking_codes()] \
        == [(f.line, f.col, f.code, f.message) for f in declared if f.code in blocking_codes()] != []


def test_a_restructuring_cannot_give_up_without_a_reason():
    with pytest.raises(ValueError):
        Restructured(None)
    with pytest.raises(ValueError):
        Restructured(None, [(1, 1, "TFG207", "an info note", "safe")])
    with pytest.raises(ValueError):
        Restructured(cst.Module([]), no_session=True)
    assert Restructured(None, no_session=True).new_module is None
    assert Restructured(None, [(3, 1, "TFG912", "a refusal", "manual")]).diagnostics
    assert Restructured(cst.Module([])).new_module is not None


def test_a_construct_kept_on_purpose_asks_for_no_reason():
    """A graph construct whose finding a comment suppresses (the rewrite keeps a v1
    optimizer so) is no graph code left to migrate."""
    program = ("import tensorflow as tf\n\n"
               "optimizer = tf.compat.v1.train.RMSPropOptimizer(0.1)  # tf1gradfix: ignore[TFG205] kept\n")
    assert process_source("kept.py", program.encode(), CodeFilter()).findings == []
    bare = program.replace("  # tf1gradfix: ignore[TFG205] kept", "")
    assert [f.code for f in process_source("bare.py", bare.encode(), CodeFilter()).findings] == ["TFG205", "TFG916"]
