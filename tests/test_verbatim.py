"""A Verbatim statement prints what LibCST prints for the parsed text, wherever it stands.

`fits` decides when that holds; the property is checked on every statement of
every fixture (its text as the generator would hand it over), placed at the
top level, in a function and in a block with its own indentation.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.cst import printing, walk
from tf1gradfix.cst.verbatim import Verbatim, fits

ROOT = Path(__file__).resolve().parent.parent

# Where a generated function can stand: the `pass` is replaced by it.
PLACES = {
    "top_level": ("import x\n\npass\n", 2),
    "in_function": ("def outer():\n    x = 1\n    pass\n", 1),
    "own_indent": ("def outer():\n    if x:\n      y = 1\n      pass\n", 1),
}


class _Put(cst.CSTTransformer):
    def __init__(self, statements):
        super().__init__()
        self.statements = statements

    def leave_SimpleStatementLine(self, original, updated):
        if isinstance(updated.body[0], cst.Pass):
            return cst.FlattenSentinel(self.statements)
        return updated


def _printed(place: str, text: str, verbatim: bool) -> str:
    source, gap = PLACES[place]
    module = cst.parse_module(source)
    if verbatim:
        statements = [Verbatim(text, [cst.EmptyLine(indent=False)] * gap)]
    else:   # what the assembly did before: parse, and put `gap` blank lines before each statement
        statements = [s.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * gap)
                      for s in cst.parse_module(text + "\n").body]
    return module.visit(_Put(statements)).code


def _statement_texts():
    """Every statement of every fixture, printed alone as the generator hands over text."""
    texts = {}
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:  # fixtures that are meant not to parse
            continue
        for node in walk.walk(module):
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                text = printing.code_for_node(module, node.with_changes(leading_lines=()))
                texts.setdefault(text.removesuffix("\n"), path.name)
    return texts


TEXTS = _statement_texts()
TEMPLATE = cst.parse_module("x = 1\n")   # 4 spaces, LF: the layout fits asks for


def test_most_fixture_statements_fit():
    fitting = [t for t in TEXTS if fits(t, TEMPLATE)]
    assert len(TEXTS) > 1000 and len(fitting) > len(TEXTS) / 2


@pytest.mark.slow
@pytest.mark.parametrize("place", PLACES)
def test_every_fitting_fixture_statement_prints_as_parsed(place):
    for text in TEXTS:
        if fits(text, TEMPLATE):
            assert _printed(place, text, True) == _printed(place, text, False), text


# Texts where moving every line with the block is wrong, and which fits must refuse.
MISPRINTED = {
    "continuation_dedented": "def f(x):\n    y = g(x,\n  1)\n    return y",
    "comment_at_column_0": "def f(x):\n    y = x\n# note\n    return y",
    "string_over_lines": 'def f():\n    return """a\nb"""',
    "backslash_continuation": "def f():\n    y = 1 + \\\n2\n    return y",
    "blank_line_in_top_brackets": "@d(\n\n    1)\ndef f():\n    return 1",
    "whitespace_line": "def f():\n    a = 1\n  \n    return a",
    "two_statements": "def f():\n    return 1\ndef g():\n    return 2",
}


@pytest.mark.parametrize("name", MISPRINTED)
def test_fits_refuses_what_would_print_otherwise(name):
    text = MISPRINTED[name]
    assert not fits(text, TEMPLATE)
    if name != "two_statements":   # (the others: LibCST really prints them differently somewhere)
        assert any(_printed(p, text, True) != _printed(p, text, False) for p in PLACES)


@pytest.mark.parametrize("source", ["def f():\n  return 1\n", "def f():\r\n    return 1\r\n", "def f():\n\treturn 1\n"])
def test_fits_refuses_modules_of_another_layout(source):
    assert not fits("def g(x):\n    return x", cst.parse_module(source))


@pytest.mark.parametrize("place", PLACES)
def test_fitting_texts_with_brackets_and_strings_print_as_parsed(place):
    texts = [
        ('@tf.function(input_signature=[\n    tf.TensorSpec([None, 3])])\ndef step(x,\n         y=")(",\n         z=\'[\'):\n'
         '    with tf.GradientTape(\n            persistent=True) as tape:\n        a = {"k": [1,\n               2]}\n\n'
         '        b = f"{x}(" ; c = 2\n    return (a,\n            b)'),
        "class M(tf.Module):\n    def __call__(self, x):\n        if x:\n            return 1\n        else:\n            return 2",
    ]
    for text in texts:
        assert fits(text, TEMPLATE)
        assert _printed(place, text, True) == _printed(place, text, False)
