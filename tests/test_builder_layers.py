"""Builder functions whose weights are `tf.layers` calls (constructs/builder_layers.py):
the forms of reuse that are rewritten, and the order their variables are listed in.
(The GAN fixture fixtures/rewrite/builders_layers_gan is proven EQUIVALENT by the verifier.)"""

from __future__ import annotations

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
