"""Builder functions whose weights are `tf.layers` calls (constructs/builder_layers.py):
the forms of reuse that are rewritten, and the order their variables are listed in.
(The GAN fixture fixtures/rewrite/builders_layers_gan is proven EQUIVALENT by the verifier.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

RUN = '''
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
loss = tf.reduce_mean(tf.square(net(x) - net(2.0 * x, True) - y))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=tf.trainable_variables("net"))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], {x: np.ones((2, 3)), y: np.ones((2, 1))})[1])
'''


def _rewrite(builder: str) -> str:
    program = "import numpy as np\nimport tensorflow as tf\n\n\n" + builder + RUN
    result = process_source("case.py", program.encode(), CodeFilter())
    assert result.new_source is not None, [f.message for f in result.findings if not f.fixed]
    return result.new_source.decode()


def test_scope_reuse_variables_is_dropped():
    out = _rewrite('''def net(inputs, again=False):
    with tf.variable_scope("net") as scope:
        if again:
            scope.reuse_variables()
        hidden = tf.layers.dense(inputs, 4, tf.nn.relu)
        return tf.layers.dense(hidden, 1)
''')
    assert "reuse_variables" not in out and "scope" not in out.split("def __call__")[1].split("\n")[0]
    assert '    def __call__(self, inputs, again=False):\n        with tf.keras.name_scope("net"):\n' \
           '            hidden = self.dense(inputs)\n            return self.dense_1(hidden)\n' in out


def test_layers_named_per_scope_and_listed_in_statement_order():
    out = _rewrite('''def net(inputs, reuse=False):
    with tf.variable_scope("net", reuse=reuse):
        hidden = tf.layers.dense(inputs, 4, name="hidden")
        scale = tf.get_variable("scale", [4], initializer=tf.ones_initializer())
        return tf.layers.dense(tf.layers.dense(hidden * scale, 2), 1)
''')
    # the inner call of the last line is made first: dense, then dense_1 (no number for the named one)
    assert 'self.dense = tf.keras.layers.Dense(2, name="dense")' in out
    assert 'self.dense_1 = tf.keras.layers.Dense(1, name="dense_1")' in out
    assert "return self.dense_1(self.dense(hidden * self.scale))" in out
    assert "*net.hidden.trainable_variables, net.scale, *net.dense.trainable_variables, " \
           "*net.dense_1.trainable_variables" in " ".join(out.split())


def test_return_after_the_scope_block_is_its_last_statement():
    out = _rewrite('''def net(inputs, reuse=False):
    """Two layers."""
    with tf.variable_scope("net", reuse=reuse):
        inputs = tf.layers.dense(inputs, 4, tf.nn.relu)
        inputs = tf.layers.dense(inputs, 1)
    return inputs
''')
    assert '        with tf.keras.name_scope("net"):\n            inputs = self.dense(inputs)\n' \
           '            inputs = self.dense_1(inputs)\n            return inputs\n\n\nnet = Net()\n' in out


def test_layers_in_a_loop_are_made_on_the_call_and_counted_again_on_each_call():
    out = _rewrite('''def net(inputs, again=False, widths=(5, 4)):
    with tf.variable_scope("net", reuse=again):
        for width in widths:
            inputs = tf.layers.dense(inputs, width, tf.nn.relu)
        return tf.layers.dense(inputs, 1)
''')
    call = out.split("def __call__")[1].split("def layer")[0]
    assert call.index('with tf.keras.name_scope("net"):') < call.index("self.count = {}") \
        < call.index('self.layer("dense", tf.keras.layers.Dense, width, tf.nn.relu)(') \
        < call.index('self.layer("dense", tf.keras.layers.Dense, 1)(inputs)')
    assert "self.made = {}" in out.split("def __call__")[0] and "tf.keras.layers.Dense(" not in out
    assert "variables = [w for layer in net.made.values() for w in layer.trainable_variables]" in out


def test_a_builder_without_a_scope_called_once_names_its_layers_at_the_top():
    program = '''import numpy as np
import tensorflow as tf


def net(inputs, widths):
    # hidden layers, then the output
    for width in widths[:-1]:
        inputs = tf.layers.dense(inputs, width, tf.nn.relu)
    return tf.layers.dense(inputs, widths[-1])


x = tf.placeholder(tf.float32, [None, 3])
loss = tf.reduce_mean(tf.square(net(x, [4, 1])))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=tf.trainable_variables())

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], {x: np.ones((2, 3))})[1])
'''
    result = process_source("case.py", program.encode(), CodeFilter())
    out = result.new_source.decode()
    assert "name_scope" not in out and 'super().__init__(name="net")' in out
    assert "        self.count = {}  # this call's layers of each kind so far\n" \
           "        # hidden layers, then the output\n        for width in widths[:-1]:\n" in out
    again = program.replace("net(x, [4, 1])", "net(x, [4, 1]) + net(x, [4, 1])")
    refused = process_source("case.py", again.encode(), CodeFilter())
    assert refused.new_source is None and any("is called again" in f.message for f in refused.findings)


GAN = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite" / "builders_batchnorm_gan" / "input.py"


@pytest.mark.parametrize("change, why", [
    # TF1 never updates the moving statistics: the train ops do not depend on UPDATE_OPS
    (("update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)\nwith tf.control_dependencies(update_ops):\n"
      "    train_critic = tf.train.AdamOptimizer(0.01, beta1=0.5).minimize(critic_loss, var_list=critic_vars)\n    ",
      "train_critic = tf.train.AdamOptimizer(0.01, beta1=0.5).minimize(critic_loss, var_list=critic_vars)\n"),
     "does not run a train op under"),
    # the critic's layer called twice in training mode in one run: TF1 runs the two updates unordered
    (("scores = critic(tf.concat([real_images, fake_images], 0), True)   # one call: one update per run\n"
      "real_scores, fake_scores = scores[:BATCH], scores[BATCH:]",
      "real_scores = critic(real_images, True)\nfake_scores = critic(fake_images, True, reuse=True)"),
     "more than once in this run"),
    # the inference-time images in training mode: TF1 collects its update, and its train ops run it
    (("shown = generator(shown_codes, False, reuse=True)", "shown = generator(shown_codes, True, reuse=True)"),
     "the train step does not compute this call"),
    (("fake_images = generator(codes, True)", "fake_images = generator(codes, 1)"), "other than `True` or `False`"),
])
def test_batch_normalization_in_builders_that_would_not_update_as_tf1_is_refused(change, why):
    source = GAN.read_text(encoding="utf-8")
    assert change[0] in source
    _refused(source.replace(*change), why)


def test_calls_made_after_update_ops_was_read_are_not_updated_by_tf1():
    """`update_ops` holds the updates collected when it was read: none here, so TF1's train
    ops update no moving statistics."""
    source = GAN.read_text(encoding="utf-8")
    read = "update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)\n"
    moved = source.replace(read, "").replace("fake_images = generator(codes, True)", read + "fake_images = generator(codes, True)")
    assert moved.index(read) < moved.index("fake_images = generator(")
    _refused(moved, "does not run a train op under")


def _refused(source: str, why: str) -> None:
    result = process_source("case.py", source.encode(), CodeFilter())
    assert result.new_source is None
    assert any(why in f.message for f in result.findings if not f.fixed), [f.message for f in result.findings]


def test_fused_false_keeps_keras_batch_normalization_in_a_builder():
    source = GAN.read_text(encoding="utf-8").replace('name="grid_norm"', 'name="grid_norm", fused=False')
    result = process_source("case.py", source.encode(), CodeFilter())
    assert result.new_source is not None
    out = result.new_source.decode()
    assert "self.grid_norm = tf.keras.layers.BatchNormalization(" in out
    assert out.count("= FusedBatchNormalization(") == 2 and out.count("class FusedBatchNormalization(") == 1
