"""TensorFlow calls nested in what a construct translates (a layer's input, an RNN's, the
ys of `tf.gradients`, the pairs `apply_gradients` is given) are checked as a tensor
statement's, and written with the same rewrites (constructs/nested_calls.py); a
`tf.gradients` nested in a larger expression is read as a statement of its own before it
(constructs/gradient_calls.py `lifted`). Whole programs are proven by the fixtures
dropout_in_layer_input, embedding_in_rnn_input, embedding_in_layer_loop and
gradients_nested_in_clip."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.cst.walk import walk
from tf1gradfix.emit.tape import TapeEmitter
from tf1gradfix.model.graph import ModelBuilder
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, code_matches

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "fixtures" / "rewrite").glob("*/input.py")) + \
    sorted((ROOT / "fixtures" / "verify").glob("*/original.py"))

HEAD = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 6])
ids = tf.placeholder(tf.int32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
keep = tf.placeholder(tf.float32)
emb = tf.Variable(np.ones((10, 6), np.float32), name="emb")
"""
TAIL = """
loss = tf.reduce_mean(tf.square(out - y))
train_op = tf.train.{optimizer}(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        sess.run(train_op, {{x: np.ones((2, 6)), ids: np.zeros((2, 4)), y: np.ones((2, 1)), keep: 0.5}})
"""


def rewrite(graph: str, optimizer: str = "GradientDescentOptimizer"):
    result = process_source("p.py", (HEAD + graph + TAIL.format(optimizer=optimizer)).encode(), CodeFilter())
    assert result.error is None, result.error
    text = None if result.new_source is None else result.new_source.decode()
    return text, [f.message for f in result.findings if code_matches(f.code, ("TFG9",))]


@pytest.mark.parametrize("graph, written", [
    # a layer's input: the dropout takes the rate, as in a statement of its own
    ("out = tf.layers.dense(tf.nn.dropout(x, keep), 1)", "out = dense(tf.nn.dropout(x, rate=1 - keep))"),
    ("out = tf.layers.dense(tf.nn.dropout(x, keep_prob=keep), 1)", "out = dense(tf.nn.dropout(x, rate=1 - keep))"),
    # an RNN's input
    ("cell = tf.nn.rnn_cell.GRUCell(3)\n"
     "outs, _ = tf.nn.dynamic_rnn(cell, tf.nn.dropout(tf.expand_dims(x, 2), keep), dtype=tf.float32)\n"
     "out = tf.reduce_sum(outs[:, -1, :], 1, keepdims=True)",
     "cell_layer(tf.nn.dropout(tf.expand_dims(x, 2), rate=1 - keep))"),
    # a loop's layer input
    ("h = x\nfor size in [4, 3]:\n    h = tf.layers.dense(tf.nn.dropout(h, keep), size)\nout = tf.reduce_sum(h, 1, keepdims=True)",
     "h = dense(tf.nn.dropout(h, rate=1 - keep))"),
])
def test_a_nested_dropout_is_written_with_the_rate(graph, written):
    text, refused = rewrite(graph)
    assert not refused and text is not None
    assert written in text
    assert "dropout(x, keep)" not in text and "dropout(h, keep)" not in text


@pytest.mark.parametrize("graph, reason", [
    ("out = tf.layers.dense(tf.nn.dropout(x, keep, seed=3), 1)", "`tf.nn.dropout` with `seed=`"),
    ("out = tf.layers.dense(tf.nn.dropout(x), 1)", "keep_prob"),
    ("out = tf.layers.dense(tf.random_shuffle(x), 1)", "tf.random_shuffle"),
    ("out = tf.layers.dense(x + tf.random_normal([6], seed=2), 1)", "seed"),
])
def test_a_nested_call_is_refused_as_in_a_statement(graph, reason):
    text, refused = rewrite(graph)
    assert text is None or "tf.layers" in text
    assert refused and reason in refused[0], refused


def test_an_rnn_input_lookup_makes_the_gradient_dense():
    graph = ("cell = tf.nn.rnn_cell.GRUCell(3)\n"
             "outs, _ = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(emb, ids), dtype=tf.float32)\n"
             "out = tf.reduce_sum(outs[:, -1, :], 1, keepdims=True)")
    text, refused = rewrite(graph, "AdamOptimizer")
    assert not refused and "(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v)" in text
    _, refused = rewrite(graph, "MomentumOptimizer")   # (its lazy update: refused, as for a tensor's lookup)
    assert refused and "Momentum" in refused[0] and "sparse" in refused[0], refused


def test_a_layer_input_lookup_makes_the_gradient_dense():
    text, refused = rewrite("out = tf.layers.dense(tf.reduce_mean(tf.nn.embedding_lookup(emb, ids), 1), 1)",
                            "AdamOptimizer")
    assert not refused and "(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v)" in text


