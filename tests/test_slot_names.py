"""A name filter over `tf.global_variables()` read after a train op of an optimizer with
slots (constructs/slot_names.py, var_lists._slots_excluded): kept where the filter is false
on every name TF1 gives the optimizer's variables, refused where it may select one. The
fixture global_variables_filtered_after_slots proves a whole program."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

PROGRAM = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
with tf.variable_scope("body"):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    scale = tf.get_variable("scale", [1], initializer=tf.ones_initializer(), trainable=False)
loss = tf.reduce_mean(tf.matmul(x, w) * scale)
train = tf.train.OPTIMIZER.minimize(loss)
chosen = [v for v in tf.global_variables() if FILTER]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train, {x: np.ones((2, 2))})
    print(sess.run(chosen))
"""


def rewrite(optimizer: str, test: str):
    source = PROGRAM.replace("OPTIMIZER", optimizer).replace("FILTER", test)
    result = restructure(cst.parse_module(source), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


@pytest.mark.parametrize("optimizer", ["AdamOptimizer(0.1)", "MomentumOptimizer(0.1, 0.9)", "RMSPropOptimizer(0.1)"])
def test_a_filter_false_on_every_slot_name_lists_the_models_variables(optimizer):
    code, messages = rewrite(optimizer, '"scale" in v.name')
    assert code is not None, messages
    assert "[v.numpy() for v in [scale]]" in code


@pytest.mark.parametrize("test", ['v.name.startswith("body/w")', '"power" in v.name', "not v.name.endswith(\"scale:0\")",
                                  'v.name.startswith("body")'])
def test_a_filter_that_may_keep_a_slot_or_an_accumulator_is_refused(test):
    code, messages = rewrite("AdamOptimizer(0.1)", test)
    assert code is None and any("read after a train op whose optimizer has slot variables" in m for m in messages), messages


def test_an_optimizer_named_otherwise_names_its_slots_so():
    code, messages = rewrite('AdamOptimizer(0.1, name="fit")', '"Adam" in v.name')
    assert code is not None, messages   # (its slots are `body/w/fit:0`, `body/w/fit_1:0`)
    code, messages = rewrite('AdamOptimizer(0.1, name="fit")', '"fit" in v.name')
    assert code is None, messages
