"""Detection: find TF1 constructs with the rules in the catalog.

Detection only reports. It records, for each finding that has a safe fix,
the node to replace; the fixers (``fix_renames``) do the replacing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from tf1gradfix.cst import walk
from tf1gradfix.rules.catalog import Catalog, Rule
from tf1gradfix.detect.names import BindingCollector, NameResolver, dotted
from tf1gradfix.cst.printing import NO_POSITION, PlainState


@dataclass
class Detection:
    """A rule hit on a node, before filtering and formatting."""

    rule: Rule
    node: cst.CSTNode
    line: int  # 0 when detect() was asked for no positions
    col: int
    message: str
    replacement: tuple[int, list[str]] | None = None  # rename plan for `node` (see fix_renames)
    ambiguous: bool = False  # its name may be bound to something else too (NameResolver.ambiguous)


@dataclass
class DetectionResult:
    detections: list[Detection] = field(default_factory=list)


class Detector(cst.CSTVisitor):
    # Positions are looked up after the walk, for the nodes found (see starts).

    def __init__(self, catalog: Catalog, names: NameResolver):
        super().__init__()
        self.catalog = catalog
        self.names = names
        self.found: list[Detection] = []
        # Inner parts of `tf.a.b` chains: only the outermost part is a reference.
        # Kept by the visitor itself: a parent-node table costs more than the analysis.
        self._inner: set[int] = set()
        # Chains written to (assigned, augmented, deleted): `tf.log = f` patches the TF1
        # name, so renaming it would patch another one. Kept as ids, like `_inner`.
        self._stores: set[int] = set()
        self._method_rules = {}
        for rule in catalog.rules:
            for method in rule.methods:
                self._method_rules.setdefault(method, []).append(rule)

    # -- symbols -----------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _store(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value)
        else:
            self._stores.add(id(target))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._store(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._inner:
            self._symbol(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._inner.add(id(node.attr))
        if isinstance(node.value, (cst.Name, cst.Attribute)):
            self._inner.add(id(node.value))
        if id(node) not in self._inner:
            self._symbol(node)

    def _symbol(self, node: cst.Name | cst.Attribute) -> None:
        raw = self.names.import_name(node)
        if raw is None:
            return
        qualified = self.names.normalized(raw)
        if qualified is None:
            return
        hit = self.catalog.symbol_rule(qualified)
        if hit is None:
            return
        rule, _pattern = hit
        replacement, ambiguous = None, self.names.ambiguous(node)
        message_args = {"symbol": "tf" + qualified[len("tensorflow"):] if qualified.startswith("tensorflow") else qualified}
        if rule.renames:
            target = self.catalog.renames[qualified]
            message_args["replacement"] = "tf" + target[len("tensorflow"):]
            if id(node) not in self._stores and not ambiguous:
                replacement = _rename_plan(node, raw, target)
        self._add(rule, node, replacement, message_args)
        self.found[-1].ambiguous = ambiguous

    # -- method calls on known kinds ---------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        rules = self._method_rules.get(func.attr.value)
        if not rules:
            return
        kind = self.names.kind(func.value)
        if kind is None:
            return
        for rule in rules:
            if rule.receiver == kind:
                receiver = dotted(func.value) or "..."
                self._add(rule, func, None, {"receiver": receiver, "method": func.attr.value})
                return

    def _add(self, rule: Rule, node: cst.CSTNode, replacement, args: dict[str, str]) -> None:
        try:
            message = rule.message.format(**args)
        except (KeyError, IndexError):
            message = rule.message
        self.found.append(Detection(rule, node, 0, 0, message, replacement))


def _rename_plan(node: cst.CSTNode, raw: str, target: str) -> tuple[int, list[str]] | None:
    """How to turn `tf.set_random_seed` into `tf.random.set_seed`, keeping the user's alias:
    (parts to drop below the alias, parts to put there).

    Only when the chain's base is an alias of the `tensorflow` root itself (a
    `compat.v1` alias or a bare imported name would need import edits) and no
    comment sits inside the part being replaced.
    """
    if not isinstance(node, cst.Attribute) or not raw.startswith("tensorflow.") or raw.startswith("tensorflow.compat."):
        return None
    text = dotted(node)
    remainder = raw[len("tensorflow."):]
    if text is None or not text.endswith("." + remainder):
        return None
    old_parts = remainder.count(".") + 1
    inner = node.value
    for _ in range(old_parts - 1):
        inner = inner.value
    if "#" in cst.Module([]).code_for_node(node.value)[len(cst.Module([]).code_for_node(inner)):]:
        return None
    return old_parts, target[len("tensorflow."):].split(".")


def detect(wrapper: MetadataWrapper, catalog: Catalog, positions: bool = True) -> list[Detection]:
    """Rule hits in visiting order; `positions=False` leaves line and col at 0 (saves a codegen pass)."""
    detector = Detector(catalog, shared_names(wrapper, catalog))
    walk.visit(wrapper.module, detector)
    if positions and detector.found:
        table = starts(wrapper, [hit.node for hit in detector.found])
        for hit in detector.found:
            hit.line, hit.col = table[hit.node]
    return detector.found


def shared_names(wrapper: MetadataWrapper, catalog: Catalog) -> NameResolver:
    """The module's NameResolver: made once per AnalysisWrapper and catalog, so
    detection and the restructuring look each name up once."""
    kept = getattr(wrapper, "_names", None)
    if kept is not None and kept[0] is catalog:
        return kept[1]
    bindings = BindingCollector()
    wrapper.module.visit(bindings)
    names = NameResolver(wrapper.resolve(ScopeProvider), bindings, catalog)
    if isinstance(wrapper, AnalysisWrapper):
        wrapper._names = (catalog, names)
    return names


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
    """MetadataWrapper for a freshly parsed module, cheaper in two ways.

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
