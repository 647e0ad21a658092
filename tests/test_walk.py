"""tf1gradfix.cst.walk makes the same calls in the same order as LibCST's own visit."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, ParentNodeProvider, ScopeProvider

from tf1gradfix.cst import walk
from tf1gradfix.emit.assemble import FLATTEN, Replace

ROOT = Path(__file__).resolve().parent.parent


def _modules():
    out = []
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        try:
            out.append((path.relative_to(ROOT).as_posix(), cst.parse_module(path.read_bytes())))
        except Exception:  # fixtures that are meant not to parse
            continue
    return out


MODULES = _modules()


def _every_file_slow_for_some():
    """All fixtures; the fast suite takes every sixth (the full run has them all)."""
    return [pytest.param(path, module, id=path, marks=() if i % 6 == 0 else pytest.mark.slow)
            for i, (path, module) in enumerate(MODULES)]


def _node_classes():
    seen, todo = set(), [cst.CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return sorted((c for c in seen if not inspect.isabstract(c)), key=lambda c: c.__qualname__)


def _source_order(cls) -> tuple[str, ...]:
    """Field names in the order `_visit_and_replace_children`'s source names them."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls._visit_and_replace_children)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id.startswith("visit_") and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant)]
    names = []
    for call in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        if call.args[1].value not in names:
            names.append(call.args[1].value)
    return tuple(names)


@pytest.mark.parametrize("cls", _node_classes(), ids=lambda c: c.__name__)
def test_child_fields_follow_the_source(cls):
    assert walk.child_fields(cls) == _source_order(cls)


def test_fixtures_parse():
    assert len(MODULES) > 50


class _Record(cst.CSTVisitor):
    """Notes every callback LibCST makes."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def on_visit(self, node):
        self.calls.append(("visit", id(node)))
        return True

    def on_leave(self, node):
        self.calls.append(("leave", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.calls.append(("attr", id(node), attribute))

    def on_leave_attribute(self, node, attribute):
        self.calls.append(("end", id(node), attribute))


def _typed_recorder():
    """A visitor with a visit_/leave_ method per node type; some skip their children,
    and one attribute callback forces LibCST's own child visit for ClassDef."""
    def visit(name, result):
        return lambda self, node: self.calls.append(("visit", name, id(node))) or result

    def leave(name):
        return lambda self, node: self.calls.append(("leave", name, id(node)))

    body = {"__init__": lambda self: (cst.CSTVisitor.__init__(self), setattr(self, "calls", []))[0]}
    for cls in _node_classes():
        skip = cls in (cst.Lambda, cst.ImportFrom, cst.Subscript)
        body["visit_" + cls.__name__] = visit(cls.__name__, False if skip else None)
        body["leave_" + cls.__name__] = leave(cls.__name__)
    body["visit_ClassDef_bases"] = lambda self, node: self.calls.append(("bases", id(node)))
    body["leave_ClassDef_bases"] = lambda self, node: self.calls.append(("/bases", id(node)))
    return type("Typed", (cst.CSTVisitor,), body)


Typed = _typed_recorder()


@pytest.mark.parametrize("path,module", MODULES, ids=[p for p, _ in MODULES])
def test_walk_yields_what_a_visitor_visits(path, module):
    seen = _Record()
    module.visit(seen)
    assert [id(n) for n in walk.walk(module)] == [c[1] for c in seen.calls if c[0] == "visit"]


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_visit_makes_libcsts_callbacks(path, module):
    for make in (_Record, Typed):
        expected, fast, patched = make(), make(), make()
        module.visit(expected)
        walk.visit(module, fast)
        with walk.read_only_visits():
            assert module.visit(patched) is module
        assert fast.calls == expected.calls
        assert patched.calls == expected.calls


def test_transformers_keep_libcsts_walk():
    module = cst.parse_module("x = a + b\n")

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value=updated.value.upper())

    with walk.read_only_visits():
        assert module.visit(Rename()).code == "X = A + B\n"
    assert cst.CSTNode.visit is walk._LIBCST_VISIT


class _RebuildAll(Replace):
    """Replace as LibCST runs any transformer: every node entered and rebuilt."""

    on_visit = cst.CSTTransformer.on_visit


