"""`init = tf.global_variables_initializer()` and its kin: TF2 variables are
initialized when made, so the statement and its runs go."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import matches
from tf1gradfix.model.nodes import Init, Statement, Variable


def build(builder, s: Statement) -> bool:
    """An `Init` node (also for `tf.group` of initializers); False if not an initializer."""
    if not s.one or kind_of(builder.program, s.value, builder.qualified) is None:
        return False
    builder.add(s.item, Init, s.names, s.value)
    return True


def kind_of(program, expr, qualified) -> str | None:
    """What running `expr` initializes: "global" (the variables), "local" (the local variables
    alone: metrics' counters, input pipelines' epochs; a program the rewrite takes has none, as
    a variable in another collection, a metric, a queue is refused: such a run initializes
    nothing there), None where it is no initializer. A `tf.group` or a list of initializers
    initializes what any of them does."""
    if isinstance(expr, cst.Name):
        node = program.node(expr.value)
        return kind_of(program, node.value, qualified) if isinstance(node, Init) else None
    grouped = isinstance(expr, cst.Call) and qualified(expr.func) == "tensorflow.group"
    if isinstance(expr, (cst.List, cst.Tuple)) or grouped:
        parts = expr.args if grouped else expr.elements
        if not parts or any(getattr(a, "keyword", None) is not None or getattr(a, "star", "") for a in parts) \
                or any(isinstance(e, cst.StarredElement) for e in parts):
            return None
        kinds = [kind_of(program, e.value, qualified) for e in parts]
        return None if None in kinds else "global" if "global" in kinds else "local"
    if isinstance(expr, cst.Call) and matches(q := qualified(expr.func), "initializers"):
        return "local" if matches(q, "local_initializers") else "global"
    if _own(program, expr) is not None:   # `w.initializer`: one variable's
        return "global"
    return None


def listed(program, expr, qualified) -> frozenset[str] | None:
    """The variables a run of `expr` initializes, where it names them (`w.initializer`,
    `tf.variables_initializer([w, b])`, a list or group of those); None where it
    initializes every variable made so far, or variables a host value lists."""
    if isinstance(expr, cst.Name):
        node = program.node(expr.value)
        return listed(program, node.value, qualified) if isinstance(node, Init) and node.value is not None else None
    own = _own(program, expr)
    if own is not None:
        return frozenset({own})
    grouped = isinstance(expr, cst.Call) and qualified(expr.func) == "tensorflow.group"
    if isinstance(expr, (cst.List, cst.Tuple)) or grouped:
        parts = [getattr(e, "value") for e in (expr.args if grouped else expr.elements)]
        found = [listed(program, e, qualified) for e in parts]
        known = [f for f in found if f is not None]
        return frozenset().union(*known) if len(known) == len(found) else None
    if not (isinstance(expr, cst.Call) and qualified(expr.func) == "tensorflow.variables_initializer" and expr.args):
        return None
    given = expr.args[0].value
    elements = given.elements if isinstance(given, (cst.List, cst.Tuple)) else ()
    names = [e.value.value for e in elements if isinstance(e.value, cst.Name)]
    if not names or len(names) != len(elements) or not all(_variable(program, n) for n in names):
        return None
    return frozenset(names)


def _own(program, expr) -> str | None:
    """`w.initializer` of a variable `w`: the name."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "initializer" and isinstance(expr.value, cst.Name) \
            and _variable(program, expr.value.value):
        return expr.value.value
    return None


def _variable(program, name: str) -> bool:
    node = program.node(name)
    return isinstance(node, Variable) and node.alias_of is None


def feed_unread(program, feed) -> bool:
    """A feed of an initializer's run that no variable's initial value reads (`{keep_prob: 0.9}`:
    TF1 ran the initializers and left the fed value unused): the run is the initializer's
    alone. Keys: placeholders; values: no calls (nothing of the feed runs when it goes)."""
    from tf1gradfix.cst.walk import walk
    from tf1gradfix.model.nodes import Placeholder, Variable, VariableGroup

    if not isinstance(feed, cst.Dict) or not feed.elements:
        return False
    fed = set()
    for e in feed.elements:
        node = program.node(e.key.value) if isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name) else None
        if not isinstance(node, Placeholder) or any(isinstance(n, cst.Call) for n in walk(e.value)):
            return False
        fed.add(node.index)
    reached: set[int] = set()
    todo = [n.index for n in program.nodes if isinstance(n, (Variable, VariableGroup))]
    while todo:   # (what the variables' initial values read, at any depth)
        i = todo.pop()
        if i not in reached:
            reached.add(i)
            todo += program.nodes[i].deps
    return not fed & reached
