"""`tf.nn.dropout(x, keep_prob)` in graph code that runs: written with `rate=`, or refused
with the reason. The rewrite's output on whole programs is checked by the fixtures
(fixtures/rewrite/dropout_keep_prob) and proven by tests/test_rewrite_of_verify_originals.py."""

from __future__ import annotations

import pytest

from tf1gradfix.cli import demo
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, code_matches

PROGRAM = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
keep = tf.placeholder(tf.float32)
w = tf.Variable(tf.zeros([4, 1]), name="w")
{graph}
loss = tf.reduce_mean(tf.square(tf.matmul(h, w) - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        sess.run(train_op, {{x: np.ones((2, 4)), y: np.ones((2, 1)), keep: 0.5}})
"""


def rewrite(graph: str):
    result = process_source("p.py", PROGRAM.format(graph=graph).encode(), CodeFilter())
    assert result.error is None, result.error
    text = None if result.new_source is None else result.new_source.decode()
    return text, [f.message for f in result.findings if code_matches(f.code, ("TFG905",))]


@pytest.mark.parametrize("graph, written", [
    ("h = tf.nn.dropout(x, keep)", "h = tf.nn.dropout(x, rate=1 - keep)"),
    ("h = tf.nn.dropout(x, keep_prob=keep)", "h = tf.nn.dropout(x, rate=1 - keep)"),
    ("h = tf.nn.dropout(x, keep_prob=keep * 0.5 + 0.5)", "h = tf.nn.dropout(x, rate=1 - (keep * 0.5 + 0.5))"),
    ("h = tf.nn.dropout(x, 0.8 + 0 * keep)", "h = tf.nn.dropout(x, rate=1 - (0.8 + 0 * keep))"),
    ("h = tf.nn.dropout(x, rate=1 - keep)", "h = tf.nn.dropout(x, rate=1 - keep)"),
    ("h = tf.nn.dropout(x, keep, [1, 4], name='drop')",
     "h = tf.nn.dropout(x, rate=1 - keep, noise_shape=[1, 4], name='drop')"),
    ("h = tf.compat.v1.nn.dropout(x, keep) + x", "h = tf.compat.v1.nn.dropout(x, rate=1 - keep) + x"),
])
def test_keep_prob_becomes_the_rate(graph, written):
    text, refusals = rewrite(graph)
    assert refusals == [] and text is not None
    assert written in text
    assert "def train_step(x, y, keep):" in text   # the fed keep_prob is a parameter


@pytest.mark.parametrize("graph, reason", [
    ("h = tf.nn.dropout(x, keep, seed=3)", "`tf.nn.dropout` with `seed=`"),
    ("h = tf.nn.dropout(x, keep, None, 3)", "`tf.nn.dropout` with `seed=`"),
    ("h = tf.nn.dropout(x, keep, rate=0.5)", "exactly one of `keep_prob` and `rate` (given: keep_prob, rate)"),
    ("h = tf.nn.dropout(x)", "exactly one of `keep_prob` and `rate` (given: neither)"),
    ("h = tf.nn.dropout(tf.nn.dropout(x, keep), keep)", "`tf.nn.dropout` of another `tf.nn.dropout`"),
    ("def block(a, k):\n    return tf.nn.dropout(a, k)\nh = block(x, keep) + block(2.0 * x, keep)",
     "`tf.nn.dropout` with `keep_prob` in function `block`"),   # (called twice: kept as a function)
])
def test_a_dropout_it_cannot_write_is_refused(graph, reason):
    text, refusals = rewrite(graph)
    assert text is None or "tf.nn.dropout" not in text   # the file is left as it is
    assert any(reason in r for r in refusals), refusals


@pytest.mark.parametrize("graph", [
    "h = x + tf.random_normal(tf.shape(x), stddev=0.1)",
    "h = x * tf.random_uniform(tf.shape(x))",
    "h = x + tf.truncated_normal([1, 4])",
    "h = x + tf.cast(tf.multinomial(tf.zeros([2, 3]), 4)[:, :1], tf.float32)",
])
def test_aligned_random_ops_run_in_the_steps(graph):
    text, refusals = rewrite(graph)
    assert refusals == [] and text is not None
    body = text.split("def train_step(", 1)[1]
    assert "h = x " in body and "tf.random." in body


@pytest.mark.parametrize("graph", [
    "h = tf.random_shuffle(x)",
    "h = x * tf.random_gamma([1], 2.0)",
    "h = x * tf.random.poisson([1], 2.0)",
])
def test_random_ops_the_verifier_does_not_align_stay_refused(graph):
    text, refusals = rewrite(graph)
    assert text is None and any("in graph code that runs" in r for r in refusals), refusals


def test_the_demo_finds_its_examples_and_the_dropout_one():
    names = {p.parent.name for p in demo.EXAMPLES.glob("*/input.py")}
    assert "dropout_keep_prob" in names and len(names) > 10


@pytest.mark.tf
def test_the_rewrite_fixtures_with_dropout_and_noise_are_proven():
    """expected.py is what the rewrite writes (tests/test_fixtures.py); the verifier, drawing
    the masks and the noise from one stream on both sides, finds it equivalent to input.py."""
    from tf1gradfix.verify import orchestrate

    for name in ("dropout_keep_prob", "random_noise_input"):
        folder = demo.EXAMPLES / name
        result = orchestrate.verify_pair(folder / "input.py", folder / "expected.py")
        assert result.verdict == orchestrate.EQUIVALENT, (name, result.verdict, result.reason)
        assert all(result.random_numbers[role]["draws"] > 0 for role in ("original", "migrated")), result.random_numbers


@pytest.mark.parametrize("call", ["tf.random_normal([3], seed=7)", "tf.random_uniform([3], 0.0, 1.0, tf.float32, 5)",
                                  "tf.truncated_normal([3], stddev=0.1, seed=1)"])
def test_a_random_op_with_an_op_seed_is_refused(call):
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter

    source = ("import tensorflow as tf\nx = tf.placeholder(tf.float32, [3])\nw = tf.Variable(tf.ones([3]))\n"
              f"loss = tf.reduce_sum((x + {call}) * w)\n"
              "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
              "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
              "    _, value = sess.run([train, loss], {x: [1.0, 2.0, 3.0]})\n    print(value)\n")
    result = process_source("seeded.py", source.encode(), CodeFilter())
    assert result.new_source is None or b"Session" in result.new_source
    assert any("with an op seed" in f.message and f.line == 4 for f in result.findings), result.findings
    unseeded = process_source("plain.py", source.replace(call, "tf.random_normal([3])").encode(), CodeFilter())
    assert unseeded.new_source is not None and b"Session" not in unseeded.new_source


@pytest.mark.parametrize("graph", [
    "h = x + tf.cast(tf.multinomial(tf.zeros([2, 3]), 4, seed=3)[:, :1], tf.float32)",
    "h = x + tf.cast(tf.multinomial(tf.zeros([2, 3]), 4, None, None, tf.int32)[:, :1], tf.float32)",
])
def test_a_multinomial_categorical_cannot_take_as_written_is_refused(graph):
    """A seed (TF2 draws other numbers for it), or a third positional argument (the seed in
    multinomial, the dtype in categorical)."""
    text, refusals = rewrite(graph)
    assert text is None and any("op seed" in r for r in refusals), refusals



BUILDER = '''import numpy as np
import tensorflow as tf


def encoder(x, keep):
    with tf.variable_scope("encoder"):
        w = tf.get_variable("w", [4, 3], initializer=tf.glorot_uniform_initializer(seed=5))
        h = {dropout}
        return tf.matmul(h, tf.ones([3, 1]))


x = tf.placeholder(tf.float32, [None, 4])
keep = tf.placeholder(tf.float32)
loss = tf.reduce_mean(tf.square(encoder(x, keep)))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train_op, {x: np.ones((2, 4)), keep: 0.5})
'''


@pytest.mark.parametrize("dropout, written", [
    ("tf.nn.dropout(tf.matmul(x, w), keep)", "tf.nn.dropout(tf.matmul(x, self.w), rate=1 - keep)"),
    ("tf.nn.dropout(tf.matmul(x, w), keep_prob=keep * 0.5)", "tf.nn.dropout(tf.matmul(x, self.w), rate=1 - (keep * 0.5))"),
])
def test_a_builders_dropout_is_written_with_the_rate(dropout, written):
    result = process_source("p.py", BUILDER.replace("{dropout}", dropout).encode(), CodeFilter(), fix=True)
    assert result.new_source is not None and written in result.new_source.decode()


def test_a_builders_dropout_it_cannot_write_is_refused():
    result = process_source("p.py", BUILDER.replace("{dropout}", "tf.nn.dropout(tf.nn.dropout(x, keep), keep) @ w")
                            .encode(), CodeFilter(), fix=True)
    assert result.new_source is None or "tf.nn.dropout(tf.nn.dropout" in result.new_source.decode()
    assert any("another `tf.nn.dropout`" in f.message for f in result.findings)
