"""The TF2 API surface table and the check that no rewrite writes a name TF2 lacks."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tf1gradfix.detect import api_surface
from tf1gradfix.rules.catalog import load as load_catalog

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """\
import numpy as np
import tensorflow as tf
from tensorflow import keras
import tensorflow.compat.v1 as v1

norm = tf.global_norm([tf.ones([2])])
opt = tf.keras.optimizers.SGD(learning_rate=0.1)
dense = keras.layers.Dense(3)
saver = tf.train.Saver()
ok = tf.linalg.global_norm([tf.ones([2])])
kind = tf.float32.as_numpy_dtype
old = v1.placeholder(tf.float32)
arr = np.float32(1.0)
"""


def _names(source: str) -> list[tuple[int, str]]:
    return [(m.line, m.name) for m in api_surface.missing(ast.parse(source))]


def test_missing_names_are_found_with_their_lines():
    assert _names(PROGRAM) == [(6, "global_norm"), (9, "train.Saver")]


def test_a_base_bound_by_anything_but_an_import_is_not_judged():
    source = "import tensorflow as tf\ndef f(tf):\n    return tf.global_norm\n"
    assert _names(source) == []
    assert _names("import tensorflow as tf\ntf = tf.compat.v1\nx = tf.placeholder\n") == []


def test_submodule_imports_are_followed():
    source = "import tensorflow.keras.layers as L\nfrom tensorflow import train\nL.Dense(2)\ntrain.Saver()\nL.NoSuchLayer()\n"
    assert _names(source) == [(4, "train.Saver"), (5, "keras.layers.NoSuchLayer")]


def test_every_rename_target_exists_in_tf2():
    surface = api_surface.load()
    bad = [target for target in load_catalog().renames.values()
           if surface.first_missing(target.split(".")[1:]) is not None]
    assert bad == []


def test_no_expected_rewrite_spells_a_name_tf2_lacks():
    """Every fixture output the rewrite writes in full runs on TF2 (refusals keep the input: skipped)."""
    offenders = {}
    for expected in sorted((ROOT / "fixtures" / "rewrite").glob("*/expected.py")):
        if expected.read_bytes() == (expected.parent / "input.py").read_bytes():
            continue
        tree = ast.parse(expected.read_bytes())
        # (a name the user kept on purpose carries a suppression comment on its line)
        lines = expected.read_text(encoding="utf-8").splitlines()
        found = [m for m in api_surface.missing(tree) if "tf1gradfix: ignore" not in lines[m.line - 1]]
        if found:
            offenders[expected.parent.name] = [(m.line, m.name) for m in found]
    assert offenders == {}


@pytest.mark.tf
def test_shipped_table_matches_installed_tensorflow():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_api_surface.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]


# -- what `check` and `rewrite` do with such names (no TensorFlow) ------------------------

from tf1gradfix.run.engine import process_source  # noqa: E402
from tf1gradfix.run.findings import CodeFilter  # noqa: E402

TF1_ONLY = ["to_float(a)", "to_int32(a)", "global_norm([a])", "div(a, 2)", "assign(v, 1)", "assign_add(v, 1)",
            "arg_max(a, 0)", "train.Saver()", "train.exponential_decay(0.1, 0, 10, 0.9)", "summary.FileWriter('d')",
            "app.run()", "flags.FLAGS", "logging.info('x')", "ConfigProto()", "losses.mean_squared_error(a, a)",
            "metrics.accuracy(a, a)", "reset_default_graph()", "get_default_graph()",
            "image.resize_images(a, [2, 2])", "Print(a, [a])", "py_func(len, [a], tf.int64)", "count_nonzero(a)",
            "nn.rnn_cell.LSTMCell(3)", "sparse_tensor_dense_matmul(a, a)"]

TRAINING = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([2, 1]), name="w")
pred = tf.matmul(x, w)
loss = tf.reduce_mean(tf.square(pred - y)) + 0.0 * tf.cast(tf.reduce_sum(EXTRA), tf.float32)
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        print(sess.run([train, loss], feed_dict={x: np.ones([4, 2]), y: np.ones([4, 1])})[1])
"""


def _run(source: str):
    return process_source("prog.py", source.encode(), CodeFilter())


def test_check_reports_every_tf1_only_name_with_its_line():
    source = "import tensorflow as tf\n" + "".join(f"r{i} = tf.{call}\n" for i, call in enumerate(TF1_ONLY))
    result = _run(source)
    lines = {f.line for f in result.findings if f.code in ("TFG401", "TFG402")}
    assert lines == set(range(2, 2 + len(TF1_ONLY)))
    advice = {f.line: f.message for f in result.findings if f.code == "TFG402"}
    assert "tf.cast(x, tf.float32)" in advice[2] and "tf.train.Checkpoint" in advice[2 + TF1_ONLY.index("train.Saver()")]


def test_a_tf2_file_with_a_removed_name_is_reported_without_libcst():
    result = _run("import tensorflow as tf\n\nx = tf.to_float(tf.ones([2]))\n")
    assert [(f.line, f.code, f.fixed) for f in result.findings] == [(3, "TFG402", False)]
    silenced = _run("import tensorflow as tf\n\nx = tf.to_float(tf.ones([2]))  # tf1gradfix: ignore[TFG402]\n")
    assert silenced.findings == []


def test_a_restructuring_that_would_write_a_removed_name_is_refused_with_its_line():
    result = _run(TRAINING.replace("EXTRA", "tf.arg_max(pred, 0)"))
    assert result.new_source is None, "the file must be left byte-for-byte intact"
    refusals = [f for f in result.findings if f.code == "TFG905"]
    assert [(f.line, "tf.arg_max" in f.message) for f in refusals] == [(8, True)]
    assert not any(f.fixed for f in result.findings)


def test_a_name_proven_by_identity_is_renamed_in_the_restructured_program():
    result = _run(TRAINING.replace("EXTRA", "tf.global_norm([pred])"))
    assert result.new_source is not None
    assert b"tf.linalg.global_norm([pred])" in result.new_source and b"tf.global_norm" not in result.new_source
    assert api_surface.missing_in_source(result.new_source) == []


def test_each_advice_row_is_a_name_tf2_lacks_and_names_only_what_tf2_has():
    import re
    import tomllib

    surface = api_surface.load()
    rows = tomllib.loads((ROOT / "rules" / "removed_api.toml").read_text())["advice"]
    assert [k for k in rows if surface.first_missing(k.split(".")) is None and k not in surface.modules] == []
    advised = {k: name for k, text in rows.items() for name in re.findall(r"`tf\.([A-Za-z_][\w.]*)", text)}
    assert {k: n for k, n in advised.items() if surface.first_missing(n.split(".")) is not None} == {}


def test_advice_is_read_for_the_whole_chain():
    assert api_surface.advised("app.flags.DEFINE_integer", "app") == ("app.flags", "use `absl.flags` (absl-py)")
    assert api_surface.advised("app.run", "app")[0] == "app.run"
    assert api_surface.advised("gfile.Exists", "gfile")[0] == "gfile"
    name, text = api_surface.advised("no_such_thing.deeper", "no_such_thing")
    assert name == "no_such_thing" and text.startswith("look up its TF2 form")
