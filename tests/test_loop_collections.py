"""Variable collections read after a loop that made variables (constructs/var_lists.py,
graph_collections.py, variable_loops.listed_text): TF1's list holds the loop's variables and
its layers' weights iteration by iteration under each iteration's names; the TF2 list is
written from the loop's lists when the emitter has named them. The fixtures
loop_widths_l2_skip_biases, model_class_bn_width_decay and var_list_scope_after_loop prove
whole programs; the order of each layer's variables in TF1's collections is measured below."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import libcst as cst
import pytest

from tf1gradfix.constructs import layers
from tf1gradfix.cst.syntax import bound_args
from tf1gradfix.emit.restructure import restructure

HEAD = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
outs = []
for i in range(3):
    with tf.variable_scope("part-%d" % i):
        w = tf.get_variable("w", [2, 2])
        b = tf.get_variable("bias", [2])
        outs.append(tf.matmul(x, w) + b)
y = tf.add_n(outs)
"""
RUN = """train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([loss, train], {x: np.ones([1, 2])})[0])
"""
LAYERED = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
h = x
for i in range(2):
    with tf.variable_scope("block-%d" % i):
        w = tf.get_variable("w", [2, 2])
        h = tf.layers.dense(tf.matmul(h, w), 2)
y = tf.reduce_sum(h)
"""


def rewrite(body: str, head: str = HEAD, run: str = RUN):
    result = restructure(cst.parse_module(head + body + run), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


def flat(code: str) -> str:
    """The code with its layout undone (black splits long lists over lines)."""
    return " ".join(code.split()).replace("[ ", "[").replace(" ]", "]").replace("( ", "(").replace(" )", ")") \
        .replace(",]", "]").replace(",)", ")")


def test_the_loops_variables_stand_in_tf1s_place_iteration_by_iteration():
    code, messages = rewrite('late = tf.Variable(1.0, name="late")\n'
                             "loss = y * late + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])\n",
                             HEAD.replace("outs = []\n", 'first = tf.Variable(0.5, name="first")\nouts = []\n'))
    assert code is not None, messages
    assert "for v in [first, *[v for made in zip(w_variables, b_variables) for v in made], late]" in flat(code)


def test_a_filter_selecting_a_variable_in_every_iteration_or_none_is_kept():
    code, messages = rewrite('loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])\n')
    assert code is not None, messages   # (TF2 names the loop's variables as TF1 did: the filter selects the same)
    assert 'for v in [v for made in zip(w_variables, b_variables) for v in made] if "bias" not in v.name' in flat(code)


def test_a_filter_selecting_some_iterations_lists_them_by_index():
    code, messages = rewrite('loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "part-1" in v.name])\n')
    assert code is not None, messages   # (kept: TF2's names select the same)
    assert 'if "part-1" in v.name' in flat(code)
    code, messages = rewrite("loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() "
                             'if v.name.startswith("block-1") or v.name.startswith("dense")])\n', LAYERED)
    assert code is not None, messages   # (Keras names the dense weights `kernel`: written out)
    assert "for v in [w_variables[1], dense_layers[1].kernel, dense_layers[1].bias]]" in flat(code)


def test_a_layers_weights_are_its_keras_attributes_per_iteration():
    code, messages = rewrite('loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "/w" in v.name '
                             'or "kernel" in v.name])\n', LAYERED)
    assert code is not None, messages   # (`block-0/dense/kernel:0` in TF1, `kernel` in Keras: the same verdicts)
    assert 'for v in [v for made in zip(w_variables, dense_layers) for v in (made[0], made[1].kernel, made[1].bias)] ' \
           'if "/w" in v.name or "kernel" in v.name' in flat(code)
    code, messages = rewrite('loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() '
                             'if v.name.startswith("block")])\n', LAYERED)
    assert code is not None, messages
    assert "for v in [v for made in zip(w_variables, dense_layers) for v in (made[0], made[1].kernel, made[1].bias)]]" \
        in flat(code)


def test_the_global_collection_lists_a_batch_norms_moving_statistics_last():
    loop = ('for i in range(2):\n    with tf.variable_scope("bn-%d" % i):\n'
            '        h = tf.contrib.layers.batch_norm(h, center=True, updates_collections=None)\n')
    head = "import numpy as np\nimport tensorflow as tf\n\nx = tf.placeholder(tf.float32, [None, 2])\nh = x\n"
    code, messages = rewrite(loop + "loss = tf.reduce_sum(h) + tf.add_n([tf.reduce_sum(v) for v in tf.global_variables()])\n",
                             head)
    assert code is not None, messages
    assert "for v in [v for made in batchnorm_layers for v in (made.beta, made.moving_mean, made.moving_variance)]" \
        in flat(code)


def test_var_lists_and_tf_gradients_after_a_loop():
    code, messages = rewrite("loss = y\nparams = tf.trainable_variables()\ngrads = tf.gradients(loss, params)\n"
                             "norm = tf.global_norm(grads)\n", run=RUN.replace(
                                 "minimize(loss)", 'minimize(loss, var_list=tf.trainable_variables(scope="part-2"))')
                             .replace("[loss, train]", "[norm, train]"))
    assert code is not None, messages
    assert "params = [v for made in zip(w_variables, b_variables) for v in made]" in flat(code)
    assert "grads = tape.gradient(loss, params)" in code
    assert "variables = [w_variables[2], b_variables[2]]" in code


def test_a_frozen_variable_of_the_loop_in_a_var_list_is_watched():
    head = HEAD.replace('        b = tf.get_variable("bias", [2])\n',
                        '        b = tf.get_variable("bias", [2], trainable=False)\n')
    code, messages = rewrite("loss = y\n", head, RUN.replace("minimize(loss)",
                                                              'minimize(loss, var_list=tf.global_variables(scope="part-0"))'))
    assert code is not None, messages
    assert "tape.watch(b_variables[0])" in code and "variables = [w_variables[0], b_variables[0]]" in code


def test_a_var_list_of_the_collection_lists_a_layer_loops_weights_in_tf1s_order():
    """Read as a `var_list=`, after the run called the layers: each block's `w`, then its dense
    layer's kernel and bias, block by block (the rewrite of this program is proven EQUIVALENT)."""
    code, messages = rewrite("loss = y\n", LAYERED, RUN.replace("minimize(loss)", "minimize(loss, var_list=tf.trainable_variables())"))
    assert code is not None, messages
    assert "for made in zip(w_variables, dense_layers) for v in (made[0], made[1].kernel, made[1].bias)" in flat(code)


