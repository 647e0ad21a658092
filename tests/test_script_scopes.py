"""A script's variable scope around the calls of one function, read as the function opening
it (constructs/script_scopes.py). The proof: fixtures/rewrite/script_scope_around_calls
and its wrong counterparts in fixtures/verify/script_scope_around_calls."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.script_scopes import folded

HEAD = "import tensorflow as tf\n\n\ndef f(x):\n    return layer(x, 3, \"l\")\n\n\n"


def test_the_scope_moves_into_the_function_and_the_blocks_go():
    script = ("with tf.variable_scope(\"d\") as vs:\n    a = f(x)\n    vs.reuse_variables()\n    b = f(y)\n"
              "c = a + b\n")
    module = folded(cst.parse_module(HEAD + script))
    assert module is not None
    assert module.module.code == ("import tensorflow as tf\n\n\ndef f(x):\n"
                                  "    with tf.variable_scope(\"d\", reuse=tf.AUTO_REUSE):\n"
                                  "        return layer(x, 3, \"l\")\n\n\n"
                                  "a = f(x)\nb = f(y)\nc = a + b\n")
    # (each statement's lines go back to the user's: the calls, what follows, the function)
    assert [module.origin(line) for line in (4, 6, 9, 10, 11)] == [4, 5, 9, 11, 12]


def test_two_blocks_of_one_scope_fold_together():
    script = ("with tf.variable_scope(\"d\"):\n    a = f(x)\n"
              "with tf.variable_scope(\"d\", reuse=True):\n    b = f(y)\n")
    assert folded(cst.parse_module(HEAD + script)) is not None


def test_what_the_reading_cannot_mean_stays_as_written():
    cases = [
        # a call outside any block: TF1 named its variables otherwise
        "with tf.variable_scope(\"d\"):\n    a = f(x)\nb = f(y)\n",
        # blocks of two scopes: two sets of variables
        "with tf.variable_scope(\"d\"):\n    a = f(x)\nwith tf.variable_scope(\"e\"):\n    b = f(y)\n",
        # an argument that calls: its ops (and variables) would leave the scope
        "with tf.variable_scope(\"d\") as vs:\n    a = f(g(x))\n",
        # the scope object read otherwise
        "with tf.variable_scope(\"d\") as vs:\n    a = f(x)\n    print(vs.name)\n",
        # something else in the block
        "with tf.variable_scope(\"d\"):\n    a = f(x)\n    w = tf.get_variable(\"w\", [2])\n",
        # a scope that is not a literal
        "with tf.variable_scope(name):\n    a = f(x)\n",
        # a `variable_scope` of something that is not TensorFlow
        "with helpers.variable_scope(\"d\"):\n    a = f(x)\n",
        # the function passed on: it may be called anywhere
        "with tf.variable_scope(\"d\"):\n    a = f(x)\nfns = [f]\n",
    ]
    for script in cases:
        assert folded(cst.parse_module(HEAD + script)) is None, script


def test_a_function_opening_its_own_scope_is_left_to_its_reading():
    source = ("import tensorflow as tf\n\n\ndef f(x):\n    with tf.variable_scope(\"in\"):\n"
              "        return layer(x, 3, \"l\")\n\n\nwith tf.variable_scope(\"d\"):\n    a = f(x)\n")
    assert folded(cst.parse_module(source)) is None
