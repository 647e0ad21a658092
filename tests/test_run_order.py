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
])
def test_anything_else_fetched_with_the_assignment_is_refused(shown, fetched):
    assert _refusals(shown, fetched) == ["an assignment op fetched with a value it is not computed from (order undefined)"]


def test_a_reference_variable_fetched_with_its_assignment_is_read_after_it():
    # (500 runs of 500 after it, at every thread setting measured; a resource variable's mostly before)
    assert _refusals("loss * 2.0", "w") == []
    resource = PROGRAM.replace('w = tf.Variable(tf.ones([2, 1]), name="w")',
                               'w = tf.get_variable("w", initializer=tf.ones([2, 1]), use_resource=True)')
    assert resource != PROGRAM
    source = resource.format(shown="loss * 2.0", fetched="w", targets="value0").encode()
    messages = [f.message for f in process_source("input.py", source, CodeFilter()).findings if f.code == "TFG912"]
    assert messages == ["an assignment op fetched with a value it is not computed from (order undefined)"]


COUNTED = """\
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
runs = tf.Variable(0, trainable=False)
count = {count}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, n, l = sess.run([train, count, loss], {{x: np.ones([3, 2])}})
    print(n, l)
"""


@pytest.mark.parametrize("count", ["tf.assign_add(runs, 1)", "runs.assign(runs + 1)"])
def test_an_assignment_sharing_no_variable_with_the_run_is_fetched_with_it(count):
    """Either order gives the same values; the function returns the value after it."""
    result = process_source("input.py", COUNTED.format(count=count).encode(), CodeFilter())
    assert [f.message for f in result.findings if f.code.startswith("TFG9")] == []
    assert "    count = runs.assign" in result.new_source.decode() and "return count, loss" in result.new_source.decode()


@pytest.mark.parametrize("count, why", [
    ("tf.assign_add(runs, tf.cast(tf.reduce_sum(w), tf.int32))", "an assignment op fetched with a value it is not "
                                                                  "computed from (order undefined)"),   # (reads w)
    ("tf.group(tf.assign_add(runs, 1))", "the result of a train op bound to a name that is used"),   # (TF1 gives None)
    ("runs.assign(runs + 1, read_value=False)", "the result of a train op bound to a name that is used"),   # (the op)
])
def test_an_assignment_sharing_a_variable_or_giving_none_stays_refused(count, why):
    result = process_source("input.py", COUNTED.format(count=count).encode(), CodeFilter())
    assert [f.message for f in result.findings if f.code.startswith("TFG9")] == [why]


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


AFTER = """\
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
out = tf.matmul(x, w)
loss = tf.reduce_sum(tf.square(out))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
{before}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train, {{x: np.ones([3, 2])}})
    {after}
    print(sess.run({fetched}, {{x: np.ones([3, 2])}}))
"""


def _after(before: str, after: str, fetched: str):
    source = AFTER.format(before=before, after=after, fetched=fetched).encode()
    result = process_source("input.py", source, CodeFilter())
    return result.new_source, [f.message for f in result.findings if f.code.startswith("TFG9")]


def test_a_tensor_made_after_a_run_is_computed_by_the_later_runs():
    new, refused = _after("cut = 0.5", "big = tf.reduce_mean(tf.cast(out > cut, tf.float32))", "big")
    assert refused == [] and new is not None and b"    big = tf.reduce_mean" in new


@pytest.mark.parametrize("before,after,fetched", [
    ("cut = 0.5", "out = tf.abs(out)", "out"),                 # rebinds a graph name an earlier run may mean
    ("cut = [0.5]", "big = tf.reduce_mean(out) > cut[0]", "big"),   # a host value a list: changed in place later?
    ("cut = 0.5", "v = tf.Variable(tf.zeros([1]), name='v')", "v"),   # a variable made after the initializer ran
])
def test_other_graph_code_after_a_run_stays_refused(before, after, fetched):
    new, refused = _after(before, after, fetched)
    assert new is None and "graph built after the graph already ran" in refused
