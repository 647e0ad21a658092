"""`init = tf.global_variables_initializer()` and its kin: TF2 variables are
initialized when made, so the statement and its runs go."""

from __future__ import annotations

from tf1gradfix.cst.syntax import matches
from tf1gradfix.model.nodes import Init, Statement


def build(builder, s: Statement) -> bool:
    """An `Init` node; False if not an initializer."""
    if not matches(s.q, "initializers") or not s.one:
        return False
    builder.add(s.item, Init, s.names, s.value)
    return True


def feed_unread(program, feed) -> bool:
    """A feed of an initializer's run that no variable's initial value reads (`{keep_prob: 0.9}`:
    TF1 ran the initializers and left the fed value unused): the run is the initializer's
    alone. Keys: placeholders; values: no calls (nothing of the feed runs when it goes)."""
    import libcst as cst

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
