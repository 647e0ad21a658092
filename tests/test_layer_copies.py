"""Layer functions copied at each call (constructs/layer_copies.py, through inlined_calls.py).
The proofs: fixtures/rewrite/layer_function_per_layer and layer_function_through_factories,
with their wrong counterparts."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.inlined_calls import inlined
from tf1gradfix.constructs.layer_copies import hoisted

HEAD = "import tensorflow as tf\n\n\n"
FACTORIES = '''def weights(shape):
    return tf.Variable(tf.zeros(shape))


def layer(x, shape):
    w = weights(shape)
    return tf.matmul(x, w)


'''
GRAPH = "x = tf.placeholder(tf.float32, [None, 3])\nh = layer(x, [3, 3])\nh = tf.nn.relu(layer(h, [3, 2]))\n"


def test_a_layer_function_making_variables_through_a_factory_is_copied_and_the_factory_stays():
    made = inlined(cst.parse_module(HEAD + FACTORIES + GRAPH), repeated=True)
    assert made is not None and made.copies == (("layer", 2),)
    code = made.module.code
    assert "def weights(shape):" in code and "def layer(" not in code
    assert "h_layer = tf.matmul(h, w_2)\nh = tf.nn.relu(h_layer)\n" in code


def test_a_nested_call_is_lifted_only_where_python_makes_it_first():
    line = cst.parse_statement("h = tf.nn.relu(layer(h, 2))\n")
    lifted = hoisted(line, {"layer"}, set())
    assert lifted is not None and [cst.Module(body=[s]).code for s in lifted] == [
        "h_layer = layer(h, 2)\n", "h = tf.nn.relu(h_layer)\n"]
    for text in ("h = tf.concat([tf.exp(h), layer(h, 2)], 1)\n",   # (tf.exp runs first)
                 "h = layer(h, 2) if flag else h\n",                # (a condition first)
                 "h = layer(h, 2)\n",                                # (the value itself)
                 "h = tf.nn.relu(other(h, 2))\n"):                   # (not a copied function)
        assert hoisted(cst.parse_statement(text), {"layer"}, set()) is None, text


def test_a_function_asking_for_its_variables_by_name_is_not_copied():
    source = (HEAD + FACTORIES + GRAPH).replace("return tf.Variable(tf.zeros(shape))", "return tf.get_variable('w', shape)")
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is None or "layer" not in dict(made.copies)


def test_a_call_nested_twice_is_lifted_when_python_still_makes_it_first():
    source = (HEAD + FACTORIES + GRAPH).replace("tf.nn.relu(layer(h, [3, 2]))", "tf.nn.relu(tf.exp(layer(h, [3, 2])))")
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is not None and dict(made.copies) == {"layer": 2}
    assert "h_layer = tf.matmul(h, w_2)\nh = tf.nn.relu(tf.exp(h_layer))\n" in made.module.code


SCOPED = '''def layer(x, n_in, n_out, scope):
    with tf.name_scope(scope):
        w = tf.Variable(tf.zeros([n_in, n_out]))
        out = tf.matmul(x, w)
        return out


'''


def test_a_scope_its_caller_names_is_opened_at_each_call_with_the_result_bound_inside_it():
    source = HEAD + SCOPED + "x = tf.placeholder(tf.float32, [None, 3])\nh = layer(x, 3, 4, 'one')\nh = layer(h, 4, 2, 'two')\n"
    assert inlined(cst.parse_module(source)) is None   # (only the reading copying layer functions)
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is not None and made.copies == (("layer", 2),)
    assert "with tf.name_scope('two'):\n    w_2 = tf.Variable(tf.zeros([4, 2]))\n    out_2 = tf.matmul(h, w_2)\n    h = out_2\n" \
        in made.module.code


def test_a_scope_named_by_something_else_than_a_parameter_is_not_followed():
    source = HEAD + SCOPED.replace("tf.name_scope(scope)", "tf.name_scope(scope + '_x')") \
        + "x = tf.placeholder(tf.float32, [None, 3])\nh = layer(x, 3, 4, 'one')\nh = layer(h, 4, 2, 'two')\n"
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is None or not made.copies


def test_a_layer_function_called_in_a_loop_is_copied_into_the_loop():
    source = HEAD + FACTORIES.replace("tf.zeros(shape)", "tf.zeros(shape), name='w%d' % len(shape)") \
        + "x = tf.placeholder(tf.float32, [None, 3])\nh = x\nfor k in range(2):\n    h = h + layer(h, [3, 3])\n"
    made = inlined(cst.parse_module(source), repeated=True)
    assert made is not None and dict(made.copies) == {"layer": 1}
    assert "for k in range(2):\n    shape_2 = [3, 3]\n    w = weights(shape_2)\n    h_layer = tf.matmul(h, w)\n    h = h + h_layer\n" in made.module.code
    plain = inlined(cst.parse_module(source))   # (the other readings leave loops alone)
    assert plain is None or "    h = h + layer(h, [3, 3])\n" in plain.module.code
