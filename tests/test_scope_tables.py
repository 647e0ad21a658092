"""LinearScopeProvider (cst/scope_tables.py) gives every read the bindings, and every
binding the reads, that LibCST's ScopeProvider gives them: on tricky scoping and on
every fixture's input program. Both the detector and the restructuring read them."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ScopeProvider

from tf1gradfix.cst.metadata import AnalysisWrapper
from tf1gradfix.cst.scope_tables import LinearScopeProvider
from tf1gradfix.detect.cuts import Cut

ROOT = Path(__file__).resolve().parent.parent

TRICKY = '''
import os.path
import typing
from typing import cast as as_type, TypeVar
import tensorflow as tf

T = TypeVar("T", bound="Model")
print(tf, sess_early if False else None)
sess = tf.Session()
x = 1
x = x + 1

class Model:
    x = x + 1
    y = [x for _ in range(2)]
    def method(self, sess=sess):
        print(x, os.path.join("a"))
        sess = sess.run
        return sess

def outer():
    z = 0
    def inner():
        nonlocal z
        z = z + 1
        return z
    print(z)
    z = 2
    return inner

def glob():
    global x
    print(x)
    x = 3
    value = as_type("Model", x)
    return typing.cast("int", value)

for sess in range(3):
    sess = sess + 1
print(sess, [sess for sess in range(2)], {k: v for k, v in ((x, sess),)})
with tf.Session() as sess:
    sess.run(x)
with tf.Session() as sess:
    sess.run(x)
del x
'''


def _tables(module: cst.Module, provider) -> tuple[dict, dict]:
    """(read -> its bindings, binding -> its reads), each keyed by (node, name) positions
    in the walk, so that two providers' objects compare."""
    scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(provider)
    number = {id(node): index for index, node in enumerate(_nodes(module))}
    reads, bindings = {}, {}
    for scope in {scope for scope in scopes.values() if scope is not None}:
        for access in scope.accesses:
            key = ("read", number.get(id(access.node)))
            reads[key] = {_binding_key(b, number) for b in access.referents}
        for binding in scope.assignments:
            bindings[_binding_key(binding, number)] = {number.get(id(a.node)) for a in binding.references}
    return reads, bindings


def _binding_key(binding, number) -> tuple:
    return binding.name, number.get(id(getattr(binding, "node", None))), type(binding).__name__


def _nodes(module: cst.Module) -> list:
    found: list = []

    class Every(cst.CSTVisitor):
        def on_visit(self, node):
            found.append(node)
            return True

    module.visit(Every())
    return found


def _sources() -> list[tuple[str, str]]:
    inputs = sorted((ROOT / "fixtures").rglob("input.py"))
    return [("tricky", TRICKY)] + [(str(path.relative_to(ROOT)), path.read_text()) for path in inputs]


@pytest.mark.parametrize("name, source", _sources(), ids=lambda value: value if "\n" not in value else "")
def test_the_linear_tables_equal_libcst_s(name, source):
    module = cst.parse_module(source)
    assert _tables(module, LinearScopeProvider) == _tables(module, ScopeProvider)


def test_the_analysis_wrapper_files_the_linear_tables_under_scope_provider():
    wrapper = AnalysisWrapper(cst.parse_module(TRICKY))
    scope = next(s for s in wrapper.resolve(ScopeProvider).values() if s is not None)
    assert any(isinstance(access.referents, Cut) for access in scope.accesses)


def test_a_read_after_n_bindings_holds_one_cut_of_a_shared_list():
    source = "import tensorflow as tf\n" + "sess = tf.Session()\nsess.run(1)\n" * 50
    wrapper = AnalysisWrapper(cst.parse_module(source))
    scope = next(s for s in wrapper.resolve(ScopeProvider).values() if s is not None)
    reads = sorted((a for a in scope.accesses["sess"]), key=lambda a: a._index)
    assert [len(a.referents) for a in reads] == list(range(1, 51))
    orders = {id(order) for a in reads for order, _, _ in a.referents.parts}
    assert len(orders) == 1
    assert reads[-1].referents.extends(reads[-2].referents) is not None
