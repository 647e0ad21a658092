"""Every row of rules/layers.toml is backed by a verification.

Each row carries an example call. A small TF1 model is generated around it
(the layer, then flatten and a dense output when needed, a squared loss,
gradient descent), rewritten by the real rewrite and proven EQUIVALENT by the
verifier. The fast tests check the table and what the rewrite writes; the
`tf` tests run both programs.
"""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, code_matches
from tf1gradfix.emit import helpers as helper_classes
from tf1gradfix.constructs.layers import layer_table
from tf1gradfix.emit.restructure import restructure

PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
shape = {shape}
xs = rng.randn({steps}, 5, *shape[1:]).astype(np.float32)
ys = rng.randn({steps}, 5, 1).astype(np.float32)

x = tf.placeholder(tf.float32, {shape})
y = tf.placeholder(tf.float32, [None, 1])
training = tf.placeholder(tf.bool, [])
h = tf.layers.{name}(x{example})
{flatten}prediction = tf.layers.dense(h, 1, name="out")
loss = tf.reduce_mean(tf.square(prediction - y))
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range({steps}):
        _, value = sess.run([train_op, loss], feed_dict={{x: xs[step], y: ys[step], training: True}})
        print("step", step, "loss %.6f" % value)
    print("prediction", sess.run(prediction, {{x: xs[0], training: False}}).ravel())
