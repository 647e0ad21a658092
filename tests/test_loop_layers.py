"""Layers a loop makes (tf1gradfix/constructs/loop_layers.py): under the loop's variable scopes
each iteration's layer keeps the name TF1 gave it, its training mode reaches the steps' loop,
its class follows the rank of its input through the loop, and the runs update the moving
statistics TF1's did (constructs/layer_statistics.py). The fixtures text_cnn_batch_norm_per_width
and batch_norm_blocks_in_loop prove whole programs; the names below were measured on
`tf.compat.v1` graphs (TF 2.21, legacy Keras layers)."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

HEAD = """import numpy as np
import tensorflow as tf

rng = np.random.RandomState(3)
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
training = tf.placeholder(tf.bool, [])
h = x
"""
TAIL = """prediction = tf.layers.dense(h, 1, name="out")
loss = tf.reduce_mean(tf.square(prediction - y))
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        _, value = sess.run([train_op, loss], {x: rng.randn(6, 3), y: rng.randn(6, 1), training: True})
        print(step, "%.5f" % value)
    print(sess.run(prediction, {x: rng.randn(2, 3), training: False}).ravel())
"""


def rewrite(loop: str, head: str = HEAD, tail: str = TAIL):
    result = restructure(cst.parse_module(head + loop + tail), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


BLOCKS = ('for i in range(2):\n    with tf.variable_scope("block-%d" % i):\n        h = tf.layers.dense(h, 3)\n'
          '        h = tf.layers.dense(h, 3)\n        h = tf.layers.batch_normalization(h, training=training)\n')


def test_layers_under_the_loops_variable_scope_keep_tf1s_names():
    # measured: block-0/dense, block-0/dense_1, block-0/batch_normalization, block-1/dense, ..., then dense
    code, messages = rewrite(BLOCKS, tail=TAIL.replace(', name="out"', ""))
    assert code is not None, messages
    assert 'dense_layers.append(tf.keras.layers.Dense(3, name="dense"))' in code
    assert 'dense_1_layers.append(tf.keras.layers.Dense(3, name="dense_1"))' in code
    assert 'tf.keras.layers.BatchNormalization(name="batch_normalization")' in code   # (2-D: Keras's own)
    assert ('        with tf.keras.name_scope("block-%d" % i):\n            h = dense(h)\n            h = dense_1(h)\n'
            '            h = batch_normalization(h, training=training)\n') in code
    assert "    training = True\n" in code.split("def train_step(")[1].split("\ndef ")[0]
    assert "    training = False\n" in code.split("def compute_prediction(")[1]


@pytest.mark.parametrize("loop,named,scopes", [
    # nested scopes, the outer one outside the loop (measured: model/b0/inner/fc, model/b1/inner/fc)
    ('with tf.variable_scope("model"):\n    for i in range(2):\n        with tf.variable_scope("b%d" % i):\n'
     '            with tf.variable_scope("inner"):\n                h = tf.layers.dense(h, 3, name="fc")\n',
     'tf.keras.layers.Dense(3, name="fc")',
     'with tf.keras.name_scope("model"):\n            with tf.keras.name_scope("b%d" % i):\n'
     '                with tf.keras.name_scope("inner"):\n                    h = fc(h)'),
    # a name of its own in each iteration (measured: s0/fc0, s1/fc1)
    ('for i in range(2):\n    with tf.variable_scope("s%d" % i):\n        h = tf.layers.dense(h, 3, name="fc%d" % i)\n',
     'tf.keras.layers.Dense(3, name="fc%d" % i)', 'with tf.keras.name_scope("s%d" % i):\n            h = dense(h)'),
    # a variable scope whose name scope TF1 numbered (measured: blk-1/dense, blk-1/w): the variable scope counts
    ('with tf.name_scope("blk-1"):\n    pass\nfor i in range(2):\n    with tf.variable_scope("blk-%d" % i):\n'
     '        w = tf.get_variable("w", [3, 3])\n        h = tf.layers.dense(tf.matmul(h, w), 3)\n',
     'tf.keras.layers.Dense(3, name="dense")', 'with tf.keras.name_scope("blk-%d" % i):\n            h = dense('),
    # contrib's batch_norm named by its scope, its mode a fed flag
    ('for width in (2, 3):\n    with tf.variable_scope("w-%d" % width):\n'
     '        h = tf.contrib.layers.batch_norm(h, is_training=training, scope="bn")\n',
     'BatchNorm(momentum=0.999, scale=False, name="bn")', 'with tf.keras.name_scope("w-%d" % width):\n'
     '            h = bn(h, training=training)'),
])
def test_each_layer_is_made_under_its_last_name_and_called_under_the_scopes(loop, named, scopes):
    code, messages = rewrite(loop)
    assert code is not None, messages
    assert named in code and scopes in code, code


def test_a_scoped_loop_leaves_tf1s_numbering_at_the_top_known():
    """The loop's layers are counted in their own scopes: the unnamed contrib layer after the loop
    is TF1's `fully_connected` (block-0/fully_connected, block-1/fully_connected, fully_connected),
    written with that name, which Keras would not give it."""
    code, messages = rewrite('for i in range(2):\n    with tf.variable_scope("block-%d" % i):\n'
                             '        h = tf.contrib.layers.fully_connected(h, 3)\n'
                             'h = tf.contrib.layers.fully_connected(h, 3)\n')
    assert code is not None, messages
    made = 'fully_connected_layers.append(\n        tf.keras.layers.Dense(3, activation=tf.nn.relu, name="fully_connected")'
    assert made in code
    assert 'fully_connected_layer = tf.keras.layers.Dense(\n    3, activation=tf.nn.relu, name="fully_connected"\n)' in code


@pytest.mark.parametrize("loop,why", [
    # measured: TF1 raises (Variable shared/dense/kernel already exists)
    ('for i in range(2):\n    with tf.variable_scope("shared"):\n        h = tf.layers.dense(h, 3)\n',
     "makes the name `shared/dense` in more than one iteration"),
    # measured: TF1 raises for block-0/dense/kernel, made before the loop
    ('with tf.variable_scope("block-0"):\n    h = tf.layers.dense(h, 3)\nfor i in range(2):\n'
     '    with tf.variable_scope("block-%d" % i):\n        h = tf.layers.dense(h, 3)\n',
     "makes the name `block-0/dense`, which the graph already has"),
    # measured: TF1 raises (p0/dense/kernel) when the scope is entered twice in one iteration
    ('for i in range(2):\n    with tf.variable_scope("p%d" % i):\n        h = tf.layers.dense(h, 3)\n'
     '    with tf.variable_scope("p%d" % i):\n        h = tf.layers.dense(h, 3)\n',
     "makes the name `p0/dense`, which the graph already has"),
    # measured: dense, dense_1 (a name scope is not in a layer's name)
    ('for i in range(2):\n    with tf.name_scope("n%d" % i):\n        h = tf.layers.dense(h, 3)\n',
     "under no variable scope the loop enters"),
    ('with tf.variable_scope("outer"):\n    for i in range(2):\n        w = tf.get_variable("w%d" % i, [3, 3])\n'
     '        h = tf.layers.dense(tf.matmul(h, w), 3)\n', "under no variable scope the loop enters"),
    # TF1 numbers the second layer of one name in a scope
    ('for i in range(2):\n    with tf.variable_scope("b%d" % i):\n        h = tf.layers.dense(h, 3, name="fc")\n'
     '        h = tf.layers.dense(h, 3, name="fc")\n', "TF1 names the loop's `tf.layers.dense` `b0/fc_1`"),
    # a Keras name scope cannot hold `/`
    ('for i in range(2):\n    with tf.variable_scope("a/b%d" % i):\n        h = tf.layers.dense(h, 3)\n',
     "TF1 names the loop's `tf.layers.dense` `a/b0/dense`"),
    # what the scope's name reads changes before the layer is made
    ('for i in range(2):\n    k = i\n    with tf.variable_scope("b%d" % k):\n        k = k + 10\n'
     '        h = tf.layers.dense(h, 3)\n', "TF1 names the loop's `tf.layers.dense` `b0/dense`"),
])
def test_names_the_loop_cannot_give_are_refused(loop, why):
    code, messages = rewrite(loop)
    assert code is None and any(why in m for m in messages), messages


@pytest.mark.parametrize("loop,cls", [
    # 2-D through a copy and a ReLU the loop carries: Keras's own layer
    ('for i in range(2):\n    with tf.variable_scope("b%d" % i):\n'
     '        h = tf.layers.batch_normalization(h, momentum=0.9, training=training)\n        h = tf.nn.relu(h)\n',
     "tf.keras.layers.BatchNormalization(momentum=0.9"),
    # 4-D: TF1's fused kernel
    ('h4 = tf.reshape(h, [-1, 1, 3, 1])\nfor i in range(2):\n    with tf.variable_scope("b%d" % i):\n'
     '        h4 = tf.layers.batch_normalization(h4, momentum=0.9, training=training)\nh = tf.reshape(h4, [-1, 3])\n',
     "FusedBatchNormalization(momentum=0.9"),
    # a rank the loop changes (flattened in the iteration): not known, so the class that decides per call
    ('for i in range(2):\n    with tf.variable_scope("b%d" % i):\n'
     '        h = tf.layers.batch_normalization(h, momentum=0.9, training=training)\n'
     '        h = tf.reshape(h, [-1, 3])\n', "FusedBatchNormalization(momentum=0.9"),
])
def test_batch_normalization_in_a_loop_follows_the_rank_of_its_input(loop, cls):
    code, messages = rewrite(loop)
    assert code is not None, messages
    assert cls in code


@pytest.mark.parametrize("mode", ["training", "False"])
def test_a_loop_of_layers_alone_passes_the_mode(mode):
    code, messages = rewrite("for units in [4, 3]:\n    h = tf.layers.dense(h, units)\n"
                             f"    h = tf.layers.batch_normalization(h, training={mode})\n")
    assert code is not None, messages
    assert f"h = batch_normalization(h, training={mode})" in code


@pytest.mark.parametrize("change,why", [
    # the loop's normalization in training mode, its update never run by TF1
    (("with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):\n    train_op", "train_op"),
     "does not run a train op under"),
    # collected, in training mode, but the loss does not read the loop: TF1's train op ran its updates
    (("prediction = tf.layers.dense(h, 1", "prediction = tf.layers.dense(x, 1"),
     "batch normalization `b0/batch_normalization` is in `UPDATE_OPS`"),
])
def test_runs_that_would_update_other_statistics_are_refused(change, why):
    loop = ('for i in range(2):\n    with tf.variable_scope("b%d" % i):\n'
            '        h = tf.layers.batch_normalization(h, momentum=0.9, training=training)\n')
    tail = TAIL.replace(*change)
    assert tail != TAIL
    code, messages = rewrite(loop, tail=tail)
    assert code is None and any(why in m for m in messages), messages


@pytest.mark.tf
@pytest.mark.parametrize("scenario", ["text_cnn_batch_norm_per_width", "batch_norm_blocks_in_loop"])
def test_every_weight_and_moving_statistic_is_paired_by_name(scenario):
    from pathlib import Path

    from tf1gradfix.verify import orchestrate

    folder = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite" / scenario
    result = orchestrate.verify_pair(folder / "input.py", folder / "expected.py")
    assert result.verdict == orchestrate.EQUIVALENT, result.reason
    mapping = result.mapping
    assert sum("moving_variance" in m["original"] for m in mapping) == 3
    assert {m["matched_by"] for m in mapping} == {"name"} and all(m["original"] == m["migrated"] for m in mapping)
