"""A session program the rewrite does not restructure keeps running under TF1 semantics
once its safe fixes are written, with the same output: the renames it cannot take come as
`tf.compat.v1.NAME`, the old keywords and positional `keep_prob` as the forms both
TensorFlows take (TFG401, TFG403, TFG404)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

# Restructurable or not, a program whose proof fails (DIVERGED, NOT_COMPARABLE, a timeout,
# the pre-commit hook without TensorFlow) is written with the safe fixes only
# (`restructure=False`, as run/batch.py writes it).
PROGRAM = b'''\
import numpy as np
import tensorflow as tf

tf.set_random_seed(5)
x = tf.placeholder(tf.float32, [None, 4])
keep_prob = tf.placeholder(tf.float32, [])
w = tf.Variable(tf.random_normal([4, 3], seed=2), name="w")
h = tf.nn.dropout(tf.nn.relu(tf.matmul(x, w)), keep_prob)
p = tf.nn.softmax(h, dim=1)
total = tf.reduce_sum(p, reduction_indices=1, keep_dims=True)
best = tf.argmax(p, dimension=1)
size = tf.shape(p, "size")


def make_feed(k):
    return {x: np.arange(8, dtype=np.float32).reshape(2, 4) / 8.0, keep_prob: k}


with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([total, best, size], feed_dict=make_feed(1.0)))
    print(sess.run(h, feed_dict=make_feed(0.5)).round(5).tolist())
'''


def _run_tf1(path) -> str:
    (path.parent / "trace").mkdir()
    done = subprocess.run([sys.executable, "-m", "tf1gradfix.verify.runner_v1", str(path.parent / "trace"), str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.tf
def test_safe_fixes_of_a_program_left_tf1_run_the_same(tmp_path):
    result = process_source("train.py", PROGRAM, CodeFilter(), restructure=False)
    fixed = result.new_source
    assert fixed is not None and b"tf.Session()" in fixed   # (safe fixes only: still a session program)
    for written in (b"tf.compat.v1.set_random_seed(5)", b"rate=1 - keep_prob", b"axis=1)", b"keepdims=True",
                    b'name="size"', b"tf.random.normal("):
        assert written in fixed, written
    original, rewritten = tmp_path / "a" / "train.py", tmp_path / "b" / "train.py"
    for path, text in ((original, PROGRAM), (rewritten, fixed)):
        path.parent.mkdir()
        path.write_bytes(text)
    assert _run_tf1(rewritten) == _run_tf1(original)