"""
STEPS = 6
ROWS = [(symbol, row) for symbol, row in layer_table().items() if symbol.startswith("tensorflow.layers.")]   # contrib rows: test_contrib_table.py
IDS = [symbol.rsplit(".", 1)[1] for symbol, _ in ROWS]


def program(symbol: str, row: dict) -> str:
    rank = len(ast.literal_eval(row["input"].replace("None", "0")))
    name = symbol.rsplit(".", 1)[1]
    flatten = "h = tf.layers.flatten(h)\n" if rank > 2 and name != "flatten" else ""
    example = f", {row['example']}" if row["example"] else ""
    return PROGRAM.format(shape=row["input"], steps=STEPS, name=name, example=example, flatten=flatten)


def rewritten(source: str) -> str | None:
    module = restructure(cst.parse_module(source), "original.py").new_module
    return None if module is None else module.code


# -- the table itself (no TensorFlow) ---------------------------------------------

@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_row_is_complete(symbol, row):
    params = row["params"]
    assert symbol.startswith("tensorflow.layers.") and row["target"].startswith("keras.layers.")
    assert params[0] == "inputs" and 0 <= row["positional"] <= len(params) - 1
    assert set(row["keep"]) <= set(params) and set(row["initializers"]) <= set(row["keep"])
    assert set(row.get("rename", {})) <= set(row["keep"])
    assert row["auto_name"].isidentifier() and row["weights"] == bool(row["initializers"])
    assert row.get("helper") is None or row["helper"] in helper_classes.table() and row.get("ranks")
    assert not row.get("ranks") or row.get("helper")   # (another rank: the helper computes as TF1 did)


@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_the_layer_is_created_once_and_called_in_the_step(symbol, row):
    migrated = rewritten(program(symbol, row))
    assert migrated is not None
    created = [ln for ln in migrated.splitlines() if f"= tf.{row['target']}(" in ln and not ln.startswith("out = ")]
    assert len(created) == 1 and not created[0].startswith(" "), created   # where the graph was built
    layer = created[0].split(" = ")[0]
    call = f"h = {layer}(x, training=training)" if "training" in row.get("call", ()) else f"h = {layer}(x)"
    assert call in migrated and "tf.layers" not in migrated
    if row["weights"]:
        assert f"*{layer}.trainable_variables" in migrated


def test_settings_keep_their_place_and_initializers_are_mapped():
    """...and a constructor longer than 100 characters gets one setting per line."""
    symbol = "tensorflow.layers.dense"
    migrated = rewritten(program(symbol, layer_table()[symbol]))
    assert 'hidden = tf.keras.layers.Dense(\n    4,\n    activation=tf.nn.tanh,\n    kernel_initializer=' \
           'tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.5),\n    name="hidden",\n)\n' in migrated
    assert 'out = tf.keras.layers.Dense(1, name="out")' in migrated


def test_unnamed_layers_take_tf1s_names():
    source = program("tensorflow.layers.dense", layer_table()["tensorflow.layers.dense"]) \
        .replace(', name="hidden"', "").replace(', name="out"', "")
    migrated = rewritten(source)
    assert "dense = tf.keras.layers.Dense(\n    4,\n" in migrated and "dense_1 = tf.keras.layers.Dense(1)" in migrated
    assert "h = dense(x)" in migrated and "prediction = dense_1(h)" in migrated


def test_a_layer_name_taken_by_the_program_gets_another_variable():
    source = program("tensorflow.layers.dense", layer_table()["tensorflow.layers.dense"]) \
        .replace('name="out"', 'name="prediction"')
    migrated = rewritten(source)
    assert 'prediction_layer = tf.keras.layers.Dense(1, name="prediction")' in migrated
    assert "prediction = prediction_layer(h)" in migrated


@pytest.mark.parametrize("setting, why", [
    ("kernel_regularizer=tf.nn.l2_loss", "kernel_regularizer"),
    ("reuse=True", "reuse="),
    ("trainable=flag", "trainable="),
    ("kernel_initializer=init", "not an initializer call"),
])
def test_settings_without_a_one_to_one_rewrite_are_refused(setting, why):
    source = program("tensorflow.layers.dense", layer_table()["tensorflow.layers.dense"]) \
        .replace('name="out")', f'name="out", {setting})').replace("x = tf.placeholder", "flag = init = None\nx = tf.placeholder")
    result = restructure(cst.parse_module(source), "original.py")
    assert result.new_module is None
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in result.diagnostics), result.diagnostics


def test_layers_that_are_not_in_the_table_stay_refused():
    source = program("tensorflow.layers.dense", layer_table()["tensorflow.layers.dense"]) \
        .replace("prediction = tf.layers.dense(h, 1", "h = tf.layers.separable_conv1d(h, 2, 1)\nprediction = tf.layers.dense(h, 1")
    result = process_source("original.py", source.encode(), CodeFilter())
    assert result.new_source is None
    assert any(f.code == "TFG921" and "tf.layers.separable_conv1d" in f.message for f in result.findings)


@pytest.mark.parametrize("symbol, row", ROWS[:1], ids=IDS[:1])
def test_the_engine_writes_the_rewrite_and_marks_the_layers_fixed(symbol, row):
    source = program(symbol, row)
    result = process_source("original.py", source.encode(), CodeFilter())
    assert result.new_source is not None and result.new_source.decode() == rewritten(source)
    layers = [f for f in result.findings if f.code == "TFG305"]
    assert len(layers) == 2 and all(f.fixed for f in result.findings)
    again = process_source("original.py", result.new_source, CodeFilter())
    assert again.findings == [] and again.new_source is None


# -- verification (TensorFlow in subprocesses) -------------------------------------

@pytest.mark.tf
@pytest.mark.parametrize("symbol, row", ROWS, ids=IDS)
def test_row_is_backed_by_the_verifier(symbol, row, tmp_path):
    import tensorflow as tf

    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    assert hasattr(tf.keras.layers, row["target"].rsplit(".", 1)[1])
    original = program(symbol, row)
    migrated = rewritten(original)
    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(migrated)
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)


BATCH_NORM = "tensorflow.layers.batch_normalization"


def test_a_mode_flag_becomes_the_literal_of_each_function():
    migrated = rewritten(program(BATCH_NORM, layer_table()[BATCH_NORM]))
    assert "batch_normalization = tf.keras.layers.BatchNormalization(momentum=0.9)" in migrated
    train = migrated.split("def train_step(")[1].split("\ndef ")[0]
    evaluate = migrated.split("def compute_prediction(")[1].split("\ndef ")[0]
    assert "    training = True\n" in train and "    training = False\n" in evaluate
    assert "control_dependencies" not in migrated and "UPDATE_OPS" not in migrated
    assert "compute_prediction(xs[0])" in migrated   # the flag is no argument


def test_an_input_of_unknown_rank_becomes_the_class_with_tf1s_fused_moving_variance():
    """TF1 fuses 4-D batch normalization (Bessel's correction in the moving variance);
    the helper class decides on each call as TF1 did, and is defined once after the imports."""
    source = program(BATCH_NORM, layer_table()[BATCH_NORM]).replace(
        "h = tf.layers.batch_normalization(x,", "h = tf.layers.batch_normalization(tf.reshape(x, [-1, 2, 3, 1]),")
    migrated = rewritten(source)
    assert migrated.count("class FusedBatchNormalization(tf.keras.layers.BatchNormalization):") == 1
    assert "batch_normalization = FusedBatchNormalization(momentum=0.9)" in migrated
    assert migrated.index("import tensorflow as tf") < migrated.index("class FusedBatch") < migrated.index("rng = ")
    kept = rewritten(source.replace("momentum=0.9,", "momentum=0.9, fused=False,"))
    assert "FusedBatchNormalization" not in kept   # (TF1's unfused numbers are Keras's)


@pytest.mark.parametrize("change, why", [
    (("with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):\n    train_op", "train_op"),
     "does not run a train op under"),
    (("xs[0], training: False}", "xs[0], training: step > 3}"), "other than True or False"),
    (("training = tf.placeholder(tf.bool, [])", "training = tf.placeholder(tf.float32, [])"), "bool placeholder"),
])
def test_batch_normalization_the_rewrite_cannot_keep_exact_is_refused(change, why):
    source = program(BATCH_NORM, layer_table()[BATCH_NORM]).replace(*change)
    assert change[1] in source
    result = restructure(cst.parse_module(source), "original.py")
    assert result.new_module is None
    assert any(why in d[3] for d in result.diagnostics), result.diagnostics


def test_a_loop_checks_its_layers_settings_like_a_single_call():
    """One settings check serves both: a loop's layer with a refused argument is refused, and
    its `training=` is passed where the loop in the step functions calls it."""
    loop = ("h = x\nfor width in [4, 3]:\n    h = tf.layers.dense(h, width, {setting})\n"
            "prediction = tf.layers.dense(h, 1")
    base = program("tensorflow.layers.dense", layer_table()["tensorflow.layers.dense"])
    for setting, why in [("kernel_regularizer=tf.nn.l2_loss", "kernel_regularizer"), ("reuse=True", "reuse="),
                         ("trainable=1", "trainable=")]:
        source = base.replace("prediction = tf.layers.dense(h, 1", loop.format(setting=setting))
        result = restructure(cst.parse_module(source), "original.py")
        assert result.new_module is None and any(why in d[3] for d in result.diagnostics), (setting, result.diagnostics)
    source = program("tensorflow.layers.dropout", layer_table()["tensorflow.layers.dropout"]).replace(
        "h = tf.layers.dropout(x, rate=0.0, training=training)",
        "h = x\nfor rate in [0.0]:\n    h = tf.layers.dropout(h, rate=rate, training=training)")
    migrated = rewritten(source)
    assert "    dropout_layers.append(tf.keras.layers.Dropout(rate=rate))\n" in migrated
    assert "        h = dropout(h, training=training)\n" in migrated
    assert "    training = True\n" in migrated.split("def train_step(")[1]
