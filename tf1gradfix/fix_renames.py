"""Fixer: apply the safe symbol renames that detection marked."""

from __future__ import annotations

import functools

import libcst as cst


@functools.lru_cache(maxsize=512)
def _expression(text: str) -> cst.BaseExpression:
    """Parsed once per distinct name; LibCST nodes are immutable, so sharing is safe."""
    return cst.parse_expression(text)


class RenameTransformer(cst.CSTTransformer):
    """Replaces exactly the nodes detection chose, keeping their surrounding whitespace."""

    def __init__(self, replacements: dict[cst.CSTNode, str]):
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original_node, updated_node):
        text = self._replacements.get(original_node)
        if text is None:
            return updated_node
        return _expression(text)


def apply_renames(module: cst.Module, replacements: dict[cst.CSTNode, str]) -> cst.Module:
    if not replacements:
        return module
    return module.visit(RenameTransformer(replacements))
