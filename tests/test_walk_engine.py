"""The engine gives the same results whether its read-only walks rebuild the tree or not."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tf1gradfix.run import engine
from tf1gradfix.cst import walk
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted([*ROOT.glob("fixtures/rewrite/*/input.py"), *ROOT.glob("fixtures/verify/*/original.py")])


def _params():
    """Every program; the fast suite takes every fourth (the full run has them all)."""
    return [pytest.param(path, id=path.relative_to(ROOT).as_posix(), marks=() if i % 4 == 0 else pytest.mark.slow)
            for i, path in enumerate(PROGRAMS)]


def _run(path: Path, codes: CodeFilter):
    result = engine.process_source(path.name, path.read_bytes(), codes)
    return result.findings, result.error, result.new_source


def test_programs_found():
    assert len(PROGRAMS) > 40


@pytest.mark.parametrize("path", _params())
def test_same_result_with_libcsts_walks(path, monkeypatch):
    codes = CodeFilter()
    fast = _run(path, codes)
    monkeypatch.setattr(walk, "read_only_visits", contextlib.nullcontext)
    monkeypatch.setattr(walk, "visit", lambda node, visitor: walk._LIBCST_VISIT(node, visitor))
    assert _run(path, codes) == fast