def test_contribs_weights_are_listed_under_tf1s_names():
    """contrib names a Dense's kernel `weights`, its bias `biases`; no bias where biases_initializer=None."""
    head = ("import numpy as np\nimport tensorflow as tf\n\nx = tf.placeholder(tf.float32, [None, 2])\n"
            "h = tf.contrib.layers.fully_connected(x, 2)\n"
            "out = tf.contrib.layers.fully_connected(h, 1, biases_initializer=None)\ny = tf.reduce_sum(out)\n")
    code, messages = rewrite('loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "biases" not in v.name])\n',
                             head)
    assert code is not None, messages
    assert "for v in [fully_connected.kernel, fully_connected_1.kernel]]" in flat(code)


@pytest.mark.parametrize("head,body,run,why", [
    (HEAD, "loss = y\n", RUN.replace('    print(sess.run([loss, train], {x: np.ones([1, 2])})[0])\n',
                                     "    print(len(tf.trainable_variables()), sess.run(train, {x: np.ones([1, 2])}))\n"),
     "read by host code"),
    (LAYERED.replace('    with tf.variable_scope("block-%d" % i):\n        w = tf.get_variable("w", [2, 2])\n'
                     "        h = tf.layers.dense(tf.matmul(h, w), 2)\n", "    h = tf.layers.dense(h, 2)\n"),
     "loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])\n", RUN, "under no variable scope"),
    (LAYERED.replace("h = tf.layers.dense(tf.matmul(h, w), 2)", "h = tf.contrib.layers.batch_norm(tf.matmul(h, w), scale=True)"),
     "loss = y + tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])\n", RUN, "in an order that depends"),
])
def test_what_the_list_cannot_hold_is_refused(head, body, run, why):
    code, messages = rewrite(body, head, run)
    assert code is None and any(why in m for m in messages), messages


MEASURE = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
from tf1gradfix.verify import contrib_v1
contrib_v1.install(tf)
out = {}
for key, symbol, rank, text in json.loads(os.environ["CASES"]):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None] + [3] * (rank - 1))
        eval(symbol)(x, **eval("dict(" + text + ")"))
        out[key] = [[v.op.name.split("/", 1)[1] for v in tf.trainable_variables()],
                    [v.op.name.split("/", 1)[1] for v in tf.global_variables()]]
