"""The TF2 API surface table and the check that no rewrite writes a name TF2 lacks."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tf1gradfix import api_surface
from tf1gradfix.catalog import load as load_catalog

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
