"""Which branch of a model class's construction the file decides (constructs/class_settings.py):
the tests it reads as settings, the instantiations that fix them, and why a value is not known.
The rewrite built on it is proven by fixtures/rewrite/model_class_settings_branches."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tf1gradfix.constructs.class_settings import decide_module

CLASS = '''\
import tensorflow as tf


class Net:
    def __init__(self, n, training, mode="sum", rate=0.5):
        self.mode = mode
        self.x = tf.placeholder(tf.float32, [None, n])
        if {test}:
            pass
        self.build()

    def build(self):
        if {method_test}:
            pass

{main}
'''


def _decisions(test="training", method_test="True", main="net = Net(3, training=True)"):
    module = cst.parse_module(CLASS.format(test=test, method_test=method_test, main=main))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def qualified(func):
        return "tensorflow.placeholder" if cst.Module([]).code_for_node(func) == "tf.placeholder" else None

    found = decide_module(module, qualified, lambda node: positions[node].start.line)["Net"].by_place
    return found.get(("__init__", 0)), found.get(("build", 0))


@pytest.mark.parametrize("test, main, taken", [
    ("training", "net = Net(3, training=True)", True),
    ("not training", "net = Net(3, True)", False),
    ("training and rate < 1", "net = Net(3, training=True)", True),
    ("training and undefined_name", "net = Net(3, training=False)", False),   # (`and` stops at the first false)
    ("self.mode == 'sum' or rate > 1", "net = Net(3, False)", True),
    ("n in (2, 3)", "net = Net(3, False)\nother = Net(3, training=False)", True),
    ("training", "flag = True\nnet = Net(3, training=flag)", True),
    ("training", "def main():\n    on = False\n    return Net(3, on)", False),
    ("training", "if __name__ == '__main__':\n    flag = False\n    net = Net(3, training=flag)", False),
    ("training", "def main():\n    for _ in range(2):\n        on = True\n        net = Net(3, on)", True),
    ("training", "TRAIN = False\n\n\ndef main():\n    return Net(3, TRAIN)", False),
    ("mode == 'max' and rate > 1", "def main():\n    rate = 2.0\n    return Net(3, False, 'max', rate)", True),
])
def test_a_test_of_settings_every_instantiation_fixes_is_decided(test, main, taken):
    decision, _ = _decisions(test, main=main)
    assert decision is not None and decision.taken is taken


@pytest.mark.parametrize("test, main, why", [
    ("training", "a = Net(3, training=True)\nb = Net(3, training=False)", "varies"),
    ("training", "import sys\nnet = Net(3, training=len(sys.argv) > 1)", "runtime"),
    ("training", "flag = True\nflag = False\nnet = Net(3, training=flag)", "runtime"),
    ("training", "def main(flag):\n    return Net(3, flag)", "runtime"),
    ("training", "def main():\n    net = Net(3, training=flag)\n    flag = True", "runtime"),   # (bound after)
    ("training", "def main(first):\n    if first:\n        on = True\n    return Net(3, on)", "runtime"),
    ("training", "on = True\n\n\ndef flip():\n    global on\n    on = False\n\n\nnet = Net(3, on)", "runtime"),
    ("training", "for on in (True, False):\n    net = Net(3, on)", "runtime"),
    ("training", "args = (3, True)\nnet = Net(*args)", "runtime"),
    ("training", "make = Net\nnet = make(3, True)", "used"),
    ("training", "", "unfixed"),
])
def test_a_setting_the_file_does_not_fix_is_not_known_and_says_why(test, main, why):
    decision, _ = _decisions(test, main=main)
    assert decision is not None and decision.taken is None and decision.why == why


@pytest.mark.parametrize("test", ["self.x", "len(n)", "self.unset", "self.x == 3", "rate is 0.5"])
def test_what_the_construction_does_not_fix_is_no_decision(test):
    decision, _ = _decisions(test)
    assert decision is None


@pytest.mark.parametrize("method_test, taken", [
    ("self.x is not None", True),
    ("self.mode != 'sum'", False),
    ("n > 2", None),   # (a build method's `n` is no parameter of `__init__`)
])
def test_a_build_method_reads_settings_set_before_the_first_method_call(method_test, taken):
    _, decision = _decisions(method_test=method_test)
    assert (decision.taken if decision is not None else None) is taken
