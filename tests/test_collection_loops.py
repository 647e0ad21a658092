"""A Python loop over a variable collection in graph code (constructs/graph_loops.py):
the collection becomes the list TF1 held there, the loop runs in the step function.
The fixture penalty_loop_over_collection proves a whole program; here, what is refused."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

PROGRAM = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.ones([3, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
MODEL
loss = tf.reduce_mean(tf.square(out - 1.0))
reg = 0.0
for v in tf.trainable_variables():
BODY
total = loss + 0.01 * reg
train = tf.train.GradientDescentOptimizer(0.1).minimize(total)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        print(sess.run([train, reg], {x: np.ones((4, 3))})[1])
"""


def rewrite(body: str, model: str = "out = tf.matmul(x, w) + b"):
    source = PROGRAM.replace("MODEL", model).replace("BODY", body)
    result = restructure(cst.parse_module(source), "input.py")
    return result.new_module.code if result.new_module is not None else None, result.diagnostics


def test_the_loop_runs_over_the_variables_tf1_listed():
    code, diagnostics = rewrite("    reg += tf.nn.l2_loss(v)")
    assert code is not None, diagnostics
    assert "        for v in [w, b]:\n            reg += tf.nn.l2_loss(v)" in code
    assert "trainable_variables" not in code


def test_a_layer_made_before_the_loop_is_listed_by_its_weights():
    code, diagnostics = rewrite("    reg += tf.nn.l2_loss(v)", "out = tf.layers.dense(tf.matmul(x, w) + b, 1)")
    assert code is not None, diagnostics
    assert "for v in [w, b, dense.kernel, dense.bias]:" in code


def test_a_body_reading_a_variables_name_is_refused_at_the_read():
    code, diagnostics = rewrite('    if "w" in v.name:\n        reg += tf.nn.l2_loss(v)')
    assert code is None
    assert [(d[0], d[2], d[3]) for d in diagnostics] == [
        (11, "TFG913", "`.name` of a listed variable read in graph code outside a filter the tool evaluates")]


def test_a_loop_that_only_prints_the_variables_stays_host_code():
    """After the runs, `for u in tf.trainable_variables(): print(u.name, u.get_shape())` binds
    nothing: host code, where the collection is written as its list (host_lists)."""
    source = PROGRAM.replace("MODEL", "out = tf.matmul(x, w) + b").replace("BODY", "    reg += tf.nn.l2_loss(v)") \
        + "for u in tf.trainable_variables():\n    print(u.name, u.get_shape())\n"
    result = restructure(cst.parse_module(source), "input.py")
    assert result.new_module is not None, result.diagnostics
    assert "for u in [w, b]:\n    print(u.name, u.get_shape())" in result.new_module.code