def _edits(module):
    """Replacements of every kind Replace takes, spread over the module: renamed
    names, a removed statement, a flattened `with`, an edit of the rebuilt node."""
    edits = {}
    for i, node in enumerate(walk.walk(module)):
        if isinstance(node, cst.Name) and i % 7 == 0:
            edits[node] = node.with_changes(value=node.value + "_r")
        elif isinstance(node, cst.SimpleStatementLine) and i % 11 == 0:
            edits[node] = cst.RemovalSentinel.REMOVE
        elif isinstance(node, cst.With) and i % 2 == 0:
            edits[node] = FLATTEN
        elif isinstance(node, cst.Call) and i % 5 == 0:
            edits[node] = lambda updated: updated.with_changes(args=updated.args[:1])
    return edits


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_replace_rebuilds_only_the_way_to_its_targets(path, module):
    edits = _edits(module)
    expected = module.visit(_RebuildAll(edits))
    new = module.visit(Replace(edits))
    assert new.code == expected.code
    holds: dict = {}
    walk.mark_holders(module, edits, holds)
    kept = [s for s in module.body if not holds[s]]
    assert all(any(s is t for t in new.body) for s in kept)   # untouched statements: the same objects


def _facts(module, fast: bool):
    """What the scope, expression-context and parent providers say, by node position in the walk."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    providers = (ScopeProvider, ExpressionContextProvider, ParentNodeProvider)
    if fast:
        with walk.read_only_visits():
            tables = wrapper.resolve_many(providers)
    else:
        tables = wrapper.resolve_many(providers)
    order = {id(n): i for i, n in enumerate(walk.walk(module))}
    scopes, contexts, parents = (tables[p] for p in providers)
    out = []
    for node in walk.walk(module):
        if type(node) in walk.TOKEN_TYPES:   # the fast walk gives tokens no scope: see below
            out.append([contexts.get(node), order.get(id(parents.get(node)))])
            continue
        scope = scopes.get(node)
        facts = [type(scope).__name__ if scope is not None else None,
                 contexts.get(node), order.get(id(parents.get(node)))]
        if scope is not None and isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
            try:
                facts.append(sorted((q.name, q.source.name) for q in scope.get_qualified_names_for(node)))
            except Exception as exc:
                facts.append(type(exc).__name__)
        if scope is not None and isinstance(node, cst.Name):
            facts.append(sorted(order.get(id(getattr(a, "node", None)), -1) for a in scope[node.value]))
            facts.append(sorted(order.get(id(a.node), -1) for a in scope.accesses[node.value]))
        out.append(facts)
    return out


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_providers_answer_the_same(path, module):
    """Except for one thing: in the fast walk, token nodes (whitespace, operators,
    brackets) get no scope, and nothing in tf1gradfix asks for theirs."""
    assert _facts(module, fast=True) == _facts(module, fast=False)


def test_token_nodes_hold_only_token_nodes():
    classes = [c for c in _node_classes() if c.__name__ in _TOKEN_NAMES]
    assert len(classes) > 50
    for cls in classes:
        assert walk.fields_past_tokens(cls) == (), cls.__name__
    # and the fields left out of other nodes are those that hold tokens: none of them is a Name
    assert walk.fields_past_tokens(cst.Call) == ("func", "args")
    assert walk.fields_past_tokens(cst.Arg) == ("keyword", "value")


class _NoTokens(cst.CSTVisitor):
    """A callback for every node type except the tokens: the walk leaves tokens out."""

    def __init__(self):
        super().__init__()
        self.calls = []


_TOKEN_NAMES = {cls.__name__ for cls in walk.TOKEN_TYPES}
for _cls in _node_classes():
    if _cls.__name__ not in _TOKEN_NAMES:
        setattr(_NoTokens, "visit_" + _cls.__name__, lambda self, node: self.calls.append(("visit", id(node))))
        setattr(_NoTokens, "leave_" + _cls.__name__, lambda self, node: self.calls.append(("leave", id(node))))


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_a_walk_past_tokens_makes_the_same_callbacks(path, module):
    expected, fast = _NoTokens(), _NoTokens()
    module.visit(expected)
    walk.visit(module, fast)
    assert walk._PLANS[_NoTokens].past_tokens
    assert fast.calls == expected.calls
    assert not walk._Plan(Typed).past_tokens and not walk._Plan(_Record).past_tokens


def _loads_by_visitor(expr):
    """syntax.loads as it was written with a LibCST visitor."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            found.append(node.value)

    expr.visit(V())
    return found


@pytest.mark.parametrize("path,module", _every_file_slow_for_some())
def test_loads_reads_the_names_a_visitor_reads(path, module):
    from tf1gradfix.cst.syntax import loads

    nodes = [n for n in walk.walk(module) if isinstance(n, (cst.Call, cst.BaseSmallStatement, cst.Lambda))]
    assert nodes
    for node in nodes + [module]:
        assert loads(node) == _loads_by_visitor(node)
