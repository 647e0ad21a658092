"""Detection: find TF1 constructs with the rules in the catalog.

Detection only reports. It records, for each finding that has a safe fix,
the node to replace; the fixers (``fix_renames``) do the replacing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from tf1gradfix.catalog import Catalog, Rule
from tf1gradfix.names import BindingCollector, NameResolver, dotted


@dataclass
class Detection:
    """A rule hit on a node, before filtering and formatting."""

    rule: Rule
    node: cst.CSTNode
    line: int
    col: int
    message: str
    replacement: tuple[int, list[str]] | None = None  # rename plan for `node` (see fix_renames)


@dataclass
class DetectionResult:
    detections: list[Detection] = field(default_factory=list)


class Detector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (ScopeProvider, PositionProvider)

    def __init__(self, catalog: Catalog, bindings: BindingCollector):
        super().__init__()
        self.catalog = catalog
        self.names = NameResolver(self, bindings, catalog)
        self.found: list[Detection] = []
        # Inner parts of `tf.a.b` chains: only the outermost part is a reference.
        # Kept by the visitor itself: a parent-node table costs more than the analysis.
        self._inner: set[int] = set()
        self._method_rules = {}
        for rule in catalog.rules:
            for method in rule.methods:
                self._method_rules.setdefault(method, []).append(rule)

    # -- symbols -----------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

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
        replacement = None
        message_args = {"symbol": "tf" + qualified[len("tensorflow"):] if qualified.startswith("tensorflow") else qualified}
        if rule.renames:
            target = self.catalog.renames[qualified]
            message_args["replacement"] = "tf" + target[len("tensorflow"):]
            replacement = _rename_plan(node, raw, target)
        self._add(rule, node, replacement, message_args)

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
        position = self.get_metadata(PositionProvider, node).start
        try:
            message = rule.message.format(**args)
        except (KeyError, IndexError):
            message = rule.message
        self.found.append(Detection(rule, node, position.line, position.column + 1, message, replacement))


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


def detect(wrapper: MetadataWrapper, catalog: Catalog) -> list[Detection]:
    bindings = BindingCollector()
    wrapper.module.visit(bindings)
    detector = Detector(catalog, bindings)
    wrapper.visit(detector)
    return detector.found
