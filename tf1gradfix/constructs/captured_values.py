"""Host data graph code reads, bound to a new value once the graph is built:

    features = load("train.csv")
    logits = tf.matmul(features, w)      # TF1: a constant of the array `features` held then
    ...
    features = load("test.csv")          # host code after the graph: no effect on `logits`

TF1 turned the value into a constant of the graph when the statement ran; the step
functions of TF2 read the name when they are called, and would see the new value.
The value the graph captured is kept under a name of its own, bound where the graph
read it (`features_at_build = features`), and the graph code reads that name. Only
where the name is bound anew by plain assignments after the last graph statement (an
augmented assignment may change the array itself, which a new name would share).
"""

from __future__ import annotations

import builtins

import libcst as cst

from tf1gradfix.cst.syntax import bound_names, loads, names_renamed
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Static, Tensor


def snapshot(builder) -> None:
    """Binds each host name graph statements read, and host code rebinds after the graph
    is built, to a name of its own where the graph read it (model/checks.check_moved
    refuses the reads left)."""
    program = builder.program
    items = program.items
    positions = [pos for pos, it in enumerate(items) if it.node is not None]
    if not positions:
        return
    last = max(positions)
    later = items[last + 1:]
    rebound = set().union(*(bound_names(it.stmt) for it in later)) if later else set()
    augmented = {_target(n) for it in later for n in walk(it.stmt) if type(n) is cst.AugAssign}
    known = set(program.final) | set(program.helpers) | set(dir(builtins))
    readers: dict[str, list[int]] = {}
    for pos, item in enumerate(items[:last + 1]):
        node = item.node
        if type(node) is not Tensor or node.stmt is not item.stmt or item.drop:
            continue
        for name in sorted((set(loads(node.value)) - known) & (rebound - augmented)):
            readers.setdefault(name, []).append(pos)
    binds = []
    for name, found in readers.items():
        if any(name in bound_names(it.stmt) for it in items[found[0]:last + 1]):
            continue   # (bound again inside the graph section: each read captured another value)
        alias = builder.invent(f"{name}_at_build")
        for pos in found:
            _renamed(builder, items[pos], name, alias)
        start = items[found[0]]
        bind = type(start)(stmt=cst.parse_statement(f"{alias} = {name}\n"), prefix=start.prefix, scope=start.scope,
                           entries=start.entries)
        builder.add(bind, Static, (alias,), bind.stmt.body[0].value, (), calls=[])
        binds.append((found[0], bind))
    for pos, bind in sorted(binds, key=lambda b: -b[0]):   # (from the last: the positions before stay)
        items.insert(pos, bind)


def _renamed(builder, item, name: str, alias: str) -> None:
    """The item's statement (and its node's) reading `alias` for `name`: laid out as the
    user's was (`as_written`), its calls checked as theirs were."""
    node = item.node
    new = names_renamed(item.stmt, {name: alias})
    program = builder.program
    program.as_written[id(new)] = program.as_written.get(id(item.stmt), item.stmt)
    old_calls = [c for c in walk(item.stmt) if type(c) is cst.Call]
    new_calls = [c for c in walk(new) if type(c) is cst.Call]
    program.checked.update(id(n) for o, n in zip(old_calls, new_calls) if id(o) in program.checked)
    if node.value is item.stmt:
        node.value = new
    else:
        small = new.body[0] if isinstance(new, cst.SimpleStatementLine) else None
        node.value = small.value if isinstance(small, (cst.Assign, cst.AugAssign, cst.Expr)) else node.value
    item.stmt = node.stmt = new


def _target(node: cst.AugAssign) -> str | None:
    return node.target.value if isinstance(node.target, cst.Name) else None
