"""A file with several graph-building functions: each function that builds and
runs a graph of its own is rewritten on its own; functions sharing TF1's
default graph in ways TF2 cannot reproduce are refused, with the line."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

MODEL = '''
def {name}(data):
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.zeros([2, 1]), name="{name}_w")
    loss = tf.reduce_sum(tf.matmul(x, w))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {{x: data}})
        return sess.run(w)
'''


def rewrite(source: str):
    return restructure(cst.parse_module(textwrap.dedent(source)), "input.py")


def program(*names: str, tail: str = "") -> str:
    return "import tensorflow as tf\n" + "".join(MODEL.format(name=n) for n in names) + tail


@pytest.mark.parametrize("count", [2, 5])
def test_each_function_becomes_its_own_step_function(count):
    names = [f"model_{i}" for i in range(count)]
    result = rewrite(program(*names))
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    assert "Session" not in code and "placeholder" not in code
    # the step function is local to each model, so each keeps the plain name
    assert code.count("def train_step(x):") == count
    for name in names:
        assert f'name="{name}_w"' in code


def test_rewriting_together_equals_rewriting_alone():
    together = rewrite(program("first", "second")).new_module.code
    first = rewrite(program("first")).new_module.code
    second = rewrite(program("second")).new_module.code
    assert together.split("\ndef second")[0] == first
    assert "def second" + together.split("\ndef second")[1] == second.split("\n", 1)[1].lstrip("\n")


BUILT_APART = '''
import tensorflow as tf

def build():
    x = tf.placeholder(tf.float32, [None, 2])
    return x, tf.reduce_sum(x)

def run(data):
    x, total = build()
    with tf.Session() as sess:
        return sess.run(total, {x: data})
'''


def test_built_in_one_function_and_run_in_another_is_refused():
    # `build` called twice: not read where it is called (inlined_calls), so two functions share the graph
    result = rewrite(BUILT_APART + "\ndef check():\n    x, total = build()\n    return total\n")
    assert result.new_module is None
    (line, _, code, message, safety), = result.diagnostics
    assert (line, code, safety) == (5, "TFG904", "manual")
    assert "one function and run in another" in message


def test_built_in_a_function_called_once_is_read_where_it_is_called():
    result = rewrite(BUILT_APART)
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    assert "def build" not in code and "placeholder" not in code and "Session" not in code


def test_module_graph_next_to_a_function_graph_is_refused():
    source = program("model", tail="\nx2 = tf.placeholder(tf.float32, [None])\nwith tf.Session() as s:\n    pass\n")
    result = rewrite(source)
    assert result.new_module is None
    assert result.diagnostics[0][2] == "TFG904"


SHARED = '''
def second(data):
    x = tf.placeholder(tf.float32, [None, 2])
    v = tf.Variable(tf.zeros([2, 1]), name="v")
    loss = tf.reduce_sum(tf.matmul(x, v))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=tf.trainable_variables())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: data})
'''
OWN_GRAPH = SHARED.replace("\n    ", "\n        ").replace(
    "def second(data):", "def second(data):\n    with tf.Graph().as_default():")


@pytest.mark.parametrize("second", [SHARED, OWN_GRAPH], ids=["shared", "own_graph"])
def test_a_collection_read_needs_a_graph_of_its_own(second):
    source = program("first") + second
    result = rewrite(source)
    if second is OWN_GRAPH:
        assert result.new_module is not None, result.diagnostics
        assert "variables = [v]" in result.new_module.code
    else:
        assert result.new_module is None
        (line, _, code, message, _), = result.diagnostics
        assert code == "TFG904" and "tf.trainable_variables" in message
        lines = textwrap.dedent(source).splitlines()
        assert "trainable_variables()" in lines[line - 1]
