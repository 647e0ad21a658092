"""Every rewritable row of rules/contrib.toml is backed by a proof.

The initializer rows carry argument lists (`cases`), the layer rows an example
call; one small TF1 program holds a float32 and a float64 variable per case, a
call of each contrib layer (fully_connected with its ReLU default, with another
activation and a scope, without one; conv2d), a contrib `flatten` and contrib's
global step. It is rewritten by the real rewrite and proven EQUIVALENT by the
verifier in one run. TF 2.21 has no tf.contrib, so the TF1 side runs under the
verifier's reference model of contrib (tf1gradfix/verify/contrib_v1.py). The
verifier copies initial values by name, so a second test checks the draws
themselves: the Keras initializer written for each case against contrib's formula.
`batch_norm` is proven on programs of its own (BN_PROGRAMS: input ranks, training
by default, by a literal and by a fed flag, updates in place, a builder), and
the verifier's model of it against TF 1.15's formulas worked by hand.
`optimize_loss` is proven on the cases of its table (every name the rewrite
accepts, a class, an instance, a lambda; float, scheduled and fed rates; clipped;
dense gradients and an embedding's sparse ones; float64), the verifier's model
of it against what TF 1.15's code does (its variable, summaries, result).
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.cst import layout

from tf1gradfix.detect.api_surface import missing_in_source
from tf1gradfix.emit.restructure import restructure
from tf1gradfix.rules import contrib
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, code_matches

SYMBOLS = contrib.table()["symbol"]
ROOT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite"
CASES = [(symbol, case) for symbol, row in SYMBOLS.items() if row.get("rewrite") == "initializer"
         for case in row["cases"]]
SHAPE = [6, 1]

PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
xs = rng.randn(4, 5, 2, 3).astype(np.float32)
images = rng.randn(4, 5, 6, 6, 2).astype(np.float32)
ys = rng.randn(4, 5, 1).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 2, 3])
image = tf.placeholder(tf.float32, [None, 6, 6, 2])
y = tf.placeholder(tf.float32, [None, 1])
global_step = tf.contrib.framework.get_or_create_global_step()
h = tf.contrib.layers.flatten(x)
{variables}
{layers}
head = tf.contrib.layers.fully_connected(l0, 3, activation_fn=tf.nn.tanh, biases_initializer=None, scope="head")
out = tf.contrib.layers.fully_connected(head, 1, activation_fn=None, biases_initializer=tf.zeros_initializer())
prediction = {prediction}
loss = tf.reduce_mean(tf.square(prediction - y))
step = tf.contrib.framework.get_global_step()
train_op = tf.train.GradientDescentOptimizer(0.02).minimize(loss, global_step=step)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        _, value = sess.run([train_op, loss], feed_dict={{x: xs[i], image: images[i], y: ys[i]}})
        print("step", i, "loss %.6f" % value)
    print("global step", sess.run(step))
"""
# the layer rows (contrib.toml) but flatten, each called with its example on an input of its rank
INPUTS = {"[None, 6]": "h", "[None, 6, 6, 2]": "image"}
LAYERS = [(symbol, row) for symbol, row in contrib.layer_rows().items() if row["input"] in INPUTS]


def call(symbol: str, case: str) -> str:
    return f"tf.{symbol.split('.', 1)[1]}({case})"


def program() -> str:
    """A variable per initializer case in float32 (`w`) and float64 (`d`), a call of each contrib layer."""
    variables = [f'w{i} = tf.get_variable("w{i}", {SHAPE}, initializer={call(*c)})' for i, c in enumerate(CASES)]
    variables += [f'd{i} = tf.get_variable("d{i}", {SHAPE}, dtype=tf.float64, initializer={call(*c)})'
                  for i, c in enumerate(CASES)]
    layers = [f"l{i} = tf.{symbol.split('.', 1)[1]}({INPUTS[row['input']]}, {row['example']})"
              for i, (symbol, row) in enumerate(LAYERS)]
    terms = [f"tf.matmul(h, w{i})" for i in range(len(CASES))]
    terms += [f"tf.cast(tf.matmul(tf.cast(h, tf.float64), d{i}), tf.float32)" for i in range(len(CASES))]
    terms += [f"tf.reshape(tf.reduce_mean(l{i}, {list(range(1, row['input'].count(',') + 1))}), [-1, 1])"
              for i, (_, row) in enumerate(LAYERS) if i] + ["out"]
    return PROGRAM.format(variables="\n".join(variables), layers="\n".join(layers), prediction=" + ".join(terms))


def contrib_read(source: str) -> list[str]:
    """The `contrib` names the code reads (a docstring may name what a class stands for)."""
    return [ast.unparse(n) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and n.attr == "contrib" or isinstance(n, ast.Name) and n.id == "contrib"]


def rewritten(source: str) -> str | None:
    module = restructure(cst.parse_module(source), "original.py").new_module
    return None if module is None else module.code


def refusals(source: str) -> list:
    result = restructure(cst.parse_module(source), "original.py")
    assert result.new_module is None
    return result.diagnostics


def initializer_lines(migrated: str) -> list[str]:
    """The initializer each case's variable got, as written."""
    statements = [cst.Module([]).code_for_node(st).strip() for st in cst.parse_module(migrated).body]
    lines = [layout.one_line(st) for st in statements if st.startswith("w") and "tf.Variable(" in st]
    return [ln.split("tf.Variable(", 1)[1].rsplit(f"({SHAPE})", 1)[0] for ln in lines]


# -- the table and what the rewrite writes (no TensorFlow) -------------------------

def test_rows_are_complete():
    for symbol, row in SYMBOLS.items():
        assert symbol.startswith("tensorflow.contrib.") and row["status"] in ("exact", "exact_mapped", "manual")
        assert row["tf2"] and row.get("rewrite") in (None, "initializer", "layer", "global_step", "optimize_loss")
        if row.get("rewrite") == "initializer":
            assert row["cases"] and set(row["defaults"]) | set(row["fixed"]) | {"seed", "dtype"} >= set(row["params"])
    for symbol, row in contrib.layer_rows().items():
        assert SYMBOLS[symbol]["rewrite"] == "layer" and (not row["weights"] or row["input"] in INPUTS)
        passed = set(row["keep"]) | set(row.get("call", ()))   # (at the layer's construction, or its call)
        assert set(row.get("rename", {})) <= passed and set(row.get("defaults", {})) <= set(row["keep"])
        assert set(row.get("call_defaults", {})) <= set(row.get("call", ())) and set(row.get("spread", {})) <= passed


