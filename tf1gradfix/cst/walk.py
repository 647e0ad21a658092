"""Read-only walks over LibCST trees that do not rebuild the tree.

``node.visit(visitor)`` rebuilds every node it passes through, even for a
``CSTVisitor`` whose result is the unchanged tree; that construction is most
of the cost of a walk. ``visit`` here makes the same callbacks in the same
order and builds nothing; ``walk`` yields the nodes such a visit reaches.
Children come in LibCST's own visiting order, read from each node class's
``_visit_and_replace_children`` (see ``child_fields``).
"""

from __future__ import annotations

import dataclasses
import typing
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from typing import cast

import libcst as cst
from libcst import MaybeSentinel
from libcst._nodes import op as _op
from libcst._nodes import whitespace as _whitespace
from libcst._typed_visitor import CSTTypedBaseFunctions, CSTTypedVisitorFunctions
from libcst.metadata import scope_provider

_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that LibCST visits, in visiting order.

    ``_visit_and_replace_children`` names each field it visits as a string
    constant, in that order (``visit_required(self, "body", self.body, ...)``),
    so the code object's constants give the order without reading source.
    tests/test_walk.py checks this against the source of every node class.
    """
    names = _FIELDS.get(cls)
    if names is None:
        own = {f.name for f in dataclasses.fields(cls)}
        consts = cls._visit_and_replace_children.__code__.co_consts
        names = _FIELDS[cls] = tuple(c for c in consts if isinstance(c, str) and c in own)
    return names


# Token nodes: whitespace, comments, newlines, operators and brackets. They hold
# only other token nodes (tests/test_walk.py checks that), so a walk whose
# visitor has no callback for any of them need not enter them: they are more
# than half the nodes of a module.
TOKEN_TYPES: frozenset[type] = frozenset(
    [cls for module in (_whitespace, _op) for cls in vars(module).values()
     if isinstance(cls, type) and issubclass(cls, cst.CSTNode) and cls.__module__ == module.__name__]
    + [cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace])
_TOKEN_NAMES = frozenset(cls.__name__ for cls in TOKEN_TYPES)
_SPARSE_FIELDS: dict[type, tuple[str, ...]] = {}


def _holds_tokens_only(hint) -> bool:
    """Whether a field annotated `hint` can hold only token nodes (or None / MaybeSentinel)."""
    args = typing.get_args(hint)
    if args:
        return all(_holds_tokens_only(a) for a in args)
    return hint is type(None) or hint is MaybeSentinel or (
        isinstance(hint, type) and any(issubclass(hint, token) for token in TOKEN_TYPES))


def fields_past_tokens(cls: type) -> tuple[str, ...]:
    """child_fields(cls) without the fields that can only hold token nodes."""
    names = _SPARSE_FIELDS.get(cls)
    if names is None:
        try:
            hints = typing.get_type_hints(cls)
        except (NameError, TypeError, AttributeError):  # an annotation that does not resolve: keep every field
            hints = {}
        names = _SPARSE_FIELDS[cls] = tuple(
            name for name in child_fields(cls) if name not in hints or not _holds_tokens_only(hints[name]))
    return names


# Visitors whose on_visit/on_leave need not see token nodes. LibCST's scope
# analysis records a scope for every node it leaves; nothing asks for the
# scope of a bracket or a space, so its walk leaves them out too.
_TOKEN_BLIND: set[type] = {scope_provider.ScopeVisitor}


def token_blind(cls: type) -> type:
    """Class decorator: this visitor's on_visit/on_leave ignore token nodes."""
    _TOKEN_BLIND.add(cls)
    return cls


def children(node: cst.CSTNode, past_tokens: bool = False) -> list[cst.CSTNode]:
    """The nodes LibCST visits directly below `node`, in order (``node.children`` without the rebuild).

    `past_tokens`: without the token nodes (for walks that look for names,
    calls or statements). A visited field holds a node, a sequence of nodes,
    None or MaybeSentinel.
    """
    out: list[cst.CSTNode] = []
    fields = (_SPARSE_FIELDS if past_tokens else _FIELDS).get(type(node))
    if fields is None:
        fields = fields_past_tokens(type(node)) if past_tokens else child_fields(type(node))
    for name in fields:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            out.extend(value)
        elif value is not None and type(value) is not MaybeSentinel:
            out.append(value)
    return out


