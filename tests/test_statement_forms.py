"""Plain statement forms (constructs/statement_forms.py): lines of several statements are
split, augmented assignments of graph values written out, and what is still refused is
reported at the user's own line. The proof of a rewrite: fixtures/rewrite/statement_forms_l2
and its wrong counterparts in fixtures/verify/statement_forms_l2."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.statement_forms import plain_form
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

HEAD = "import numpy as np\nimport tensorflow as tf\n"


def _refusals(source: str) -> list[tuple[int, str]]:
    result = process_source("input.py", source.encode(), CodeFilter())
    return [(f.line, f.message) for f in result.findings if f.code.startswith("TFG9")]


def test_written_out_keeps_the_operand_whole_and_its_order():
    module = cst.parse_module("x -= a - b\ny /= 2.0\nz.w += f(v)\nq += [t]\nd[k] += t\n")
    plain, _ = plain_form(module, {1, 2, 3, 4, 5})
    assert plain is not None
    assert plain.code == "x = x - (a - b)\ny = y / 2.0\nz.w = z.w + f(v)\nq += [t]\nd[k] += t\n"


def test_a_chained_assignment_of_names_is_one_binding_then_aliases():
    plain, origin = plain_form(cst.parse_module("a = b = f(1)\nc = 2; d = e = g(3)  # t\nh = 4\n"), {1, 2})
    assert plain is not None
    assert plain.code == "a = f(1)\nb = a\nc = 2\nd = g(3)\ne = d  # t\nh = 4\n"
    assert [origin(line) for line in range(1, 7)] == [1, 1, 2, 2, 2, 3]


def test_split_lines_map_back_to_the_users_lines():
    source = ("a = f(1,\n      2); b = 3   # note\n# between\nc = 4; d = 5; e = 6\n"
              "g = 7\n")
    plain, origin = plain_form(cst.parse_module(source), set())
    assert plain is not None
    assert plain.code == "a = f(1,\n      2)\nb = 3   # note\n# between\nc = 4\nd = 5\ne = 6\ng = 7\n"
    lines = plain.code.splitlines()
    found = {text.split(" ")[0]: origin(i + 1) for i, text in enumerate(lines) if " = " in text}
    assert found == {"a": 1, "b": 2, "c": 4, "d": 4, "e": 4, "g": 5}


def test_a_refusal_after_split_lines_names_the_users_line():
    source = HEAD + (
        "x = tf.placeholder(tf.float32, [None, 2]); w = tf.Variable(tf.ones([2, 1]), name='w')\n"
        "y = tf.matmul(x, w); parts = [y]\n"
        "parts += [tf.reduce_sum(w)]\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer()); print(sess.run(parts, {x: [[1.0, 2.0]]}))\n")
    assert _refusals(source) == [(5, "augmented assignment of a graph value into a container or an item")]


def test_a_host_start_rebound_to_a_graph_value_moves_into_the_function_with_it():
    source = HEAD + (
        "x = tf.placeholder(tf.float32, [None, 2])\nw = tf.Variable(tf.ones([2, 1]), name='w')\n"
        "total = 0.0\ntotal += tf.reduce_sum(tf.matmul(x, w))\n"
        "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
        "    print(sess.run(total, {x: [[1.0, 2.0]]}))\n")
    code = process_source("input.py", source.encode(), CodeFilter()).new_source.decode()
    assert "    total = 0.0\n    total = total + tf.reduce_sum(tf.matmul(x, w))\n" in code


def test_a_host_start_read_before_it_is_rebound_is_refused_at_its_line():
    source = HEAD + (
        "x = tf.placeholder(tf.float32, [None, 2])\nw = tf.Variable(tf.ones([2, 1]), name='w')\n"
        "total = 0.0\nprint('from', total)\ntotal += tf.reduce_sum(tf.matmul(x, w))\n"
        "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
        "    print(sess.run(total, {x: [[1.0, 2.0]]}))\n")
    assert _refusals(source) == [(7, "`total` holds a host or constant value and is rebound to a graph value "
                                     "computed from it")]


def test_a_refused_file_with_split_lines_stays_byte_for_byte():
    source = HEAD + ("x = tf.placeholder(tf.float32, [None, 2]); w = tf.Variable(tf.ones([2, 1]), name='w')\n"
                     "q = tf.FIFOQueue(3, tf.float32); y = tf.matmul(x, w)\n"
                     "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                     "    print(sess.run(y, {x: [[1.0, 2.0]]}))\n")
    result = process_source("input.py", source.encode(), CodeFilter())
    assert result.new_source is None or b"Session" in result.new_source and b"; w = tf.Variable" in result.new_source
    assert any(f.code.startswith("TFG9") and f.line == 4 for f in result.findings)


def test_host_augmented_assignments_in_the_run_loop_are_left_as_written():
    source = HEAD + ("x = tf.placeholder(tf.float32, [None, 2])\nw = tf.Variable(tf.ones([2, 1]), name='w')\n"
                     "y = tf.reduce_sum(tf.matmul(x, w))\n"
                     "total = np.zeros(1)\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                     "    for i in range(3):\n        total += sess.run(y, {x: [[1.0, 2.0]]})\n    print(total)\n")
    result = process_source("input.py", source.encode(), CodeFilter())
    assert result.new_source is not None and b"total += " in result.new_source


def test_a_layer_call_moves_with_the_calls_of_its_own_arguments():
    """Its arguments' calls ran just before it in TF1 too; a call completing before it
    elsewhere in the statement stops the move (the op it made keeps its place)."""
    from tf1gradfix.constructs.layer_hoist import hoisted

    def moved(text: str) -> list[str] | None:
        small = cst.parse_statement(text).body[0]
        out = hoisted(small, set())
        return None if out is None else [cst.Module([]).code_for_node(s) for s in out]

    assert moved("h = tf.layers.dense(tf.layers.dense(tf.concat([z, e], 1), 8), 2)\n") == [
        "h_dense = tf.layers.dense(tf.concat([z, e], 1), 8)", "h = tf.layers.dense(h_dense, 2)"]
    assert moved("g = tf.nn.sigmoid(tf.layers.dense(tf.add_n([x[:, k] for k in ks]), 1))\n") == [
        "g_dense = tf.layers.dense(tf.add_n([x[:, k] for k in ks]), 1)", "g = tf.nn.sigmoid(g_dense)"]
    assert moved("b = tf.concat([tf.reduce_mean(x, 1), tf.layers.dense(x, 3)], 1)\n") is None


def test_a_loss_written_in_the_update_call_goes_on_a_line_of_its_own():
    source = ("d_step = tf.train.AdamOptimizer(0.1, beta1=0.5).minimize(-d_loss, var_list=d_vars)\n"
              "opt.minimize(var_list=[w], loss=(err * 0.5))\n"
              "pairs = opt.compute_gradients(err + 0.1 * tf.nn.l2_loss(w))\n")
    plain, origin = plain_form(cst.parse_module(source), {1, 2, 3})
    assert plain is not None
    assert plain.code == ("neg_d_loss = -d_loss\n"
                          "d_step = tf.train.AdamOptimizer(0.1, beta1=0.5).minimize(neg_d_loss, var_list=d_vars)\n"
                          "update_loss = err * 0.5\nopt.minimize(var_list=[w], loss=update_loss)\n"
                          "pairs_loss = err + 0.1 * tf.nn.l2_loss(w)\npairs = opt.compute_gradients(pairs_loss)\n")
    assert [origin(line) for line in range(1, 7)] == [1, 1, 2, 2, 3, 3]


def test_a_loss_stays_where_an_op_could_be_made_before_it():
    # (an optimizer built from a tensor, an argument before the loss that calls: their ops come first)
    source = ("s = tf.train.GradientDescentOptimizer(tf.constant(0.1)).minimize(-loss)\n"
              "t = opt.minimize(var_list=f(w), loss=-loss)\n"
              "u = make_opt().minimize(loss * 2.0)\n")
    plain, _ = plain_form(cst.parse_module(source), {1, 2, 3})
    assert plain is None


def test_a_loss_expression_is_read_as_its_named_form():
    source = HEAD + (
        "x = tf.placeholder(tf.float32, [None, 2])\nw = tf.Variable(tf.ones([2, 1]))\n"
        "gain = tf.reduce_mean(tf.matmul(x, w))\n"
        "step = tf.train.GradientDescentOptimizer(0.1).minimize(-gain)\n"
        "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
        "    sess.run(step, {x: [[1.0, 2.0]]})\n")
    assert _refusals(source) == []