def test_a_row_is_rewritten_exactly_when_its_status_says_so():
    for symbol, row in SYMBOLS.items():
        assert (row["status"] != "manual") == ("rewrite" in row), symbol


def test_the_program_is_rewritten_with_keras_forms_tf2_has():
    migrated = rewritten(program())
    assert migrated is not None
    assert not contrib_read(migrated) and missing_in_source(migrated) == []
    assert "flatten = tf.keras.layers.Flatten()" in migrated and "h = flatten(x)" in migrated
    assert len(initializer_lines(migrated)) == len(CASES)


def test_mode_names_and_uniform_become_keras_settings():
    written = dict(zip((f"{s.rsplit('.', 1)[1]}({c})" for s, c in CASES), initializer_lines(rewritten(program()))))
    normal = "1.3 * 0.87962566103423978**2"
    assert written["xavier_initializer()"] == "tf.keras.initializers.GlorotUniform()"
    assert written["xavier_initializer(uniform=True, seed=1)"] == "tf.keras.initializers.GlorotUniform(seed=1)"
    assert written["xavier_initializer(False, 3)"] == \
        f'tf.keras.initializers.VarianceScaling(scale={normal}, mode="fan_avg", distribution="truncated_normal", seed=3)'
    assert written["variance_scaling_initializer()"] == \
        f'tf.keras.initializers.VarianceScaling(scale=2.0 * {normal}, mode="fan_in", distribution="truncated_normal")'
    assert written['variance_scaling_initializer(2.0, "FAN_OUT", False, 7)'] == \
        f'tf.keras.initializers.VarianceScaling(scale=2.0 * {normal}, mode="fan_out", distribution="truncated_normal", seed=7)'
    assert written["variance_scaling_initializer(uniform=True)"] == "tf.keras.initializers.HeUniform()"


@pytest.mark.parametrize("case, why", [
    ("mode=m", "mode=m"),
    ("factor=f, mode=m", "mode=m"),
    ('mode="fan_in"', "mode=\"fan_in\""),
    ("uniform=flag", "uniform=flag"),
    ("uniform=1", "uniform=1"),
    ("partition=None", "partition"),
])
def test_argument_forms_outside_the_table_are_refused(case, why):
    source = program().replace("w0 = tf.get_variable(\"w0\", [6, 1], initializer=tf.contrib.layers.xavier_initializer()",
                               f"m = flag = 1\nw0 = tf.get_variable(\"w0\", [6, 1], initializer="
                               f"tf.contrib.layers.variance_scaling_initializer({case})")
    assert f"variance_scaling_initializer({case})" in source
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in refusals(source))


def test_a_layer_initializer_from_contrib_is_mapped_like_get_variables():
    source = program().replace("h = tf.contrib.layers.flatten(x)", "h = tf.layers.dense(tf.contrib.layers.flatten(x), 6, "
                               "kernel_initializer=tf.contrib.layers.xavier_initializer(uniform=False, seed=5))")
    migrated = rewritten(source.replace("h = tf.layers.dense(tf.contrib.layers.flatten(x)", "f = tf.contrib.layers.flatten(x)\nh = tf.layers.dense(f"))
    joined = "".join(migrated.split()).replace(",)", ")")   # (the layout aside)
    assert 'kernel_initializer=tf.keras.initializers.VarianceScaling(scale=1.3*0.87962566103423978**2,mode="fan_avg",' \
           'distribution="truncated_normal",seed=5)' in joined
    assert missing_in_source(migrated) == []


def layer_lines(migrated: str) -> dict[str, str]:
    """The Keras layer each contrib layer became, by the variable holding it (one line each)."""
    statements = [layout.one_line(cst.Module([]).code_for_node(st).strip()) for st in cst.parse_module(migrated).body]
    return dict(st.split(" = ", 1) for st in statements if " = tf.keras.layers." in st)


def test_contrib_layers_become_keras_layers_with_contribs_defaults_and_names():
    """ReLU, SAME padding and a stride of 2 where contrib's defaults apply, the arguments renamed, and
    TF1's scope name written: `scope=` or `fully_connected`, `fully_connected_1`
    (a layer given a scope does not count)."""
    written = {k: "".join(v.split()).replace(",)", ")") for k, v in layer_lines(rewritten(program())).items()}
    assert written["fully_connected"].startswith("tf.keras.layers.Dense(4,activation=tf.nn.relu,kernel_initializer=")
    assert written["fully_connected"].endswith('seed=3),name="fully_connected")')
    assert written["conv"] == 'tf.keras.layers.Conv2D(3,[3,2],strides=2,padding="SAME",activation=tf.nn.relu,' \
                              'kernel_initializer=tf.keras.initializers.GlorotUniform(seed=4),name="Conv")'
    assert written["maxpool2d"] == "tf.keras.layers.MaxPooling2D(3,strides=2)"   # (Keras's stride: the window)
    assert written["avgpool2d"] == "tf.keras.layers.AveragePooling2D([2,2],strides=2,padding='SAME')"
    assert written["head_layer"] == 'tf.keras.layers.Dense(3,activation=tf.nn.tanh,use_bias=False,name="head")'
    assert written["fully_connected_1"] == 'tf.keras.layers.Dense(1,activation=None,' \
                                           'bias_initializer=tf.keras.initializers.Zeros(),name="fully_connected_1")'


def test_the_dtype_an_initializer_names_is_not_the_variables():
    """get_variable calls its initializer with its own dtype (float32 when it names none)."""
    migrated = "".join(rewritten(program()).split())
    assert 'w4=tf.Variable(tf.keras.initializers.GlorotUniform(seed=5)([6,1]),name="w4")' in migrated
    assert 'd4=tf.Variable(tf.keras.initializers.GlorotUniform(seed=5)([6,1],dtype=tf.float64),name="d4")' in migrated


