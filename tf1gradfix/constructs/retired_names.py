"""Graph names the script rebinds to host values once its last run is done: `w, b =
sess.run([w, b])` (the trained values, under the variables' names), then `X, Y =
data.T[0], data.T[1]` (the placeholders' names, for a plot).

From that statement on, TF1's names hold arrays, and nothing runs the graph again: in the
migration the names hold the same arrays, and the step functions, which read the
variables when called, are never called again. Allowed where no run follows in program
order (none later, none in a loop around it, no function with runs called after it), the
statement is the program's own (or the run's own assignment), and no later graph code
reads the name; otherwise refused as before (`rebound_to_host_value`,
`node_outside_run`). Python's own rebinding, read as the program order reads it
(docs/restructuring.md, "Statements as scripts write them").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, target_names
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Placeholder, Variable

_DEFINITIONS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def retire(program, small: cst.Assign, names: Iterable[str], position: int) -> None:
    """A top-level host assignment rebinding graph names (`X, Y = data.T[0], data.T[1]`):
    host names from its item on, noted for the host scan to check (`check_runs`)."""
    for name in names:
        if name in program.final:
            program.retired.setdefault(name, (position, small))


def note_fetched(program, item, position: int) -> None:
    """`coef, bias = sess.run([coef, bias])` inside a host statement (the session's `with`):
    host names from the next item on (the host scan checks the run itself: `fetched_store`)."""
    for node in walk(item.stmt, skip=_DEFINITIONS):   # (a function's own names are its own)
        small = node.body[0] if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 else None
        call = small.value if isinstance(small, cst.Assign) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("run", "eval"):
            for target in cast(cst.Assign, small).targets:
                for name in target_names(target.target) or ():
                    if isinstance(program.node(name), (Variable, Placeholder)):
                        program.retired.setdefault(name, (position + 1, node))


def check_graph(program) -> None:
    """No graph statement from a retirement on binds the retired name again (later code
    reads it as the host value it holds, as Python does: the model's `deps_of`)."""
    for name, (first, small) in program.retired.items():
        for item in program.items[first:]:
            if item.node is not None and name in item.node.names:
                raise Refusal.of(small, "rebound_to_host_value", name=name)


def after(scan, position: int) -> set[str]:
    """The names that are host names at the item at `position`."""
    return {name for name, (at, _) in scan.p.retired.items() if at <= position} \
        | {node.value for node, _, _ in scan.retiring}


def fetched_store(scan, node: cst.Name, graph, statement: cst.CSTNode | None) -> bool:
    """`w, b = sess.run([w, b])`: a variable's (or placeholder's) name rebound to what the
    statement's run returns, outside any loop; noted, and checked when the scan ends."""
    if not isinstance(graph, (Variable, Placeholder)) or statement is None or scan._in_loop(node):
        return False
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call):
        return False
    scan.retiring.append((node, statement, len(scan.sites)))
    return True


def check_runs(scan) -> None:
    """Refuse each retirement a run follows: a site found after it outside its own
    statement, a function with runs the script calls after the graph is built, or (for a
    program's own statement) a site of a later item."""
    program = scan.p
    for node, statement, count in scan.retiring:
        inside = {id(n) for n in walk(statement)}
        if scan.called_later or any(id(site.call) not in inside for site in scan.sites[count:]):
            raise Refusal.of(node, "node_outside_run", kind=program.node(node.value).kind, name=node.value)
    for name, (first, small) in program.retired.items():
        later = {id(n) for item in program.items[first:] for n in walk(item.stmt)}
        if scan.called_later or any(id(site.call) in later for site in scan.sites):
            raise Refusal.of(small, "rebound_to_host_value", name=name)

