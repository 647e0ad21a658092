"""A model class's constructor parameter holding an initializer (constructs/class_initializers.py):
which initializer its `tf.get_variable` calls take, and why one is refused. The rewrite is
proven by fixtures/rewrite/model_class_initializer_param (the verifier injects the original's
initial values, so it cannot tell initializers apart: these tests pin which one is written)."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

PROGRAM = '''\
import numpy as np
import tensorflow as tf


class Net:
    def __init__(self, n, initializer={default}):
        self.initializer = initializer
        self.x = tf.placeholder(tf.float32, [None, n])
        self.build()
        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w)))
        self.train_op = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)

    def build(self):
        self.w = tf.get_variable("w", [3, 1], initializer=self.initializer)


{main}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([net.loss, net.train_op], {{net.x: np.ones((2, 3))}})[0])
'''


def rewrite(default="tf.truncated_normal_initializer(stddev=0.2)", main="net = Net(3)"):
    return restructure(cst.parse_module(PROGRAM.format(default=default, main=main)), "original.py")


@pytest.mark.parametrize("default, main, expected", [
    ("tf.truncated_normal_initializer(stddev=0.2)", "net = Net(3)", "tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.2)([3, 1])"),
    ("tf.truncated_normal_initializer(stddev=0.2)", "net = Net(3, tf.random_uniform_initializer(-0.1, 0.1))",
     "tf.keras.initializers.RandomUniform(minval=-0.1, maxval=0.1)([3, 1])"),
    ("None", "net = Net(3)", "tf.keras.initializers.GlorotUniform()([3, 1])"),
    ("tf.truncated_normal_initializer(stddev=0.2)", "def make(init):\n    return Net(3, init)\n\n\nnet = make(None)",
     "tf.keras.initializers.GlorotUniform()([3, 1])"),   # (a function called once: read as its statements)
    ("None", "def make():\n    init = tf.random_normal_initializer(stddev=0.3, seed=1)\n    return Net(3, initializer=init)\n\n\nnet = make()",
     "tf.keras.initializers.RandomNormal(mean=0.0, stddev=0.3, seed=1)([3, 1])"),
])
def test_the_initializer_the_file_fixes_makes_the_variables(default, main, expected):
    shaped = rewrite(default, main)
    assert shaped.new_module is not None, shaped.diagnostics
    code = shaped.new_module.code
    assert expected in code, code
    assert "truncated_normal_initializer" not in code   # (TF2 has none: the parameter holds the Keras one)


def test_the_default_and_an_argument_become_the_keras_initializer_the_variables_take():
    code = rewrite(main="net = Net(3, initializer=tf.truncated_normal_initializer(stddev=0.5))").new_module.code
    assert "    def __init__(\n        self, n, initializer=tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.2)\n" \
           "    ):\n" in code   # (laid out again as black lays out the `def`)
    assert "net = Net(3, initializer=tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.5))" in code
    assert "tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.5)([3, 1])" in code


@pytest.mark.parametrize("main, expected", [
    ("net = Net(3, True)", "`Net(...)` passes `initializer` as `True` at line 17, and `initializer` is the initializer of a "
                           "`tf.get_variable` with a shape: not an initializer (TF1 fails on it too)"),
    ("def make():\n    flag = True\n    return Net(3, flag)\n\n\nnet = make()", "passes `initializer` as `flag`, which holds `True` at line 19"),
    ("net = Net(3, tf.zeros_initializer())\nother = Net(3)", "`Net` is made with `initializer=tf.zeros_initializer()` at line 17 "
                                                             "but `initializer=tf.truncated_normal_initializer(stddev=0.2)` at line 18"),
    ("def make(init):\n    return Net(3, init)\n\n\nnet = make(None)\nspare = make(None)",
     "passes it as `init` at line 18: not an initializer call"),   # (called twice: not read as its statements)
    ("net = Net(3, tf.orthogonal_initializer())", "passes it as `tf.orthogonal_initializer()` at line 17"),
])
def test_an_initializer_the_file_does_not_fix_is_refused_with_the_argument_and_its_line(main, expected):
    shaped = rewrite(main=main)
    assert shaped.new_module is None
    assert any(d[2] == "TFG922" and expected in d[3] for d in shaped.diagnostics), shaped.diagnostics
