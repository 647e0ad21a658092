"""A model class with a plain base class of the same file, read with the base folded in
(constructs/class_bases.py). The proof of a rewrite: fixtures/rewrite/model_class_plain_base_in_file."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.constructs.class_bases import folded

SOURCE = '''class Base(object):
    """Settings."""
    scale = 2

    def __init__(self, n):
        self.n = n

    def size(self):
        return self.n


class Model(Base):
    def size(self):
        return self.n * self.scale


m = Model(3)
'''


def test_the_base_statements_the_class_does_not_define_are_folded_in():
    out = folded(cst.parse_module(SOURCE))
    assert out is not None
    model = next(s for s in out.body if isinstance(s, cst.ClassDef) and s.name.value == "Model")
    assert not model.bases
    names = [s.name.value if isinstance(s, cst.FunctionDef) else out.code_for_node(s).strip() for s in model.body.body]
    assert names == ["size", "scale = 2", "__init__"]   # (its own `size` kept, the base's dropped)
    namespace: dict = {}
    exec(out.code, namespace)
    assert namespace["m"].size() == 6 and not isinstance(namespace["m"], namespace["Base"])


@pytest.mark.parametrize("change", [
    ("class Model(Base):\n    def size(self):\n", "class Model(Base):\n    def size(self):\n        super().size()\n"),
    ("m = Model(3)\n", "m = Model(3)\nisinstance(m, Base)\n"),          # the base named elsewhere
    ("class Base(object):", "class Base(dict):"),                         # a base that is not plain
    ("class Model(Base):", "@dataclass\nclass Model(Base):"),
])
def test_other_forms_are_left_as_written(change):
    assert folded(cst.parse_module(SOURCE.replace(*change))) is None
