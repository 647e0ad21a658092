"""Graph names rebound to host values once the runs are done (constructs/retired_names.py):
the fixture names_rebound_after_training is proven; here, the forms a run follows, which
stay refused with the construct and its line."""

from __future__ import annotations

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

PROGRAM = '''import numpy as np
import tensorflow as tf

rows = np.ones([4, 2], np.float32)
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.zeros([2]), name="w")
loss = tf.reduce_sum(tf.square(tf.reduce_sum(x * w, axis=1) - 1.0))
fit = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        sess.run(fit, {x: rows})
    w = sess.run(w)
x = rows[:2]
print(x @ w)
'''


def _blockers(source: str) -> list[str]:
    result = process_source("p.py", source.encode(), CodeFilter(), fix=True)
    return [f"{f.line}: {f.message}" for f in result.findings if f.code.startswith("TFG9")] \
        if result.new_source is None or b"tf.Session" in result.new_source else []


def test_names_rebound_once_the_runs_are_done_are_host_names():
    assert _blockers(PROGRAM) == []


@pytest.mark.parametrize("edit,blocker", [
    (("    w = sess.run(w)\n", "        w = sess.run(w)\n"),   # (in the loop: the next step reads it)
     "13: variable `w` used outside `sess.run`/`.eval()`"),
    (("    w = sess.run(w)\n", "    w = sess.run(w)\n    print(sess.run(loss, {x: rows}))\n"),   # (a run after it)
     "13: variable `w` used outside `sess.run`/`.eval()`"),
    (("print(x @ w)\n", "with tf.Session() as again:\n    again.run(tf.global_variables_initializer())\n"
                        "    print(again.run(loss, {x: rows}))\n"),   # (a later session runs the graph)
     "13: variable `w` used outside `sess.run`/`.eval()`"),
    (("x = rows[:2]\n", "x = rows[:2]\nw2 = tf.Variable(tf.ones([2]))\nx = w2 * 2\n"),   # (graph code again: a section)
     "17: `w` of the graph an earlier session ran, read after that session closed"),
])
def test_a_rebinding_a_run_or_graph_code_follows_stays_refused(edit, blocker):
    old, new = edit
    assert PROGRAM.count(old) == 1
    assert any(found.startswith(blocker) for found in _blockers(PROGRAM.replace(old, new)))
