"""Train ops run together (constructs/train_together.py): one step that takes every
gradient before any update, where they update disjoint variables; refused where TF1
gives the run no order. Their proofs: fixtures/rewrite/train_ops_one_run_probe,
grouped_updates_scaled (tests/test_restructure_fixtures.py)."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure

GAN = """\
import numpy as np
import tensorflow as tf

z = tf.placeholder(tf.float32, [None, 2])
x = tf.placeholder(tf.float32, [None, 2])
g = tf.Variable(tf.ones([2, 2]), name="g")
d = tf.Variable(tf.ones([2, 1]), name="d")
d_fake = tf.matmul(tf.matmul(z, g), d)
d_loss = tf.reduce_mean(d_fake) - tf.reduce_mean(tf.matmul(x, d))
g_loss = -tf.reduce_mean(d_fake)
d_opt = tf.train.AdamOptimizer(0.1)
g_opt = tf.train.GradientDescentOptimizer(0.1)
{graph}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    {run}
"""


def _rewrite(graph: str, run: str):
    source = GAN.format(graph=graph, run=run)
    return restructure(cst.parse_module(source), "p.py")


def _step_order(code: str) -> list[str]:
    return ["gradient" if "tape.gradient(" in line else "update" for line in code.splitlines()
            if "tape.gradient(" in line or ".apply_gradients(" in line]


@pytest.mark.parametrize("graph, run", [
    ("d_step = d_opt.minimize(d_loss, var_list=[d])\ng_step = g_opt.minimize(g_loss, var_list=[g])",
     "sess.run([d_step, g_step], {z: np.ones([3, 2]), x: np.ones([3, 2])})"),
    ("d_step = d_opt.minimize(d_loss, var_list=[d])\ng_step = g_opt.minimize(g_loss, var_list=[g])\n"
     "both = tf.group(d_step, g_step)", "sess.run(both, {z: np.ones([3, 2]), x: np.ones([3, 2])})"),
    ("d_pairs = d_opt.compute_gradients(d_loss, var_list=[d])\n"
     "both = tf.group(d_opt.apply_gradients([(0.5 * g, v) for g, v in d_pairs]), g_opt.minimize(g_loss, var_list=[g]))",
     "sess.run(both, {z: np.ones([3, 2]), x: np.ones([3, 2])})"),
])
def test_train_ops_of_one_run_take_every_gradient_before_any_update(graph, run):
    result = _rewrite(graph, run)
    assert result.new_module is not None, result.diagnostics
    code = result.new_module.code
    order = _step_order(code)
    assert order == ["gradient", "gradient", "update", "update"], code
    assert code.index("d_opt.apply_gradients") < code.index("g_opt.apply_gradients"), code
    assert code.count("@tf.function") == 1 and "persistent=True" in code, code


@pytest.mark.parametrize("graph, said", [
    ("d_step = d_opt.minimize(d_loss, var_list=[d, g])\ng_step = g_opt.minimize(g_loss, var_list=[g])",
     "update the same variable `g`"),
    ("d_step = d_opt.minimize(d_loss)\ng_step = g_opt.minimize(g_loss)", "update the same variable"),
])
def test_train_ops_of_one_run_updating_one_variable_are_refused(graph, said):
    result = _rewrite(graph, "sess.run([d_step, g_step], {z: np.ones([3, 2]), x: np.ones([3, 2])})")
    assert result.new_module is None and any(said in d[3] for d in result.diagnostics), result.diagnostics
