"""Refusals the rewrite used to make while writing text (summary writers, the model
class's attribute names) are decided before any is written, with the same message;
and the model stage does not reach into the emitters."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

MODEL = Path(__file__).resolve().parent.parent / "tf1gradfix" / "model"


def _emit_imports(source: str) -> list[str]:
    """Modules of tf1gradfix.emit that `source` imports (at any level)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tf1gradfix.emit"):
            found.append(node.module or "")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("tf1gradfix.emit")]
    return found


def test_no_model_module_imports_an_emitter():
    used = {p.name: _emit_imports(p.read_text(encoding="utf-8")) for p in sorted(MODEL.glob("*.py"))}
    assert {name: mods for name, mods in used.items() if mods} == {}


def test_the_import_finder_finds_both_forms():
    assert _emit_imports("import tf1gradfix.emit.tape\nfrom tf1gradfix.emit.tape import x\nimport os\n") == \
        ["tf1gradfix.emit.tape", "tf1gradfix.emit.tape"]


@pytest.fixture
def no_writing(monkeypatch):
    """Writing any function or class text fails the test: what is refused must be refused first."""
    from tf1gradfix.emit import model_class
    from tf1gradfix.emit.tape import TapeEmitter

    def writing(*args, **kwargs):
        raise AssertionError("text written before the refusal")

    for owner, method in ((TapeEmitter, "function_text"), (TapeEmitter, "helper_text"),
                          (model_class, "rewritten_class")):
        monkeypatch.setattr(owner, method, writing)


SUMMARIES = """import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([1, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
tf.summary.scalar("loss", loss)
merged = tf.summary.merge_all()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    {writer}
    for step in range(2):
        _, s = sess.run([train, merged], {{x: [[1.0]]}})
        {use}
"""

WRITER = "log = tf.summary.FileWriter('/tmp/logs')"
SUMMARY_REFUSALS = {   # (writer statement, its use in the loop) -> the message
    (WRITER, "log.add_summary(step, step)"): "`add_summary` of a value that is not a fetched summary",
    (WRITER, "print(log)"): "summary writer `log` used other than by",
    ("log = tf.summary.FileWriter(session=sess)", "log.add_summary(s, step)"):
        "a summary writer without a log folder, or given a session",
}


@pytest.mark.parametrize("writer,use", list(SUMMARY_REFUSALS))
def test_summary_writers_are_refused_before_any_text_is_written(no_writing, writer, use):
    result = restructure(cst.parse_module(SUMMARIES.format(writer=writer, use=use)), "input.py")
    assert result.new_module is None
    code, message = result.diagnostics[0][2:4]
    assert code == "TFG917" and message.startswith(SUMMARY_REFUSALS[writer, use]), result.diagnostics


def test_a_writer_of_fetched_summaries_is_still_rewritten():
    result = restructure(cst.parse_module(SUMMARIES.format(writer=WRITER, use="log.add_summary(s, step)")), "input.py")
    assert result.new_module is not None, result.diagnostics
    assert "write_summaries(log, s, step)" in result.new_module.code


CASES = Path(__file__).resolve().parent / "refusal_cases.toml"


@pytest.mark.parametrize("reason,message", [
    ("class_init_param_rebound", "`width` is both a parameter of `__init__` and bound in it"),
    ("class_attribute_clash", "attribute `name` would clash with a method of the rewritten class or of `tf.Module`"),
])
def test_model_class_names_are_refused_before_the_class_is_written(monkeypatch, reason, message):
    """(Decided from the step functions' statements, before the class holding them is written.)"""
    from tf1gradfix.emit import model_class

    def writing(*args, **kwargs):
        raise AssertionError("class written before the refusal")

    monkeypatch.setattr(model_class, "rewritten_class", writing)
    program = tomllib.loads(CASES.read_text(encoding="utf-8"))[reason]["program"]
    result = restructure(cst.parse_module(program), "input.py")
    assert result.new_module is None
    assert [(d[2], d[3]) for d in result.diagnostics] == [("TFG904", message)], result.diagnostics
