"""Variables made in a host `for` loop (tf1gradfix/constructs/variable_loops.py): the names
TF2 writes give TF1's own in every iteration, the loop runs over values the file fixes
(host_values.py), and what TF1 would name otherwise or what the file leaves open is refused.
The fixtures variables_built_in_loop, model_class_variable_loop and variable_loop_with_layers
prove whole programs; these check the pieces, without TensorFlow."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.cst import layout
from tf1gradfix.emit.restructure import restructure

HEAD = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
outs = []
"""
TAIL = """y = tf.add_n(outs)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(y, {x: np.ones([1, 2])}))
"""


def rewrite(loop: str, head: str = HEAD, tail: str = TAIL):
    result = restructure(cst.parse_module(head + loop + tail), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


@pytest.mark.parametrize("loop,name", [
    # tf.Variable takes the name scopes, written into one format with the loop's values
    ('for k, width in enumerate([2, 3]):\n    with tf.name_scope("conv-%d" % width):\n'
     '        w = tf.Variable(tf.ones([2, 1]), name="W")\n    outs.append(tf.matmul(x, w))\n',
     'name="conv-%d/W" % width'),
    # tf.get_variable ignores name scopes, keeps variable scopes; two `%` strings become one
    ('for s in (3, 4):\n    with tf.variable_scope("pool-%s" % s):\n        with tf.name_scope("inner"):\n'
     '            w = tf.get_variable("filter-%s" % s, [2, 1])\n    outs.append(tf.matmul(x, w))\n',
     'name="pool-%s/filter-%s" % (s, s)'),
    # a variable scope entered again: TF1 numbers its name scope, not the variable scope
    ('for i in range(2):\n    with tf.variable_scope("layer"):\n        w = tf.get_variable("w%d" % i, [2, 1])\n'
     '    outs.append(tf.matmul(x, w))\n', 'name="layer/w%d" % i'),
    # an f-string, and `.format`, take the literal parts
    ('for i in range(2):\n    with tf.name_scope(f"block{i}"):\n        w = tf.Variable(tf.ones([2, 1]))\n'
     '    outs.append(tf.matmul(x, w))\n', 'name=f"block{i}/Variable"'),
    ('for i in range(2):\n    with tf.variable_scope("layer_{}".format(i)):\n'
     '        w = tf.get_variable("w", [2, 1])\n    outs.append(tf.matmul(x, w))\n', 'name="layer_{}/w".format(i)'),
    # a name from a host value of the loop, under an outer scope: joined by `+`
    ('with tf.name_scope("outer"):\n    for i in range(2):\n        tag = "t" + str(i)\n'
     '        w = tf.Variable(tf.ones([2, 1]), name=tag)\n        outs.append(tf.matmul(x, w))\n',
     'name="outer/" + tag'),
])
def test_each_variable_keeps_the_name_tf1_gave_it(loop, name):
    code, messages = rewrite(loop)
    assert code is not None, messages
    assert name in code


def test_the_steps_run_the_loop_again_and_list_its_variables_in_tf1_order():
    loop = ('for i, n in enumerate((3, 2)):\n    w = tf.Variable(tf.ones([2, n]), name="w%d" % i)\n'
            '    b = tf.Variable(tf.zeros([n]), name="b%d" % i)\n    outs.append(tf.reduce_sum(tf.matmul(x, w) + b))\n')
    tail = "y = tf.add_n(outs)\ntrain = tf.train.GradientDescentOptimizer(0.1).minimize(y)\n" + TAIL.replace(
        "y = tf.add_n(outs)\n", "").replace("print(sess.run(y, ", "print(sess.run([y, train], ").replace(")}))", ")})[0])")
    code, messages = rewrite(loop, tail=tail)
    assert code is not None, messages
    assert "w_variables = []\nb_variables = []\nfor i, n in enumerate((3, 2)):\n" in code
    assert "for (i, n), w, b in zip(enumerate((3, 2)), w_variables, b_variables):" in code
    assert "v for made in zip(w_variables, b_variables) for v in made" in code   # (w0, b0, w1, b1)


@pytest.mark.parametrize("head,loop,message", [
    (HEAD, 'for i in range(3):\n    with tf.name_scope("same"):\n        w = tf.Variable(tf.ones([2, 1]), name="w")\n'
     '    outs.append(tf.matmul(x, w))\n', "the loop makes the name `same` in more than one iteration"),
    (HEAD, 'for width in [2, 3, 2]:\n    w = tf.Variable(tf.ones([2, 1]), name="w%d" % width)\n'
     '    outs.append(tf.matmul(x, w))\n', "the loop makes the name `w2` in more than one iteration"),
    (HEAD + 'v = tf.Variable(tf.ones([2, 1]), name="w1")\n', 'for i in range(2):\n'
     '    w = tf.Variable(tf.ones([2, 1]), name="w%d" % i)\n    outs.append(tf.matmul(x, w + v))\n',
     "the loop makes the name `w1`, which the graph already has"),
    (HEAD + "SIZES = [1, 2]\nSIZES.append(3)\n", 'for i in SIZES:\n    w = tf.Variable(tf.ones([2, 1]), name="w%d" % i)\n'
     '    outs.append(tf.matmul(x, w))\n', "a loop creating variables over `SIZES`, a value the file does not fix"),
    (HEAD + "k = 3\nx3 = x * k\n", 'for k in range(2):\n    w = tf.Variable(tf.ones([2, 1]), name="w%d" % k)\n'
     '    outs.append(tf.matmul(x3, w))\n', "rebinds the host value a step reads before the loop `k`"),
    (HEAD, 'for i in range(2):\n    with tf.name_scope("s%d" % i):\n        i = i + 10\n'
     '        w = tf.Variable(tf.ones([2, 1]), name="w")\n    outs.append(tf.matmul(x, w))\n',
     'TF1 names the loop\'s variable `w` `s0/w`, which `"s%d" % i + "/w"` does not give'),
    (HEAD, 'for i in range(2):\n    with tf.variable_scope("layer"):\n        w = tf.Variable(tf.ones([2, 1]), name="w%d" % i)\n'
     '    outs.append(tf.matmul(x, w))\n', "TF1 names the loop's variable `w` `layer_1/w1`"),
    (HEAD, 'for i in range(2):\n    with tf.variable_scope("layer"):\n        w = tf.get_variable("w", [2, 1])\n'
     '    outs.append(tf.matmul(x, w))\n', "the loop makes the name `layer/w` in more than one iteration"),
    (HEAD, 'for i in range(2):\n    w = tf.Variable(tf.ones([2, 1]), name="w%d" % i)\n'
     '    b = tf.Variable(tf.zeros_like(w), name="b%d" % i)\n    outs.append(tf.matmul(x, w) + b)\n',
     "variable `b` initialized from another graph value"),
])
def test_what_tf1_would_name_otherwise_or_the_file_leaves_open_is_refused(head, loop, message):
    code, messages = rewrite(loop, head=head)
    assert code is None and any(message in m for m in messages), messages


CLASS = '''import numpy as np
import tensorflow as tf


class Net:
    def __init__(self, sizes):
        self.sizes = sizes
        self.x = tf.placeholder(tf.float32, [None, 2])
        h = self.x
        for i, n in enumerate(self.sizes):
            with tf.variable_scope("dense%d" % i):
                w = tf.get_variable("w", [2, n])
            h = tf.matmul(self.x, w)
        self.out = h


{made}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(net.out, {{net.x: np.ones([1, 2])}}))
'''


@pytest.mark.parametrize("made,listed", [
    ("net = Net([3, 4])", True),
    ("SIZES = [3, 4]\nnet = Net(SIZES)", True),
    ("net = Net([3, 4])\nother = Net([5])", False),
    ("SIZES = [3, 4]\nSIZES.reverse()\nnet = Net(SIZES)", False),
    # a list bound to the parameter's own name: `self.sizes = sizes` in __init__ is another name
    ("sizes = [3, 4]\nnet = Net(sizes)", True),
    ("sizes = [3, 4]\nsizes.append(5)\nnet = Net(sizes)", False),
])
def test_a_model_class_loops_over_the_constructor_setting_the_file_fixes(made, listed):
    result = restructure(cst.parse_module(CLASS.format(made=made)), "input.py")
    messages = [d[3] for d in result.diagnostics]
    if listed:
        assert result.new_module is not None, messages
        assert "zip(enumerate(self.sizes), self.w_variables)" in result.new_module.code
    else:
        assert result.new_module is None
        assert any("a loop creating variables over `enumerate(self.sizes)`" in m for m in messages), messages


def test_a_long_loop_header_is_laid_out_as_black_lays_it_out():
    text = layout.fit_header("for (k, width), kernel, bias in ", "zip(enumerate(WIDTHS), kernel_vars, bias_vars)",
                             ":", 16)
    assert text == "for (k, width), kernel, bias in zip(\n    enumerate(WIDTHS), kernel_vars, bias_vars\n):"
    assert layout.fit_header("for a, b in ", "zip(x, y)", ":", 4) == "for a, b in zip(x, y):"
