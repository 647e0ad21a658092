"""Printing LibCST trees without the per-node position bookkeeping.

LibCST's printer asks its state, for most nodes, to record the node's
position, through a generator-based context manager that does nothing unless
positions are being computed. Making and running that generator for every
node is about a third of the cost of printing. The states here answer with
one shared no-op context instead, and print the same tokens
(tests/test_printing.py compares them with LibCST's own printing).
"""

from __future__ import annotations

from contextlib import nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState

NO_POSITION = nullcontext()  # reusable: entering and leaving it does nothing


class PlainState(CodegenState):
    """A CodegenState that records no positions."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return NO_POSITION


def code_for_node(module: cst.Module, node: cst.CSTNode) -> str:
    """``module.code_for_node(node)``."""
    state = PlainState(default_indent=module.default_indent, default_newline=module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)


def code_with_substitutes(module: cst.Module, node: cst.CSTNode, substitutes: dict) -> str:
    """``module.code_for_node(node)`` where each node in `substitutes` prints as the node its
    value (a function of no arguments) makes. One printing pass: a target's own tokens are
    swapped for those of its substitute as it is printed (targets must not nest)."""
    state = _SubstitutingState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.substitutes, state.opened = substitutes, {}
    node._codegen(state)
    return "".join(state.tokens)


class _SubstitutingState(PlainState):
    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.substitutes:
            self.opened[node] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.opened.pop(node, None)
        if start is not None:
            del self.tokens[start:]
            self.substitutes[node]()._codegen(self)


def source_bytes(module: cst.Module) -> bytes:
    """``module.bytes``."""
    return code_for_node(module, module).encode(module.encoding)
