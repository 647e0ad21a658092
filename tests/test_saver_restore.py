"""`saver.restore(sess, path)` of a Saver of variables: read by TF1's names
(constructs/savers.py; proven on fixtures/rewrite/saver_restore_by_name, whose wrong
counterparts skip a variable and rename a key). The forms still refused, with the reason."""

from __future__ import annotations

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

HEAD = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.zeros([3, 1]), name="w")
guess = tf.matmul(x, w)
"""


def _rewrite(body: str):
    return process_source("case.py", (HEAD + body).encode(), CodeFilter())


def test_a_restore_of_variables_reads_tf1_names():
    result = _rewrite('saver = tf.train.Saver()\nwith tf.Session() as sess:\n    saver.restore(sess, "trained")\n'
                      '    print(sess.run(guess, {x: np.ones([1, 3])}))\n')
    text = result.new_source.decode()
    assert 'checkpoint = tf.train.load_checkpoint(path)\n    w.assign(checkpoint.get_tensor("w"))\n' in text, text
    assert 'saver_restore("trained")' in text and "Saver" not in text


@pytest.mark.parametrize("body", [
    'saver = tf.train.Saver()\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n'
    '    saver.save(sess, "out")\n    saver.restore(sess, "out")\n    print(sess.run(guess, {x: np.ones([1, 3])}))\n',
    'saver = tf.train.Saver()\nwith tf.Session() as sess:\n    saver.restore(sess, "trained")\n'
    '    saver.save(sess, "out")\n    print(sess.run(guess, {x: np.ones([1, 3])}))\n',
])
def test_a_program_that_saves_and_restores_reads_its_own_checkpoints_and_tf1s(body):
    """Saved object-based, read back whole; a TF1 checkpoint (no object graph) by TF1's names."""
    text = _rewrite(body).new_source.decode()
    assert "saver = tf.train.Checkpoint(w=w)" in text and 'saver.write("out")' in text, text
    assert 'if checkpoint.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):' in text
    assert "saver.read(path).assert_existing_objects_matched()\n        return\n" \
        '    w.assign(checkpoint.get_tensor("w"))\n' in text, text


@pytest.mark.parametrize("body,why", [
    ('dense = tf.layers.dense(x, 2, name="dense")\nsaver = tf.train.Saver()\nwith tf.Session() as sess:\n'
     '    saver.restore(sess, "trained")\n    print(sess.run(dense, {x: np.ones([1, 3])}))\n',
     "a restore of layers' weights or optimizer slots"),
    ('loss = tf.reduce_sum(guess)\nstep = tf.train.AdamOptimizer(0.1).minimize(loss)\nsaver = tf.train.Saver()\n'
     'with tf.Session() as sess:\n    saver.restore(sess, "trained")\n    print(sess.run([loss, step], {x: np.ones([1, 3])})[0])\n',
     "a restore of layers' weights or optimizer slots"),
    ('loss = tf.reduce_sum(guess)\nstep = tf.train.AdamOptimizer(0.1).minimize(loss)\nsaver = tf.train.Saver()\n'
     'with tf.Session() as sess:\n    saver.restore(sess, "trained")\n    sess.run(step, {x: np.ones([1, 3])})\n'
     '    saver.save(sess, "out")\n',   # (restored before any save: TF1's checkpoint, slots named otherwise)
     "a restore of layers' weights or optimizer slots"),
])
def test_restores_tf2_would_name_otherwise_are_refused(body, why):
    result = _rewrite(body)
    assert result.new_source is None
    assert any(f.code == "TFG921" and why in f.message for f in result.findings), [f.message for f in result.findings]


def test_a_numbered_save_takes_a_host_step_or_a_variable_never_a_tensor():
    """`global_step=` of a variable: TF2 keeps it as a `tf.Variable`; of a tensor: gone from host code."""
    head = "import os\n"
    body = ('count = tf.Variable(0, name="count", trainable=False)\ntwice = count * 2\nsaver = tf.train.Saver(max_to_keep=3)\n'
            'with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n'
            '    print(sess.run(guess, {x: np.ones([1, 3])}))\n    saver.save(sess, os.path.join("out", "m"), global_step=STEP)\n')
    text = process_source("case.py", (head + HEAD + body.replace("STEP", "count")).encode(), CodeFilter()).new_source
    assert text is not None and b'saver_save(os.path.join("out", "m"), count)' in text
    assert b"max_to_keep=3, checkpoint_name=name" in text
    result = process_source("case.py", (head + HEAD + body.replace("STEP", "twice")).encode(), CodeFilter())
    assert result.new_source is None
    assert any("a step computed from graph values other than a variable" in f.message for f in result.findings)
