"""LibCST's ScopeProvider, with its tables of reads and bindings kept as cuts.

LibCST gives each read of a name the set of its scope's earlier bindings,
and each binding the set of its later reads; it also checks every call for
`typing.TypeVar`/`NewType`/`cast` by walking every binding of the callee's
name. A name bound N times and read M times (`sess` in a file of many
session blocks) costs N x M. This provider gives the same members as cuts of
one ordered list per (scope, name) (detect/cuts.py), and runs the typing
check only on calls that can name one of those three. It leans on
ScopeVisitor's private state, which is why it lives in cst/ (LibCST is
pinned below 1.10); AnalysisWrapper files its tables under ScopeProvider.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata.scope_provider import ScopeProvider, ScopeVisitor, _gen_dotted_names

from tf1gradfix.detect.cuts import Cut, Order, earlier

_TYPING = frozenset({"NewType", "TypeVar", "cast"})


def _index(item: Any) -> int:
    return item._index


class LinearScopeProvider(ScopeProvider):
    """ScopeProvider's metadata, built in time linear in the module's reads and bindings."""

    def visit_Module(self, node: cst.Module) -> bool | None:
        visitor = _Visitor(self)
        node.visit(visitor)
        visitor.infer_accesses()
        return None


class _Visitor(ScopeVisitor):
    def __init__(self, provider: ScopeProvider) -> None:
        super().__init__(provider)
        self._typing_names = set(_TYPING)   # (and the names `from typing import cast as c` binds)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool | None:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if alias.asname is not None and get_full_name_for_node(alias.name) in _TYPING:
                    self._typing_names.add(get_full_name_for_node(alias.asname.name) or "")
        return super().visit_ImportFrom(node)

    def visit_Call(self, node: cst.Call) -> bool | None:
        callee = get_full_name_for_node(node.func)
        if callee is not None and callee.rpartition(".")[2] in self._typing_names:
            return super().visit_Call(node)
        # what ScopeVisitor.visit_Call does for any other call (leave_Call pops them)
        getattr(self, "_ScopeVisitor__top_level_attribute_stack").append(None)
        getattr(self, "_ScopeVisitor__in_type_hint_stack").append(False)
        return True

    def infer_accesses(self) -> None:
        groups: dict[tuple, list] = defaultdict(list)
        for deferred in getattr(self, "_ScopeVisitor__deferred_accesses"):
            access = deferred.access
            name = access.node.value
            if deferred.enclosing_attribute is not None:
                for dotted, node in _gen_dotted_names(deferred.enclosing_attribute):
                    if dotted in access.scope:
                        access.node, name = node, dotted
                        break
            if deferred.enclosing_string_annotation is not None:
                access.node = deferred.enclosing_string_annotation
            groups[(access.scope, name)].append(access)
            access.scope.record_access(name, access)
        references: dict[Any, dict[int, list]] = defaultdict(dict)
        for (scope, name), accesses in groups.items():
            _link(scope, name, accesses, references)
        for binding, parts in references.items():
            kept = getattr(binding, "_BaseAssignment__accesses")
            setattr(binding, "_BaseAssignment__accesses", Cut(frozenset(kept), tuple(tuple(part) for part in parts.values())))
        setattr(self, "_ScopeVisitor__deferred_accesses", [])


def _link(scope, name: str, accesses: list, references: dict) -> None:
    """Each read of `name` in `scope` gets the bindings LibCST's Access.record_assignments
    gives it, and each binding the reads BaseAssignment.record_accesses gives it."""
    bindings = scope._resolve_scope_for_access(name, scope)

    def above():   # (no binding before the read: LibCST looks one scope up)
        return scope.parent._resolve_scope_for_access(name, scope) if bindings and scope.parent is not scope else ()

    for access, found in zip(accesses, earlier(bindings, scope, accesses, _index, above)):
        kept = getattr(access, "_Access__assignments")   # (what LibCST recorded before: none so far, kept in case)
        setattr(access, "_Access__assignments", found if not kept else Cut(frozenset(kept) | frozenset(found)))
    reads = sorted(accesses, key=_index)
    order, read_at, total = Order(reads), [a._index for a in reads], len(reads)
    for binding in list(bindings):
        if binding.scope is not scope:
            _add(references, binding, order, 0, total)
            continue
        first_later = bisect.bisect_right(read_at, binding._index)
        _add(references, binding, order, first_later, total)
        if first_later and scope.parent is not scope:   # reads before it belong to the outer bindings
            for shadowed in scope.parent[binding.name]:
                _add(references, shadowed, order, 0, first_later)


def _add(references: dict, binding, order: Order, lo: int, hi: int) -> None:
    if lo >= hi:
        return
    part = references[binding].get(id(order))
    if part is None:
        references[binding][id(order)] = [order, lo, hi]
    else:   # (a whole list, a prefix or a suffix of it: their union is one range)
        part[1], part[2] = min(part[1], lo), max(part[2], hi)
