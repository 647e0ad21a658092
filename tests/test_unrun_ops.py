"""Op statements whose result no name keeps (constructs/unrun_ops.py): dropped where TF1
only built the op; refused where building it did something or the program can reach
it another way. The proof of a rewrite: fixtures/rewrite/unrun_op_statements and its
wrong counterparts in fixtures/verify/unrun_op_statements."""

from __future__ import annotations

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

PROGRAM = """import numpy as np
import tensorflow as tf

src = tf.placeholder(tf.float32, [None, 2])
kernel = tf.Variable(tf.ones([2, 1]))
total = tf.reduce_sum(tf.matmul(src, kernel))
{statement}
step = tf.train.GradientDescentOptimizer(0.1).minimize(total)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        print(sess.run([step, total], {{src: np.ones([4, 2])}})[1])
{tail}"""


def _run(statement: str, tail: str = ""):
    result = process_source("input.py", PROGRAM.format(statement=statement, tail=tail).encode(), CodeFilter())
    refusals = [(f.line, f.message) for f in result.findings if f.code.startswith("TFG9")]
    notes = [f.message for f in result.findings if f.code == "TFG209"]
    return result, refusals, notes


@pytest.mark.parametrize("statement", ["tf.assign(kernel, kernel)", "tf.assign_sub(kernel, kernel)",
                                       "tf.reduce_max(total)", "tf.group(total, name='unused')"])
def test_an_op_kept_by_no_name_is_dropped(statement):
    result, refusals, notes = _run(statement)
    assert refusals == []
    assert len(notes) == 1 and "never ran it" in notes[0]
    assert statement not in result.new_source.decode()


@pytest.mark.parametrize("statement,tail", [
    ("tf.Variable(tf.zeros([3]))", ""),                               # a variable: global_variables() sees it
    ("tf.random_normal([2])", ""),                                    # a draw: later seeds follow the op count
    ("tf.add_to_collection('extra', total)", ""),                     # a collection filled
    ("tf.reduce_max(total * 2.0)", ""),                               # a computed argument
    ("tf.reduce_max(missing)", ""),                                   # a name TF1 would not find
    ("tf.zeros([rows, 2])", ""),                                      # the same, inside a shape
    ("tf.reduce_max(total, name='peak')",
     "    print(sess.run(tf.get_default_graph().get_tensor_by_name('peak:0')))\n"),   # reached by its name
])
def test_an_op_statement_with_effects_or_reached_otherwise_stays_refused(statement, tail):
    result, refusals, notes = _run(statement, tail)
    assert refusals and result.new_source is None, refusals
    assert notes == []


def test_a_call_that_acts_when_called_is_not_dropped_as_an_op():
    result, refusals, notes = _run("tf.set_random_seed(3)")
    assert notes == [] and "set_seed(3)" in result.new_source.decode()
