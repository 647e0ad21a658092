"""Assembly: the new statement list of the graph block (variables, layers and
optimizers where they were, the step functions after the last graph
statement, host statements with their runs replaced), and the transformer that
puts replacements into a tree.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.emit.state import StateEmitter
from tf1gradfix.emit.tape import TapeEmitter
from tf1gradfix.cst import layout
from tf1gradfix.cst.verbatim import Verbatim, fits
from tf1gradfix.cst.walk import TargetedTransformer
from tf1gradfix.constructs import savers
from tf1gradfix.model.nodes import Layer, LayerLoop, Optimizer, OptimizerCall, Saver, Static, Variable, VariableGroup

FLATTEN = object()   # replace a `with` by its (already rewritten) body


class Assembler:
    """Builds the new statement list of the graph block."""

    def __init__(self, program, state: StateEmitter, tape: TapeEmitter, replacements, module: cst.Module | None = None,
                 indent: int = 0):
        """`module`: where generated statements go in as text when they fit its
        layout (verbatim.py); None: they are always parsed. `indent`: the block's column."""
        self.p, self.state, self.tape, self.module, self.indent = program, state, tape, module, indent
        self.transformer = Replace(replacements)
        self.before: dict[int, list[cst.BaseStatement]] = {}   # id of a statement -> statements put before it
        self.first_run: int | None = None   # the item of the first run (a Saver may come after it: savers.py)

    def body(self, texts: list[str], moved: set[int], owner) -> list[cst.BaseStatement]:
        """`texts`: the generated functions, put after the last graph statement before the runs."""
        items = self.p.items
        insert_at = max((pos for pos, it in enumerate(items) if it.node is not None
                         and (self.first_run is None or pos < self.first_run)), default=-1) + 1   # (none: a session of no graph)
        gap = 2 if isinstance(owner, cst.Module) else 1
        functions: list[cst.BaseStatement] = []
        for text in texts:
            blank = [cst.EmptyLine(indent=False)] * gap
            if self.module is not None and fits(text, self.module):
                functions.append(Verbatim(text, blank))
                continue
            for stmt in cst.parse_module(text + "\n").body:
                functions.append(stmt.with_changes(leading_lines=blank))
        out: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        after_functions = False
        for pos, item in enumerate(items):
            if pos == insert_at and functions:
                out += functions
                after_functions = True
                pending = []   # comments of graph statements stay with the graph
            out += self.before.get(id(item.stmt), [])
            new = self._translate(item)
            rest: list[cst.BaseStatement] = []
            if isinstance(new, list):   # one statement became several (a loop creating layers)
                rest, new = new[1:], new[0]
            lead = pending + list(item.lead)
            if new is None:   # its blank lines and comments go to the next statement kept
                pending = _merged(lead, list(getattr(item.stmt, "leading_lines", ())))
                continue
            pending = []
            own = list(cast("cst.SimpleStatementLine | cst.BaseCompoundStatement | Verbatim", new).leading_lines)
            lead, own = _merged(lead, own), []
            if not out and not isinstance(owner, cst.Module):   # (no blank line right under `def`)
                while lead and lead[0].comment is None:
                    lead.pop(0)
            if after_functions:
                lead = [ln for ln in lead + own if ln.comment is not None or True]
                while lead and lead[0].comment is None:
                    lead.pop(0)
                lead, own = [cst.EmptyLine(indent=False)] * gap + lead, []
                after_functions = False
            out.append(new.with_changes(leading_lines=lead + own))
            out += rest
        if insert_at == len(items) and functions:
            out += functions
        if not out:
            out.append(cst.SimpleStatementLine([cst.Pass()]))
        return out

    def _translate(self, item) -> cst.BaseStatement | list[cst.BaseStatement] | None:
        node = item.node
        if item.drop:
            return None
        if node is None:
            new = item.stmt.visit(self.transformer)   # (a statement with nothing to replace comes back as it is)
            if isinstance(new, cst.FlattenSentinel):   # (a session's block: its statements one level up)
                kept = [s for s in getattr(getattr(item.stmt, "body", None), "body", ()) if not self._removed(s)]
                return layout.refit_body(kept, list(new.nodes), self.indent, self.indent + 4)
            if isinstance(new, cst.RemovalSentinel) or new is item.stmt:
                return None if isinstance(new, cst.RemovalSentinel) else new
            # (runs replaced by calls; the statement may come from under a removed `with`)
            return layout.refit(item.stmt, new, self.indent, tuple(self.indent + 4 * k for k in range(3)))
        if isinstance(node, (Static, VariableGroup)):   # (made once, as written)
            return item.stmt
        if isinstance(node, Variable) and node.factory is not None:   # (the call makes it, as written)
            return item.stmt
        if isinstance(node, Variable):
            text = self.state.variable(node)
            if text is None and node.global_step:   # (the statement the rewrite wrote for the global step)
                text = cst.Module([]).code_for_node(item.stmt.with_changes(leading_lines=())).strip()
            return item.stmt if text is None else self._statement(text, item.stmt)
        if isinstance(node, Saver):
            return self._saver(node, item)
        if isinstance(node, LayerLoop):
            lines = [layout.placed(ln[4:], self.indent + 4, ln[:4]) if ln.startswith("    ") else ln
                     for ln in self.state.layer_loop(node)]
            return list(cst.parse_module("\n".join(lines) + "\n").body)
        if isinstance(node, Layer):
            return self._statement(self.state.layer(node), item.stmt)
        if isinstance(node, Optimizer):
            text = self.state.optimizer(node, node.names[0], node.index in self.tape.fed_lr, self.tape.scheduled.get(node.index))
            return self._statement(text, item.stmt)
        if isinstance(node, OptimizerCall):
            opt = self.p.nodes[node.optimizer]
            assert isinstance(opt, Optimizer)
            if opt.inline and opt.stmt is item.stmt:
                name = self.tape.optimizer_names[opt.index]
                return self._statement(self.state.optimizer(opt, name, opt.index in self.tape.fed_lr,
                                                            self.tape.scheduled.get(opt.index)), item.stmt)
        return None

    def _name_of(self, node) -> str:
        """The name the emitted program holds a saved object under (savers.py)."""
        if isinstance(node, Layer):
            return self.state.naming.layers[node]
        if isinstance(node, Optimizer):
            return self.tape.optimizer_names[node.index]
        return node.names[0]

    def _removed(self, stmt: cst.CSTNode) -> bool:
        """Whether the replacements remove `stmt` (or each of its small statements)."""
        targets = self.transformer.targets
        if targets.get(stmt) is cst.RemovalSentinel.REMOVE:
            return True
        return isinstance(stmt, cst.SimpleStatementLine) and all(
            targets.get(small) is cst.RemovalSentinel.REMOVE for small in stmt.body)

    def _saver(self, node: Saver, item) -> list[cst.BaseStatement] | cst.BaseStatement:
        """The Checkpoint (none for a Saver that only restores TF1's checkpoints), then the
        functions its numbered saves and its restores call (savers.py)."""
        blank = [cst.EmptyLine(indent=False)] * (1 if self.indent else 2)   # (functions among statements, as black spaces them)
        made = [] if node.restores and not node.own else \
            [self._statement(savers.checkpoint_text(node, self.p, self.p.tf_alias, self._name_of), item.stmt)]
        texts = [savers.numbered_text(node, self.p.tf_alias, self.indent)] if node.numbered else []
        texts += [savers.restorer_text(node, self.p, self.p.tf_alias)] if node.restores else []
        for k, text in enumerate(texts):
            lead = [*item.stmt.leading_lines, *blank] if not made and k == 0 else blank
            made.append(cst.parse_statement(text + "\n").with_changes(leading_lines=lead))
        return made[0] if len(made) == 1 else made

    def _statement(self, text: str, original: cst.SimpleStatementLine) -> cst.BaseStatement:
        text = layout.fit(text, self.indent)
        if self.module is not None and fits(text, self.module):
            return Verbatim(text, original.leading_lines)
        new = cst.parse_statement(text + "\n")
        return new.with_changes(leading_lines=original.leading_lines)


