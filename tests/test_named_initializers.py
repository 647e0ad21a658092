"""Initializers a builder function names once and passes to its `tf.get_variable`s
(constructs/named_initializers.py). The proof of a rewrite:
fixtures/rewrite/builder_named_initializers and its wrong counterparts."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

BUILDER = '''import numpy as np
import tensorflow as tf


def encoder(x):
    with tf.variable_scope("encoder"):
        w_init = tf.truncated_normal_initializer(stddev=0.3, seed=2)
        b_init = tf.constant_initializer(0.1)
        w = tf.get_variable("w", [3, 4], initializer=w_init)
        b = tf.get_variable("b", [4], initializer=b_init)
        v = tf.get_variable("v", [4, 1], initializer=w_init)
        {extra}
        return tf.matmul(tf.nn.tanh(tf.matmul(x, w) + b), v)


x = tf.placeholder(tf.float32, [None, 3])
loss = tf.reduce_mean(tf.square(encoder(x)))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], feed_dict={x: np.ones([2, 3])})[1])
'''


def test_each_variable_gets_the_call_its_initializer_name_holds():
    result = restructure(cst.parse_module(BUILDER.replace("{extra}", "pass")), "p.py")
    assert result.new_module is not None
    code = result.new_module.code
    assert code.count("tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.3, seed=2)") == 2
    assert "tf.keras.initializers.Constant(value=0.1)" in code
    assert "w_init" not in code and "b_init" not in code and "_initializer(" not in code


@pytest.mark.parametrize("extra", [
    "print(w_init)",                               # read otherwise: the name is more than the call
    "w_init = tf.zeros_initializer()",             # bound twice
])
def test_a_name_read_or_bound_otherwise_stays_refused(extra):
    result = restructure(cst.parse_module(BUILDER.replace("{extra}", extra)), "p.py")
    assert result.new_module is None
    assert any(d[2] == "TFG922" for d in result.diagnostics)
