"""Positions and metadata for freshly parsed modules, cheaper than LibCST's defaults.

Detection needs the positions of its hits only, and the restructuring needs
positions only when it refuses or notes something; LibCST's providers
compute a range for every node and walk the tree once per provider. These
classes lean on LibCST's printer state and its wrapper's metadata cache,
which is why they live in cst/.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import ExitStack, contextmanager

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider, ScopeProvider
from libcst.metadata.wrapper import _gather_providers

from tf1gradfix.cst import walk
from tf1gradfix.cst.printing import NO_POSITION, PlainState
from tf1gradfix.cst.scope_tables import LinearScopeProvider


def starts(wrapper: MetadataWrapper, nodes) -> dict[cst.CSTNode, tuple[int, int]]:
    """(line, 1-based column) where each node starts, as LibCST's PositionProvider says."""
    known = getattr(wrapper, "_metadata", {}).get(PositionProvider)
    if known is None:
        known = _TrackedRanges.of(wrapper.module, nodes)
        if known is None:
            known = wrapper.resolve(PositionProvider)
    return {node: (known[node].start.line, known[node].start.column + 1) for node in nodes}


_NEWLINE = re.compile(r"\r\n?|\n")  # as libcst.metadata.position_provider counts lines


class _TrackedRanges(PlainState):
    """PositionProvider's ranges for a few nodes.

    The provider records a range for every node of the module, about five
    times the cost of printing it. This prints the module once, notes the
    token count where the syntactic range of each target node opens and
    closes, and counts lines and columns afterwards the way the provider does.
    """

    @classmethod
    def of(cls, module: cst.Module, nodes) -> dict[cst.CSTNode, CodeRange] | None:
        """None when a node's range is derived otherwise (the provider then decides)."""
        state = cls(default_indent=module.default_indent, default_newline=module.default_newline)
        state.targets = set(nodes)
        state.ranges = {}
        state.unsure = False
        module._codegen(state)
        if state.unsure or len(state.ranges) != len(state.targets):
            return None
        return state._positions()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if node not in self.targets:
            return NO_POSITION
        return self._record(node, start_node, end_node)

    @contextmanager
    def _record(self, node, start_node, end_node):
        if start_node is not None or end_node is not None:
            self.unsure = True
        opened = len(self.tokens)
        try:
            yield
        finally:
            self.ranges[node] = (opened, len(self.tokens))  # the last one recorded wins, as in the provider

    def _positions(self) -> dict[cst.CSTNode, CodeRange]:
        at: dict[int, CodePosition] = {}
        line, column, done = 1, 0, 0
        for index in sorted({i for pair in self.ranges.values() for i in pair}):
            for token in self.tokens[done:index]:
                segments = _NEWLINE.split(token)
                if len(segments) == 1:
                    column += len(token)
                else:
                    line += len(segments) - 1
                    column = len(segments[-1])
            done = index
            at[index] = CodePosition(line, column)
        return {node: CodeRange(at[start], at[end]) for node, (start, end) in self.ranges.items()}


class _LazyPositions(Mapping):
    """PositionProvider's table, computed on first use (only a refusal or a note needs it).

    The first few nodes asked about are found by printing the module once
    each (see _TrackedRanges); the whole table costs about five printings.
    """

    _SINGLE = 3

    def __init__(self, module: cst.Module, compute):
        self._module, self._compute, self._table = module, compute, None
        self._single = 0

    def _get(self):
        if self._table is None:
            self._table = self._compute()
        return self._table

    def __getitem__(self, node):
        if self._table is None and self._single < self._SINGLE:
            self._single += 1
            found = _TrackedRanges.of(self._module, [node])
            if found is not None:
                return found[node]
        return self._get()[node]

    def __iter__(self):
        return iter(self._get())

    def __len__(self):
        return len(self._get())


class AnalysisWrapper(MetadataWrapper):
    """MetadataWrapper for a freshly parsed module, cheaper in four ways.

    * ScopeProvider's tables come from LinearScopeProvider (cst/scope_tables.py):
      the same answers, without a cost of N x M for a name bound N times and read M times.
    * PositionProvider is handed out as a table computed on first lookup (or
      node by node for the first few): the restructuring asks for positions
      only when it refuses a program or notes something, and detection finds
      its own (see starts).
    * LibCST resolves the scope, parent and expression-context providers in
      batched walks in which each provider only handles the Module node and
      walks the tree itself; the batched walk over the rest of the tree then
      calls nothing and is skipped, and each provider's visitor methods are
      looked up once per class instead of by ``inspect.getmembers`` each time.
    * The providers' own visitors walk without rebuilding the tree (walk.read_only_visits).
    """

    __slots__ = ("_names",)

    def __init__(self, module: cst.Module) -> None:
        super().__init__(module, unsafe_skip_copy=True)
        self._names = None   # (catalog, NameResolver): see shared_names

    def resolve_many(self, providers):
        if ScopeProvider not in self._metadata and ScopeProvider in _gather_providers(set(providers), set()):
            self._metadata[ScopeProvider] = super().resolve_many([LinearScopeProvider])[LinearScopeProvider]
        if PositionProvider not in providers or PositionProvider in self._metadata:
            return super().resolve_many(providers)
        out = dict(super().resolve_many([p for p in providers if p is not PositionProvider]))
        out[PositionProvider] = _LazyPositions(self.module, self._all_positions)
        return out

    def _all_positions(self):
        return super().resolve_many([PositionProvider])[PositionProvider]

    def visit_batched(self, visitors, before_visit=None, after_leave=None):
        visitors = list(visitors)
        methods: dict[str, list] = {}
        for visitor in visitors:
            for name in _visitor_names(visitor):
                methods.setdefault(name, []).append(getattr(visitor, name))
        if before_visit is not None or after_leave is not None or set(methods) - {"visit_Module", "leave_Module"}:
            with walk.read_only_visits():
                return super().visit_batched(visitors, before_visit, after_leave)
        with ExitStack() as stack:
            stack.enter_context(walk.read_only_visits())
            for visitor in visitors:
                stack.enter_context(visitor.resolve(self))
            for method in methods.get("visit_Module", ()):
                method(self.module)
            for method in methods.get("leave_Module", ()):
                method(self.module)
        return self.module


_VISITOR_NAMES: dict[type, tuple[str, ...]] = {}


def _visitor_names(visitor) -> tuple[str, ...]:
    """What ``get_visitors`` finds on a provider; it only depends on the class."""
    names = _VISITOR_NAMES.get(type(visitor))
    if names is None:
        names = _VISITOR_NAMES[type(visitor)] = tuple(visitor.get_visitors())
    return names
