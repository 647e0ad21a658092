"""The whole-program checks (runs sliced, steps, optimizer settings, results, moved
statements, variables' initial values) report every blocker of a program in one run,
as the statement checks do (tests/test_blockers.py): each is what the program fixed
everywhere else would still report, alone."""

from __future__ import annotations

import json

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

PROGRAM = '''\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([3, 1]), name="w")
c = tf.constant(2.0)
b = tf.get_variable("b", dtype=tf.float32, initializer=tf.zeros_initializer())
scale = tf.reduce_sum(w) * len("""a
b""")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) * c - y)) + scale + tf.reduce_sum(b)
grads = tf.gradients(loss, [w, c])
train_op = tf.train.AdagradDAOptimizer(0.1, tf.train.get_or_create_global_step()).minimize(loss)
other_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        result = sess.run(train_op, feed_dict={x: np.ones((4, 3)), y: np.ones((4, 1))})
        print(result)
        sess.run([train_op, other_op], feed_dict={x: np.ones((4, 3)), y: np.ones((4, 1))})
        print(sess.run(grads, feed_dict={x: np.ones((4, 3)), y: np.ones((4, 1))}))
'''

# blocker (line, code) -> the edit that removes it
FIXES = {
    (8, "TFG922"): ('dtype=tf.float32, initializer', 'shape=[1], dtype=tf.float32, initializer'),   # check_state
    (9, "TFG921"): ('len("""a\nb""")', 'len(\n"ab")'),                                                 # check_moved
    (12, "TFG920"): ("[w, c]", "[w]"),                                                                 # check_steps
    (13, "TFG906"): ("AdagradDAOptimizer(0.1, tf.train.get_or_create_global_step())",                  # check_settings
                     "AdagradOptimizer(0.1)"),
    (18, "TFG912"): ("result = sess.run(train_op, feed_dict={x: np.ones((4, 3)), y: np.ones((4, 1))})\n        print(result)",
                     "sess.run(train_op, feed_dict={x: np.ones((4, 3)), y: np.ones((4, 1))})\n        print(step)"),   # check_results
    (20, "TFG912"): ("sess.run([train_op, other_op], ", "sess.run(other_op, "),                        # a run sliced
}


def _fixed(source: str, keep=()) -> str:
    for blocker, (old, new) in FIXES.items():
        if blocker not in keep:
            assert old in source
            source = source.replace(old, new)
    return source


def _blockers(source: str) -> list[tuple[int, str]]:
    result = process_source("train.py", source.encode(), CodeFilter())
    return [(f.line, f.code) for f in result.findings if f.code.startswith("TFG9") and f.safety == "manual"]


def test_every_whole_program_blocker_in_one_run():
    assert _blockers(PROGRAM) == sorted(FIXES)
    result = process_source("train.py", _fixed(PROGRAM).encode(), CodeFilter())   # (and they are all there is)
    assert result.new_source is not None, [(f.line, f.code, f.message) for f in result.findings]


@pytest.mark.parametrize("blocker", sorted(FIXES), ids=lambda b: f"line{b[0]}")
def test_each_blocker_alone_is_what_one_run_reports_of_it(blocker):
    """Nothing reported is a consequence of another blocker: fixed everywhere else, the
    program reports that blocker alone, with the message of the run that found them all."""
    messages = {(f.line, f.code): f.message for f in process_source("train.py", PROGRAM.encode(), CodeFilter()).findings}
    alone = process_source("train.py", _fixed(PROGRAM, keep={blocker}).encode(), CodeFilter())
    assert [(f.line, f.code, f.message) for f in alone.findings if f.code.startswith("TFG9") and f.safety == "manual"] \
        == [(*blocker, messages[blocker])]


def test_the_not_restructured_line_lists_them_all(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(PROGRAM)
    assert main(["rewrite", "--check", "--format", "json", "train.py"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(b["line"], b["code"]) for b in document["not_restructured"]["train.py"]] == sorted(FIXES)
    main(["rewrite", "--check", "train.py"])
    assert ("train.py: not restructured (still TF1 graph code) because of line 8, line 9, line 12, line 13, "
            "line 18, line 20: ") in capsys.readouterr().out
    assert (tmp_path / "train.py").read_text() == PROGRAM
