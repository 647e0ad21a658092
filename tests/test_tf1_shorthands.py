"""TF1 names TF2 lacks that TensorFlow's upgrade table still translates: the cast
shorthands (`tf.to_float`) it writes as `tf.cast(x, dtype=...)`, which restructured
programs get (files that stay TF1 keep theirs: the op's default name differs; a call
whose form the edit cannot follow is left for the rewrite to refuse), and the functions
it keeps under `tf.compat.v1` (`div`, `logging`)."""

from __future__ import annotations

import pytest

from tf1gradfix.detect.casts import hits, table
from tf1gradfix.emit.keyword_renames import EVERY, renamed
from tf1gradfix.detect.keywords import SAFE
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter


def _cast(text: str) -> str:
    return renamed(("import tensorflow as tf\n" + text).encode(), EVERY).decode()[len("import tensorflow as tf\n"):]


def test_the_table_is_the_upgrade_tables_casts():
    assert table() == {"to_bfloat16": "bfloat16", "to_complex128": "complex128", "to_complex64": "complex64",
                       "to_double": "float64", "to_float": "float32", "to_int32": "int32", "to_int64": "int64"}


def test_a_restructured_program_gets_tf_cast():
    assert _cast("y = tf.to_float(x)\n") == "y = tf.cast(x, dtype=tf.float32)\n"
    assert _cast("y = tf.to_int64(x, 'n')\n") == "y = tf.cast(x, name='n', dtype=tf.int64)\n"
    assert _cast("y = tf.to_double(x=v, name='n')\n") == "y = tf.cast(x=v, name='n', dtype=tf.float64)\n"
    assert _cast("y = tf.to_float(tf.to_int32(x > 0))\n") == \
        "y = tf.cast(tf.cast(x > 0, dtype=tf.int32), dtype=tf.float32)\n"
    assert _cast("y = tf.compat.v1.to_float(\n    x,\n)\n") == \
        "y = tf.compat.v1.cast(\n    x, dtype=tf.compat.v1.float32,\n)\n"


def test_forms_the_edit_cannot_follow_are_left_as_written():
    for text in ("from tensorflow import to_float\ny = to_float(x)\n", "y = tf.to_float(*args)\n",
                 "y = tf.to_float(x, (name))\n", "y = tf.to_float(x, **options)\n"):
        assert _cast(text) == text
        assert not any(h.editable for h in hits(("import tensorflow as tf\n" + text).encode()))
    assert _cast("y = np.to_float(x)\n") == "y = np.to_float(x)\n"


def test_a_file_that_stays_tf1_keeps_its_shorthands():
    source = b"import tensorflow as tf\n\ndef rate(h):\n    return tf.reduce_mean(tf.to_float(h), keep_dims=True)\n"
    assert renamed(source, frozenset({SAFE})) == source.replace(b"keep_dims", b"keepdims")
    result = process_source("rate.py", source, CodeFilter())
    assert result.new_source == source.replace(b"keep_dims", b"keepdims")
    assert any(f.code == "TFG402" and "to_float" in f.message and not f.fixed for f in result.findings)


def test_division_and_logging_keep_tf1s_own_functions_in_every_file():
    """`tf.div` (Python 2 division: floor for integers) and `tf.logging` have no TF2 name;
    TF2 still ships TF1's under `tf.compat.v1`, which build no graph: the upgrade table's
    spelling, in a file that stays TF1 too."""
    source = (b"import tensorflow as tf\n\ndef half(h):\n    tf.logging.info('halving')\n"
              b"    return tf.div(h, 2)\n")
    result = process_source("half.py", source, CodeFilter())
    assert result.new_source == source.replace(b"tf.logging", b"tf.compat.v1.logging").replace(
        b"tf.div", b"tf.compat.v1.div")


def test_a_restructured_program_gets_tf1s_own_body_of_a_function_tf2_lacks():
    assert _cast("y = tf.nn.xw_plus_b(h, w, b, name='scores')\n") == \
        "y = tf.nn.bias_add(tf.matmul(h, w), b, name='scores')\n"
    assert _cast("y = tf.nn.relu_layer(x=h, weights=w[0], biases=b)\n") == \
        "y = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w[0]), b))\n"
    assert _cast("y = tf.compat.v1.nn.xw_plus_b(tf.nn.xw_plus_b(h, w, b), v, c)\n") == \
        "y = tf.compat.v1.nn.bias_add(tf.compat.v1.matmul(tf.nn.bias_add(tf.matmul(h, w), b), v), c)\n"
    for text in ("y = tf.nn.xw_plus_b(*parts)\n", "y = tf.nn.xw_plus_b(h, w)\n", "y = tf.nn.xw_plus_b(h, w, b, bias=1)\n",
                 "from tensorflow.nn import xw_plus_b\ny = xw_plus_b(h, w, b)\n"):
        assert _cast(text) == text, text
    source = b"import tensorflow as tf\n\ndef score(h, w, b):\n    return tf.nn.xw_plus_b(h, w, b)\n"
    result = process_source("score.py", source, CodeFilter())
    assert result.new_source in (None, source)   # (a file that stays TF1 keeps its call)
    assert any(f.code == "TFG402" and "tf.nn.bias_add(tf.matmul(x, weights), biases)" in f.message for f in result.findings)


@pytest.mark.tf
def test_the_bodies_are_tf1s():
    """The expression computes what TF1's function does, to the bit, where both run."""
    import numpy as np
    import tensorflow as tf

    rs = np.random.RandomState(0)
    h, w, b = (rs.randn(*shape).astype(np.float32) for shape in ((4, 3), (3, 5), (5,)))
    assert np.array_equal(tf.compat.v1.nn.xw_plus_b(h, w, b), tf.nn.bias_add(tf.matmul(h, w), b))
    assert np.array_equal(tf.compat.v1.nn.relu_layer(h, w, b), tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w), b)))