@pytest.mark.parametrize("setting, why", [
    ("weights_regularizer=tf.contrib.layers.l2_regularizer(0.1)", "weights_regularizer"),
    ("normalizer_fn=tf.contrib.layers.batch_norm", "normalizer_fn="),
    ("biases_initializer=init", "not an initializer call"),
    ("reuse=True", "reuse="),
    ("normalizer_params={}", "normalizer_params="),
    ("outputs_collections=['out']", "outputs_collections="),
])
def test_fully_connected_settings_keras_lacks_are_refused(setting, why):
    source = program().replace("biases_initializer=tf.zeros_initializer()", setting) \
        .replace("x = tf.placeholder", "init = None\nx = tf.placeholder")
    assert setting in source
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in refusals(source))


def test_conv2d_data_formats_but_the_default_are_refused():
    source = program().replace("stride=2,", 'stride=2, data_format="NCHW",')
    assert any(code_matches(d[2], ("TFG905",)) and "data_format=" in d[3] for d in refusals(source))
    assert rewritten(program().replace("stride=2,", 'stride=2, data_format="NHWC",')) == rewritten(program())


def test_the_verifier_pairs_contribs_weights_with_keras_kernels():
    from tf1gradfix.verify.runner_v2 import V2Tracer
    tracer = V2Tracer.__new__(V2Tracer)
    tracer.taken, tracer.layer_pairs = set(), {}
    init = {"fully_connected/weights": {}, "fully_connected/biases": {}, "w": {}}
    assert tracer.match("fully_connected/kernel", [], init) == ("fully_connected/weights", "name")
    assert tracer.match("net/fully_connected/bias", [], init) == ("fully_connected/biases", "scope")
    assert tracer.match("fully_connected/gamma", [], init) == (None, None)
    assert tracer.match("w", [], init) == ("w", "name")
    # Keras's own names (layers made in a loop): paired in creation order, weights with kernel
    tracer.taken, tracer.layer_pairs = set(), {}
    init = {"fully_connected/weights": {"value": {"shape": [3, 8]}}, "fully_connected/biases": {"value": {"shape": [8]}}}
    assert tracer.match("dense/kernel", [3, 8], init) == ("fully_connected/weights", "layer order")
    assert tracer.match("dense/bias", [8], init) == ("fully_connected/biases", "layer order")


def test_contrib_layers_made_in_a_loop_keep_kerass_names():
    """TF1 numbers them in creation order, which a loop hides: no name is written for any of them."""
    source = program().replace("head = tf.contrib.layers.fully_connected(l0, 3,",
                               "for size in [5, 4]:\n    l0 = tf.contrib.layers.fully_connected(l0, size)\n"
                               "head = tf.contrib.layers.fully_connected(l0, 3,")
    migrated = rewritten(source)
    assert "for size in [5, 4]:" in migrated and 'name="fully_connected' not in migrated
    assert 'name="head"' in migrated and 'name="Conv"' in migrated


@pytest.mark.parametrize("setting, why", [('scope="flat"', "scope"), ("outputs_collections=['out']", "outputs_collections=")])
def test_flatten_settings_keras_lacks_are_refused(setting, why):
    source = program().replace("tf.contrib.layers.flatten(x)", f"tf.contrib.layers.flatten(x, {setting})")
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in refusals(source))


@pytest.mark.parametrize("call", ["tf.contrib.layers.layer_norm(tf.reshape(x, [-1, 6]))",
                                  "tf.contrib.layers.bias_add(tf.reshape(x, [-1, 6]))"])
def test_contrib_calls_not_in_the_table_stay_refused_with_the_line(call):
    source = program().replace("h = tf.contrib.layers.flatten(x)", f"h = {call}")
    line = source.splitlines().index(f"h = {call}") + 1
    assert any(d[0] == line for d in refusals(source))


def test_check_names_the_replacement_of_listed_symbols():
    source = ("import tensorflow as tf\ninit = tf.contrib.layers.variance_scaling_initializer()\n"
              "cell = tf.contrib.rnn.LSTMCell(4)\nop = tf.contrib.graph_editor.reroute_ts\n")
    found = [f for f in process_source("a.py", source.encode(), CodeFilter()).findings if f.code == "TFG901"]
    assert [f.line for f in found] == [2, 3, 4]
    assert "tf.keras.initializers.VarianceScaling(scale=factor" in found[0].message
    assert "tf.keras.layers.LSTMCell" in found[1].message
    assert found[2].message.endswith("port this by hand (most pieces moved to Keras, TF Addons or core)")


def test_the_engine_writes_the_rewrite_and_marks_the_contrib_uses_fixed():
    result = process_source("original.py", program().encode(), CodeFilter())
    assert result.new_source is not None and result.new_source.decode() == rewritten(program())
    contrib_uses = [f for f in result.findings if f.code == "TFG901"]
    assert len(contrib_uses) == program().count("tf.contrib.") > 2 * len(CASES) and all(f.fixed for f in result.findings)
    again = process_source("original.py", result.new_source, CodeFilter())
    assert again.findings == [] and again.new_source is None


# -- batch_norm ------------------------------------------------------------------
# Programs the batch_norm row is proven on (test_batch_norm_programs_are_proven): 2-D, 3-D and 4-D
# float32 inputs, in training by contrib's default and by a literal, with and without gamma, an
# activation, UPDATE_OPS or updates_collections=None; a fed flag switching training and inference
# runs, on inputs whose variance is below the fused kernel's least epsilon; a builder function.
BN_SCRIPT = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(2)
images = tf.placeholder(tf.float32, [None, 5, 5, 2])
targets = tf.placeholder(tf.float32, [None, 1])
maps = tf.layers.conv2d(images, 3, 3, use_bias=False, kernel_initializer=tf.glorot_uniform_initializer(seed=1))
maps = tf.contrib.layers.batch_norm(maps, activation_fn=tf.nn.relu)
rows = tf.contrib.layers.batch_norm(tf.reshape(maps, [-1, 3, 9]), 0.8, False, True, scope="rows")
hidden = tf.layers.dense(tf.reshape(rows, [-1, 27]), 6, use_bias=False,
                         kernel_initializer=tf.glorot_uniform_initializer(seed=2))
