"""Values fetched with an assignment (constructs/updates.py check_run): what TF1 computes
before the assignment is rewritten in that order, anything else stays refused. The measured
order: verify/TOLERANCES.md; the proof: fixtures/rewrite/fetched_with_update."""

from __future__ import annotations

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

PROGRAM = """\
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
g = tf.gradients(loss, w)[0]
shown = {shown}
step = tf.assign(w, w - 0.1 * g)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    {targets}, _ = sess.run([{fetched}, step], {{x: np.ones([3, 2])}})
    print({targets})
"""


def _refusals(shown: str, fetched: str) -> list[str]:
    targets = ", ".join(f"value{i}" for i, _ in enumerate(fetched.split(",")))
    source = PROGRAM.format(shown=shown, fetched=fetched, targets=targets).encode()
    result = process_source("input.py", source, CodeFilter())
    return [f.message for f in result.findings if f.code == "TFG912"]


@pytest.mark.parametrize("fetched", ["loss", "g", "loss, g"])
def test_what_the_assigned_value_is_computed_from_is_fetched_before_it(fetched):
    assert _refusals("loss * 2.0", fetched) == []


@pytest.mark.parametrize("shown,fetched", [
    ("loss * 2.0", "shown"),             # computed from the loss, but nothing the assignment needs
    ("tf.identity(w)", "shown"),         # may be the variable's own buffer, assigned in place
    ("loss * 2.0", "w"),                 # TF1's repeated runs disagree (verify/TOLERANCES.md)
])
def test_anything_else_fetched_with_the_assignment_is_refused(shown, fetched):
    assert _refusals(shown, fetched) == ["an assignment op fetched with a value it is not computed from (order undefined)"]


PAIRS = """\
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
opt = tf.train.GradientDescentOptimizer(0.1)
pairs = opt.compute_gradients(loss)
train = opt.apply_gradients(pairs)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    {line}
"""


def test_compute_gradients_pairs_fetched_alone_come_back_as_tuples_of_arrays():
    source = PAIRS.format(line="print(sess.run(pairs, {x: np.ones([3, 2])}))").encode()
    result = process_source("input.py", source, CodeFilter())
    assert result.new_source is not None
    assert b"print(tf.nest.map_structure(lambda g: g.numpy(), compute_pairs(np.ones([3, 2]))))" in result.new_source


def test_compute_gradients_pairs_fetched_with_their_update_are_refused():
    source = PAIRS.format(line="_, seen = sess.run([train, pairs], {x: np.ones([3, 2])})").encode()
    result = process_source("input.py", source, CodeFilter())
    assert result.new_source is None
    assert [f.message for f in result.findings if f.code == "TFG912"] == [
        "a variable fetched in the same run as its update (order undefined)"]
