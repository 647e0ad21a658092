"""Two things TF1 graph code does while it is built: it prints graph values (what TF1
prints is their description: constructs/graph_prints.py) and it reads variable
collections (an L2 sum over `tf.trainable_variables()`: constructs/graph_collections.py).
Text only; the fixtures l2_decay_*, l2_layer_kernels_cnn, model_class_l2_loss and
builder_prints_shapes are proven EQUIVALENT by the verifier."""

from __future__ import annotations

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

HEAD = '''
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b_bias")
'''
RUN = '''
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train, loss], {x: [[1.0, 2.0]]})[1])
'''


def _rewrite(body: str, head: str = HEAD):
    result = process_source("f.py", (head + body + RUN).encode(), CodeFilter())
    return (result.new_source or b"").decode(), [f"{f.code} {f.message}" for f in result.findings]


def test_a_print_of_graph_values_and_words_is_dropped_with_a_note():
    text, found = _rewrite('y = tf.matmul(x, w) + b\nprint("y:", y, [w, b], sep=" ")\nloss = tf.reduce_sum(y)\n')
    assert "print(\"y:\"" not in text and "def train_step(x):" in text
    assert any(f.startswith("TFG108 `print` of the graph's `y`, `w`, `b` dropped") for f in found)


def test_other_prints_stay_or_are_refused():
    kept, _ = _rewrite('y = tf.matmul(x, w) + b\nprint(w.shape)\nloss = tf.reduce_sum(y)\n')
    assert "print(w.shape)" in kept
    for extra, left in (('"layer 2:", y', 'print("layer 2:")'), ('"layer", 2, y, sep=","', 'print("layer", 2, sep=",")')):
        text, found = _rewrite(f"y = tf.matmul(x, w) + b\nprint({extra})\nloss = tf.reduce_sum(y)\n")
        assert left in text and any(f.startswith("TFG108 the graph's `y` left out of the `print`") for f in found), found
    text, found = _rewrite('y = tf.matmul(x, w) + b\nprint(y, end="")\nloss = tf.reduce_sum(y)\n')
    assert 'end=""' not in text and any(f.startswith("TFG108 `print` of the graph's `y` dropped") for f in found)
    for extra, why in (('"y", y, tf.shape(y)', "`tf.shape(y)`"), ('y.shape[0], y', "`y.shape[0]`")):
        text, found = _rewrite(f"y = tf.matmul(x, w) + b\nprint({extra})\nloss = tf.reduce_sum(y)\n")
        assert text == "" and f"TFG911 a print of graph values and {why}" in found, found
    data, found = _rewrite('d = tf.data.Dataset.from_tensor_slices(x)\nprint(d)\nloss = tf.reduce_sum(x * w)\n')
    assert data == "" and not any(f.startswith("TFG108") for f in found)   # (TF1 prints no description of it)


def test_a_collection_in_graph_code_is_the_list_it_held_there():
    text, _ = _rewrite('decay = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])\n'
                       'late = tf.Variable(2.0, name="late")\nloss = tf.reduce_sum(tf.matmul(x, w) * late) + decay\n')
    assert 'for v in [w, b] if "bias" not in v.name' in text   # (not `late`, made after it)
    assert "variables = [w, late]" in text   # (`b` is reached by the decay only, which leaves it out)


def test_layer_weights_are_listed_and_a_filter_on_tf1_names_is_evaluated():
    head = "\nimport tensorflow as tf\nx = tf.placeholder(tf.float32, [None, 2])\nh = tf.layers.dense(x, 3, name=\"hid\")\n"
    text, found = _rewrite('kept = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "kernel" in v.name])\n'
                           'moved = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if v.name.startswith("hid/")])\n'
                           "loss = tf.reduce_sum(h) + kept + moved\n", head)
    assert 'for v in [hid.kernel, hid.bias] if "kernel" in v.name' in text
    assert "for v in [hid.kernel, hid.bias]]" in text   # (`hid/kernel:0` in TF1, `kernel` in Keras: evaluated)
    assert any(f.startswith("TFG304 the filter was evaluated on TF1's variable names") for f in found)


def test_a_named_list_reads_the_variables_it_lists():
    text, _ = _rewrite('head = tf.Variable(tf.ones([2, 2]), name="head")\nparams = tf.trainable_variables()\n'
                       "loss = tf.reduce_sum(tf.matmul(x, w) + b) + tf.add_n([tf.nn.l2_loss(p) for p in params])\n")
    assert "variables = [w, b, head]" in text   # (`head` is reached through `params` only)
