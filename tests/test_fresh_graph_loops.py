"""A loop whose passes each start a fresh default graph, read as a function per pass and
written back as the loop (constructs/fresh_graph_loops.py). The proofs of the rewrites:
fixtures/rewrite/fresh_graph_sweep, fresh_graph_blocks and their wrong counterparts."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.constructs.fresh_graph_loops import PREFIX, outlined, restored
from tf1gradfix.emit.restructure import restructure

HEAD = "import numpy as np\nimport tensorflow as tf\n\nX = np.ones((4, 2), np.float32)\n"
PASS = '''    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.zeros([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.GradientDescentOptimizer(rate).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(step, {x: X})
        print(rate, sess.run(loss, {x: X}))
'''
LOOP = "for rate in [0.1, 0.2]:\n" + PASS


def _read(source: str):
    return outlined(cst.parse_module(source))


def test_the_loop_is_read_as_a_function_called_per_pass():
    made = _read(HEAD + LOOP)
    assert made is not None
    code = made.module.code
    assert f"def {PREFIX}3(rate):\n" + PASS in code
    assert code.endswith(f"for rate in [0.1, 0.2]:\n    {PREFIX}3(rate)\n")
    assert made.spans == ((5, 15),)
    assert made.origin(code.splitlines().index("    step = tf.train.GradientDescentOptimizer(rate).minimize(loss)") + 1) == 10


def test_a_tuple_target_gives_one_parameter_each():
    made = _read(HEAD + LOOP.replace("for rate in [0.1, 0.2]:", "for rate, size in [(0.1, 1), (0.2, 2)]:"))
    assert made is not None and f"def {PREFIX}3(rate, size):" in made.module.code
    assert f"    {PREFIX}3(rate, size)\n" in made.module.code


def test_a_body_on_a_new_graph_is_a_pass_too():
    body = "    with tf.Graph().as_default():\n" + "".join("    " + line + "\n" for line in PASS.splitlines()[1:])
    assert _read(HEAD + "for rate in [0.1, 0.2]:\n" + body) is not None


@pytest.mark.parametrize("change", [
    ("    tf.reset_default_graph()\n", ""),                                # the graph is not fresh: TF1 keeps adding
    ("for rate in [0.1, 0.2]:\n", "for rate in [0.1, 0.2]:\n    if rate > 1:\n        break\n"),
    ("        print(rate, sess.run(loss, {x: X}))\n", "        print(rate, sess.run(loss, {x: X}))\nelse:\n    pass\n"),
    ("X = np.ones((4, 2), np.float32)\n", "X = np.ones((4, 2), np.float32)\nw = None\n"),   # a name bound outside
    ("for rate in", "for rates[0] in"),                                   # a target that is not a name
])
def test_a_loop_that_is_not_a_function_per_pass_is_not_read_so(change):
    old, new = change
    source = (HEAD + LOOP).replace(old, new, 1)
    assert source != HEAD + LOOP
    assert _read(source) is None


def test_a_name_the_body_binds_and_later_code_reads_keeps_the_loop():
    assert _read(HEAD + LOOP + "print(loss)\n") is None


def test_rewritten_the_body_goes_back_into_the_loop():
    result = restructure(cst.parse_module(HEAD + LOOP), "sweep.py")
    assert result.new_module is not None
    code = result.new_module.code
    assert PREFIX not in code and "for rate in [0.1, 0.2]:\n    w = tf.Variable(" in code
    assert "reset_default_graph" not in code and "Session" not in code


def test_a_body_that_cannot_go_back_is_not_written():
    new = cst.parse_module(f"def {PREFIX}0(rate):\n    total = rate\nfor rate in [1]:\n    {PREFIX}0(rate)\ntotal = 0\n")
    assert restored(new) is None
    back = restored(cst.parse_module(f"def {PREFIX}0(rate):\n    print(rate)\nfor rate in [1]:\n    {PREFIX}0(rate)\n"))
    assert back is not None and back.code == "for rate in [1]:\n    print(rate)\n"


def test_a_refusal_inside_the_pass_is_reported_at_the_users_line():
    source = HEAD + LOOP.replace("    step = tf.train", "    tf.add_to_collection('mine', loss)\n    step = tf.train")
    result = restructure(cst.parse_module(source), "sweep.py")
    assert result.new_module is None
    lines = source.splitlines()
    manual = [d for d in result.diagnostics if d[4] == "manual"]
    assert manual and all(d[0] - 1 < len(lines) for d in manual)
    assert any("add_to_collection" in lines[d[0] - 1] for d in manual), manual


def test_a_message_names_the_loop_not_the_function_read_for_it():
    from tf1gradfix.constructs.fresh_graph_loops import spoken
    assert spoken(f"graph built in one function and run in another (`{PREFIX}12`)") == \
        "graph built in one function and run in another (the loop's body)"