class Replace(TargetedTransformer):
    """Puts `replacements` (node -> new node, sentinel, FLATTEN or an edit of the
    rewritten node) into a tree, rebuilding only the way to them."""

    def __init__(self, replacements, layout_blocks: bool = False):
        """`layout_blocks`: lay out again a statement of the module holding a replaced run
        (layout.refit), at the column its blocks give it (a block flattened into its place,
        the session's `with`, gives none: its statements were written one level deeper)."""
        super().__init__(replacements)
        self.layout_blocks, self.column, self.written_column = layout_blocks, 0, 0
        self.entered: set[cst.CSTNode] = set()

    def on_visit(self, node) -> bool:
        entered = super().on_visit(node)
        if entered and self.layout_blocks and isinstance(node, cst.IndentedBlock):
            self.column += _width(node)
            self.written_column += _width(node)
            self.entered.add(node)
        elif entered and self.layout_blocks and self.targets.get(node) is FLATTEN \
                and isinstance(getattr(node, "body", None), cst.IndentedBlock):
            self.column -= _width(node.body)   # (its statements land where it stood)
            self.entered.add(node)
        return entered

    def on_leave(self, original_node, updated_node):
        if original_node in self.entered:
            self.entered.discard(original_node)
            if isinstance(original_node, cst.IndentedBlock):
                self.column -= _width(original_node)
                self.written_column -= _width(original_node)
            else:
                self.column += _width(original_node.body)
        if self.layout_blocks and isinstance(original_node, cst.SimpleStatementLine) and original_node not in self.targets \
                and updated_node is not original_node and isinstance(updated_node, cst.SimpleStatementLine) \
                and updated_node.body:
            return layout.refit(original_node, updated_node, self.column, self.written_column)
        result = self.targets.get(original_node, updated_node)
        if callable(result):   # an edit of the rewritten node (its children may hold other edits)
            result = result(updated_node)
        if result is FLATTEN:
            body = list(updated_node.body.body)
            if body:
                body[0] = body[0].with_changes(leading_lines=[*updated_node.leading_lines, *body[0].leading_lines])
            return cst.FlattenSentinel(body)
        if isinstance(result, cst.SimpleStatementLine) and not result.body:
            return cst.RemovalSentinel.REMOVE
        return result


def _width(block: cst.IndentedBlock) -> int:
    """The columns a block indents its statements by."""
    return 4 if block.indent is None else len(block.indent)


def _merged(first: list[cst.EmptyLine], then: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The leading lines of a dropped statement put before the next one's: comments
    kept in order, a run of blank lines no longer than the longest of either."""
    def longest(lines):
        run = best = 0
        for ln in lines:
            run = run + 1 if ln.comment is None else 0
            best = max(best, run)
        return best
    limit, out, run = max(longest(first), longest(then)), [], 0
    for ln in first + then:
        run = run + 1 if ln.comment is None else 0
        if run <= limit:
            out.append(ln)
    return out
