"""Fixer: apply the safe symbol renames that detection marked.

The new dotted name is built onto the user's own alias node and keeps the
outermost dot (with any comment or line break around it), so nothing the
user wrote is lost; detection refuses renames with comments deeper inside.
"""

from __future__ import annotations

import libcst as cst


def renamed_chain(node: cst.Attribute, old_parts: int, new_parts: list[str]) -> cst.Attribute:
    """`alias.a.b` (old_parts=2 below the alias) -> `alias.x.y.z`, reusing the alias and outer dot."""
    base: cst.BaseExpression = node
    for _ in range(old_parts):
        assert isinstance(base, cst.Attribute)
        base = base.value
    chain = base
    for part in new_parts[:-1]:
        chain = cst.Attribute(value=chain, attr=cst.Name(part))
    return node.with_changes(value=chain, attr=node.attr.with_changes(value=new_parts[-1]))


class RenameTransformer(cst.CSTTransformer):
    """Replaces exactly the nodes detection chose."""

    def __init__(self, replacements: dict[cst.CSTNode, tuple[int, list[str]]]):
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original_node, updated_node):
        plan = self._replacements.get(original_node)
        if plan is None:
            return updated_node
        return renamed_chain(updated_node, *plan)


def apply_renames(module: cst.Module, replacements: dict[cst.CSTNode, tuple[int, list[str]]]) -> cst.Module:
    if not replacements:
        return module
    return module.visit(RenameTransformer(replacements))
