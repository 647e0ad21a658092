"""verify gives clean verdicts for programs that exit early, read argv or print megabytes."""

from __future__ import annotations

import textwrap

import pytest

from tf1gradfix.verify.orchestrate import verify_pair

pytestmark = pytest.mark.tf

ORIGINAL = """
import sys
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((2, 1), np.float32), name="w")
x = tf.placeholder(tf.float32, [None, 2])
loss = tf.reduce_sum(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        _, value = sess.run([train, loss], {x: np.ones((1, 2), np.float32)})
        print("loss", value)
    print("w", sess.run(w).ravel())
{tail}
"""

MIGRATED = """
import sys
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((2, 1), np.float32), name="w")
opt = tf.keras.optimizers.SGD(learning_rate=0.1)
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(np.ones((1, 2), np.float32), w))
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    print("loss", loss.numpy())
print("w", w.numpy().ravel())
{tail}
"""


def pair(tmp_path, tail_original: str, tail_migrated: str | None = None):
    original = tmp_path / "original.py"
    migrated = tmp_path / "migrated.py"
    original.write_text(textwrap.dedent(ORIGINAL).replace("{tail}", tail_original))
    migrated.write_text(textwrap.dedent(MIGRATED).replace("{tail}", tail_migrated if tail_migrated is not None else tail_original))
    return verify_pair(original, migrated, timeout=120)


def test_sys_exit_zero_after_training(tmp_path):
    result = pair(tmp_path, "sys.exit(0)")
    assert result.verdict == "EQUIVALENT", result.reason
    assert result.comparison.steps == 3


def test_program_reading_argv_sees_only_its_own_name(tmp_path):
    result = pair(tmp_path, "print('argc', len(sys.argv))\nassert sys.argv[0].endswith('.py')")
    assert result.verdict == "EQUIVALENT", result.reason


def test_different_exit_codes_are_not_equivalent(tmp_path):
    result = pair(tmp_path, "sys.exit(0)", "sys.exit(3)")
    assert result.verdict != "EQUIVALENT"


def test_megabytes_of_output_do_not_hang_the_tool(tmp_path):
    flood = "for i in range(200000):\n    print('line', i, 'x' * 40)"
    result = pair(tmp_path, flood)
    assert result.verdict in ("EQUIVALENT", "DIVERGED", "NOT_COMPARABLE"), result.reason
    assert result.elapsed < 120
