"""Variable factories (constructs/variable_factories.py): a module function returning
the one tf.Variable it makes is read as a variable statement where graph code calls
it, and refused wherever its call would run more than once."""

from __future__ import annotations

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

FACTORY = '''
import tensorflow as tf


def weights(shape):
    """A factory."""
    start = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(start)

'''
RUN = '''
train = tf.train.GradientDescentOptimizer(0.1).minimize(out)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, out], {x: [[1.0, 2.0, 3.0]]})[1])
'''


def _rewrite(body: str):
    return process_source("f.py", (FACTORY + body + RUN).encode(), CodeFilter())


def test_a_factory_call_at_graph_level_is_a_trained_variable():
    result = _rewrite("x = tf.placeholder(tf.float32, [None, 3])\nw = weights([3, 1])\n"
                      "out = tf.reduce_sum(tf.matmul(x, w))\n")
    text = (result.new_source or b"").decode()
    assert "w = weights([3, 1])" in text and "variables = [w]" in text
    assert "tf.random.truncated_normal(shape, stddev=0.1)" in text   # (the factory keeps its place, in TF2 spelling)


@pytest.mark.parametrize("body,code", [
    # called from a function the step runs: new weights on every call
    ("def layer(v):\n    return tf.matmul(v, weights([3, 1]))\n\n\n"
     "x = tf.placeholder(tf.float32, [None, 3])\nout = tf.reduce_sum(layer(x))\n", "TFG915"),
    # called in a loop of the graph code
    ("x = tf.placeholder(tf.float32, [None, 3])\nws = []\nfor _ in range(2):\n    ws.append(weights([3, 3]))\n"
     "out = tf.reduce_sum(tf.matmul(tf.matmul(x, ws[0]), ws[1]))\n", "TFG904"),
    # a graph value as its argument
    ("x = tf.placeholder(tf.float32, [None, 3])\nw = weights(tf.shape(x))\nout = tf.reduce_sum(w)\n", "TFG922"),
])
def test_calls_that_would_run_more_than_once_are_refused(body, code):
    result = _rewrite(body)
    assert result.new_source is None
    assert any(f.code == code and f.safety == "manual" for f in result.findings), [f.code for f in result.findings]
