"""A module a restructured script imports, rewritten without being restructured (a data
loader's `tf.gfile.Exists`), goes with the script: proven in place and written with it
(tf1gradfix/run/imported_helpers.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tf1gradfix.run.batch import Outcome
from tf1gradfix.run.findings import Finding
from tf1gradfix.run.imported_helpers import attach


def _outcome(path: str, source: str, *codes: str) -> Outcome:
    return Outcome(path, [Finding(path, 1, 1, code, "m", "proven", True) for code in codes], changed=True,
                   new_source=source.encode(), restructured=True)


def test_a_helper_the_script_imports_goes_with_it(tmp_path):
    script = _outcome(str(tmp_path / "train.py"), "import loader\nfrom . import other\n", "TFG103", "TFG105")
    helper = _outcome(str(tmp_path / "loader.py"), "import tensorflow as tf\n", "TFG401")
    program = _outcome(str(tmp_path / "other.py"), "import tensorflow as tf\n", "TFG103")
    left = attach([script, helper, program])
    assert left == [script, program]   # (a program of its own is proven alone)
    assert script.companions == {helper.path: (b"import tensorflow as tf\n", None)}
    assert helper.new_source is None and not helper.changed and not helper.restructured


def test_a_helper_two_scripts_import_is_proven_alone(tmp_path):
    first = _outcome(str(tmp_path / "train.py"), "import loader\n", "TFG103")
    second = _outcome(str(tmp_path / "score.py"), "from loader import read\n", "TFG103")
    helper = _outcome(str(tmp_path / "loader.py"), "import tensorflow as tf\n", "TFG401")
    assert attach([first, second, helper]) == [first, second, helper]
    assert not first.companions and not second.companions


LOADER = '''\
import os

import numpy as np
import tensorflow as tf


def read(folder):
    if not tf.gfile.Exists(folder):
        tf.gfile.MakeDirs(folder)
    return np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3)
'''

TRAIN = '''\
import numpy as np
import tensorflow as tf

import loader

data = loader.read("cache")
x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.ones([3, 1]) * 0.1, name="w")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(6):
        print(i, sess.run([step, loss], feed_dict={x: data})[1])
'''


@pytest.mark.tf
def test_the_script_is_proven_with_the_renamed_helper_and_both_are_written(tmp_path):
    (tmp_path / "loader.py").write_text(LOADER)
    (tmp_path / "train.py").write_text(TRAIN)
    done = subprocess.run([sys.executable, "-m", "tf1gradfix", "rewrite", "--verify", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert "train.py with loader.py: EQUIVALENT" in done.stdout, done.stdout + done.stderr
    assert "tf.compat.v1.gfile.Exists(folder)" in (tmp_path / "loader.py").read_text()   # (TF1's own, in TF2 too)
    assert "tf.Session" not in (tmp_path / "train.py").read_text()
