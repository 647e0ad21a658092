"""tf1gradfix.cst.printing prints what LibCST's own printer prints."""

from __future__ import annotations

import libcst as cst
import pytest
from test_walk import MODULES as FIXTURE_MODULES

from tf1gradfix.cst import printing, walk

# Every fixture that parses (the same list tests/test_walk.py walks).
MODULES = list(FIXTURE_MODULES)
# Files whose layout the fixtures do not all have: tabs, CRLF, an encoding, odd comments.
ODD = {
    "tabs_crlf": b"import tensorflow as tf\r\nif True:\r\n\tx = tf.log(  # c\r\n\t\t1.0)\r\n\r\n\tdef f(a,\r\n b):\r\n\t\treturn a\r\n",
    "latin1": "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\nclass A(object):\n  def m(self): pass  # two spaces\n".encode("latin-1"),
    "backslashes": b"x = 1 + \\\n    2\nwith a as b, \\\n     c as d:\n    pass\n",
}
MODULES += [(name, cst.parse_module(data)) for name, data in ODD.items()]


def _every_file_slow_for_some():
    """All files; the fast suite takes every sixth and the odd layouts (the full run has them all)."""
    return [pytest.param(path, module, id=path, marks=() if i % 6 == 0 or path in ODD else pytest.mark.slow)
            for i, (path, module) in enumerate(MODULES)]


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_module_and_nodes_print_as_libcst_prints_them(path, module):
    assert printing.source_bytes(module) == module.bytes
    for node in walk.walk(module):
        if isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement, cst.Call, cst.Attribute, cst.Arg)):
            assert printing.code_for_node(module, node) == module.code_for_node(node)
