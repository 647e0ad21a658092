"""Graph code after a run: the graph extended for the runs that follow.

TF1 builds and runs in program order: a statement after a `sess.run` adds ops
that only later runs can fetch (`preds = tf.nn.softmax(logits)` after the
training loop, for the evaluation). The rewrite computes each run from the
graph statements its fetches need, so such a statement is read like one made
before the runs, where that changes nothing:

* it makes nothing TF1 must initialize or an earlier run could have read: a
  tensor, a placeholder, gradients, an assign op a later statement reads (`halve =
  tf.assign(rate, rate / 2)`: it changes the variable only in the runs that fetch it,
  all later; one nothing reads is never run, and goes with a note), or a
  gradient-descent optimizer (no slots) and its train op without a step counter
  (no variable, layer or optimizer with slots: those would be made at another
  time than TF1 made them; a slotted optimizer made after the initializer ran
  fails in TF1 too);
* it binds names no other graph statement binds (an earlier run fetching the
  name still means the value it had then);
* the host names it reads are bound nowhere in the program's host code, or once,
  before it, to an immutable literal (TF1 took their value when the statement
  ran; a function reads them when called). A value computed from host values
  only (`mse = tf.reduce_mean(tf.square(pred_y - test_y))` of fetched arrays) is
  made where it is, as written, and so reads them there, as TF1 did.
"""

from __future__ import annotations

import ast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_names, loads
from tf1gradfix.cst.walk import walk
from tf1gradfix.cst.syntax import graph_ops
from tf1gradfix.model.nodes import Computed, Gradients, Optimizer, Placeholder, Static, Tensor, TrainOp, Update, Variable

INERT = (Tensor, Static, Update, Computed)   # exact types: nothing made when built (no layer call, summary, RNN)
STATELESS = (Placeholder, Tensor, Static, Computed, Gradients, Update)   # exact types: nothing TF1 must initialize


def extends(program, position: int) -> bool:
    """May the graph statement at `position` of `program.items`, after a run, be read as if made before?"""
    item = program.items[position]
    node = item.node
    if not _inert(program, node):
        return False
    others = [i for i in program.items if i.node is not None and i is not item]
    if any(set(node.names) & set(i.node.names) for i in others):
        return False
    if isinstance(node, Update) and not any(set(node.names) & set(loads(i.stmt)) for i in program.items[position + 1:]):
        return False   # (an assign op nothing later reads: never run, dropped with a note by `Unrun`)
    if isinstance(node, Static):   # (made where it is, as written: from the host values it reads then, as TF1)
        return True
    graph = {name for i in program.items if i.node is not None for name in i.node.names} | set(program.sessions)
    read = set(loads(node.value)) - graph
    binders: dict[str, list[int]] = {}
    for at, other in enumerate(program.items):
        if other.node is None and not isinstance(other.stmt, (cst.FunctionDef, cst.ClassDef)) and not _imports(other.stmt):
            for name in bound_names(other.stmt) & read:
                binders.setdefault(name, []).append(at)
    return all(len(at) == 1 and at[0] < position and _constant(program.items[at[0]].stmt) for at in binders.values())


def before_steps(program, item, sites) -> bool:
    """May the graph statement of `item`, made after runs, be made where it is? Where every
    earlier run only read variables or constants (`w.eval()` after the initializer: TF2
    reads them where they are, no step function is called yet) and the statement makes
    nothing TF1 would need to initialize again (a placeholder, a computed value, a train
    op of an optimizer without slots): the step functions, written after the last graph
    statement, compute the runs that follow from the graph as it is then, as TF1 did."""
    if any(calls_step(program, site) for site in sites):
        return False
    return _inert(program, item.node)


def _inert(program, node) -> bool:
    """Nothing TF1 must initialize, nothing made that an earlier run could have read: a
    stateless value, an optimizer without slots, or its train op without a step counter."""
    if type(node) in STATELESS:
        return True
    slotless = graph_ops()["slotless_optimizers"]
    if isinstance(node, TrainOp):
        optimizer = program.nodes[node.optimizer]
        return isinstance(optimizer, Optimizer) and optimizer.cls in slotless and node.step is None
    return isinstance(node, Optimizer) and node.cls in slotless


def calls_step(program, site) -> bool:
    """Does the run compute something (feeds, or fetches other than variables and constants)?
    Else it reads values where they are, with no step function (`w.eval()`)."""
    return bool(site.feed or site.feed_name) or any(not isinstance(program.node(f), (Variable, Static))
                                                    for f in site.fetches)


def _imports(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _constant(stmt: cst.BaseStatement) -> bool:
    """`name = <literal>`: a value nothing can change in place, the same when a function reads it."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return False
    try:
        value = ast.literal_eval(cst.Module([]).code_for_node(stmt.body[0].value).strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return isinstance(value, (int, float, complex, str, bytes, bool, type(None), tuple, frozenset))


class Unrun:
    """Graph statements after a run that `extends` does not read as made before: TF1
    built them for later runs. With no later run and no host code reading them, TF1
    built them and never ran them (the tail of an exercise script): they go, and a
    name they rebind means again what it meant before them (`rebinds`: the scan is
    then made again). Otherwise refused at the first of them; so are statements that
    make something when built (a variable, a layer, an optimizer's slots)."""

    def __init__(self) -> None:
        self.pending: list = []

    def built(self, item) -> None:
        if type(item.node) not in INERT:
            raise Refusal.of(item.stmt, "graph_after_run")
        self.pending.append(item)

    def host(self, item, runs: bool, program) -> None:
        """A host statement after them: a run, a read of a name they bind, or a call of
        the program's own functions or classes (which may run them) refuses them."""
        if not self.pending:
            return
        bound = {name for p in self.pending for name in p.node.names}
        defined = {i.stmt.name.value for i in program.items if isinstance(i.stmt, (cst.FunctionDef, cst.ClassDef))}
        called = {n.func.value for n in walk(item.stmt) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}
        if runs or bound & set(loads(item.stmt)) or called & (defined | set(program.helpers)):
            raise Refusal.of(self.pending[0].stmt, "graph_after_run")

    def close(self, program) -> tuple[list[cst.BaseStatement], bool]:
        """Drops them; gives their statements, and whether one rebound a name of the
        graph (`program.final` then names the binding before them)."""
        rebinds = False
        for item in self.pending:
            item.drop = True
        for item in self.pending:
            for name in item.node.names:
                before = [i.node.index for i in program.items if i.node is not None and not i.drop and name in i.node.names]
                rebinds |= bool(before)
                if before:
                    program.final[name] = max(before)
                else:
                    program.final.pop(name, None)
        return [item.stmt for item in self.pending], rebinds


NOTE = ("graph statement after the program's last run dropped: nothing later runs or reads it, so TF1 built "
        "it and never ran it")


def note_unrun(builder, statements) -> None:
    for stmt in statements:
        builder.note(stmt, "TFG209", NOTE)
