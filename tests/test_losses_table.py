"""Every row of rules/losses.toml is backed by a verification.

Each row's example call is the loss of a small linear model trained with
gradient descent; the real rewrite turns it into the row's TF2 expression and
the verifier proves the pair EQUIVALENT (the `tf` tests). The fast tests check
the table, the text written and the refusals.
"""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.constructs.losses import loss_table
from tf1gradfix.emit.restructure import restructure

PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(2)
xs = rng.randn({steps}, 6, 4).astype(np.float32)
ys = rng.rand({steps}, 6, 3).astype(np.float32)
cs = rng.randint(0, 3, size=({steps}, 6))

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 3])
classes = tf.placeholder(tf.int32, [None])
w = tf.Variable(tf.constant(rng.randn(4, 3).astype(np.float32) * 0.3), name="w")
b = tf.Variable(tf.zeros([3]), name="b")
logits = tf.matmul(x, w) + b
prediction = tf.nn.sigmoid(logits)
loss = tf.losses.{name}({example})
train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range({steps}):
        _, value = sess.run([train_op, loss], feed_dict={{x: xs[step], y: ys[step], classes: cs[step]}})
        print("step", step, "loss %.6f" % value)
    print("w", sess.run(w).ravel())
"""
STEPS = 6
ROWS = list(loss_table().items())
IDS = [symbol.rsplit(".", 1)[1] for symbol, _ in ROWS]


def program(symbol: str, example: str) -> str:
    return PROGRAM.format(steps=STEPS, name=symbol.rsplit(".", 1)[1], example=example)


def rewrite(source: str):
    return restructure(cst.parse_module(source), "original.py")


@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_row_is_complete(symbol, row):
    assert symbol.startswith("tensorflow.losses.") and row["example"]
    assert set(row["defaults"]) | set(row["dropped"]) <= set(row["params"][2:])
    for param in row["params"][:2]:
        assert "{" + param + "}" in row["template"]


@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_the_loss_becomes_its_template(symbol, row):
    migrated = rewrite(program(symbol, row["example"])).new_module
    assert migrated is not None
    assert "tf.losses" not in migrated.code and "loss = tf.reduce_mean(" in migrated.code


def test_compound_arguments_are_parenthesized():
    result = rewrite(program("tensorflow.losses.absolute_difference", "y + 1.0, prediction * 2.0"))
    assert "loss = tf.reduce_mean(tf.abs((prediction * 2.0) - (y + 1.0)))" in result.new_module.code


@pytest.mark.parametrize("setting", ["weights=0.5", "reduction=tf.losses.Reduction.SUM", "label_smoothing=0.1"])
def test_other_weights_reductions_and_smoothing_are_refused(setting):
    source = program("tensorflow.losses.softmax_cross_entropy", f"tf.one_hot(classes, 3), logits, {setting}")
    result = rewrite(source)
    assert result.new_module is None
    assert any(d[2] == "TFG910" and setting.split("=")[0] + "=" in d[3] for d in result.diagnostics), result.diagnostics


@pytest.mark.tf
@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_row_is_backed_by_the_verifier(symbol, row, tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    original = program(symbol, row["example"])
    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(rewrite(original).new_module.code)
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
