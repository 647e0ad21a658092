"""Builder functions (`tf.get_variable` under one `tf.variable_scope`) become
`tf.Module` classes whose instance takes the function's name. The meaning of
the rewrite is proven by the verifier through the `builders_shared_in_main`
fixture (tests/test_restructure_fixtures.py); these tests pin the shapes the
rewrite accepts and refuses."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.run.findings import code_matches

from tf1gradfix.emit.restructure import restructure

PROGRAM = '''\
import numpy as np
import tensorflow as tf


def block(inputs, again):
{body}


x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 2])
loss = tf.reduce_mean(tf.square(block(x, again=False) + block(2.0 * x, again=True) - y))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], {{x: np.ones((2, 3)), y: np.ones((2, 2))}})[1])
'''
SCOPED = '''\
    with tf.variable_scope("block", reuse=again):
        {name} = tf.get_variable("{name}", [3, 2])
        return tf.matmul(inputs, {name})'''


def rewrite(body: str):
    return restructure(cst.parse_module(PROGRAM.format(body=body)), "original.py")


def test_the_function_becomes_a_module_called_as_before():
    code = rewrite(SCOPED.format(name="w")).new_module.code
    assert "class Block(tf.Module):" in code and '        super().__init__(name="block")' in code
    assert 'self.w = tf.Variable(\n                tf.keras.initializers.GlorotUniform()([3, 2]), name="w"\n            )' in code
    assert "    def __call__(self, inputs, again):\n        return tf.matmul(inputs, self.w)" in code
    assert "\nblock = Block()\n" in code and "block(x, again=False) + block(2.0 * x, again=True)" in code
    assert "variables = [block.w]" in code


def test_a_variable_named_like_a_module_attribute_is_stored_under_another_attribute():
    code = rewrite(SCOPED.format(name="variables")).new_module.code
    assert 'self.variables_variable = tf.Variable(' in code and "tf.matmul(inputs, self.variables_variable)" in code


@pytest.mark.parametrize("body, why", [
    ('    w = tf.get_variable("w", [3, 2])\n    return tf.matmul(inputs, w)', "not one `with tf.variable_scope"),
    ('    with tf.variable_scope("block", reuse=again, initializer=tf.zeros_initializer()):\n'
     '        w = tf.get_variable("w", [3, 2])\n        return tf.matmul(inputs, w)', "other than a string name"),
    ('    with tf.variable_scope("block", reuse=again):\n'
     '        w = tf.get_variable("w", [3, 2], regularizer=tf.nn.l2_loss)\n        return tf.matmul(inputs, w)', "regularizer"),
])
def test_builders_the_rewrite_cannot_follow_are_refused_with_the_line(body, why):
    result = rewrite(body)
    assert result.new_module is None
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in result.diagnostics), result.diagnostics


def test_host_code_listing_the_variables_gets_the_list_in_creation_order():
    source = PROGRAM.format(body=SCOPED.format(name="w")).replace(
        "    print(sess.run(", "    print(len(tf.trainable_variables()))\n    print(sess.run(")
    source = source.replace("def block(inputs, again):", "def outer(t):\n"
                            "    with tf.variable_scope(\"outer\"):\n"
                            "        v = tf.get_variable(\"v\", [2, 2])\n"
                            "        return tf.matmul(t, v)\n\n\ndef block(inputs, again):")
    source = source.replace("tf.square(block(x, again=False)", "tf.square(outer(block(x, again=False))")
    code = rewrite_source(source).new_module.code
    # block's variables were made first: it is called inside outer(...)
    assert "print(len([block.w, outer.v]))" in code


def test_a_weight_of_a_fixed_scope_shaped_by_the_call_is_made_on_the_first_call():
    """TF1's `tf.get_variable` made it on the first call, with that call's values; later
    calls (reuse) read it."""
    code = rewrite('    with tf.variable_scope("block", reuse=again):\n'
                   '        n = 2\n        w = tf.get_variable("w", [3, n])\n        return tf.matmul(inputs, w)').new_module.code
    assert 'w = self.variable(\n            "block/w", lambda: tf.keras.initializers.GlorotUniform()([3, n])\n' in code, code
    assert "variables = [*block.made.values()]" in code
    compile(code, "rewritten.py", "exec")


def rewrite_source(source: str):
    return restructure(cst.parse_module(source), "original.py")


LAYER_FUNCTION = '''\
    with tf.variable_scope(again):
        w = tf.get_variable("w", [int(inputs.get_shape()[-1]), 2])
        return tf.matmul(inputs, w)'''


def test_a_layer_function_makes_its_variables_per_scope_on_the_first_call():
    source = PROGRAM.format(body=LAYER_FUNCTION).replace("again=False", "again='one'").replace("again=True", "again='two'")
    code = rewrite_source(source).new_module.code
    assert '        w = self.variable(\n            f"{again}/w",\n            lambda: tf.keras.initializers.GlorotUniform()(\n' in code
    assert "variables = [*block.made.values()]" in code
    compile(code, "rewritten.py", "exec")


def test_a_layer_function_called_with_string_scopes_is_listed_call_by_call():
    """TF1 named its variables under each scope a call gave, in the order of the calls."""
    source = PROGRAM.format(body=LAYER_FUNCTION).replace("again=False", "again='one'").replace("again=True", "again='two'")
    source = source.replace("train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)",
                            "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=tf.trainable_variables())")
    code = rewrite_source(source).new_module.code
    assert 'variables = [block.made["one/w"], block.made["two/w"]]' in code, code
    result = rewrite_source(source.replace("again='two'", "again=x.op.name"))   # (a scope known only when it runs)
    assert result.new_module is None and "known only when it runs" in result.diagnostics[0][3], result.diagnostics


def test_a_layer_function_under_the_scripts_variable_scope_is_given_the_whole_scope():
    """`with tf.variable_scope('outer'): block(x, again='three')`: TF1 named its variables
    `outer/three/w` (constructs/scoped_calls.py)."""
    source = PROGRAM.format(body=LAYER_FUNCTION).replace("again=False", "again='one'").replace("again=True", "again='two'")
    source = source.replace("loss = tf.reduce_mean", "with tf.variable_scope('outer'):\n    y2 = block(x, again='three')\n"
                            "loss = tf.reduce_sum(y2) + tf.reduce_mean")
    code = rewrite_source(source).new_module.code
    assert "y2 = block(x, again='outer/three')" in code and 'block.made["outer/three/w"]' not in code, code
    assert "variables = [*block.made.values()]" in code


@pytest.mark.parametrize("change, why", [
    (("    print(sess.run(", "    print(len(tf.trainable_variables()))\n    print(sess.run("), "known only when it runs"),
    (("loss = tf.reduce_mean", "third = 'three'\nwith tf.variable_scope('outer'):\n    y2 = block(x, again=third)\n"
      "loss = tf.reduce_mean"), "inside `tf.variable_scope(\"outer\")`"),   # (a scope not given by a string)
])
def test_a_layer_function_where_names_are_not_known_is_refused(change, why):
    source = PROGRAM.format(body=LAYER_FUNCTION).replace("again=False", "again='one'").replace("again=True", "again='two'")
    result = rewrite_source(source.replace(*change))
    assert result.new_module is None and why in result.diagnostics[0][3], result.diagnostics
