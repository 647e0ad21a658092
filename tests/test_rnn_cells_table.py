"""The weight layouts of rules/rnn_cells.toml, checked against the
cells' own formulas (NumPy, no TensorFlow): a Keras cell whose weights the
verifier makes from a TF1 cell's variables computes the TF1 cell's numbers, and
folding them back gives the TF1 variables again. The `tf` test proves every
cell EQUIVALENT under both semantics in one verification."""

from __future__ import annotations

import numpy as np
import pytest

from tf1gradfix.rules.catalog import _read
from tf1gradfix.verify.cell_weights import MARK, Cell, CellWeights, layouts
from tf1gradfix.verify.runner_common import decode_array, encode_array

TABLE = _read("rnn_cells.toml")
IN, N, BATCH = 3, 4, 2


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def tf1_step(layout: str, w: dict, x, state, forget_bias: float):
    """One step of the TF1 cell (tf_keras/src/layers/rnn/legacy_cells.py)."""
    if layout == "lstm":
        c, h = state
        i, j, f, o = np.split(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"], 4, axis=1)
        c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        return np.tanh(c) * sigmoid(o), (c, np.tanh(c) * sigmoid(o))
    if layout == "gru":
        r, u = np.split(sigmoid(np.concatenate([x, state], 1) @ w["gates/kernel"] + w["gates/bias"]), 2, axis=1)
        cand = np.tanh(np.concatenate([x, r * state], 1) @ w["candidate/kernel"] + w["candidate/bias"])
        h = u * state + (1 - u) * cand
        return h, h
    h = np.tanh(np.concatenate([x, state], 1) @ w["kernel"] + w["bias"])
    return h, h


def keras_step(layout: str, k: dict, x, state):
    """One step of the Keras cell (keras/src/layers/rnn/{lstm,gru,simple_rnn}.py; GRU reset_after=False)."""
    if layout == "lstm":
        c, h = state   # (Keras holds [h, c]; kept here in TF1's order)
        i, f, cc, o = np.split(x @ k["kernel"] + h @ k["recurrent_kernel"] + k["bias"], 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
        return sigmoid(o) * np.tanh(c), (c, sigmoid(o) * np.tanh(c))
    if layout == "gru":
        wz, wr, wh = np.split(k["kernel"], 3, axis=1)
        uz, ur, uh = np.split(k["recurrent_kernel"], 3, axis=1)
        bz, br, bh = np.split(k["bias"], 3)
        z, r = sigmoid(x @ wz + state @ uz + bz), sigmoid(x @ wr + state @ ur + br)
        h = z * state + (1 - z) * np.tanh(x @ wh + (r * state) @ uh + bh)
        return h, h
    h = np.tanh(x @ k["kernel"] + state @ k["recurrent_kernel"] + k["bias"])
    return h, h


def original_weights(layout: dict, rng) -> dict:
    gates = {name: 1 + max(g for leaf in ("kernel", "recurrent_kernel", "bias") for n, _, g in layout[leaf] if n == name)
             for name in layout["tf1"]}
    return {name: rng.randn(*([IN + N] if "kernel" in name else []), gates[name] * N) for name in layout["tf1"]}


CASES = [(name, shift) for name, layout in sorted(TABLE["layout"].items()) for shift in ((1.0, 0.0) if "shift" in layout else (0.0,))]


@pytest.mark.parametrize("name, shift", CASES)
def test_the_keras_cell_made_from_the_tf1_weights_computes_the_same_steps(name, shift):
    layout = TABLE["layout"][name]
    rng = np.random.RandomState(0)
    w = original_weights(layout, rng)
    cell = Cell(layout, N, "rnn/cell", {k: list(v.shape) for k, v in w.items()}, shift)
    k = {leaf: cell.keras_value(leaf, w) for leaf in ("kernel", "recurrent_kernel", "bias")}
    state = (rng.randn(BATCH, N), rng.randn(BATCH, N)) if name == "lstm" else rng.randn(BATCH, N)
    expected_state, got_state = state, state
    for _ in range(3):
        x = rng.randn(BATCH, IN)
        expected, expected_state = tf1_step(name, w, x, expected_state, shift)
        got, got_state = keras_step(name, k, x, got_state)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert {key: v.shape for key, v in k.items()} == {"kernel": (IN, len(layout["kernel"]) * N),
                                                       "recurrent_kernel": (N, len(layout["kernel"]) * N),
                                                       "bias": (len(layout["kernel"]) * N,)}
    folded = cell.fold(k, values=True)
    assert set(folded) == {f"rnn/cell/{n}" for n in layout["tf1"]}
    for n in layout["tf1"]:
        np.testing.assert_allclose(folded[f"rnn/cell/{n}"], w[n], rtol=0, atol=1e-15)
    if shift:   # a gradient has no shift: only the forget gate's bias differs by it
        bias = cell.fold(k, values=False)["rnn/cell/bias"] - w["bias"]
        np.testing.assert_allclose(bias, np.repeat([0.0, 0.0, shift, 0.0], N), atol=1e-15)


def test_traces_fold_only_complete_cells():
    layout = TABLE["layout"]["lstm"]
    weights = CellWeights()
    w = original_weights(layout, np.random.RandomState(1))
    cell = Cell(layout, N, "rnn/lstm", {k: list(v.shape) for k, v in w.items()}, 1.0)
    weights.cells[1] = cell
    named = {f"rnn/lstm/{leaf}{MARK}": cell.keras_value(leaf, w) for leaf in ("kernel", "recurrent_kernel", "bias")}
    assert sorted(weights.fold({**named, "emb": 1}, True)) == ["emb", "rnn/lstm/bias", "rnn/lstm/kernel"]
    partial = {k: v for k, v in named.items() if "recurrent" not in k}
    assert weights.fold(partial, True) == partial


def test_rows_name_known_layouts_and_parameters():
    for symbol, row in TABLE["cell"].items():
        assert symbol.startswith("tensorflow.nn.rnn_cell.") and row["layout"] in TABLE["layout"]
        assert set(row["keep"]) | set(row["accepted"]) <= set(row["params"]), symbol
        assert layouts()[TABLE["layout"][row["layout"]]["keras"]] == TABLE["layout"][row["layout"]]
        assert row["target"].rsplit(".", 1)[1] == TABLE["layout"][row["layout"]]["keras"]
        assert set(row.get("forget_bias", {})) == set(row["accepted"].get("forget_bias", ()))


PROOF_TF1 = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
xs = rng.randn(4, {batch}, 5, {inputs})
x32 = tf.placeholder(tf.float32, [{batch}, 5, {inputs}])
x64 = tf.placeholder(tf.float64, [{batch}, 5, {inputs}])
lengths = tf.placeholder(tf.int32, [{batch}])
c0 = tf.placeholder(tf.float32, [{batch}, {units}])
h0 = tf.placeholder(tf.float32, [{batch}, {units}])
{cells}
loss = {loss}
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        _, value = sess.run([train_op, loss], {{x32: xs[step], x64: xs[step], lengths: [5, 2 + step % 3],
                                             c0: xs[step, :, 0, :1] * np.ones({units}), h0: xs[step, :, 1, :1] * np.ones({units})}})
        print("step", step, "loss %.8f" % value)
"""
SETTINGS = {"tensorflow.nn.rnn_cell.BasicLSTMCell": [("forget_bias=1.0", ""), ("forget_bias=0.0", "unit_forget_bias=False")],
            "tensorflow.nn.rnn_cell.LSTMCell": [("", "")],
            "tensorflow.nn.rnn_cell.GRUCell": [("", "reset_after=False, bias_initializer=tf.keras.initializers.Constant("
                                                    "[1.0] * (2 * 4) + [0.0] * 4)")],
            "tensorflow.nn.rnn_cell.BasicRNNCell": [("", "")]}


def cases():
    """(symbol, row, v1 arguments, Keras arguments, dtype) of every row."""
    for symbol, row in TABLE["cell"].items():
        for v1_args, keras_args in SETTINGS[symbol]:
            for dtype in ("float32", "float64"):
                yield symbol, row, v1_args, keras_args, dtype


def original() -> str:
    """Each cell in a dynamic_rnn of its own scope, the final state (h of an LSTM) in the loss;
    the first of each kind over sequences of the lengths fed."""
    lines, terms, kinds = [], [], set()
    for k, (symbol, row, v1_args, _, dtype) in enumerate(cases()):
        v1 = ", ".join(a for a in (str(N), v1_args, f"dtype=tf.{dtype}") if a)
        masked = ", sequence_length=lengths" if row["state"] not in kinds else ""
        kinds.add(row["state"])
        start = f"dtype=tf.{dtype}"
        if k == 0:   # (a state fed in its two parts)
            lines.append("start = tf.nn.rnn_cell.LSTMStateTuple(c0, h0)")
            start = "initial_state=start"
        lines += [f'with tf.variable_scope("c{k}"):', f"    cell{k} = tf.{symbol.split('.', 1)[1]}({v1})",
                  f"    o{k}, s{k} = tf.nn.dynamic_rnn(cell{k}, x{dtype[-2:]}{masked}, {start})"]
        state = f"s{k}[1]" if row["state"] == "lstm" else f"s{k}"
        terms.append(f"tf.reduce_sum(tf.cast(o{k}, tf.float64) ** 2) + tf.reduce_sum(tf.cast({state}, tf.float64))")
    return PROOF_TF1.format(cells="\n".join(lines), loss=" + ".join(terms), batch=BATCH, inputs=IN, units=N)


def rewritten_program(source: str) -> str | None:
    import libcst as cst

    from tf1gradfix.emit.restructure import restructure

    module = restructure(cst.parse_module(source), "original.py").new_module
    return None if module is None else module.code


def test_the_rewrite_writes_each_row_as_its_keras_cell():
    migrated = rewritten_program(original())
    assert migrated is not None
    flat = " ".join(migrated.split()).replace("( ", "(").replace(", )", ")").replace(" )", ")")
    for k, (symbol, row, _, keras_args, dtype) in enumerate(cases()):
        cell = ", ".join(a for a in (str(N), f"dtype=tf.{dtype}", keras_args) if a)
        masked = ", zero_output_for_mask=True" if k in (0, 6) else ""   # (sequence_length: TF1's zeros past the end)
        assert f"cell{k}_layer = tf.keras.layers.RNN(tf.{row['target']}({cell}), return_sequences=True, " \
               f"return_state=True{masked})" in flat, (symbol, cell)
    assert "start = tf.stack([c0, h0])" in flat
    assert "o0, *s0 = cell0_layer(x32, mask=tf.sequence_mask(lengths, tf.shape(x32)[1]), " \
           "initial_state=[start[1], start[0]])" in flat
    assert "s0 = tf.stack(s0[::-1])" in flat and "o6, s6 = cell6_layer(x32, mask=" in flat
    assert "rnn_cell" not in migrated and "dynamic_rnn" not in migrated


def test_contrib_names_are_the_same_rows():
    source = original().replace("tf.nn.rnn_cell.", "tf.contrib.rnn.")
    assert rewritten_program(source) == rewritten_program(original())


def test_speed_and_scope_settings_of_dynamic_rnn_are_dropped():
    source = original().replace("x64, dtype=tf.float64)\n", 'x64, dtype=tf.float64, scope="rnn", parallel_iterations=4, swap_memory=True)\n', 1)
    assert 'scope="rnn"' in source and rewritten_program(source) == rewritten_program(original())


@pytest.mark.parametrize("setting", ["use_peepholes=True", "num_proj=2", "cell_clip=3.0", "forget_bias=0.5",
                                     "state_is_tuple=False", "activation=tf.nn.relu"])
def test_settings_without_a_keras_counterpart_are_refused(setting):
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter

    source = original().replace("tf.nn.rnn_cell.LSTMCell(4, ", f"tf.nn.rnn_cell.LSTMCell(4, {setting}, ")
    result = process_source("a.py", source.encode(), CodeFilter())
    assert setting in source and result.new_source is None
    line = source.splitlines().index(next(ln for ln in source.splitlines() if setting in ln)) + 1
    assert any(f.code == "TFG914" and f.line == line and setting.split("=")[0] in f.message for f in result.findings)


@pytest.mark.tf
def test_every_rewritten_cell_is_proven_under_both_semantics(tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    (tmp_path / "original.py").write_text(original())
    (tmp_path / "migrated.py").write_text(rewritten_program(original()))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    assert sum(m["matched_by"] == "rnn cell layout" for m in result.mapping) == 3 * len(list(cases()))


def test_a_cell_pairs_only_with_variables_of_its_layout():
    class LSTMCell:   # (what the pairing reads of a Keras cell)
        units, unit_forget_bias = N, True

    def encoded(shape):
        return {"value": encode_array(np.zeros(shape))}

    init = {"dense/kernel": encoded([IN, 4 * N]), "dense/bias": encoded([4 * N]),
            "rnn/lstm_cell/kernel": encoded([IN + N, 4 * N]), "rnn/lstm_cell/bias": encoded([4 * N])}
    cell = CellWeights._pair(LSTMCell(), TABLE["layout"]["lstm"], init, set(), decode_array)
    assert cell is not None and cell.prefix == "rnn/lstm_cell"


COMBINED_TF1 = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(1)
xs = rng.randn(4, 2, 5, 3)
x32 = tf.placeholder(tf.float32, [2, 5, 3])
x64 = tf.placeholder(tf.float64, [2, 5, 3])
lengths = tf.placeholder(tf.int32, [2])
keep = tf.placeholder(tf.float32)
ahead = tf.nn.rnn_cell.GRUCell(4)
behind = tf.nn.rnn_cell.GRUCell(4)
(pair_fw, pair_bw), ends = tf.nn.bidirectional_dynamic_rnn(ahead, behind, x32, sequence_length=lengths,
                                                          dtype=tf.float32)
start = tf.placeholder(tf.float64, [2, 2, 2, 4])
per_layer = tf.unstack(start, axis=0)
layered = tuple(tf.nn.rnn_cell.LSTMStateTuple(per_layer[k][0], per_layer[k][1]) for k in range(2))
low = tf.nn.rnn_cell.LSTMCell(4, dtype=tf.float64)
high = tf.nn.rnn_cell.LSTMCell(4, dtype=tf.float64)
stack = tf.nn.rnn_cell.MultiRNNCell([low, high])
deep, deep_state = tf.nn.dynamic_rnn(stack, x64, initial_state=layered)
first = tf.nn.rnn_cell.BasicRNNCell(4)
second = tf.nn.rnn_cell.BasicRNNCell(4)
first_dropped = tf.nn.rnn_cell.DropoutWrapper(first, input_keep_prob=keep, output_keep_prob=keep)
simple = tf.nn.rnn_cell.MultiRNNCell([first_dropped, second])
flat, flat_state = tf.nn.dynamic_rnn(simple, x32, dtype=tf.float32)
loss = (tf.cast(tf.reduce_sum(tf.concat([pair_fw, pair_bw], 2) ** 2) + tf.reduce_sum(ends[1] * ends[0]), tf.float64)
        + tf.reduce_sum(tf.cast(deep[:, 0, :], tf.float64))
        + tf.reduce_sum(tf.cast(deep_state[0][0] + deep_state[1][1] ** 2, tf.float64))
        + tf.cast(tf.reduce_sum(flat ** 2) + tf.reduce_sum(flat_state[1] * flat_state[0]), tf.float64))
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, loss], {x32: xs[step], x64: xs[step], lengths: [5, 2 + step], keep: 1.0,
                                                 start: np.stack([xs[step, :, 1:, :2].transpose(2, 0, 1),
                                                                 xs[step, :, :4, 1:].transpose(2, 0, 1)])})
        print("step", step, "loss %.8f" % value)
"""


def test_the_combinators_are_written_as_layers_in_order():
    flat = " ".join(rewritten_program(COMBINED_TF1).split()).replace("( ", "(").replace(" )", ")").replace(",)", ")")
    assert "behind_layer = tf.keras.layers.RNN(tf.keras.layers.GRUCell(4, reset_after=False" in flat and \
        "zero_output_for_mask=True, go_backwards=True)" in flat and flat.count("go_backwards") == 1
    assert "pair_bw = tf.reverse(pair_bw, [1])" in flat and "pair = " not in flat
    assert "ends = tf.stack([ends_fw, ends_bw])" in flat
    assert "deep_state = tf.stack([deep_state_layer0, deep_state_layer1])" in flat
    assert "layered = tf.stack([tf.stack([per_layer[k][0], per_layer[k][1]]) for k in range(2)])" in flat
    assert "deep, *deep_state_layer0 = low_layer(x64, initial_state=[layered[0][1], layered[0][0]])" in flat
    assert "flat, flat_state_layer0 = first_layer(tf.nn.dropout(x32, rate=1 - keep))" in flat
    assert "flat = tf.nn.dropout(flat, rate=1 - keep)" in flat
    assert "flat, flat_state_layer1 = second_layer(flat)" in flat


@pytest.mark.tf
def test_the_combinators_are_proven_under_both_semantics(tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    (tmp_path / "original.py").write_text(COMBINED_TF1)
    (tmp_path / "migrated.py").write_text(rewritten_program(COMBINED_TF1))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    pairs = [(m["original"], m["migrated"]) for m in result.mapping if m["matched_by"] == "rnn cell layout"]
    assert len(pairs) == 3 * 6
    assert pairs[0][0].startswith("bidirectional_rnn/fw/") and pairs[3][0].startswith("bidirectional_rnn/bw/")
