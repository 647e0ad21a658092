"""Summaries made in a loop over graph values (constructs/summary_loops.py), the tags TF1
writes them under (constructs/summaries.py), and the TF1 op names they are read from
(rules/op_names.toml, checked in a TF1 graph by the `tf` test)."""

from __future__ import annotations

import json
import subprocess
import sys

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure
from tf1gradfix.model.tf1_names import op_names

PROGRAM = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
scale = tf.constant(2.0, name="scale")
y = tf.matmul(x, w, name="y")
z = tf.multiply(y, scale, "z")
loss = tf.reduce_mean(tf.square(z), name="loss")
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
{loop}
merged = tf.summary.merge_all()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    log = tf.summary.FileWriter("logs")
    for step in range(3):
        _, s = sess.run([train, merged], {{x: [[1.0, 2.0]]}})
        log.add_summary(s, step)
"""


def rewrite(loop: str):
    return restructure(cst.parse_module(PROGRAM.format(loop=loop)), "input.py")


def tags(code: str) -> list[tuple[str, str]]:
    return [(line.split("(")[0].split(".")[-1], line.split('"')[1]) for line in code.splitlines()
            if line.strip().startswith("tf.summary.") and "step=global_step" in line]


@pytest.mark.parametrize("loop, expected", [
    ("for v in [loss, w, scale, z, y]:\n    tf.summary.scalar(v.op.name, tf.reduce_mean(v))",
     [("scalar", "loss_1"), ("scalar", "w_1"), ("scalar", "scale_1"), ("scalar", "z_1"), ("scalar", "y_1")]),
    ("for v in (loss, z):\n    tf.summary.scalar(v.name, v)\n    tf.summary.histogram('spread', v)",
     [("scalar", "loss_0"), ("histogram", "spread"), ("scalar", "z_0"), ("histogram", "spread_1")]),
    ("tf.summary.scalar('loss', loss)\nfor v in [loss]:\n    tf.summary.scalar(v.op.name, v)",
     [("scalar", "loss_1"), ("scalar", "loss_2")]),
    ("for v in [loss, z]:\n    tf.summary.scalar('my value!', v)",
     [("scalar", "my_value_"), ("scalar", "my_value__1")]),
    ("tf.summary.scalar(loss.op.name, loss)\ntf.summary.histogram(w.name, w)",
     [("scalar", "loss_1"), ("histogram", "w_0")]),
    ("tf.summary.scalar('mean', tf.reduce_mean(w))\ntf.summary.scalar('square', z)\n"
     "tf.summary.scalar('max', tf.reduce_max(w, name=None))\ntf.summary.scalar('Sum', tf.reduce_sum(w, name='total'))",
     [("scalar", "mean_1"), ("scalar", "square_1"), ("scalar", "max_1"), ("scalar", "Sum")]),
    ("for v in [w, z]:\n    tf.summary.scalar('min', tf.reduce_min(v))",
     [("scalar", "min_1"), ("scalar", "min_3")]),
], ids=["op_names", "output_names_and_strings", "after_a_summary", "cleaned_string", "outside_a_loop",
        "after_unnamed_ops", "unnamed_ops_in_a_loop"])
def test_loop_becomes_the_summaries_tf1_made(loop, expected):
    result = rewrite(loop)
    assert result.new_module is not None, result.diagnostics
    assert tags(result.new_module.code) == expected
    assert "for v in" not in result.new_module.code


@pytest.mark.parametrize("loop, message", [
    ("s = tf.reduce_sum(z)\nfor v in [s]:\n    tf.summary.scalar(v.op.name, v)",
     "the summary of `s` is tagged with the name of its op, which TF1 gave it by itself"),
    ("for v in [loss, z]:\n    tf.summary.scalar(v.op.name, v)\nprint(v)",
     "`v`, the name a loop making summaries runs over, is read after the loop"),
    ("for v in [loss, z]:\n    tf.summary.scalar('t' + v.op.name, v)",
     "a summary tag in a loop that is neither a string nor a graph value's `.op.name` or `.name`"),
    ("for v, u in [(loss, z)]:\n    tf.summary.scalar('a', v)",
     "summaries made in a loop other than `for NAME in [a, b, ...]:` over names of graph values"),
    ("for v in [loss, train]:\n    tf.summary.scalar('a', v)",
     "a summary of a train op"),
    ("tf.summary.scalar('/', loss)", "a summary tag that is empty once TF1 drops its leading `/`"),
], ids=["default_op_name", "name_read_after", "tag_expression", "tuple_target", "of_an_op", "empty_tag"])
def test_loop_the_rewrite_cannot_unroll_is_refused(loop, message):
    result = rewrite(loop)
    assert result.new_module is None
    assert any(d[2] == "TFG917" and d[3].startswith(message) for d in result.diagnostics), result.diagnostics


def test_a_loop_doing_more_than_summaries_stays_a_graph_loop():
    result = rewrite("for v in [loss, z]:\n    tf.summary.scalar('a', v)\n    print('made')")
    assert result.new_module is None
    assert [d[3] for d in result.diagnostics if d[2].startswith("TFG9")][0] == "graph built inside a loop (`tf.summary.scalar`)"


CHECK = """\
import json, sys
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
names = {}
for symbol, example in json.loads(sys.argv[1]).items():
    with tf.Graph().as_default():
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        b = tf.constant([[0.5, 1.5], [2.5, 3.5]])
        names[symbol] = eval(example.format(name='"probe"')).op.name
    with tf.Graph().as_default():   # (unnamed: the op asks for its default name)
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="a")
        b = tf.constant([[0.5, 1.5], [2.5, 3.5]], name="b")
        names[symbol + " unnamed"] = eval(example.format(name="None")).op.name
print(json.dumps(names))
"""


@pytest.mark.tf
def test_each_row_names_its_op_as_asked():
    examples = {symbol: row["example"] for symbol, row in op_names().items()}
    run = subprocess.run([sys.executable, "-c", CHECK, json.dumps(examples)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    names = json.loads(run.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in names.items() if not k.endswith(" unnamed")} == {symbol: "probe" for symbol in examples}
    assert {k.removesuffix(" unnamed"): v for k, v in names.items() if k.endswith(" unnamed")} == {
        symbol: row["default"] for symbol, row in op_names().items()}


def test_each_row_gives_the_name_where_it_says():
    for symbol, row in op_names().items():
        call = cst.parse_expression(row["example"].format(name='"probe"'))
        assert isinstance(call, cst.Call) and symbol.endswith(cst.Module([]).code_for_node(call.func).removeprefix("tf"))
        positional = [a for a in call.args if a.keyword is None]
        if "name_at" in row:
            assert len(positional) == row["name_at"] + 1 and positional[-1].value.value == '"probe"', symbol
        else:
            assert call.args[-1].keyword.value == "name", symbol
