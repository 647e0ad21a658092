"""A `for` over what a run returns is host code (constructs/graph_loops.py reads loops over
graph values as graph code only where nothing in them runs the graph): it stays, its run
rewritten. It was once read as a graph loop and left out of the program."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

PROGRAM = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]))
b = tf.Variable(tf.zeros([1]))
loss = tf.reduce_mean(tf.matmul(x, w) + b)
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
params = [w, b]
sess = tf.Session()
sess.run(tf.global_variables_initializer())
sess.run(step, {x: np.ones((2, 2))})
for p in sess.run(params):
    print(p)
for q in sess.run([loss], {x: np.ones((2, 2))}):
    print("loss", q)
"""


def test_a_loop_over_a_runs_results_stays_with_its_run_rewritten():
    result = restructure(cst.parse_module(PROGRAM), "input.py")
    assert result.new_module is not None, [d[3] for d in result.diagnostics]
    code = result.new_module.code
    assert "for p in [v.numpy() for v in [w, b]]:\n    print(p)" in code
    assert 'for q in [compute_loss(np.ones((2, 2))).numpy()]:\n    print("loss", q)' in code
