"""The cheaper analysis paths give exactly what LibCST's own machinery gives."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tf1gradfix.rules import catalog
from tf1gradfix.cst.metadata import AnalysisWrapper, _TrackedRanges, starts
from tf1gradfix.detect.detector import detect
from tf1gradfix.emit.renames import renamed_chain, renamed_source
from tf1gradfix.detect.names import BindingCollector

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "fixtures" / "rewrite").glob("*/input.py")) + [ROOT / "tf1gradfix" / "detect" / "names.py"]

ODD = '''\
import tensorflow as tf
match x:
    case [a, b]:
        y = tf.Session()
    case _:
        with tf.Session() as s, open(f) as g: z: int = 3
try:
    q = 1
except* ValueError:
    r = 2
else:
    t = 3
finally:
    u = 4
class C:
    def f(self): self.a = 1; self.a = (tf.x)
    if x: k = 1
    elif y: k = 2
    else: k = 3
for i in x: w = 1
else: w = 2
while x: v = 1
else: v = 2
async def g():
    async with a as b: c = d
    async for e in f: h = 1
a = b = c
(x) = 5
type X = int
s = """\\r\\n""" ; t = "é\\t" + tf . y
'''


def _modules():
    for path in SOURCES:
        yield path.name, cst.parse_module(path.read_bytes())  # (names.py: plain Python, many shapes)
    yield "odd", cst.parse_module(ODD)
    yield "odd-crlf", cst.parse_module(ODD.replace("\n", "\r\n"))


class _GenericWalk(BindingCollector):
    def visit_Module(self, node):
        return True


def _ids(table):
    return [(key, [id(v) for v in values]) for key, values in table.items()]


@pytest.mark.parametrize("name,module", list(_modules()))
def test_statement_walk_collects_what_the_visitor_walk_collects(name, module):
    fast, slow = BindingCollector(), _GenericWalk()
    module.visit(fast)
    module.visit(slow)
    assert _ids(fast.values) == _ids(slow.values)
    assert _ids(fast.attributes) == _ids(slow.attributes)


class _Expressions(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.nodes = []

    def visit_Name(self, node):
        self.nodes.append(node)

    def visit_Attribute(self, node):
        self.nodes.append(node)

    def visit_Call(self, node):
        self.nodes.append(node)


@pytest.mark.parametrize("name,module", list(_modules()))
def test_tracked_ranges_are_the_position_providers(name, module):
    found = _Expressions()
    module.visit(found)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    tracked = _TrackedRanges.of(module, found.nodes)
    assert tracked is not None
    assert {n: tracked[n] for n in found.nodes} == {n: full[n] for n in found.nodes}


def test_a_node_without_its_own_range_falls_back_to_the_provider():
    module = cst.parse_module("def f():\n    x = 1\n")
    block = module.body[0].body  # an IndentedBlock takes its range from its statements
    assert _TrackedRanges.of(module, [block]) is None
    wrapper = AnalysisWrapper(module)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert starts(wrapper, [block])[block] == (full[block].start.line, full[block].start.column + 1)


@pytest.mark.parametrize("name,module", [m for m in _modules() if m[0] == "input.py"][:8])
def test_detection_through_the_analysis_wrapper_is_unchanged(name, module):
    rules = catalog.load()
    plain = detect(MetadataWrapper(module, unsafe_skip_copy=True), rules)
    wrapper = AnalysisWrapper(module)
    fast = detect(wrapper, rules)
    assert [(h.rule.code, h.line, h.col, h.message, h.replacement, id(h.node)) for h in fast] == \
        [(h.rule.code, h.line, h.col, h.message, h.replacement, id(h.node)) for h in plain]
    assert PositionProvider not in wrapper._metadata  # positions came from the hits alone


class _ReferenceRenames(cst.CSTTransformer):
    """Renames the way LibCST's own transformers would: rebuild the tree, then print it."""

    def __init__(self, plans):
        super().__init__()
        self.plans = plans

    def on_leave(self, original_node, updated_node):
        plan = self.plans.get(original_node)
        return updated_node if plan is None else renamed_chain(updated_node, *plan)


RENAMES = '''\
import tensorflow as tf
tf.set_random_seed(1)
y = tf.log(tf.log(x)) + (tf .  random_normal)([2]) * tf.squared_difference(a, b)
z = (tf.
     truncated_normal([3]))  # a line break inside the chain
def f():
    return tf.random_uniform([1], dtype=tf.float32)
'''


@pytest.mark.parametrize("name,module", list(_modules()) + [("renames", cst.parse_module(RENAMES)),
                                                             ("renames-crlf", cst.parse_module(RENAMES.replace("\n", "\r\n")))])
def test_renaming_while_printing_gives_the_transformers_bytes(name, module):
    plans = {h.node: h.replacement for h in detect(AnalysisWrapper(module), catalog.load(), positions=False)
             if h.replacement is not None}
    if name.startswith("renames"):
        assert len(plans) == 7
    assert renamed_source(module, plans) == module.visit(_ReferenceRenames(plans)).bytes


def _early_renames_off(monkeypatch):
    """The engine as it was: renames applied only by analyzing the rewritten module again."""
    from tf1gradfix.run import engine

    restructured = engine._restructured
    monkeypatch.setattr(engine, "_restructured", lambda *args: restructured(*args[:-1], {}))


REWRITE_INPUTS = sorted((ROOT / "fixtures" / "rewrite").glob("*/input.py"))


@pytest.mark.slow
def test_renames_while_restructuring_give_what_a_second_analysis_gives(monkeypatch):
    from tf1gradfix.run import engine
    from tf1gradfix.run.findings import CodeFilter

    early = {p: engine.process_source(str(p), p.read_bytes(), CodeFilter()) for p in REWRITE_INPUTS}
    _early_renames_off(monkeypatch)
    late = {p: engine.process_source(str(p), p.read_bytes(), CodeFilter()) for p in REWRITE_INPUTS}
    renamed = [p for p in REWRITE_INPUTS if early[p].new_source and any(
        f.code == "TFG401" and f.fixed for f in early[p].findings) and b"tf.Session" in p.read_bytes()]
    assert len(renamed) >= 3   # (the comparison covers restructured files with renames in them)
    for path in REWRITE_INPUTS:
        assert early[path] == late[path], path.parent.name


@pytest.mark.parametrize("source", [b"x = 1\n", b"def f():\n    nonlocal x\n", b"x = (\n", b"return 1\n",
                                    b"f(**a, *b)\n", b"x = 1\x00\n", b"def f(a, a): pass\n"])
def test_unparsable_says_what_compiling_the_text_says(source):
    """The check of a rewrite compiles the syntax tree the prefilter kept, when there is one."""
    from tf1gradfix.run import engine
    from tf1gradfix.detect import prefilter

    try:
        compile(source, "<rewritten>", "exec", dont_inherit=True)
        expected = None
    except (SyntaxError, ValueError) as exc:
        expected = str(exc).splitlines()[0]
    prefilter.python_tree.cache_clear()
    assert engine._unparsable(source) == expected
    prefilter.python_tree(source)   # as after the prefilter read it
    assert engine._unparsable(source) == expected
