"""What selection and suppression mean for the whole-program restructuring, and which
files a run sees: it is one fix of all its codes, made when one of them is selected;
a rename it would have to make that is deselected, or a line it would change that a
comment protects, leaves the file intact with that reason."""

from __future__ import annotations

import json

import pytest

from tf1gradfix.cli.main import main

SESSION = """\
import tensorflow as tf
tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([1, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(loss, feed_dict={x: [[1.0]]}))
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _diff(capsys, *argv) -> dict:
    _, out, _ = run(capsys, "rewrite", "--diff", "--format", "json", *argv, "train.py")
    return json.loads(out)


def test_ignoring_one_code_of_the_restructuring_only_hides_its_findings(folder, capsys):
    (folder / "train.py").write_text(SESSION)
    document = _diff(capsys, "--ignore", "TFG107")
    assert "def compute_loss(x):" in document["diffs"]["train.py"]
    assert "TFG107" not in {f["code"] for f in document["findings"]}
    assert {f["code"] for f in document["findings"]} >= {"TFG101", "TFG103", "TFG105"}


def test_a_selection_of_some_of_its_codes_restructures(folder, capsys):
    """README's example: `select = TFG1, TFG2` leaves TFG3xx and the renames out of the report."""
    (folder / "train.py").write_text(SESSION.replace("tf.set_random_seed(0)\n", ""))
    (folder / "setup.cfg").write_text("[tf1gradfix]\nselect = TFG1, TFG2\nignore = TFG402\n")
    document = _diff(capsys)
    assert "def compute_loss(x):" in document["diffs"]["train.py"]


@pytest.mark.parametrize("how, argv, source", [
    ("deselected", ("--ignore", "TFG401"), SESSION),
    ("deselected", ("--select", "TFG1"), SESSION),
    ("protects", (), SESSION.replace("seed(0)\n", "seed(0)  # tf1gradfix: ignore[TFG401]\n")),
    ("protects", (), SESSION.replace("tf.Session() as sess:", "tf.Session() as sess:  # tf1gradfix: ignore")),
])
def test_a_withheld_fix_leaves_a_session_program_intact_and_says_why(folder, capsys, how, argv, source):
    path = folder / "train.py"
    path.write_text(source)
    lines = source.splitlines()
    line = 1 + next((n for n, text in enumerate(lines) if "ignore" in text),
                    next(n for n, text in enumerate(lines) if "random_seed" in text))
    document = _diff(capsys, *argv)
    assert "diffs" not in document
    (blocker,) = document["not_restructured"]["train.py"]
    assert blocker["line"] == line and blocker["code"] == "TFG905" and how in blocker["message"], blocker
    code, out, _ = run(capsys, "rewrite", "--no-verify", *argv, "train.py")
    assert code == 1 and path.read_text() == source
    assert f"train.py: not restructured (still TF1 graph code) because of line {line}: TFG905" in out
