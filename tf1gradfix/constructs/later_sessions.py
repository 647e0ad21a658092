"""Sessions one after another over the same graph, each a `with` block of the graph block
(or `NAME = tf.Session()` closed, or bound again, before the next is made):

    with tf.Session() as sess:      # trains, and saves
        ...
        saver.save(sess, path)
    with tf.Session() as sess:      # restores what was saved, and evaluates
        saver.restore(sess, path)
        print(sess.run(accuracy, feed_dict))

TF1 keeps the variables' values per session, and a new session has none; TF2 has one
set of values, the one the runs before left. A later session computes the same with
that set when

- it runs nothing that reads a variable (a graph of constants and fed values: the
  sessions of a tutorial printing one op each), or
- the first statement in it that touches the graph restores every variable from a
  checkpoint (`saver.restore(NAME, path)`, the Saver holding every variable, layer and
  optimizer of the graph), after initializer runs at most (the restore overwrites
  them): from there its values are the checkpoint's, on both sides.

The blocks follow one another (none inside another, none still open when the next is
made) and none is in a loop; an `InteractiveSession` (the default of every `.eval()`) is not
followed. Anything
else keeps the refusal of a second session: a later session that initializes the
variables anew and reads them (TF2 would read the values the earlier session left),
or reads them before it restores them.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import savers
from tf1gradfix.constructs.abandoned_sessions import Opened, opened, use, with_item
from tf1gradfix.cst.syntax import Refusal, arg, loads
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import LayerNode, Saver, Variable, VariableGroup
from tf1gradfix.model.slicing import closure

STATE = (Variable, VariableGroup, LayerNode)   # nodes that hold values a session keeps


def in_sequence(program, sessions: list[cst.Call], qualified) -> list[Opened] | None:
    """The sessions as `with` blocks of the block, in order, when there are several, every one
    is such a block and none is inside another; else None (several are then refused as before)."""
    if len(sessions) < 2:
        return None
    found = opened(program, sessions, qualified)
    if len(found) != len(sessions) or any(s.interactive for s in found):
        return None
    found.sort(key=lambda s: s.items[0])
    for k, session in enumerate(found):   # (`NAME = tf.Session()`: its statements up to its `close()`)
        if not with_item(program, session):
            end = found[k + 1].items[0] if k + 1 < len(found) else len(program.items)
            closed = next((i for i in range(session.items[0] + 1, end)
                           if use(program, program.items[i].stmt, session.name, qualified) == "close"), None)
            rebound = k + 1 < len(found) and found[k + 1].name == session.name
            if closed is None and not rebound and k + 1 < len(found):
                return None   # (still open when the next one is made)
            session.items = list(range(session.items[0], (closed + 1) if closed is not None else end))
    if any(a.items[-1] >= b.items[0] for a, b in zip(found, found[1:])):
        return None
    return found


def check(program, blocks: list[Opened], sites: list, qualified) -> None:
    """Refusal unless each session after the first computes with TF2's one set of values
    what it computed with its own (the module's docstring)."""
    for block in blocks[1:]:
        inside = {id(n) for i in block.items for n in walk(program.items[i].stmt)}
        reads = [site for site in sites if id(site.call) in inside and _reads_state(program, site)]
        if not reads:
            continue
        restored, _ = _restored_first(program, block, qualified)
        if restored is None:
            raise Refusal.of(block.call, "later_session_not_restored", name=block.name)
        missing = [n for n in program.nodes if n.index not in restored.members and savers.holds(program, n)
                   and not savers.slotless(n)]
        if missing:
            raise Refusal.of(block.call, "later_session_partly_restored", name=block.name,
                             what=missing[0].names[0] if missing[0].names else missing[0].kind)


def _reads_state(program, site) -> bool:
    roots = [node.index for node in (program.node(f) for f in site.fetches) if node is not None]
    return any(isinstance(program.nodes[i], STATE) for i in closure(program, roots))


def overwritten(program, blocks: list[Opened], qualified) -> set[int]:
    """Ids of the initializer runs a later session's first restore overwrites: they go,
    as the first session's do (HostScan would count them as initializing twice)."""
    return {id(call) for block in blocks[1:] for call in _restored_first(program, block, qualified)[1]}


def _restored_first(program, block: Opened, qualified) -> tuple[Saver | None, list[cst.Call]]:
    """The Saver whose restore is the first statement of the block that touches the graph
    (initializer runs before it aside), if it is one; and those initializer runs."""
    inits: list[cst.Call] = []
    for i in block.items if with_item(program, block) else block.items[1:]:   # (after `NAME = tf.Session()`)
        stmt = program.items[i].stmt
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) else None
        if use(program, stmt, block.name, qualified) == "run":   # (an initializer run: the restore overwrites it)
            inits.append(cst.ensure_type(call, cst.Call))
            continue
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "restore" \
                and isinstance(call.func.value, cst.Name):
            saver, sess = program.node(call.func.value.value), arg(call, 0, "sess")
            if isinstance(saver, Saver) and isinstance(sess, cst.Name) and sess.value == block.name:
                return saver, inits
        read = set(loads(stmt))
        if program.items[i].node is not None or block.name in read or read & set(program.final):
            return None, []
    return None, []
