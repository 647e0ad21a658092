"""Build methods a script calls right after a model's construction, read as the end of its
`__init__` (constructs/host_builds.py): only where Python's order is the same. The proof of
a rewrite: fixtures/rewrite/model_class_built_after_construction and its wrong counterparts."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.constructs.host_builds import dispatched, moved

CLASS = '''import tensorflow as tf


class Net:
    def __init__(self, width):
        self.width = width

    def build(self):
        self.x = tf.placeholder(tf.float32, [None, self.width])

    def grow(self):
        self.y = self.x * 2.0

'''


def _moved(script: str) -> str | None:
    out = moved(cst.parse_module(CLASS + script))
    return None if out is None else out.code


def test_calls_right_after_the_construction_end_init_in_their_order():
    code = _moved("net = Net(3)\nnet.build()\nnet.grow()\nprint(net.x)\n")
    assert code is not None
    assert "        self.width = width\n        self.build()\n        self.grow()\n" in code
    assert "net.build()" not in code and "net.grow()" not in code and "net = Net(3)\nprint(net.x)\n" in code


def test_inside_a_main_block():
    code = _moved('if __name__ == "__main__":\n    net = Net(3)\n    net.build()\n')
    assert code is not None and "self.build()" in code and "net.build()" not in code


@pytest.mark.parametrize("script", [
    "net = Net(3)\nprint(1)\nnet.build()\n",             # a statement between: Python runs it first
    "net = Net(3)\nnet.build()\nother = Net(4)\n",       # a second construction would build too
    "net = Net(3)\nresult = net.build()\n",             # its value is used
    "net = Net(3)\nnet.build(1)\n",                     # given arguments
    "net = Net(3)\nnet.width.build()\n",                # not the instance's method
    "net = Net(3)\nnet.missing()\n",                    # not a method of the class
    "net = Net(3)\nkind = Net\nnet.build()\n",          # the class named otherwise
])
def test_other_orders_and_forms_are_left_as_written(script):
    assert _moved(script) is None


def test_an_init_that_may_return_early_is_left_as_written():
    source = CLASS.replace("        self.width = width\n", "        self.width = width\n        if width < 0:\n            return\n")
    assert moved(cst.parse_module(source + "net = Net(3)\nnet.build()\n")) is None


def test_two_classes_each_built_after_construction():
    other = CLASS.replace("class Net:", "class Head:") .split("import tensorflow as tf\n", 1)[1]
    out = moved(cst.parse_module(CLASS + other + "net = Net(3)\nnet.build()\nhead = Head(2)\nhead.grow()\n"))
    assert out is not None
    code = out.code
    assert code.count("self.build()") == 1 and code.count("self.grow()") == 1
    assert "net.build()" not in code and "head.grow()" not in code


def test_a_method_running_the_graph_ends_the_build_calls():
    """`gan.build_model()` then `gan.train()`: train runs the session, so it is the script's
    training, left where it is, and the calls before it still end `__init__`."""
    source = CLASS.replace("    def grow(self):\n        self.y = self.x * 2.0\n",
                           "    def fit(self, ):\n        tf.global_variables_initializer().run()\n")
    out = moved(cst.parse_module(source + "net = Net(3)\nnet.build()\nnet.fit()\n"))
    assert out is not None
    assert "        self.build()\n" in out.code and "self.fit()" not in out.code and "net.fit()\n" in out.code


@pytest.mark.parametrize("script, expected", [
    ("chosen = None\nfor kind in [Net]:\n    chosen = kind(3)\nchosen.build()\n", [("chosen.build()", "`Net`", "kind")]),
    ("kinds = {'net': Net}\nmodel = kinds.get('net')(3)\nmodel = pick('net')(3)\n", []),   # (not a name call)
    ("def make(width):\n    return Net(width)\n\n\nnets = [Net]\nmodel = make(3)\nmodel.build()\n", []),   # (a function)
    ("model = Net(3)\nmodel.build()\n", []),   # (no listing: a construction by name)
])
def test_a_build_call_on_an_instance_of_a_listed_class_is_dispatched(script, expected):
    found = dispatched(cst.parse_module(CLASS + script))
    assert [(call, classes, maker) for _, call, classes, _, maker in found] == expected
