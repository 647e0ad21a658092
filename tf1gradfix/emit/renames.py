"""Fixer: apply the safe symbol renames that detection marked.

The new dotted name is built onto the user's own alias node and keeps the
outermost dot (with any comment or line break around it), so nothing the
user wrote is lost; detection refuses renames with comments deeper inside.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.printing import code_with_substitutes


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


def renamed_source(module: cst.Module, replacements: dict[cst.CSTNode, tuple[int, list[str]]]) -> bytes:
    """`module`'s bytes with each replaced chain printed renamed.

    One printing pass, instead of a transformer that rebuilds every node of
    the module and then a printing: each target's own tokens are swapped for
    the tokens of its renamed copy as it is printed. Detection marks only the
    outermost chains, so targets never nest.
    """
    return renamed_code(module, module, replacements).encode(module.encoding)


def renamed_code(module: cst.Module, node: cst.CSTNode, replacements: dict[cst.CSTNode, tuple[int, list[str]]],
                 nodes: dict[cst.CSTNode, cst.CSTNode] | None = None) -> str:
    """``module.code_for_node(node)`` with the replaced chains within it printed renamed
    (and each of `nodes` as its new node)."""
    substitutes: dict = {target: (lambda t=target, plan=plan: renamed_chain(t, *plan))
                         for target, plan in replacements.items()}
    substitutes.update({target: (lambda new=new: new) for target, new in (nodes or {}).items()})
    return code_with_substitutes(module, node, substitutes)
