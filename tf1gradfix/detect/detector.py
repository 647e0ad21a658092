"""Detection: find TF1 constructs with the rules in the catalog.

Detection only reports. It records, for each finding that has a safe fix,
the node to replace; the fixers (``fix_renames``) do the replacing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider

from tf1gradfix.cst import walk
from tf1gradfix.rules import contrib
from tf1gradfix.rules.catalog import Catalog, Rule
from tf1gradfix.detect.names import BindingCollector, NameResolver, dotted
from tf1gradfix.cst.metadata import AnalysisWrapper, starts


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
        if rule.renames and self.catalog.tf1_spelling(qualified, dotted(node)):
            return
        replacement, ambiguous = None, self.names.ambiguous(node)
        message_args = {"symbol": "tf" + qualified[len("tensorflow"):] if qualified.startswith("tensorflow") else qualified}
        if "{advice}" in rule.message:
            message_args["advice"] = contrib.advice(qualified)
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
