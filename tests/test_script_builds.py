"""Graph code a script builds on a model instance right after making it, read as the end of
the class's `__init__` (tf1gradfix/constructs/script_builds.py); proofs: the fixtures
`training_built_after_the_model` and projects/`training_in_the_script`."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tf1gradfix.constructs import script_builds
from tf1gradfix.emit.restructure import restructure

PROGRAM = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf

    RATE = 0.1


    class Net:
        def __init__(self, n):
            self.x = tf.placeholder(tf.float32, [None, n])
            self.y = tf.placeholder(tf.float32, [None, 1])
            self.w = tf.Variable(tf.zeros([n, 1]), name="w")
            self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - self.y))


    def fit(steps):
        net = Net(3)
        step = tf.Variable(0, trainable=False, name="step")
        opt = tf.train.GradientDescentOptimizer(RATE)
        train_op = opt.minimize(net.loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                _, loss = sess.run([train_op, net.loss], {net.x: np.ones((4, 3)), net.y: np.ones((4, 1))})
                print(loss)


    fit(5)
''')


def _restructured(source: str):
    return restructure(cst.parse_module(source), "prog.py")


def test_the_statements_after_the_construction_end_init_and_are_read_from_the_instance():
    folding = script_builds.folded(cst.parse_module(PROGRAM))
    assert folding is not None and folding.cls == "Net" and folding.names == ("opt", "step", "train_op")
    code = folding.module.code
    assert "        self.train_op = self.opt.minimize(self.loss, global_step=self.step)\n" in code
    assert "sess.run([net.train_op, net.loss]" in code
    assert "\n    step = " not in code
    lines = folding.module.code.splitlines()
    moved = next(i for i, line in enumerate(lines, 1) if "self.train_op =" in line)
    assert PROGRAM.splitlines()[folding.origin(moved) - 1].strip().startswith("train_op = opt.minimize")
    new = _restructured(PROGRAM).new_module
    assert new is not None and "def train_step(self, x, y)" in new.code


@pytest.mark.parametrize("old, new, why", [
    ("    net = Net(3)\n", "    net = Net(3)\n    net2 = Net(3)\n", "the class made twice"),
    ("    opt = tf.train.GradientDescentOptimizer(RATE)\n",
     "    rate = RATE\n    opt = tf.train.GradientDescentOptimizer(rate)\n", "a local of the function the class cannot see"),
    ("\nfit(5)\n", "\nfit(5)\nstep = 3\n", "a name the file binds elsewhere too"),
    ("        self.loss =", "        self.step = 0\n        self.loss =", "a name the class has"),
    ("    net = Net(3)\n", "    net = Net(3)\n    print(net)\n", "a statement between"),
])
def test_what_the_class_cannot_end_with_leaves_the_refusal_of_the_module_as_written(old, new, why):
    source = PROGRAM.replace(old, new)
    assert source != PROGRAM, why
    assert script_builds.folded(cst.parse_module(source)) is None, why
    result = _restructured(source)
    assert result.new_module is None and any("outside model class `Net`" in d[3] for d in result.diagnostics), why


def test_a_refusal_inside_the_statements_read_in_init_is_at_the_scripts_line():
    source = PROGRAM.replace("tf.train.GradientDescentOptimizer(RATE)",
                             "tf.train.MomentumOptimizer(tf.train.exponential_decay(RATE, step, 2, 0.5), 0.9)")
    result = _restructured(source)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "MomentumOptimizer" in text)
    assert result.new_module is None
    assert [d[0] for d in result.diagnostics if d[2] == "TFG906"] == [line], result.diagnostics


def test_names_read_in_functions_and_compound_headers_are_read_from_the_instance():
    source = PROGRAM.split("\n\ndef fit")[0] + textwrap.dedent('''

        net = Net(2)
        update = tf.train.AdamOptimizer(0.01).minimize(net.loss)


        def one(sess, x):
            return sess.run([update, net.loss], {net.x: x, net.y: x[:, :1]})


        if update is not None:
            print(update.name)
    ''')
    folding = script_builds.folded(cst.parse_module(source))
    assert folding is not None and folding.names == ("update",)
    assert "return sess.run([net.update, net.loss]" in folding.module.code
    assert "if net.update is not None:" in folding.module.code and "print(net.update.name)" in folding.module.code


def test_a_class_of_another_module_sees_only_that_modules_names():
    module_part = textwrap.dedent('''
        __tf1gradfix_module_begin__ = 0
        import tensorflow as tf

        SCALE = 2.0


        class Net:
            def __init__(self, n):
                self.x = tf.placeholder(tf.float32, [None, n])
                self.w = tf.Variable(tf.ones([n, 1]), name="w")
                self.loss = tf.reduce_mean(tf.matmul(self.x, self.w) * SCALE)
        __tf1gradfix_module_end__ = 0
    ''')
    script = textwrap.dedent('''
        LOCAL = 0.5
        net = Net(3)
        opt = tf.train.GradientDescentOptimizer({rate})
        train_op = opt.minimize(net.loss)
    ''')
    seen = script_builds.folded(cst.parse_module("import tensorflow as tf\n" + module_part + script.format(rate="SCALE")))
    assert seen is not None and seen.names == ("opt", "train_op")
    assert script_builds.folded(cst.parse_module("import tensorflow as tf\n" + module_part + script.format(rate="LOCAL"))) \
        is None


@pytest.mark.parametrize("old, new, why", [
    ("    opt = tf.train.GradientDescentOptimizer(RATE)\n",
     "    rate = RATE * 2\n    opt = tf.train.GradientDescentOptimizer(rate)\n",
     "but it reads `rate`, which code run after `net` is made binds or calls"),
    ("    opt = tf.train.GradientDescentOptimizer(RATE)\n",
     "    np.random.seed(3)\n    opt = tf.train.GradientDescentOptimizer(RATE * np.random.rand())\n",
     "but it reads `np`, which code run after `net` is made binds or calls"),
    ("    opt = tf.train.GradientDescentOptimizer(RATE)\n",
     "    opt = tf.train.GradientDescentOptimizer(RATE)\n    tf.summary.scalar('loss', net.loss)\n",
     "but it is not an assignment to names"),
])
def test_the_statement_that_cannot_end_init_is_named_with_why(old, new, why):
    source = PROGRAM.replace(old, new)
    assert source != PROGRAM
    found = script_builds.apart(cst.parse_module(source))
    assert [(instance, cls, reason) for _, instance, cls, reason in found] == [("net", "Net", why)]
    result = _restructured(source)
    assert result.new_module is None and any(why in d[3] and d[2] == "TFG904" for d in result.diagnostics)


def test_host_statements_between_stay_and_graph_statements_past_them_end_init():
    source = PROGRAM.replace("    opt = tf.train.GradientDescentOptimizer(RATE)\n",
                             "    folder = '/tmp/logs'\n    print('logging to', folder)\n"
                             "    opt = tf.train.GradientDescentOptimizer(RATE)\n")
    folding = script_builds.folded(cst.parse_module(source))
    assert folding is not None and folding.names == ("opt", "step", "train_op")
    assert "    folder = '/tmp/logs'\n    print('logging to', folder)\n    with tf.Session() as sess:" in folding.module.code


def test_a_class_that_builds_no_graph_is_not_a_model_class_to_end():
    source = textwrap.dedent('''
        import numpy as np
        import tensorflow as tf


        class Buffer:
            def __init__(self, size):
                self.size = size
                self.rows = np.zeros((size, 3), np.float32)


        buf = Buffer(8)
        x = tf.placeholder(tf.float32, [buf.size, 3])
        w = tf.Variable(tf.ones([3, 1]))
        loss = tf.reduce_sum(tf.matmul(x, w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(loss, {x: buf.rows}))
    ''')
    assert script_builds.folded(cst.parse_module(source)) is None
    assert script_builds.apart(cst.parse_module(source)) == []
    assert _restructured(source).new_module is not None


def test_after_a_build_call_the_script_graph_ends_init_too():
    source = PROGRAM.replace("    def __init__(self, n):\n", "    def __init__(self, n):\n        self.n = n\n\n    def build(self):\n        n = self.n\n") \
        .replace("        net = Net(3)\n", "        net = Net(3)\n        net.build()\n").replace("    net = Net(3)\n", "    net = Net(3)\n    net.build()\n")
    assert "    net.build()\n" in source
    assert script_builds.apart(cst.parse_module(source)) == []   # (the build call is host_builds')
    new = _restructured(source).new_module
    assert new is not None and "self.opt = tf.keras.optimizers.SGD" in new.code