def walk(node: cst.CSTNode, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, in the order a CSTVisitor visits them.

    Nodes of the `skip` types are yielded but not entered.
    """
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not (skip and isinstance(current, skip)):
            below = children(current)
            below.reverse()
            stack.extend(below)


def post_order(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, each after its children: a call after its arguments,
    the order Python evaluates them in (no recursion: any depth of nesting)."""
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, entered = stack.pop()
        if entered:
            yield current
            continue
        stack.append((current, True))
        below = children(current)
        below.reverse()
        stack.extend((child, False) for child in below)


def mark_holders(node: cst.CSTNode, targets, holds: dict) -> bool:
    """Whether `node` or a node below it is in `targets`; the answer for `node`
    and for every node below it is stored in `holds`.

    A transformer that changes only its targets need not enter (and so
    rebuild) a subtree that holds none.
    """
    found = node in targets
    for child in children(node):
        if mark_holders(child, targets, holds):
            found = True
    holds[node] = found
    return found


class TargetedTransformer(cst.CSTTransformer):
    """A transformer that changes only nodes in `targets` (a set or a dict of them).

    It enters only the subtrees that hold a target, so the rest of the tree is
    kept as it is instead of being rebuilt node by node.
    """

    def __init__(self, targets) -> None:
        super().__init__()
        self.targets = targets
        self._holds: dict[cst.CSTNode, bool] = {}   # node -> a target is it or below it

    def on_visit(self, node: cst.CSTNode) -> bool:
        holds = self._holds.get(node)
        if holds is None:   # the root of a visit: every node below it is marked at once
            holds = mark_holders(node, self.targets, self._holds)
        return holds and super().on_visit(node)


class _Plan:
    """How to call one visitor class, looked up once per node type:
    (visit callback, leave callback, fields to walk; None: LibCST's own child visit)."""

    def __init__(self, cls: type) -> None:
        self._cls = weakref.ref(cls)  # (the plan lives as long as its class)
        self.own_on_visit = cls.on_visit is not cst.CSTVisitor.on_visit
        self.own_on_leave = cls.on_leave is not cst.CSTVisitor.on_leave
        self.all_attributes = (cls.on_visit_attribute is not cst.CSTVisitor.on_visit_attribute
                               or cls.on_leave_attribute is not cst.CSTVisitor.on_leave_attribute)
        # Node types with per-attribute callbacks (`visit_ClassDef_bases`) go
        # through LibCST's own child visit, which makes those calls.
        defined = self.defined = {name for klass in cls.__mro__ if klass not in _STUBS for name in vars(klass)}
        self.attribute_types = {name.split("_")[1] for name in defined
                                if name.startswith(("visit_", "leave_")) and name.count("_") >= 2
                                and self._method(name) is not None}
        # Token nodes are left out when nothing of this visitor would see them.
        blind = any(issubclass(cls, klass) for klass in _TOKEN_BLIND)
        self.past_tokens = (blind or not (self.own_on_visit or self.own_on_leave)) and not any(
            self._method(prefix + name) is not None for name in _TOKEN_NAMES for prefix in ("visit_", "leave_"))
        self.calls: dict[type, tuple] = {}

    def _method(self, name: str):
        """The class's function of that name; None for none or LibCST's no-op stub."""
        if name not in self.defined:
            return None
        method = getattr(self._cls(), name, None)
        return None if getattr(method, "_is_no_op", False) else method

    def lookup(self, node_cls: type) -> tuple:
        name = node_cls.__name__
        if name in self.attribute_types:
            fields = None
        else:
            fields = fields_past_tokens(node_cls) if self.past_tokens else child_fields(node_cls)
        calls = self.calls[node_cls] = (self._method("visit_" + name), self._method("leave_" + name), fields)
        return calls


_STUBS = (CSTTypedVisitorFunctions, CSTTypedBaseFunctions)  # no-op stubs for every callback
_PLANS: weakref.WeakKeyDictionary[type, _Plan] = weakref.WeakKeyDictionary()  # visitor classes can be local


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only visitor, without rebuilding any node."""
    plan = _PLANS.get(type(visitor))
    if plan is None:
        plan = _PLANS[type(visitor)] = _Plan(type(visitor))
    if plan.all_attributes or any(name.startswith(("visit_", "leave_")) for name in getattr(visitor, "__dict__", ())):
        _LIBCST_VISIT(node, visitor)  # callbacks this plan cannot see
    else:
        _visit(node, visitor, plan)


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor, plan: _Plan) -> None:
    calls = plan.calls.get(type(node))
    on_visit, on_leave, fields = calls if calls is not None else plan.lookup(type(node))
    if plan.own_on_visit:
        enter = visitor.on_visit(node)
    else:
        enter = on_visit is None or on_visit(visitor, node) is not False
    if enter:
        if fields is None:
            node._visit_and_replace_children(visitor)
        else:
            for name in fields:
                value = getattr(node, name)
                if type(value) is tuple or type(value) is list:
                    for child in value:
                        _visit(child, visitor, plan)
                elif value is not None and type(value) is not MaybeSentinel:
                    _visit(value, visitor, plan)
    if plan.own_on_leave:
        visitor.on_leave(node)
    elif on_leave is not None:
        on_leave(visitor, node)


_LIBCST_VISIT = cst.CSTNode.visit


_READ_ONLY: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _fast_visit(self, visitor):
    read_only = _READ_ONLY.get(type(visitor))
    if read_only is None:
        read_only = _READ_ONLY[type(visitor)] = isinstance(visitor, cst.CSTVisitor)
    if read_only:
        visit(self, visitor)
        return self
    return _LIBCST_VISIT(self, visitor)


class _ExactTypes:
    """``isinstance(node, this)`` for node classes without subclasses: one set
    lookup by exact type, where a tuple of LibCST's ABC classes costs one ABC
    check per class that does not match."""

    def __init__(self, types: tuple[type, ...]) -> None:
        self._exact = frozenset(types)

    def __instancecheck__(self, node) -> bool:
        return type(node) in self._exact


def _exact_types(types):
    """`types` as _ExactTypes where that answers the same (no class has a subclass), else as they are."""
    if isinstance(types, tuple) and not any(cls.__subclasses__() for cls in types):
        return _ExactTypes(types)
    return types


# LibCST's scope analysis checks every node it leaves against these 18 classes.
_ASSIGNMENT_LIKE = scope_provider._ASSIGNMENT_LIKE_NODES
_ASSIGNMENT_LIKE_EXACT = _exact_types(_ASSIGNMENT_LIKE)


@contextmanager
def read_only_visits() -> Iterator[None]:
    """Within: every ``node.visit(visitor)`` with a CSTVisitor runs as ``visit`` above.

    For code that walks with ``node.visit`` (LibCST's metadata providers,
    the restructuring's visitors): the same callbacks in the same order, the
    same return value (the node itself), no rebuilt nodes. Transformers keep
    LibCST's walk. The scope analysis's test of every node it leaves goes by
    exact type (_ExactTypes). Correct whether or not the patches are in place,
    so another thread leaving them early only costs time.
    """
    if cst.CSTNode.visit is _fast_visit:
        yield
        return
    cst.CSTNode.visit = _fast_visit
    scope_provider._ASSIGNMENT_LIKE_NODES = _ASSIGNMENT_LIKE_EXACT
    try:
        yield
    finally:
        cst.CSTNode.visit = _LIBCST_VISIT
        scope_provider._ASSIGNMENT_LIKE_NODES = _ASSIGNMENT_LIKE


class _Replacing(TargetedTransformer):
    def on_leave(self, original, updated):
        return self.targets.get(original, updated)


def replaced(node: cst.CSTNode, targets: dict) -> cst.CSTNode:
    """`node` with each node of `targets` (a dict: node -> its replacement) put in its
    place, the rest of the tree kept as it is."""
    return cast(cst.CSTNode, node.visit(_Replacing(targets))) if targets else node

