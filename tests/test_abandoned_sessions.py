"""A second session that only initializes the variables goes (constructs/abandoned_sessions.py);
one that may compute anything another run reads keeps the refusal."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

PROGRAM = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
init = tf.global_variables_initializer()
d = np.ones((3, 2), np.float32)
{before}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        sess.run(train, {{x: d}})
    print(sess.run(loss, {{x: d}}))
{after}
"""

NOTE = "only initializes the variables"


def rewrite(before: str, after: str = ""):
    return restructure(cst.parse_module(PROGRAM.format(before=before, after=after)), "input.py")


@pytest.mark.parametrize("before,after", [
    ("sess = tf.Session()\nsess.run(init)", ""),
    ("first = tf.Session()\nfirst.run(tf.global_variables_initializer())\nfirst.close()", ""),
    ("with tf.Session() as warm:\n    warm.run(init)\n    warm.run(tf.local_variables_initializer())", ""),
    ("shell = tf.InteractiveSession()\nshell.run(init)\nshell.close()", ""),
    ("one = tf.Session()\none.run(tf.variables_initializer([w]))\none = None", ""),
    ("", "audit = tf.Session()\naudit.run(init)"),
    ("", "shell = tf.InteractiveSession()\nshell.run(init)\nshell.close()\nprint(d.sum())"),
    ("sess = tf.Session()\nsess.run(init)", "other = tf.Session()\nother.run(init)\nother.close()"),
], ids=["rebound", "closed", "with_block", "interactive_closed", "subset_then_rebound", "at_end",
                        "interactive_closed_at_end", "two"])
def test_session_only_initializing_goes(before, after):
    result = rewrite(before, after)
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    assert "Session" not in code and ".run(" not in code and ".close()" not in code
    notes = [d for d in result.diagnostics if NOTE in d[3]]
    assert len(notes) == before.count("Session()") + after.count("Session()")
    assert all(d[2] == "TFG103" and d[4] == "safe" for d in notes)


@pytest.mark.parametrize("before,after", [
    ("other = tf.Session()\nother.run(init)\nprint(other.run(loss, {x: d}))", ""),
    ("other = tf.Session()\nother.run(init, {x: d})", ""),
    ("other = tf.Session()\nother.run([init])", ""),
    ("other = tf.Session()\nother.run(init)\nreport(other)", ""),
    ("other = tf.Session()\nother.run(init)\nother.close()\nother.run(init)", ""),
    ("other = tf.Session()\nother.run(init)\nlog = tf.summary.FileWriter('logs', other.graph)", ""),
    ("other = tf.Session()\ninit.run(session=other)", ""),
    ("other = tf.Session()\nother.run(init)\nwith other.as_default():\n    pass", ""),
    ("with tf.Session() as warm:\n    warm.run(init)\n    print(warm.run(loss, {x: d}))", ""),
    ("if d.any():\n    other = tf.Session()\n    other.run(init)", ""),
    ("other = tf.Session()\nother.run(init)\nfor other in [1]:\n    pass", ""),
    ("other = tf.Session()\nother.run(init)\nsaved = other", ""),
], ids=["runs_loss", "fed", "in_list", "passed_on", "run_after_close", "graph_read", "init_run_in_it",
        "made_default", "with_runs_loss", "in_condition", "rebound_in_loop", "aliased"])
def test_session_that_may_compute_keeps_the_refusal(before, after):
    result = rewrite(before, after)
    assert result.new_module is None
    assert "more than one session" in [d[3] for d in result.diagnostics] or any(
        d[2] == "TFG916" for d in result.diagnostics), result.diagnostics
    assert not any(NOTE in d[3] for d in result.diagnostics)


@pytest.mark.parametrize("before,after,message", [
    ("shell = tf.InteractiveSession()\nshell.run(init)", "",
     "`shell`, a session that only initializes the variables, stays the default session"),
    ("shell = tf.InteractiveSession()\nshell.run(init)\nprint(w.eval())\nshell.close()", "",
     "`shell`, a session that only initializes the variables, stays the default session"),
    ("def report():\n    print(first.run(w))\n\n\nfirst = tf.Session()\nfirst.run(init)", "",
     "`first`, a session that only initializes the variables, is read by `report`"),
], ids=["interactive_open", "interactive_read_before_close", "read_by_function"])
def test_session_only_initializing_but_read_is_refused(before, after, message):
    result = rewrite(before, after)
    assert result.new_module is None
    assert any(d[2] == "TFG916" and d[3].startswith(message) for d in result.diagnostics), result.diagnostics