hidden = tf.contrib.layers.batch_norm(hidden, decay=0.9, scale=True, is_training=True, scope="hidden_norm")
out = tf.layers.dense(hidden, 1, kernel_initializer=tf.glorot_uniform_initializer(seed=3))
loss = tf.reduce_mean(tf.square(out - targets))
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        batch = rng.randn(6, 5, 5, 2).astype(np.float32)
        value, _ = sess.run([loss, train_op], {images: batch, targets: batch[:, :1, 0, 0] * 2.0})
        print("step", step, "loss %.6f" % value)
"""
IN_PLACE = [("activation_fn=tf.nn.relu)", "activation_fn=tf.nn.relu, updates_collections=None)"),
            ('scope="rows")', 'scope="rows", updates_collections=None)'),
            ('scope="hidden_norm")', 'scope="hidden_norm", updates_collections=None)'),
            ("with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):\n    ", "")]
BN_FLAG = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(4)
images = tf.placeholder(tf.float32, [None, 4, 4, 1])
targets = tf.placeholder(tf.float32, [None, 1])
training = tf.placeholder(tf.bool, name="training")
maps = tf.layers.conv2d(images, 2, 2, use_bias=False, kernel_initializer=tf.glorot_uniform_initializer(seed=5))
maps = tf.contrib.layers.batch_norm(maps, decay=0.7, epsilon=1e-6, scale=True, is_training=training)
flat = tf.nn.relu(tf.reshape(maps, [-1, 18]))
hidden = tf.contrib.layers.batch_norm(flat, 0.5, is_training=training, activation_fn=tf.nn.tanh)
out = tf.layers.dense(hidden, 1, kernel_initializer=tf.glorot_uniform_initializer(seed=6))
loss = tf.reduce_mean(tf.square(out - targets))
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

held_out = (0.003 * rng.randn(5, 4, 4, 1)).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        batch = (0.003 * rng.randn(8, 4, 4, 1)).astype(np.float32)   # a variance below epsilon's floor
        value, _ = sess.run([loss, train_op], {images: batch, targets: batch[:, 0, :, 0].sum(1, keepdims=True) * 100,
                                               training: True})
        if step % 2 == 1:
            print("step", step, "loss %.6f" % value, "held out", sess.run(out, {images: held_out, training: False}).ravel())
"""
BN_BUILDER = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(6)


def encoder(images, is_training, reuse=False):
    with tf.variable_scope("encoder", reuse=reuse):
        maps = tf.layers.conv2d(images, 3, 2, use_bias=False, kernel_initializer=tf.glorot_uniform_initializer(seed=7))
        maps = tf.contrib.layers.batch_norm(maps, decay=0.9, is_training=is_training, scope="conv_norm",
                                            activation_fn=tf.nn.relu)
        codes = tf.layers.dense(tf.reshape(maps, [-1, 12]), 4, use_bias=False,
                                kernel_initializer=tf.glorot_uniform_initializer(seed=8))
        codes = tf.contrib.layers.batch_norm(codes, 0.8, scale=True, is_training=is_training)
        return tf.layers.dense(codes, 1, kernel_initializer=tf.glorot_uniform_initializer(seed=9))


images = tf.placeholder(tf.float32, [None, 3, 3, 2])
targets = tf.placeholder(tf.float32, [None, 1])
scores = encoder(images, True)
loss = tf.reduce_mean(tf.square(scores - targets))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
judged = encoder(images, False, reuse=True)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        batch = rng.randn(10, 3, 3, 2).astype(np.float32)
        value, _ = sess.run([loss, train_op], {images: batch, targets: batch[:, :1, 0, 0]})
        print("step", step, "loss %.6f" % value, "judged", sess.run(judged, {images: batch[:3]}).ravel())
