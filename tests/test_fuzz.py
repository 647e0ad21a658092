"""Property tests: the pipeline never crashes, never emits unparsable code, and is idempotent.

Inputs: hypothesmith-generated modules (with a TensorFlow import so they are
really parsed and analysed) and TF1 fixture programs mutated at the statement
level (deleted, duplicated, reordered, names changed). Anything these find is
saved under fixtures/fuzz_regressions/ and replayed by the fast test below.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted(ROOT.glob("fixtures/verify/*/original.py")) + sorted(ROOT.glob("fixtures/rewrite/*/input.py"))
SEED_SOURCES = [path.read_bytes() for path in SEEDS]  # read once: stable across examples
REGRESSIONS = sorted((ROOT / "fixtures" / "fuzz_regressions").glob("*.py"))


def fuzz_settings(examples: int) -> settings:
    scale = float(os.environ.get("TF1GRADFIX_FUZZ_SCALE", "1"))
    return settings(
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
        max_examples=max(1, int(examples * scale)),
    )


def assert_sound(data: bytes) -> None:
    """No internal error; output parses and compiles; a second pass changes nothing."""
    result = process_source("fuzzed.py", data, CodeFilter())
    assert not [f for f in result.findings if "internal error" in f.message], result.findings
    if result.error is not None:
        assert not result.error.message.startswith("internal error"), result.error
        assert result.new_source is None
        return
    if result.new_source is None:
        return
    cst.parse_module(result.new_source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(result.new_source, "fuzzed.py", "exec", dont_inherit=True)
    again = process_source("fuzzed.py", result.new_source, CodeFilter())
    assert again.error is None, again.error
    assert again.new_source is None, "not idempotent"


class Mutator(cst.CSTTransformer):
    """Applies drawn statement-level edits to every statement block."""

    def __init__(self, draw, names: list[str]):
        self.draw = draw
        self.names = names
        self.rename = None
        if names and draw(st.booleans()):
            self.rename = (draw(st.sampled_from(names)), draw(st.sampled_from(["renamed", "x2", "tf_obj", "sess2"])))

    def _mutate(self, body: list) -> list:
        if len(body) < 2:
            return body
        op = self.draw(st.sampled_from(["keep", "delete", "duplicate", "swap"]))
        i = self.draw(st.integers(0, len(body) - 1))
        j = self.draw(st.integers(0, len(body) - 1))
        if op == "delete":
            body = body[:i] + body[i + 1:]
        elif op == "duplicate":
            body = body[: i + 1] + [body[i]] + body[i + 1:]
        elif op == "swap":
            body[i], body[j] = body[j], body[i]
        return body

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._mutate(list(updated.body)))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._mutate(list(updated.body)))

    def leave_Name(self, original, updated):
        if self.rename and updated.value == self.rename[0]:
            return updated.with_changes(value=self.rename[1])
        return updated


@st.composite
def mutated_seed(draw) -> bytes:
    module = cst.parse_module(draw(st.sampled_from(SEED_SOURCES)))
    names = sorted({n.value for n in _names(module)} - {"tf", "np", "tensorflow", "numpy", "print", "range"})
    return module.visit(Mutator(draw, names)).bytes


def _names(module: cst.Module):
    found = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node)

    module.visit(Collect())
    return found


@pytest.mark.slow
@fuzz_settings(1200)
@given(mutated_seed())
def test_mutated_tf1_programs(data: bytes):
    assert_sound(data)


@pytest.mark.slow
@fuzz_settings(800)
@given(hypothesmith.from_grammar())
def test_generated_modules(source: str):
    assert_sound(("import tensorflow as tf\n" + source).encode("utf-8", "surrogatepass"))


def test_saved_regressions():
    for path in REGRESSIONS:
        assert_sound(path.read_bytes())


def test_there_are_seeds():
    assert len(SEEDS) >= 3
