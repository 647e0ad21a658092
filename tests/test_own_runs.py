"""What a model module runs only as a script (tf1gradfix/run/own_runs.py): its `__main__`
block and the functions only it reaches that open a session. Importers read the module
without them; the module is one more entry point of its group (test_project_fixtures.py)."""

from __future__ import annotations

import ast

import pytest

from tf1gradfix.run import own_runs
from tf1gradfix.run.rewrite_check import split_lines

MODULE = '''
import tensorflow as tf


def rows(n):
    return list(range(n))


def _session_of(model):
    return tf.Session()


def check(model):
    with _session_of(model) as sess:
        sess.run(model.out, {model.x: rows(3)})


class Model:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None])
        self.out = 2 * self.x


if __name__ == "__main__":
    check(Model())
'''


def _own(source: str) -> list[str]:
    return [getattr(s, "name", "__main__") for s in own_runs.own_part(ast.parse(source))]


def test_the_main_block_and_the_session_functions_only_it_reaches_are_the_modules_own():
    assert _own(MODULE) == ["_session_of", "check", "__main__"]   # (`rows`, host code, stays for importers)


def test_a_function_the_rest_of_the_module_names_is_not_its_own_nor_what_only_it_reaches():
    named = MODULE.replace("self.out = 2 * self.x", "self.out = 2 * self.x\n        self.check = check")
    assert _own(named) == ["__main__"]
    helper = MODULE.replace("self.out = 2 * self.x", "self.out = 2 * self.x\n        _session_of(self)")
    assert _own(helper) == ["__main__"]   # (`check` opens its session through the class's: importers run it)


@pytest.mark.parametrize("test", ['"__main__" == __name__', '__name__ == "__main__"'])
def test_the_main_block_is_read_either_way_round(test):
    assert _own(MODULE.replace('__name__ == "__main__"', test))[-1] == "__main__"


@pytest.mark.parametrize("test", ['__name__ != "__main__"', '__name__ == "main"', 'name == "__main__"'])
def test_other_conditions_are_not_a_main_block(test):
    assert _own(MODULE.replace('__name__ == "__main__"', test)) == []


def test_a_main_block_with_an_else_is_not_one():
    assert _own(MODULE + "else:\n    print('imported')\n") == []


def test_importers_read_the_module_with_its_own_lines_left_empty():
    tree = ast.parse(MODULE)
    data = MODULE.replace("\n", "\r\n").encode()
    blank = own_runs.blanked(data, own_runs.own_part(tree), split_lines)
    assert blank.count(b"\r\n") == data.count(b"\r\n")   # (each line where it was)
    assert b"check" not in blank and b"Session" not in blank and b"def rows" in blank
    assert ast.parse(blank.decode())


def test_tf_app_run_reaches_the_modules_main():
    """`tf.app.run()` calls `__main__.main`: the module's `main` is its own part too."""
    source = MODULE.replace("    check(Model())\n", "    tf.app.run()\n") + "\n\ndef main(_):\n    check(Model())\n"
    assert _own(source) == ["_session_of", "check", "__main__", "main"]