"""


def replaced(source: str, pairs) -> str:
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


BN_PROGRAMS = {"script": BN_SCRIPT, "in_place": replaced(BN_SCRIPT, IN_PLACE), "flag": BN_FLAG, "builder": BN_BUILDER}


def test_batch_norm_becomes_the_class_with_contribs_defaults_and_training():
    """decay 0.999 and no gamma written out, `is_training` the call's `training` (True where contrib's
    default applies, the fed flag's literal in each step), TF1's scope names, the activation passed on."""
    script = rewritten(BN_SCRIPT)
    lines = [layout.one_line(cst.Module([]).code_for_node(st).strip()) for st in cst.parse_module(script).body]
    assert "class BatchNorm(tf.keras.layers.BatchNormalization):" in script and not contrib_read(script)
    assert 'batchnorm = BatchNorm(momentum=0.999, scale=False, activation=tf.nn.relu, name="BatchNorm")' in lines
    assert 'rows_layer = BatchNorm(momentum=0.8, center=False, scale=True, name="rows")' in lines
    assert "maps = batchnorm(maps, training=True)" in script and "hidden = hidden_norm(hidden, training=True)" in script
    flag = rewritten(BN_FLAG)
    assert 'BatchNorm(momentum=0.7, epsilon=1e-6, scale=True, name="BatchNorm")' in flag
    assert "training = True" in flag and "training = False" in flag
    in_place = rewritten(BN_PROGRAMS["in_place"])
    assert "updates_collections" not in in_place and "UPDATE_OPS" not in BN_PROGRAMS["in_place"]


def test_batch_norm_in_training_without_its_updates_is_refused():
    """contrib trains by default: a run computing it without a train op under UPDATE_OPS is refused
    (TF1 left the moving statistics), unless updates_collections=None updated them in place."""
    untied = BN_SCRIPT.replace("with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):\n    ", "")
    assert any(code_matches(d[2], ("TFG912",)) for d in refusals(untied))
    assert rewritten(BN_PROGRAMS["in_place"]) is not None


@pytest.mark.parametrize("setting, why", [
    ("renorm=True", "renorm"),
    ("batch_weights=weights", "batch_weights"),
    ("zero_debias_moving_mean=True", "zero_debias_moving_mean="),
    ('data_format="NCHW"', "data_format="),
    ("param_regularizers={'beta': tf.contrib.layers.l2_regularizer(0.1)}", "param_regularizers="),
    ("updates_collections=['norm_updates']", "updates_collections="),
    ("variables_collections=['norm_vars']", "variables_collections="),
    ("renorm_decay=0.9", "renorm_decay"),
    ("reuse=True", "reuse="),
    ("reuse=tf.AUTO_REUSE", "reuse="),
    ("param_initializers=initializers", "param_initializers="),
    ("param_initializers={'delta': tf.zeros_initializer()}", "param_initializers="),
    ("param_initializers={'beta': 0.5}", "not an initializer call"),
    ("is_training=weights", "`is_training=` that is neither"),
    ('scope="block/norm"', "cannot hold `/`"),
])
def test_batch_norm_settings_keras_lacks_are_refused(setting, why):
    source = BN_SCRIPT.replace("activation_fn=tf.nn.relu)", f"activation_fn=tf.nn.relu, {setting})") \
        .replace("rng = np", "weights = tf.ones([6])\ninitializers = {}\nrng = np")
    assert setting in source
    assert any(code_matches(d[2], ("TFG905",)) and why in d[3] for d in refusals(source))


def test_batch_norm_on_float64_is_refused():
    """Keras 3 computes in float32; TF1 normalized float64 in float64 (unfused)."""
    source = BN_FLAG.replace("images = tf.placeholder(tf.float32", "images = tf.placeholder(tf.float64")
    assert any(code_matches(d[2], ("TFG914",)) and "`tf.float64` input" in d[3] for d in refusals(source))


# -- the proofs (TensorFlow in subprocesses) ---------------------------------------

@pytest.mark.tf
def test_rows_are_backed_by_the_verifier(tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    original = program()
    migrated = rewritten(original)
    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(migrated)
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    # contrib's weights/biases gave the Keras kernel/bias their values: by name, not by luck of order
    mapped = {m["original"]: (m["migrated"], m["matched_by"]) for m in result.mapping}
    assert mapped["fully_connected/weights"] == ("fully_connected/kernel", "name")
    assert mapped["head/weights"] == ("head/kernel", "name") and "head/biases" not in mapped
    assert mapped["Conv/weights"] == ("Conv/kernel", "name")
    assert mapped["fully_connected_1/biases"] == ("fully_connected_1/bias", "name")
    for leaf in ("beta", "gamma", "moving_mean", "moving_variance"):   # (batch_norm's names are Keras's)
        assert mapped[f"BatchNorm/{leaf}"] == (f"BatchNorm/{leaf}", "name")
    assert not [u for u in result.unmatched if u.get("trainable")]


@pytest.mark.tf
@pytest.mark.parametrize("kind", sorted(BN_PROGRAMS))
def test_batch_norm_programs_are_proven(kind, tmp_path):
    """Every moving statistic compared, paired with the original's by name."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    original = BN_PROGRAMS[kind]
    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(rewritten(original))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    statistics = [m for m in result.mapping if m["original"].endswith(("/moving_mean", "/moving_variance"))]
    assert len(statistics) == 2 * original.count("batch_norm(")
    assert all(m["matched_by"] == "name" and m["original"] == m["migrated"] for m in statistics)


REFERENCE = """\
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
from tf1gradfix.verify import contrib_v1
contrib_v1.install(tf)
out = {}
x = (np.random.RandomState(1).randn(6, 2, 2, 3) * 2 + 0.5).astype(np.float32)
for name, shape, scale, settings in json.loads(os.environ["CASES"]):
    with tf.Graph().as_default():
        fed = tf.placeholder(tf.float32, shape[:1] + [None] * (len(shape) - 2) + shape[-1:])
        y = tf.contrib.layers.batch_norm(fed, **settings)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = sess.run([y] + tf.get_collection(tf.GraphKeys.UPDATE_OPS), {fed: scale * x.reshape(shape)})[0]
            moving = sess.run(["BatchNorm/moving_mean:0", "BatchNorm/moving_variance:0"])
    out[name] = [value.tolist(), [m.tolist() for m in moving]]
print(json.dumps(out))
"""


