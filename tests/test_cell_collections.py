"""RNN cells' weights in a variable collection read by graph code (constructs/cell_collections.py).

TF1 lists a cell's own variables (an LSTM's one kernel over [inputs, state]); the Keras cell
holds their blocks in `kernel` and `recurrent_kernel`, gates reordered. The rewrite writes
the Keras weights where TF1 listed the cell's variables, decides a name filter on TF1's
names, and takes only statements that add up an entry-wise sum per variable
(rules/collection_reductions.toml); the table's claims are checked with
TensorFlow on a kernel split as the Keras cell splits it. The fixtures
lstm_l2_skip_biases and bigru_kernel_decay are proven EQUIVALENT (with wrong counterparts
DIVERGED) by tests/test_restructure_fixtures.py and tests/test_verify_fixtures.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import libcst as cst
import pytest

from tf1gradfix.constructs.cell_collections import reductions
from tf1gradfix.cst import layout
from tf1gradfix.cst.walk import walk
from tf1gradfix.emit.restructure import restructure

PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(2)
xs = rng.randn(3, 4, 5, 2).astype(np.float32)
ys = rng.randn(3, 4, 1).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 5, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())
cell = tf.nn.rnn_cell.{cell}
outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32{scope})
top = outputs[:, -1, :]
decay = {decay}
loss = tf.reduce_mean(tf.square(tf.matmul(top, w) - y)) + 0.01 * decay
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, loss], feed_dict={{x: xs[step], y: ys[step]}})
        print("step", step, "loss %.5f" % value)
"""
L2 = 'tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])'


def program(decay: str = L2, cell: str = "LSTMCell(3)", scope: str = "") -> str:
    return PROGRAM.format(decay=decay, cell=cell, scope=scope)


def result(source: str):
    return restructure(cst.parse_module(source), "original.py")


def decay_line(source: str) -> str:
    """The decay statement the rewrite wrote, on one line."""
    module = result(source).new_module
    assert module is not None, result(source).diagnostics
    found = [st for st in walk(cst.parse_module(module.code)) if type(st) is cst.SimpleStatementLine and isinstance(st.body[0], cst.Assign)
             and cst.Module([]).code_for_node(st.body[0].targets[0].target) == "decay"]
    return layout.one_line(cst.Module([]).code_for_node(found[0].with_changes(leading_lines=())).strip())


def refused(source: str) -> list[tuple[str, str]]:
    shaped = result(source)
    assert shaped.new_module is None
    return [(d[2], d[3]) for d in shaped.diagnostics]


# -- what the list holds --------------------------------------------------------------

def test_the_kernel_is_its_keras_parts_and_the_filter_reads_tf1s_names():
    assert decay_line(program()) == "decay = tf.add_n([tf.nn.l2_loss(v) for v in [w, cell_layer.cell.kernel, " \
                                    "cell_layer.cell.recurrent_kernel]])"


def test_a_grus_kernels_are_listed_together_and_its_biases_stay_out():
    line = decay_line(program(cell="GRUCell(3)"))
    assert "[w, cell_layer.cell.kernel, cell_layer.cell.recurrent_kernel]" in line


def test_the_cells_weights_come_where_the_run_made_them():
    """TF1 made them at the dynamic_rnn, after `w`, whatever the order of the statements."""
    source = program().replace('w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())\n', "") \
        .replace("top = outputs[:, -1, :]\n", 'top = outputs[:, -1, :]\nw = tf.get_variable("w", [3, 1], '
                 'initializer=tf.ones_initializer())\n')
    assert "[cell_layer.cell.kernel, cell_layer.cell.recurrent_kernel, w]" in decay_line(source)


def test_a_collection_read_before_the_run_does_not_list_the_cell():
    source = program().replace("decay = " + L2 + "\n", "").replace(
        "cell = tf.nn.rnn_cell", "decay = " + L2 + "\ncell = tf.nn.rnn_cell")
    assert decay_line(source) == 'decay = tf.add_n([tf.nn.l2_loss(v) for v in [w] if "bias" not in v.name])'


def test_names_follow_tf1s_scopes_and_stacks():
    """`scope=` of the run, a MultiRNNCell's `multi_rnn_cell/cell_k/`, a cell's `name=`: a filter on
    them selects the layer TF1's would."""
    scoped = program(decay='tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if v.name.startswith("enc/") and v.name.endswith("kernel:0")])',
                     scope=', scope="enc"')
    assert "[cell_layer.cell.kernel, cell_layer.cell.recurrent_kernel]" in decay_line(scoped)
    stacked = program(decay='tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "cell_1/top/kernel" in v.name])',
                      cell='MultiRNNCell([lower, upper])').replace(
        "cell = tf.nn.rnn_cell.MultiRNNCell", 'lower = tf.nn.rnn_cell.LSTMCell(3)\nupper = tf.nn.rnn_cell.LSTMCell(3, name="top")\n'
        "cell = tf.nn.rnn_cell.MultiRNNCell")
    line = decay_line(stacked)
    assert "[upper_layer.cell.kernel, upper_layer.cell.recurrent_kernel]" in line and "lower" not in line