GRADIENTS = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.ones([3, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b))
params = [w, b]
opt = tf.train.GradientDescentOptimizer(0.1)
{graph}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], {{x: np.ones((2, 3))}})[1])
"""


@pytest.mark.parametrize("graph, written", [
    ("train = opt.apply_gradients(zip(tf.gradients(loss, params), params))",
     ["gradients = tape.gradient(loss, params)", "for g, v in zip(gradients, params)"]),
    ("grads, _ = tf.clip_by_global_norm(tf.gradients(loss, params), 1.0)\ntrain = opt.apply_gradients(zip(grads, params))",
     ["gradients = tape.gradient(loss, params)", "grads, _ = tf.clip_by_global_norm(gradients, 1.0)"]),
    ("clipped = [tf.clip_by_value(g, -1.0, 1.0) for g in tf.gradients(loss, params)]\n"
     "train = opt.apply_gradients(zip(clipped, params))",
     ["clipped = [tf.clip_by_value(g, -1.0, 1.0) for g in gradients]"]),
    ("g_w = tf.gradients(loss, w)[0] * 0.5\ntrain = opt.apply_gradients([(g_w, w)])", ["g_w = gradients[0] * 0.5"]),
    ("grads = tf.gradients(tf.gradients(loss, b)[0], params)\ntrain = opt.apply_gradients(zip(grads, params))", None),
])
def test_a_nested_gradients_call_is_a_statement_before_its_own(graph, written):
    result = process_source("p.py", GRADIENTS.format(graph=graph).encode(), CodeFilter())
    refused = [f.message for f in result.findings if code_matches(f.code, ("TFG9",))]
    if written is None:   # (a gradient of a gradient: refused, as where it has a name)
        assert refused and "of a value computed from another gradient" in refused[0], refused
        return
    assert not refused, refused
    text = result.new_source.decode()
    assert all(line in text for line in written) and "tf.gradients" not in text, text


@pytest.mark.parametrize("graph, reason", [
    ("train = opt.apply_gradients([(tf.gradients(loss, v)[0], v) for v in params])", "lambda or a comprehension"),
    ("scale = tf.cond(loss > 1.0, lambda: tf.gradients(loss, b)[0], lambda: b)\ntrain = opt.minimize(loss)",
     "lambda or a comprehension"),
    ("grads = tf.gradients(loss, params) if True else None\ntrain = opt.apply_gradients(zip(grads, params))",
     "on a condition"),
    ("grads = params and tf.gradients(loss, params)\ntrain = opt.apply_gradients(zip(grads, params))",
     "on a condition"),
])
def test_a_nested_gradients_call_not_run_once_is_refused(graph, reason):
    result = process_source("p.py", GRADIENTS.format(graph=graph).encode(), CodeFilter())
    refused = [f.message for f in result.findings if code_matches(f.code, ("TFG920",))]
    assert result.new_source is None and refused and reason in refused[0], refused


def _written_unchecked(monkeypatch) -> list[str]:
    """The TensorFlow calls of user code the step functions of every fixture write as they are
    that the model did not check as a tensor's (a call the rewrite wrote anew names nothing)."""
    written: list[tuple[object, object, cst.CSTNode]] = []
    code = TapeEmitter.code

    def recording(self, node):
        written.append((self.p, self.qualified, node))
        return code(self, node)

    monkeypatch.setattr(TapeEmitter, "code", recording)
    unchecked = []
    for path in SOURCES:
        written.clear()
        process_source(str(path), path.read_bytes(), CodeFilter())
        for program, qualified, node in written:
            unchecked += [f"{path.parent.name}: {cst.Module([]).code_for_node(call)[:70]}" for call in walk(node)
                          if type(call) is cst.Call and qualified(call.func) is not None and id(call) not in program.checked]
    return sorted(set(unchecked))


def test_every_call_the_steps_write_was_checked(monkeypatch):
    """A construct that keeps an expression (a layer's input) claims only the call it translates
    (ModelBuilder.own), and constructs/nested_calls.py checks the rest; a call a construct
    claims is translated, never written as it is."""
    assert _written_unchecked(monkeypatch) == []


def test_a_construct_claiming_its_input_is_caught(monkeypatch):
    """The check above fails where a construct claims the expression it keeps, as the layer and
    RNN constructs did in effect when only their own call was recorded."""
    own = ModelBuilder.own
    monkeypatch.setattr(ModelBuilder, "own", lambda self, node, but=(): own(self, node))
    found = _written_unchecked(monkeypatch)
    assert any("embedding_lookup" in f for f in found) and any("dropout" in f for f in found), found
