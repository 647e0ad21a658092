"""Module-level statements a rewritten program no longer wants: the calls that switch TF1
graph mode on, a `tensorflow.compat.v1` import (the TF2 `tensorflow` import under the
same alias), the imports only they used, and the MNIST tutorial loader's calls.

Part of the rewrite of one program (program_rewrite.py's ProgramRewrite); the fields and
methods of it these edits read are declared here.
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.cst.syntax import matches, name_nodes


class ModuleEdits:
    """The module-level edits of a rewritten program (a base of ProgramRewrite)."""

    module: cst.Module
    meta: Any
    compat_import: cst.SimpleStatementLine | None
    loader_edits: dict

    def code(self, node: cst.CSTNode) -> str:
        raise NotImplementedError   # (ProgramRewrite.code)

    def _module_edits(self) -> dict:
        """Module-level statements a rewritten program no longer wants: calls that
        switch TF1 graph mode on, and a `tensorflow.compat.v1` import, which
        becomes the TF2 `tensorflow` import under the same alias (what the code
        still spells `tf.X` is then renamed like in any TF1 file)."""
        edits: dict = {}
        for stmt in self.module.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and (matches(q := self.meta.names.qualified(small.value.func), "drop") or matches(q, "graph_resets")):
                edits[stmt] = cst.RemovalSentinel.REMOVE
            elif isinstance(small, cst.Import) and stmt is self.compat_import:
                alias = small.names[0]
                edits[stmt] = stmt.with_changes(body=[small.with_changes(names=[
                    alias.with_changes(name=cst.Name("tensorflow"))])])
        if edits:
            edits.update(self._imports_only_for(edits))
        return {**edits, **self.loader_edits}   # (the MNIST loader's calls, anywhere, and its imports)

    def _imports_only_for(self, dropped: dict) -> dict:
        """A `from tensorflow... import name` whose every use is in the dropped statements
        (`from tensorflow.python.framework import ops` for `ops.reset_default_graph()`,
        `from tensorflow import ConfigProto` for session options): it goes with them."""
        edits: dict = {}
        for stmt in self.module.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if not isinstance(small, cst.ImportFrom) or small.module is None or isinstance(small.names, cst.ImportStar) \
                    or len(small.names) != 1 or self.code(small.module).partition(".")[0] != "tensorflow":
                continue
            alias = small.names[0]
            local = cast(cst.Name, alias.asname.name if alias.asname else alias.name).value
            dropped_uses = sum(1 for s in dropped for n in name_nodes(s) if n.value == local)
            uses = sum(1 for n in name_nodes(self.module) if n.value == local) - len(
                [n for n in name_nodes(stmt) if n.value == local])
            if dropped_uses and uses == dropped_uses:
                edits[stmt] = cst.RemovalSentinel.REMOVE
        return edits