def test_added_up_entrywise_sums_are_taken():
    for decay in ["sum(tf.reduce_sum(tf.abs(v)) for v in tf.trainable_variables() if 'kernel' in v.name)",
                  "tf.reduce_sum([tf.reduce_sum(tf.square(v) * 0.5) / 3.0 for v in tf.trainable_variables() if 'kernel' in v.name])",
                  "tf.add_n([-2.0 * tf.nn.l2_loss(v) for v in tf.trainable_variables() if 'kernel' in v.name])"]:
        assert "cell_layer.cell.recurrent_kernel" in decay_line(program(decay))


def test_without_a_forget_bias_the_lstm_bias_is_the_same_numbers():
    decay = "tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])"
    assert "cell_layer.cell.bias" in decay_line(program(decay, cell="LSTMCell(3, forget_bias=0.0)"))


# -- what is refused ------------------------------------------------------------------

@pytest.mark.parametrize("decay, why", [
    ("tf.add_n([tf.reduce_mean(v) for v in tf.trainable_variables() if 'kernel' in v.name])",
     "`tf.reduce_mean` is a mean over the entries"),
    ("tf.add_n([tf.norm(v) for v in tf.trainable_variables() if 'kernel' in v.name])", "`tf.norm` is the square root"),
    ("tf.add_n([tf.reduce_max(v) for v in tf.trainable_variables() if 'kernel' in v.name])", "combine by max"),
    ("tf.add_n([tf.reduce_sum(v, axis=0)[0] for v in tf.trainable_variables() if 'kernel' in v.name])",
     "is not an entry-wise sum of each variable"),
    ("tf.add_n([tf.nn.l2_loss(v * tf.ones_like(v)) for v in tf.trainable_variables() if 'kernel' in v.name])",
     "is not an entry-wise sum"),
    ("tf.add_n([tf.nn.l2_loss(v) * tf.cast(tf.size(v), tf.float32) for v in tf.trainable_variables() if 'kernel' in v.name])",
     "is not an entry-wise sum"),
    ("tf.reduce_max([tf.nn.l2_loss(v) for v in tf.trainable_variables() if 'kernel' in v.name])", "are not added up"),
    ("tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])", "the LSTM's bias"),
    ("tf.global_norm(tf.trainable_variables())", "the list itself is used"),
])
def test_uses_that_are_not_an_added_up_entrywise_sum_are_refused(decay, why):
    found = refused(program(decay))
    assert any(code == "TFG913" and "lists the weights of RNN cell `cell`" in m and why in m for code, m in found), found


def test_a_filter_splitting_what_one_keras_weight_holds_is_refused():
    decay = "tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if 'gates' in v.name])"
    found = refused(program(decay, cell="GRUCell(3)"))
    assert any("the filter selects part of what RNN cell `cell`'s Keras `kernel` holds" in m and
               "rnn/gru_cell/gates/kernel:0" in m and "rnn/gru_cell/candidate/kernel:0" in m for _, m in found), found


def test_a_run_that_does_not_call_the_cell_cannot_list_its_weights():
    source = program().replace('print("step", step, "loss %.5f" % value)',
                               'print("step", step, "loss %.5f" % value)\n    print(sess.run(decay))')
    assert any(code == "TFG913" and "`cell`" in m for code, m in refused(source))


def test_a_scope_not_written_as_a_string_leaves_the_names_unknown():
    source = program(scope=", scope=where").replace("x = tf.placeholder", 'where = "e" + "nc"\nx = tf.placeholder')
    assert any(code == "TFG913" and "RNN cell `cell`'s weights are not known here" in m for code, m in refused(source))


# -- the table, proven ------------------------------------------------------------------

TABLE_CHECK = """\
import json, sys
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
n, inputs = 3, 2
kernel = rng.randn(inputs + n, 4 * n).astype(np.float64)   # TF1's LSTM kernel, gates i, j, f, o
order = [0, 2, 1, 3]   # Keras's gates i, f, c, o
blocks = lambda rows: np.concatenate([rows[:, g * n:(g + 1) * n] for g in order], axis=1)
parts = [blocks(kernel[:inputs]), blocks(kernel[inputs:])]   # Keras's kernel, recurrent_kernel
out = {}
for name, kind in json.loads(sys.argv[1]):
    fn = eval(name.replace("tensorflow.", "tf."))
    term = (lambda v: tf.reduce_sum(fn(v))) if kind == "elementwise" else fn
    whole = float(term(tf.constant(kernel)))
    split = sum(float(term(tf.constant(p))) for p in parts)
    out[name] = [whole, split]
print(json.dumps(out))
"""


def test_the_tables_rows_are_complete():
    table = reductions()
    assert table["aggregates"] and all(row["kind"] in ("sum", "elementwise", "refused") and row["why"]
                                       for row in table["reduction"].values())


@pytest.mark.tf
def test_the_tables_sums_are_split_and_permutation_invariant_and_its_refusals_are_not():
    """Each row on TF1's LSTM kernel and on its Keras parts (rows split at the state, gates
    reordered): a "sum" (or an entry-wise op inside `tf.reduce_sum`) is the same number, to
    float64 rounding; a refused row is another number."""
    rows = [(q, row["kind"]) for q, row in reductions()["reduction"].items()]
    run = subprocess.run([sys.executable, "-c", TABLE_CHECK, json.dumps(rows)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for q, kind in rows:
        whole, split = got[q]
        if kind == "refused":
            assert abs(whole - split) > 1e-6 * max(1.0, abs(whole)), q
        else:
            assert whole == pytest.approx(split, rel=1e-12), q
