"""The class the rewrite writes for `tf.layers.batch_normalization` (rules/helpers.toml,
`fused_batch_norm`) against TF1 itself: on a 4-D channels-last input in training mode,
its output and the gradients of the input, gamma and beta are TF1's fused kernel's, bit
for bit (a GAN's gradients through a batch normalization amplify any rounding)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
rs = np.random.RandomState(5)
x0 = rs.randn(6, 5, 5, 7).astype(np.float32)
up = rs.randn(6, 5, 5, 7).astype(np.float32)
gammas, betas = rs.rand(7) + 0.5, rs.randn(7)
"""

TF1_SIDE = """
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
{setup}
x = tf.constant(x0)
y = tf.layers.batch_normalization(x, training=True, momentum=0.8, epsilon=1e-4,
                                  gamma_initializer=tf.constant_initializer(gammas),
                                  beta_initializer=tf.constant_initializer(betas))
g = tf.gradients(tf.reduce_sum(tf.tanh(y) * up), [x] + tf.trainable_variables())
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    np.savez(sys.argv[1], *sess.run([y] + g))
"""

TF2_SIDE = """
import sys
import tomllib
import numpy as np
import tensorflow as tf
with open(sys.argv[2], "rb") as fh:
    text = tomllib.load(fh)["helper"]["fused_batch_norm"]["text"]
exec(text.format(name="FusedBatchNormalization", tf="tf"))
{setup}
layer = FusedBatchNormalization(momentum=0.8, epsilon=1e-4,
                                gamma_initializer=tf.keras.initializers.Constant(gammas),
                                beta_initializer=tf.keras.initializers.Constant(betas))
x = tf.constant(x0)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = layer(x, training=True)
    loss = tf.reduce_sum(tf.tanh(y) * up)
g = tape.gradient(loss, [x, layer.gamma, layer.beta])
np.savez(sys.argv[1], *[np.asarray(t) for t in [y] + g])
"""


def _side(code: str, out: Path, legacy: bool, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    env.update({"TF_CPP_MIN_LOG_LEVEL": "3", **({"TF_USE_LEGACY_KERAS": "1"} if legacy else {})})
    script = textwrap.dedent(code).replace("{setup}", SETUP)
    subprocess.run([sys.executable, "-c", script, str(out), *args], env=env, check=True, capture_output=True,
                   timeout=300)


@pytest.mark.tf
def test_the_helper_computes_tf1_fused_batch_norm_bit_for_bit(tmp_path: Path):
    tf1, tf2 = tmp_path / "tf1.npz", tmp_path / "tf2.npz"
    _side(TF1_SIDE, tf1, True)
    _side(TF2_SIDE, tf2, False, str(ROOT / "rules" / "helpers.toml"))
    old, new = np.load(tf1), np.load(tf2)
    for k, what in enumerate(("output", "input gradient", "gamma gradient", "beta gradient")):
        assert np.array_equal(old[f"arr_{k}"], new[f"arr_{k}"]), what
