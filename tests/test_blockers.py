"""Every blocker of a program in one run: a refused statement does not stop the
analysis of the statements that do not depend on it, graph code and host code alike,
and what depends on a refused statement is not reported again."""

from __future__ import annotations

import json

from tf1gradfix.cli.main import main
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

BLOCKED = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.zeros([3, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
tf.add_to_collection("losses", loss)
parts = [tf.reduce_sum(w)]; parts += [tf.reduce_max(w)]
c = parts[0] + parts[1]
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, "loss:0"], feed_dict={x: np.ones((4, 3))})
        print(value)
    print(sess.run(c))
"""


def _blockers(source: str) -> list[tuple[int, str]]:
    result = process_source("train.py", source.encode(), CodeFilter())
    assert result.new_source is None
    return [(f.line, f.code) for f in result.findings if f.code.startswith("TFG9")]


def test_independent_blockers_are_all_reported_in_one_run():
    assert _blockers(BLOCKED) == [(7, "TFG921"), (8, "TFG921"), (14, "TFG903")]


def test_a_blocker_fixed_shows_the_others_unchanged():
    """What the user learns in one run is what fixing them one at a time would have shown."""
    without_first = BLOCKED.replace('tf.add_to_collection("losses", loss)\n', "")
    assert [code for _, code in _blockers(without_first)] == ["TFG921", "TFG903"]
    split = without_first.replace("parts = [tf.reduce_sum(w)]; parts += [tf.reduce_max(w)]",
                                  "parts = [tf.reduce_sum(w), tf.reduce_max(w)]")
    assert [code for _, code in _blockers(split)] == ["TFG903"]


def test_the_blocker_line_names_every_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(BLOCKED)
    code = main(["rewrite", "--check", "--format", "json", "train.py"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and [b["line"] for b in document["not_restructured"]["train.py"]] == [7, 8, 14]
    main(["rewrite", "--check", "train.py"])
    assert "train.py: not restructured (still TF1 graph code) because of line 7, line 8, line 14: " \
        in capsys.readouterr().out


SAVER = """\
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.zeros([3, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
keepers = {"last": tf.train.Saver()}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, value = sess.run([train_op, loss], feed_dict={x: np.ones((4, 3))})
    keepers["last"].save(sess, "model.ckpt")
"""


def test_a_value_made_with_an_unsupported_api_is_refused_for_that_api(capsys):
    """A Saver kept in a dict and used in host code: the blocker is the Saver (what to use:
    tf.train.Checkpoint), not "tensor `keepers` used outside sess.run"."""
    result = process_source("train.py", SAVER.encode(), CodeFilter())
    (blocker,) = [f for f in result.findings if f.code.startswith("TFG9")]
    assert (blocker.line, blocker.code) == (7, "TFG921") and "tf.train.Saver" in blocker.message
    assert main(["explain", "saver"]) == 0
    assert "tf.train.Checkpoint(" in capsys.readouterr().out
