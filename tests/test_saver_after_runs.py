"""A Saver made after the graph ran lists the same variables as one made before the runs
(constructs/savers.py): it is written in place, the step functions before the runs."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

PROGRAM = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.ones([2, 1]), name="w")
guess = tf.matmul(x, w)
loss = tf.reduce_mean(tf.square(guess - y))
hits = tf.reduce_mean(tf.cast(guess > y, tf.float32))
train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
d = np.ones((3, 2), np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        _, now = sess.run([train, hits], {x: d, y: d[:, :1]})
    print(sess.run(hits, {x: d, y: d[:, :1]}))
    print(sess.run(guess, {x: d}))
{after}
"""


def rewrite(after: str):
    return restructure(cst.parse_module(PROGRAM.replace("{after}", after)), "input.py")


def test_saver_after_the_runs_is_a_checkpoint_where_it_was():
    result = rewrite('    saver = tf.train.Saver()\n    print(saver.save(sess, "model.ckpt"))')
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    assert code.index("def train_step") < code.index("for _ in range(3)")
    assert code.endswith('saver = tf.train.Checkpoint(w=w, optimizer=optimizer)\nprint(saver.write("model.ckpt"))\n')


def test_graph_code_after_the_saver_is_still_refused():
    """A variable made after the runs (a tensor computed from graph values extends the graph
    for later runs: constructs/graph_extensions.py)."""
    result = rewrite('    saver = tf.train.Saver()\n    extra = tf.Variable(tf.zeros([1]))\n    print(sess.run(extra))')
    assert result.new_module is None
    assert [(d[0], d[3]) for d in result.diagnostics] == [(19, "graph built after the graph already ran")]


def test_saver_after_the_runs_with_arguments_keeps_its_reason():
    result = rewrite('    saver = tf.train.Saver([w], max_to_keep=2)\n    saver.save(sess, "model.ckpt")')
    assert result.new_module is None
    assert any(d[2] == "TFG921" or "Saver" in d[3] for d in result.diagnostics), result.diagnostics


def test_a_run_feeding_less_than_the_shared_forward_code_computes_its_own():
    """`guess` needs only `x`: its function does not call the code it shares with the runs of
    `hits`, which reads `y` too (TF1 computed only what a run fetched)."""
    result = rewrite("")
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    compute_guess = code[code.index("def compute_guess"):]
    assert compute_guess.startswith("def compute_guess(x):\n    guess = tf.matmul(x, w)\n    return guess\n")
