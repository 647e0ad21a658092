"""A model function the graph calls once, read as its statements (constructs/inlined_calls.py).
The proof of a rewrite: fixtures/rewrite/model_function_inlined and its wrong counterparts."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.constructs.inlined_calls import inlined
from tf1gradfix.emit.restructure import restructure

HEAD = "import tensorflow as tf\n\n\n"
MODEL = '''def model(x, labels, size=3):
    """Scores and cost."""
    hidden = tf.layers.dense(x, size, name="h")
    scores = tf.layers.dense(hidden, 2, name="s")
    cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=scores))
    return scores, cost


'''
GRAPH = '''x = tf.placeholder(tf.float32, [None, 3])
labels = tf.placeholder(tf.int32, [None])
scores, cost = model(x, labels)
'''


def _read(source: str):
    return inlined(cst.parse_module(source))


def test_the_call_is_its_statements_with_each_result_its_own_statement():
    made = _read(HEAD + MODEL + GRAPH)
    assert made is not None and made.functions == ("model",)
    assert made.module.code == HEAD + GRAPH.replace("scores, cost = model(x, labels)\n", (
        'hidden = tf.layers.dense(x, 3, name="h")\n'
        'scores = tf.layers.dense(hidden, 2, name="s")\n'
        "cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=scores))\n"))


def test_locals_the_file_uses_elsewhere_are_renamed_apart():
    made = _read(HEAD + MODEL + "hidden = 7\n" + GRAPH.replace("scores, cost", "out, loss") + "print(hidden)\n")
    assert made is not None
    code = made.module.code
    assert "hidden_2 = tf.layers.dense(x, 3" in code and "print(hidden)" in code
    assert "out = scores\nloss = cost\n" in code


def test_an_argument_the_function_rebinds_is_bound_to_its_parameter():
    model = MODEL.replace('    hidden = tf', '    x = x * 2.0\n    hidden = tf')
    made = _read(HEAD + model + GRAPH.replace("model(x, labels)", "model(x + 1.0, labels)"))
    assert made is not None and "x_2 = x + 1.0\nx_2 = x_2 * 2.0\n" in made.module.code


def test_lines_map_back_to_the_function_and_the_call():
    made = _read(HEAD + MODEL + GRAPH)
    lines = made.module.code.splitlines()
    assert made.origin(lines.index('hidden = tf.layers.dense(x, 3, name="h")') + 1) == 6
    assert made.origin(lines.index("labels = tf.placeholder(tf.int32, [None])") + 1) == 13


@pytest.mark.parametrize("model, graph", [
    (MODEL, GRAPH + "again = model(x, labels)\n"),                                   # called twice
    (MODEL.replace("    return scores, cost", "    if size:\n        return scores, cost\n    return scores, cost"),
     GRAPH),                                                                          # two returns
    (MODEL.replace("def model(x, labels, size=3):", "def model(x, labels, *rest):").replace(", size,", ", 3,"),
     GRAPH),                                                                          # a star parameter
    (MODEL.replace('    hidden = tf', '    global count\n    hidden = tf'), GRAPH),    # a global statement
    (MODEL.replace('    hidden = tf', '    with tf.variable_scope(x.name):\n        pass\n    hidden = tf'),
     GRAPH),                                                                          # a scope not named by a literal
    (MODEL.replace('    hidden = tf', '    with tf.variable_scope("m") as vs:\n        pass\n    hidden = tf'),
     GRAPH),                                                                          # a scope object kept
    (MODEL.replace('    hidden = tf', '    with tf.device("/cpu:0"):\n        pass\n    hidden = tf'),
     GRAPH),                                                                          # another `with`
    (MODEL.replace("def model(", "@tf.function\ndef model("), GRAPH),                # a decorator
    (MODEL.replace("size=3", "size=SIZE"), GRAPH),                                    # a default not literal
])
def test_forms_read_as_written(model, graph):
    assert _read(HEAD + model + graph) is None


def test_a_global_the_caller_shadows_stops_it():
    model = MODEL.replace("name=\"h\")", "name=PREFIX)")
    source = HEAD + "PREFIX = 'h'\n\n\n" + model + "def main():\n    PREFIX = 'other'\n" + "".join(
        "    " + line + "\n" for line in GRAPH.splitlines()) + "    return scores, cost, PREFIX\n"
    assert _read(source) is None


def test_a_prediction_fed_no_labels_is_rewritten():
    source = HEAD.replace("\n\n\n", "\nimport numpy as np\n\n\n") + MODEL + GRAPH + '''train = tf.train.AdamOptimizer(0.1).minimize(cost)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train, feed_dict={x: np.ones([2, 3]), labels: [0, 1]})
    print(sess.run(scores, feed_dict={x: np.ones([2, 3])}))
'''
    result = restructure(cst.parse_module(source), "p.py")
    assert result.new_module is not None
    assert "def model(" not in result.new_module.code


RUNNER = '''def fit(x, labels, cost, step, rounds=3):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for r in range(rounds):
            sess.run(step, {x: X, labels: L})
        print(sess.run(cost, {x: X, labels: L}))


'''
BUILT = GRAPH + "step = tf.train.GradientDescentOptimizer(0.1).minimize(cost)\n"


def test_a_runner_called_once_as_a_statement_is_its_statements():
    made = _read(HEAD + MODEL + RUNNER + BUILT + "fit(x, labels, cost, step)\n")
    assert made is not None and made.functions == ("model", "fit")
    code = made.module.code
    assert "def fit" not in code and "for r in range(3):\n" in code
    assert code.endswith("with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    for r in range(3):\n        sess.run(step, {x: X, labels: L})\n    print(sess.run(cost, {x: X, labels: L}))\n")


@pytest.mark.parametrize("change", [
    ("    with tf.Session() as sess:\n", "    with tf.variable_scope('s'):\n        sess = None\n"),   # a builder
    ("        print(sess.run(cost, {x: X, labels: L}))\n", "        return sess.run(cost, {x: X, labels: L})\n"),
])
def test_a_function_that_is_not_a_runner_stays(change):
    runner = RUNNER.replace(*change)
    assert runner != RUNNER
    made = _read(HEAD + RUNNER.replace(RUNNER, runner) + BUILT.replace("scores, cost = model(x, labels)\n", "")
                 + "fit(x, labels, cost, step)\n")
    assert made is None or "fit" not in made.functions


def test_a_runner_whose_result_is_bound_stays():
    made = _read(HEAD + RUNNER + "done = fit(x, labels, cost, step)\n")
    assert made is None or "fit" not in made.functions


def test_a_function_named_like_a_method_it_calls_is_counted_by_its_own_reads():
    # `sess.run(...)` in its body reads no name `run`: the function is still called once
    made = _read(HEAD + RUNNER.replace("def fit(", "def run(") + BUILT.replace("scores, cost = model(x, labels)\n", "")
                 + "run(x, labels, cost, step)\n")
    assert made is not None and made.functions == ("run",)


NESTED = '''WIDTH = 5


def encoder(x, size=WIDTH):
    return tf.layers.dense(x, size, name="enc")


def model(x, labels):
    hidden = encoder(x)
    scores = tf.layers.dense(hidden, 2, name="s")
    cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=scores))
    return scores, cost


'''


def test_a_function_called_by_an_inlined_one_is_read_in_the_next_pass():
    made = _read(HEAD + NESTED + GRAPH)
    assert made is not None and made.functions == ("model", "encoder")
    assert 'hidden = tf.layers.dense(x, WIDTH, name="enc")\n' in made.module.code
    assert "def " not in made.module.code


def test_a_default_naming_a_constant_rebound_elsewhere_keeps_the_call():
    made = _read(HEAD + NESTED + GRAPH + "WIDTH = 7\n")
    assert made is not None and made.functions == ("model",)
    assert "def encoder" in made.module.code


def test_a_default_naming_a_local_of_the_caller_keeps_the_call():
    caller = "def main():\n    WIDTH = 9\n    x = tf.placeholder(tf.float32, [None, 3])\n    h = encoder(x)\n    return h\n"
    made = _read(HEAD + NESTED.split("def model")[0] + caller + "\n\nh = main()\nh2 = main()\n")
    assert made is None or "encoder" not in made.functions


def test_scopes_of_a_literal_name_open_where_the_function_is_called():
    model = MODEL.replace('    hidden = tf.layers.dense(x, size, name="h")\n',
                          '    with tf.variable_scope("enc", reuse=tf.AUTO_REUSE):\n'
                          '        hidden = tf.layers.dense(x, size, name="h")\n')
    assert _read(HEAD + model + GRAPH) is None   # (a reading of its own, tried last: a builder stays whole first)
    made = inlined(cst.parse_module(HEAD + model + GRAPH), scoped=True)
    assert made is not None and made.functions == ("model",)
    assert 'with tf.variable_scope("enc", reuse=tf.AUTO_REUSE):\n    hidden = tf.layers.dense(x, 3, name="h")\n' \
        in made.module.code
    for scope in ('tf.variable_scope(x.name)', 'tf.variable_scope("m") as vs', 'tf.device("/cpu:0")'):
        other = model.replace('tf.variable_scope("enc", reuse=tf.AUTO_REUSE)', scope)
        assert inlined(cst.parse_module(HEAD + other + GRAPH), scoped=True) is None, scope


LAYER = '''def layer(x, fan_in, fan_out, label, act=tf.nn.tanh):
    w = tf.Variable(tf.zeros([fan_in, fan_out]), name=label + "_w")
    return act(tf.matmul(x, w))


'''


def test_a_layer_function_called_twice_is_copied_only_in_its_own_reading():
    source = HEAD + LAYER + "x = tf.placeholder(tf.float32, [None, 3])\nh = layer(x, 3, 4, 'one')\nh = layer(h, 4, 2, 'two', act=tf.nn.relu)\n"
    assert inlined(cst.parse_module(source)) is None
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is not None and made.copies == (("layer", 2),)
    assert made.module.code == HEAD + (
        "x = tf.placeholder(tf.float32, [None, 3])\n"
        "w = tf.Variable(tf.zeros([3, 4]), name='one_w')\n"
        "h = tf.nn.tanh(tf.matmul(x, w))\n"
        "w_2 = tf.Variable(tf.zeros([4, 2]), name='two_w')\n"
        "h = tf.nn.relu(tf.matmul(h, w_2))\n")


@pytest.mark.parametrize("change", [
    ('w = tf.Variable(tf.zeros([fan_in, fan_out]), name=label + "_w")',
     'w = tf.get_variable(label + "_w", [fan_in, fan_out])'),                                         # asks again
    ("h = layer(h, 4, 2, 'two', act=tf.nn.relu)\n", "h = tf.exp(h) + layer(h, 4, 2, 'two')\n"),    # not first
])
def test_a_layer_function_is_not_copied_where_a_call_is_not_read_first_or_asks_for_its_variables(change):
    # (a call in a loop is copied into it: tests/test_layer_copies.py)
    source = HEAD + LAYER + "x = tf.placeholder(tf.float32, [None, 3])\nh = layer(x, 3, 4, 'one')\nh = layer(h, 4, 2, 'two', act=tf.nn.relu)\n"
    made = inlined(cst.parse_module(source.replace(*change)), repeated=True)
    assert made is None or not made.copies


def test_only_a_sum_of_two_literals_made_by_an_argument_is_folded():
    source = HEAD + '''def layer(x, label):
    w = tf.Variable(tf.zeros([3, 3]), name=label + "_w")
    v = tf.Variable(tf.zeros([3, 3]), name="a" + "_v")
    return tf.matmul(tf.matmul(x, w), v)


x = tf.placeholder(tf.float32, [None, 3])
h = layer(x, "one")
h = layer(h, 'two')
'''
    code = inlined(cst.parse_module(source), repeated=True).module.code
    assert 'name="one_w"' in code and "name='two_w'" in code and code.count('name="a" + "_v"') == 2
