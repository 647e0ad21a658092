"""Graph statements under a host `if`, read outside it (constructs/guarded_graph.py).
The proof of a rewrite: fixtures/rewrite/host_if_graph_settings and its wrong counterparts
in fixtures/verify/host_if_graph_settings."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tf1gradfix.constructs.guarded_graph import lowered, restored
from tf1gradfix.emit.restructure import restructure

HEAD = '''import sys
import numpy as np
import tensorflow as tf

wide = len(sys.argv) > 3
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]))
out = tf.matmul(x, w)
'''

RUN = '''with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(out, feed_dict={x: np.ones([3, 2])}))
'''


def _lowered(block: str):
    return lowered(cst.parse_module(HEAD + textwrap.dedent(block) + RUN))


def _body(block: str) -> str:
    made = _lowered(block)
    assert made is not None
    return made.module.code[len(HEAD):-len(RUN)]


def test_a_rebound_graph_value_is_its_conditional_expression():
    assert _body("if wide:\n    out += 1.0\n") == "out = out + 1.0 if wide else out\n"


def test_a_new_graph_value_is_kept_unbound_where_the_test_fails():
    assert _body("if wide:\n    twice = out * 2.0\n") == "twice = out * 2.0 if wide else None\n"


def test_a_placeholder_is_made_outside_the_if_as_it_is():
    assert _body("if wide:\n    z = tf.placeholder(tf.float32, [None, 2])\n") == \
        "z = tf.placeholder(tf.float32, [None, 2])\n"


def test_host_statements_keep_their_if_and_graph_ones_before_or_after_move():
    body = _body('''
        if wide:
            first = out + 1.0
            note = "wide"
            print(note)
            last = first * 3.0
        ''')
    assert body == ('\nfirst = out + 1.0 if wide else None\nif wide:\n    note = "wide"\n    print(note)\n'
                    'last = first * 3.0 if wide else None\n')


def test_a_test_its_block_binds_again_moves_only_new_names_unconditionally():
    body = _body('''
        if wide:
            wide = "plotted"
            shown = out * 2.0
        ''')
    assert body == '\nif wide:\n    wide = "plotted"\nshown = out * 2.0\n'
    assert _lowered('''
        if wide:
            wide = False
            out = out * 2.0
        ''') is None   # (a rebinding would read the test again, which no longer gives what it gave)


@pytest.mark.parametrize("block", [
    "if wide:\n    print(1)\n    out = out * 2.0\n    print(2)\n",     # between host statements
    "if wide:\n    out = out * 2.0\nelif out:\n    out = out * 3.0\n",  # an `elif`
    "if wide:\n    out = out * 2.0\nelse:\n    print(out)\n",           # host code in a branch
    "if wide:\n    twice = out * 2.0\nelse:\n    out = twice\n",       # a name only the other branch binds
    "if flag():\n    out = out * 2.0\n",                             # a test that calls
    "if out is not None:\n    out = out * 2.0\n",                    # a test of a graph value
    "if wide:\n    out[0] = 1.0\n",                                  # an item target
    "if __name__ == '__main__':\n    out = out * 2.0\n",             # the main guard
    "if wide:\n    for k in range(2):\n        out = out * 2.0\n",   # graph code in a loop inside
])
def test_forms_read_as_written(block):
    assert _lowered(block) is None


def test_an_attribute_the_file_assigns_keeps_the_test_unsteady():
    assert _lowered("class S:\n    on = True\nif S.on:\n    out = out * 2.0\nS.on = False\n") is None


def test_lines_map_back_to_the_user_lines():
    made = _lowered("if wide:\n    note = 1\n    twice = out * 2.0\n")
    lines = made.module.code.splitlines()
    moved = next(i for i, line in enumerate(lines, 1) if line.startswith("twice"))
    assert moved in made.moved and made.origin(moved) == HEAD.count("\n") + 3
    assert made.spans == ((HEAD.count("\n") + 1, HEAD.count("\n") + 3),)


def test_the_if_form_is_written_back_and_one_test_joins_its_statements():
    tests = frozenset({("a = f(x) if c else None", "c", "a = f(x)"), ("b = b + a if c else b", "c", "b = b + a")})
    code = "def step(x):\n    a = f(x) if c else None\n    b = b + a if c else b\n    return b\n"
    assert restored(cst.parse_module(code), tests).code == \
        "def step(x):\n    if c:\n        a = f(x)\n        b = b + a\n    return b\n"


def test_a_moved_statement_that_is_no_tensor_refuses_the_reading():
    source = HEAD + "mode = 1\nif mode:\n    extra = tf.Variable(tf.ones([2, 1]))\nmode = 2\n" + RUN
    result = restructure(cst.parse_module(source), "p.py")
    assert result.new_module is None
    assert any(d[2] == "TFG904" and "host `if`" in d[3] and d[0] == HEAD.count("\n") + 3 for d in result.diagnostics)


def test_the_rewrite_keeps_the_users_if_in_the_step_function():
    source = HEAD + "if wide:\n    out += tf.reduce_sum(w)\n" + RUN
    result = restructure(cst.parse_module(source), "p.py")
    assert result.new_module is not None
    assert "    if wide:\n        out = out + tf.reduce_sum(w)\n" in result.new_module.code


def test_both_branches_are_read_each_with_its_test_and_written_back_as_if_else():
    assert _body("if wide:\n    out += 1.0\nelse:\n    out = out * 3.0\n") == (
        "out = out + 1.0 if wide else out\nout = out * 3.0 if not wide else out\n")
    source = HEAD + "if wide:\n    out += tf.reduce_sum(w)\nelse:\n    out = out * 3.0\n" + RUN
    result = restructure(cst.parse_module(source), "p.py")
    assert result.new_module is not None
    assert ("    if wide:\n        out = out + tf.reduce_sum(w)\n    else:\n        out = out * 3.0\n"
            in result.new_module.code)