@pytest.mark.tf
def test_the_verifiers_batch_norm_is_tf1s_formulas():
    """The reference model of contrib (verify/contrib_batch_norm_v1.py) against TF 1.15's formulas by hand: the
    fused kernel on 2-D and 4-D inputs (moving variance towards n/(n-1) times the batch variance,
    epsilon at least 1.001e-5), the unfused code on 3-D ones and with fused=False, forced updates."""
    import numpy as np

    cases = [("2-D", [24, 3], 1.0, {"decay": 0.9}), ("4-D", [6, 2, 2, 3], 1.0, {"decay": 0.9}),
             ("4-D, small epsilon", [6, 2, 2, 3], 1e-3, {"decay": 0.9, "epsilon": 1e-7}),
             ("3-D", [12, 2, 3], 1e-3, {"decay": 0.9, "epsilon": 1e-7}),
             ("unfused", [6, 2, 2, 3], 1.0, {"decay": 0.9, "fused": False}),
             ("in place", [6, 2, 2, 3], 1.0, {"decay": 0.9, "updates_collections": None})]
    run = subprocess.run([sys.executable, "-c", REFERENCE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CASES": json.dumps(cases)})
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for name, _, scale, settings in cases:   # (a variance of 4e-6 where the epsilon's floor shows)
        x = scale * (np.random.RandomState(1).randn(6, 2, 2, 3) * 2 + 0.5).astype(np.float32).astype(np.float64)
        x = x.reshape(-1, 3)
        mean, variance, n = x.mean(0), x.var(0), len(x)
        fused = name in ("2-D", "4-D", "4-D, small epsilon", "in place")
        epsilon = max(settings.get("epsilon", 1e-3), 1.001e-5) if fused else settings.get("epsilon", 1e-3)
        output, (moving_mean, moving_variance) = got[name]
        assert np.allclose(np.reshape(output, (-1, 3)), (x - mean) / np.sqrt(variance + epsilon), atol=1e-4), name
        assert np.allclose(moving_mean, 0.1 * mean, atol=1e-6), name
        assert np.allclose(moving_variance, 0.9 + 0.1 * variance * (n / (n - 1) if fused else 1.0), atol=1e-6), name


DRAWS = """\
import json, sys
import numpy as np
import tensorflow as tf
out = []
for text in json.loads(sys.argv[1]):
    w = eval(text)([{n}, {m}]).numpy().astype(np.float64)
    out.append([float(np.abs(w).max()), float(w.std())])
w = tf.keras.initializers.GlorotNormal(seed=0)([{n}, {m}]).numpy()
out.append([float(np.abs(w).max()), float(w.std())])
print(json.dumps(out))
"""
N, M = 400, 300


def contrib_draw(symbol: str, case: str) -> tuple[float, str]:
    """(bound, distribution) of contrib's draw for a [N, M] weight, from the TF 1.15 formula."""
    row = SYMBOLS[symbol]
    args = dict(zip(row["params"], (a.strip() for a in case.split(",") if a.strip() and "=" not in a)))
    args.update(a.strip().split("=") for a in case.split(",") if "=" in a)
    settings = {**row["defaults"], **row["fixed"], **args}
    n = {'"FAN_IN"': N, '"FAN_OUT"': M, '"FAN_AVG"': (N + M) / 2}[settings["mode"]]
    factor = float(settings["factor"])
    if settings["uniform"] == "True":
        return math.sqrt(3 * factor / n), "uniform"
    return 2 * math.sqrt(1.3 * factor / n), "normal"   # truncated at 2 stddev


@pytest.mark.tf
def test_the_keras_draw_is_contribs_draw():
    """Numbers, not names: the largest |w| of 120000 draws sits at contrib's bound
    (the truncation point or the uniform limit) to 0.1%, and the spread is the one
    of that distribution; Keras's GlorotNormal, 0.3% narrower, fails the same test."""
    texts = [t.replace("tf.keras.initializers.", "tf.keras.initializers.", 1)
             for t in initializer_lines(rewritten(program()))]
    run = subprocess.run([sys.executable, "-c", DRAWS.format(n=N, m=M), json.dumps(texts)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    draws = json.loads(run.stdout.strip().splitlines()[-1])
    for (symbol, case), (largest, std) in zip(CASES, draws):
        bound, kind = contrib_draw(symbol, case)
        # std of U(-b, b) is b/sqrt(3); of N(0, s) truncated at 2s it is 0.8796 s
        spread = bound / math.sqrt(3) if kind == "uniform" else bound / 2 * 0.87962566103423978
        assert abs(largest - bound) / bound < 1e-3, (symbol, case, largest, bound)
        assert abs(std - spread) / spread < 1e-2, (symbol, case, std, spread)
    glorot_normal_largest = draws[-1][0]
    assert abs(glorot_normal_largest - 2 * math.sqrt(1.3 / ((N + M) / 2))) / glorot_normal_largest > 2e-3


# -- optimize_loss ----------------------------------------------------------------
OPTIMIZE_LOSS = contrib.table()["optimize_loss"]
OL_PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(3)
ids = rng.randint(0, 6, size=(6, 4, 3))
xs = rng.randn(6, 4, 2).astype(np.float32)
ys = rng.randn(6, 4, 1).astype(np.float32)

tokens = tf.placeholder(tf.int32, [None, 3])
x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
table = tf.Variable(tf.constant(rng.randn(6, 2).astype(np.float32)), name="table")
w = tf.Variable(tf.constant([[0.5], [-0.4]]), name="w")
b = tf.Variable(tf.constant([0.1]), name="b")
features = {features}
loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - y))
step = tf.Variable(0, trainable=False, name="step")
{rate}train_op = tf.contrib.layers.optimize_loss(loss, {args})

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(6):
        value, result = sess.run([loss, train_op], feed_dict={{tokens: ids[i], x: xs[i], y: ys[i]{fed}}})
        print("step", i, "loss %.6f" % value, "result %.6f" % result, "count", sess.run(step))
    print("table", sess.run(table).ravel(), "w", sess.run(w).ravel())
"""
RATES = {"schedule": ("rate = tf.train.exponential_decay(0.05, step, 2, 0.5, staircase=True)\n", ""),
         "fed": ("rate = tf.placeholder(tf.float32, [])\n", ", rate: 0.05 * 0.8 ** i")}


def optimize_loss_program(case: dict) -> str:
    """The case's program: an embedding's sparse gradients (`sparse`) or none (the table is unread)."""
    features = "x + tf.reduce_sum(tf.nn.embedding_lookup(table, tokens), axis=1)" if case.get("sparse") else "x"
    if case.get("normalized"):   # (batch normalization in training: its updates are UPDATE_OPS)
        features = f"tf.layers.batch_normalization({features}, training=True, name='norm')"
    rate, fed = RATES.get(case.get("rate", ""), ("", ""))
    source = OL_PROGRAM.format(features=features, rate=rate, args=case["args"], fed=fed)
    if case.get("dtype") == "float64":
        source = source.replace("float32", "float64").replace("tf.constant([[0.5], [-0.4]])", "tf.constant([[0.5], [-0.4]], tf.float64)") \
            .replace("tf.constant([0.1])", "tf.constant([0.1], tf.float64)")
    return source


OL_CASES = [pytest.param(case, id=case["args"] + (" sparse" if case.get("sparse") else "") +
                         (" normalized" if case.get("normalized") else "") +
                         (f" {case['rate']}" if "rate" in case else "") + (f" {case['dtype']}" if "dtype" in case else ""))
            for case in OPTIMIZE_LOSS["cases"]]


@pytest.mark.parametrize("case", OL_CASES)
def test_optimize_loss_becomes_its_optimizer_and_a_clipped_update(case):
    """The optimizer statement where the call was, the update in the step with the clipping between
    the gradients and apply_gradients, the count after it, the loss returned for the call's result."""
    migrated = rewritten(optimize_loss_program(case))
    assert migrated is not None and not contrib_read(migrated) and missing_in_source(migrated) == []
    flat = " ".join(migrated.split())
    assert "optimizer = tf." in flat and "train_op" not in flat
    assert ("grads, _ = tf.clip_by_global_norm(grads, " in flat) == ("clip_gradients" in case["args"])
    assert ("step.assign_add(1)" in flat) == case["args"].startswith("step,")
    assert "return loss, loss" in flat and "value, result = [t.numpy() for t in train_step(" in flat


def test_optimize_loss_names_become_the_optimizers_of_its_table():
    written = {}
    for name in OPTIMIZE_LOSS["names"]:
        source = optimize_loss_program({"args": f'step, 0.05, "{name}"'})
        migrated = rewritten(source)
        statements = [layout.one_line(cst.Module([]).code_for_node(st).strip()) for st in cst.parse_module(migrated).body]
        written[name] = next(st for st in statements if st.startswith("optimizer = "))
    assert written["SGD"] == "optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)"
    assert written["Adam"] == "optimizer = tf.keras.optimizers.Adam(learning_rate=0.05, epsilon=1e-8)"
    assert written["Momentum"] == "optimizer = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)"
    assert written["Adagrad"] == \
        "optimizer = tf.keras.optimizers.Adagrad(initial_accumulator_value=0.1, epsilon=0.0, learning_rate=0.05)"
    assert written["RMSProp"].startswith("optimizer = tf.compat.v1.train.RMSPropOptimizer(")   # (kept v1: a note)
    assert "learning_rate=0.05" in written["RMSProp"]
    assert written["Ftrl"] == "optimizer = tf.keras.optimizers.Ftrl(learning_rate=0.05)"


def test_a_scheduled_rate_is_the_keras_optimizers_schedule():
    migrated = rewritten(optimize_loss_program(next(c for c in OPTIMIZE_LOSS["cases"] if c.get("rate") == "schedule")))
    assert "learning_rate=tf.keras.optimizers.schedules.ExponentialDecay(" in migrated
    fed = rewritten(optimize_loss_program(next(c for c in OPTIMIZE_LOSS["cases"] if c.get("rate") == "fed")))
    assert "optimizer.learning_rate = rate" in fed


@pytest.mark.parametrize("args, rate, sparse, why", [
    ('step, 0.05, "Momentum"', "", True, "only the looked-up rows"),   # (lazy sparse updates, optimizers.toml)
    ('step, 0.5, "Ftrl"', "", True, "only the looked-up rows"),
    ('step, rate, "Momentum"', "schedule", False, "folds the rate into the velocity"),
    ('step, rate, "RMSProp"', "schedule", False, "only Keras optimizers read"),
])
def test_optimize_loss_refuses_what_its_optimizer_row_refuses(args, rate, sparse, why):
    diagnostics = refusals(optimize_loss_program({"args": args, "rate": rate, "sparse": sparse}))
    assert [d[2] for d in diagnostics] == ["TFG906"] and why in diagnostics[0][3]


@pytest.mark.parametrize("args, why", [
    ('step, 0.1, "SGD", clip_gradients=5', "clip_gradients`: 5: TF1 clips by a float only"),
    ('step, 1, "SGD"', "learning_rate`: 1: TF1 takes a float"),
    ('step, w, "SGD"', "learning_rate`: a variable"),
    ('step, unshaped, "SGD"', "a placeholder not of shape `[]`"),
    ('step, 0.1, "Adadelta"', "'Adadelta' is none of Adagrad, Adam, Ftrl, Momentum, RMSProp, SGD"),
    ('step, None, "SGD"', "optimizer`: a name or class with no learning rate"),
    ('step, 0.1, make_optimizer', "optimizer`: the rewrite follows a name"),
    ('step, 0.1, "SGD", clip_gradients=tf.contrib.layers.adaptive_clipping_fn()', "clip_gradients`: a function"),
    ('step, 0.1, "SGD", gradient_noise_scale=0.1', "gradient_noise_scale`: contrib adds a truncated-normal draw"),
    ('step, 0.1, "SGD", gradient_multipliers={w: 2.0}', "gradient_multipliers`"),
    ('step, 0.1, "SGD", learning_rate_decay_fn=decay', "learning_rate_decay_fn`: pass the rate it computes"),
    ('step, 0.1, "SGD", update_ops=[extra]', "update_ops`: a list of its own"),
    ('step, 0.1, "SGD", summaries=["weights"]', "summaries`: a list of names of"),
    ('step, 0.1, "SGD", increment_global_step=count', "increment_global_step`"),
    ('step, 0.1, "SGD", seed=1', "seed`: not a parameter of optimize_loss"),
    ('scale, 0.1, "SGD"', "`global_step=` that is not a non-trainable variable"),
    ('real_step, 0.1, "SGD"', "global_step`: TF1 asserts an integer step variable"),
])
def test_optimize_loss_settings_it_cannot_keep_are_refused(args, why):
    source = optimize_loss_program({"args": args}).replace(
        "step = tf.Variable(", "unshaped = tf.placeholder(tf.float32)\nextra = tf.no_op()\ncount = True\n"
        "real_step = tf.Variable(0.0, trainable=False)\nscale = tf.Variable(1.0)\n"
        "make_optimizer = decay = None\nstep = tf.Variable(")
    assert any(d[2] in ("TFG910", "TFG906") and why in d[3] for d in refusals(source)), refusals(source)


def test_optimize_loss_summaries_refuse_a_merge_all_after_it():
    source = optimize_loss_program({"args": 'step, 0.1, "SGD"'}).replace(
        "\nwith tf.Session", "merged = tf.summary.merge_all()\n\nwith tf.Session").replace(
        "loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - y))",
        "loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - y))\ntf.summary.scalar(\"cost\", loss)")
    assert [d[2] for d in refusals(source)] == ["TFG917"]
    assert "(loss, global_gradient_norm)" in refusals(source)[0][3]
    quiet = source.replace('"SGD")', '"SGD", summaries=[])')
    assert rewritten(quiet) is not None


def test_optimize_loss_without_the_update_ops_refuses_batch_normalization_in_training():
    """`update_ops=[]`: TF1 leaves the moving statistics alone, which Keras updates in the training call."""
    source = optimize_loss_program({"args": 'step, 0.1, "SGD", update_ops=[]', "normalized": True})
    assert [d[2] for d in refusals(source)] == ["TFG912"]


def test_optimize_loss_run_alone_is_its_step():
    source = optimize_loss_program({"args": 'step, 0.1, "SGD"'}).replace(
        "value, result = sess.run([loss, train_op], feed_dict={tokens: ids[i], x: xs[i], y: ys[i]})",
        "sess.run(train_op, feed_dict={tokens: ids[i], x: xs[i], y: ys[i]})\n        value = result = 0.0")
    migrated = rewritten(source)
    assert "    train_step(ids[i], xs[i], ys[i])\n" in migrated and "    return loss\n" in migrated


@pytest.mark.tf
@pytest.mark.parametrize("case", OL_CASES)
def test_optimize_loss_cases_are_proven(case, tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    original = optimize_loss_program(case)
    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(rewritten(original))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    figure = max(st.max_rel_err for st in result.comparison.stats.values())
    assert figure == 0.0 if case["max_rel"] == 0.0 else figure <= 10 * case["max_rel"], figure


OL_REFERENCE = """\
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
from tf1gradfix.verify import contrib_v1
contrib_v1.install(tf)
out = {}
xs = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
for name, kwargs in json.loads(os.environ["CASES"]):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        w = tf.Variable([[1.0], [2.0]], name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        step = tf.Variable(0, trainable=False, name="step")
        result = tf.contrib.layers.optimize_loss(loss, step, **kwargs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(loss, {x: xs})
            got = sess.run(result, {x: xs})
            out[name] = {"before": float(before), "result": float(got), "after": float(sess.run(loss, {x: xs})),
                         "w": sess.run(w).ravel().tolist(), "step": int(sess.run(step)),
                         "variables": [v.op.name for v in tf.global_variables()],
                         "summaries": [s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)]}
print(json.dumps(out))
"""


@pytest.mark.tf
def test_the_verifiers_optimize_loss_is_tf1s():
    """The reference model (verify/contrib_v1.py) against TF 1.15's optimize_loss worked by hand: the
    float rate's variable, the default summaries (none with `summaries=[]`), Momentum's 0.9, the
    clipping by the global norm, the count, and the result: the loss of the run, before its update."""
    import numpy as np

    cases = [("sgd", {"learning_rate": 0.1, "optimizer": "SGD"}),
             ("clipped", {"learning_rate": 0.1, "optimizer": "SGD", "clip_gradients": 1.0, "summaries": []}),
             ("momentum", {"learning_rate": 0.1, "optimizer": "Momentum", "name": "fit", "increment_global_step": False})]
    run = subprocess.run([sys.executable, "-c", OL_REFERENCE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CASES": json.dumps(cases)})
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    xs, w = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[1.0], [2.0]])
    residual = xs @ w
    loss, grad = float(np.mean(residual ** 2)), xs.T @ (2 * residual) / len(xs)
    for name, _ in cases:
        assert got[name]["before"] == pytest.approx(loss) and got[name]["result"] == pytest.approx(loss), name
    assert got["sgd"]["w"] == pytest.approx((w - 0.1 * grad).ravel().tolist(), rel=1e-5)
    clipped = grad * min(1.0, 1.0 / np.linalg.norm(grad))
    assert got["clipped"]["w"] == pytest.approx((w - 0.1 * clipped).ravel().tolist(), rel=1e-5)
    assert got["momentum"]["w"] == pytest.approx((w - 0.1 * grad).ravel().tolist(), rel=1e-5)   # (the first step)
    assert got["sgd"]["step"] == got["clipped"]["step"] == 1 and got["momentum"]["step"] == 0
    assert got["sgd"]["variables"] == ["w", "step", "OptimizeLoss/learning_rate"]
    assert got["sgd"]["summaries"] == ["OptimizeLoss/global_norm/gradient_norm", "OptimizeLoss/loss"]
    assert got["clipped"]["summaries"] == []
    assert got["momentum"]["variables"] == ["w", "step", "fit/learning_rate", "fit/w/Momentum"]


# -- tf.contrib.rnn ---------------------------------------------------------------

def contrib_rnn_program() -> str:
    """The fixture lstm_l2_skip_biases with its cell from `from tensorflow.contrib import rnn`."""
    source = (ROOT_FIXTURES / "lstm_l2_skip_biases" / "input.py").read_text(encoding="utf-8")
    return source.replace("import tensorflow as tf\n", "import tensorflow as tf\nfrom tensorflow.contrib import rnn\n") \
        .replace("tf.nn.rnn_cell.LSTMCell(", "rnn.LSTMCell(")


def test_contrib_rnn_imports_go_with_the_cells_they_named():
    """TF 1.15's tf.contrib.rnn cells are tf.nn.rnn_cell's: the same rewrite, and the import goes."""
    expected = (ROOT_FIXTURES / "lstm_l2_skip_biases" / "expected.py").read_text(encoding="utf-8")
    assert "rnn.LSTMCell(" in contrib_rnn_program() and rewritten(contrib_rnn_program()) == expected
    kept = contrib_rnn_program().replace("with tf.Session", "print(rnn.__name__)\nwith tf.Session")
    assert "from tensorflow.contrib import rnn" in rewritten(kept)


@pytest.mark.tf
def test_contrib_rnn_cells_run_under_the_verifiers_model(tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    (tmp_path / "original.py").write_text(contrib_rnn_program())
    (tmp_path / "migrated.py").write_text(rewritten(contrib_rnn_program()))
    result = verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
