"""Positional arguments TF2 reads as another parameter (TFG404): `tf.nn.dropout(h,
keep_prob)` and TensorFlow's reorder table, reported in modules and session programs
alike with the exact replacement, and written where it runs the same under both."""

from __future__ import annotations

from tf1gradfix.detect.arguments import reorders
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter


def _run(source: bytes, fix: bool = True):
    return process_source("m.py", source, CodeFilter(), fix=fix)


def test_dropout_keep_prob_in_a_module_without_session():
    source = (b"import tensorflow as tf\n\ndef head(h, keep_prob):\n"
              b"    h = tf.nn.dropout(h, keep_prob)\n"
              b"    return tf.nn.dropout(h, keep_prob=0.8, name=\"d\")\n")
    result = _run(source)
    found = [(f.line, f.col, f.safety, f.fixed) for f in result.findings if f.code == "TFG404"]
    assert found == [(4, 26, "safe", True), (5, 29, "safe", True)]
    assert "`rate=1 - keep_prob`" in result.findings[0].message
    assert result.new_source == (b"import tensorflow as tf\n\ndef head(h, keep_prob):\n"
                                 b"    h = tf.nn.dropout(h, rate=1 - keep_prob)\n"
                                 b"    return tf.nn.dropout(h, rate=1 - 0.8, name=\"d\")\n")


def test_check_reports_without_writing():
    source = b"import tensorflow as tf\n\ndef head(h, keep):\n    return tf.nn.dropout(h, keep + 0.0)\n"
    result = _run(source, fix=False)
    assert [f.message for f in result.findings if f.code == "TFG404"] == [
        "`tf.nn.dropout(x, keep_prob)`: TF2 reads its second argument as the rate of units dropped; "
        "positional `keep_prob` becomes `rate=1 - (keep + 0.0)`"]
    assert result.new_source is None


def test_tf2_code_keeps_its_positional_arguments():
    source = b"import tensorflow as tf\n\ndef head(h):\n    return tf.nn.dropout(h, 0.2), tf.shape(h, tf.int64)\n"
    result = _run(source)
    assert result.findings == [] and result.new_source is None


def test_reordered_arguments_of_a_tf1_file_get_tf1_keywords():
    source = (b"import tensorflow as tf\n\ntf.set_random_seed(1)\n"
              b"def head(h, ids, table):\n"
              b"    n = tf.shape(h, \"n\")\n"
              b"    t = tf.transpose(h, [1, 0], (\"t\"))\n"
              b"    return tf.nn.embedding_lookup(table, ids, \"div\"), tf.argmax(h, 1, \"a\"), n, t\n")
    result = _run(source)
    found = {f.line: (f.safety, f.fixed) for f in result.findings if f.code == "TFG404"}
    assert found == {5: ("safe", True), 6: ("manual", False), 7: ("safe", True)}
    assert result.new_source.splitlines()[4:] == [
        b"    n = tf.shape(h, name=\"n\")",
        b"    t = tf.transpose(h, [1, 0], (\"t\"))",
        b"    return tf.nn.embedding_lookup(table, ids, partition_strategy=\"div\"), tf.argmax(h, 1, name=\"a\"), n, t"]
    lookup = next(f for f in result.findings if f.code == "TFG404" and "embedding_lookup" in f.message)
    assert "TF2's function takes no `partition_strategy`" in lookup.message


def test_a_position_renamed_to_tf2s_parameter_keeps_its_meaning():
    tf1, start, tf2 = reorders()["nn.avg_pool"]
    assert tf1[0] == "value" and "input" in tf2 and start == 6   # value -> input: the same place; TF2 has 6
    assert reorders()["shape"][1] == 1 and reorders()["nn.conv2d"][1] == 4   # conv2d: use_cudnn_on_gpu


def test_a_keyword_given_positionally_is_not_renamed_onto_it():
    source = b"import tensorflow as tf\n\ntf.set_random_seed(1)\ny = tf.argmax(x, 1, dimension=None)\n"
    assert not [f for f in _run(source, fix=False).findings if f.code == "TFG403"]


def test_a_restructured_program_giving_a_keyword_tf2_lacks_is_refused():
    source = (b"import numpy as np\nimport tensorflow as tf\n\n"
              b"ids = tf.placeholder(tf.int32, [None])\n"
              b"table = tf.Variable(tf.ones([5, 2]), name=\"table\")\n"
              b"rows = tf.nn.embedding_lookup(table, ids, \"div\")\n"
              b"with tf.Session() as sess:\n"
              b"    sess.run(tf.global_variables_initializer())\n"
              b"    print(sess.run(rows, feed_dict={ids: np.array([0, 3])}))\n")
    result = _run(source)
    refused = [f for f in result.findings if f.code == "TFG905"]
    assert refused and refused[0].line == 6 and "`partition_strategy`" in refused[0].message


def test_a_restructured_program_keeping_an_old_keyword_is_refused():
    source = (b"import numpy as np\nimport tensorflow as tf\n\n"
              b"x = tf.placeholder(tf.float32, [None, 3])\n"
              b"w = tf.Variable(tf.ones([3, 2]), name=\"w\")\n"
              b"best = tf.argmax(tf.matmul(x, w), 1, dimension=None)\n"
              b"with tf.Session() as sess:\n"
              b"    sess.run(tf.global_variables_initializer())\n"
              b"    print(sess.run(best, feed_dict={x: np.ones((2, 3))}))\n")
    result = _run(source)
    refused = [f for f in result.findings if f.code == "TFG905"]
    assert refused and refused[0].line == 6 and "`dimension`" in refused[0].message
    assert result.new_source is None


def test_an_old_keyword_given_with_its_new_name_is_refused_in_a_restructured_program():
    source = (b"import numpy as np\nimport tensorflow as tf\n\n"
              b"x = tf.placeholder(tf.float32, [None, 3])\n"
              b"total = tf.reduce_sum(x, axis=1, reduction_indices=1)\n"
              b"with tf.Session() as sess:\n"
              b"    print(sess.run(total, feed_dict={x: np.ones((2, 3))}))\n")
    result = _run(source)
    refused = [f for f in result.findings if f.code == "TFG905"]
    assert refused and refused[0].line == 5 and "`reduction_indices`" in refused[0].message