print(json.dumps(out))
"""
ROWS = [   # (table row, its call as a test writes it, input rank, settings)
    ("tensorflow.layers.dense", "tf.layers.dense", 2, "units=2"),
    ("tensorflow.layers.dense", "tf.layers.dense", 2, "units=2, use_bias=False"),
    ("tensorflow.layers.conv2d", "tf.layers.conv2d", 4, "filters=2, kernel_size=2"),
    ("tensorflow.layers.batch_normalization", "tf.layers.batch_normalization", 2, ""),
    ("tensorflow.layers.batch_normalization", "tf.layers.batch_normalization", 4, "scale=False"),
    ("tensorflow.contrib.layers.fully_connected", "tf.contrib.layers.fully_connected", 2, "num_outputs=2"),
    ("tensorflow.contrib.layers.fully_connected", "tf.contrib.layers.fully_connected", 2,
     "num_outputs=2, biases_initializer=None"),
    ("tensorflow.contrib.layers.conv2d", "tf.contrib.layers.conv2d", 4, "num_outputs=2, kernel_size=2"),
    ("tensorflow.contrib.layers.batch_norm", "tf.contrib.layers.batch_norm", 2, ""),
    ("tensorflow.contrib.layers.batch_norm", "tf.contrib.layers.batch_norm", 4, "center=False, scale=True"),
    ("tensorflow.contrib.layers.batch_norm", "tf.contrib.layers.batch_norm", 4, "scale=True"),
    ("tensorflow.contrib.layers.batch_norm", "tf.contrib.layers.batch_norm", 2, "scale=True"),
    ("tensorflow.layers.conv2d_transpose", "tf.layers.conv2d_transpose", 4, "filters=2, kernel_size=2"),
    ("tensorflow.layers.conv2d_transpose", "tf.layers.conv2d_transpose", 4, "filters=2, kernel_size=2, use_bias=False"),
]


@pytest.mark.tf
def test_each_rows_variables_are_listed_in_tf1s_order():
    """The trainable and global collections of one layer made on a tf.compat.v1 graph (contrib's:
    the verifier's model of TF 1.15), against what the layers table lists; contrib's batch_norm
    with both beta and gamma lists them in an order that depends on the rank (refused)."""
    cases = [(str(k), call, rank, text) for k, (_, call, rank, text) in enumerate(ROWS)]
    run = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CASES": json.dumps(cases)})
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for k, (q, _, rank, text) in enumerate(ROWS):
        row = layers.layer_table()[q]
        call = cst.parse_expression(f"f(x, {text})")
        bound = bound_args(call, row["params"], call)
        trainable, every = ([leaf for _, leaf in layers.layer_weights(row, bound, which) or ()] for which in ("trainable", "global"))
        if row.get("unordered") and len([w for w in trainable if w in row["unordered"]]) > 1:
            continue
        assert got[str(k)] == [trainable, every], (q, text)
    assert got["10"][0] == ["gamma", "beta"] and got["11"][0] == ["beta", "gamma"]   # (4-D: the v1 layer; 2-D: fused)


@pytest.mark.tf
@pytest.mark.parametrize("scenario", ["loop_widths_l2_skip_biases", "model_class_bn_width_decay",
                                      "var_list_scope_after_loop"])
def test_every_variable_is_paired_by_name(scenario):
    from pathlib import Path

    from tf1gradfix.verify import orchestrate

    folder = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite" / scenario
    result = orchestrate.verify_pair(folder / "input.py", folder / "expected.py")
    assert result.verdict == orchestrate.EQUIVALENT, result.reason
    assert {m["matched_by"] for m in result.mapping} == {"name"}
    assert all(m["original"] == m["migrated"] for m in result.mapping)


CONTRIB_DECAY = """import numpy as np
import tensorflow as tf

rng = np.random.RandomState(2)
xs = rng.randn(12, 3).astype(np.float32)
ys = rng.randn(12, 2).astype(np.float32)
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 2])
h = tf.contrib.layers.fully_connected(x, 4, biases_initializer=tf.constant_initializer(0.5))
out = tf.contrib.layers.fully_connected(h, 2, activation_fn=None)
decay = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "biases" not in v.name])
loss = tf.reduce_mean(tf.square(out - y)) + 0.1 * decay
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(5):
        print(sess.run([train, loss], {x: xs, y: ys})[1])
"""


@pytest.mark.tf
def test_a_filter_on_contribs_names_is_proven(tmp_path):
    """`"biases" not in v.name` leaves out TF1's `fully_connected/biases:0` (the table's names
    were Keras's before, `fully_connected/bias:0`, and the rewrite decayed the biases: DIVERGED)."""
    from tf1gradfix.verify import orchestrate

    code, messages = rewrite("", CONTRIB_DECAY, "")
    assert code is not None, messages
    (tmp_path / "original.py").write_text(CONTRIB_DECAY)
    (tmp_path / "migrated.py").write_text(code)
    result = orchestrate.verify_pair(tmp_path / "original.py", tmp_path / "migrated.py")
    assert result.verdict == orchestrate.EQUIVALENT, result.reason
