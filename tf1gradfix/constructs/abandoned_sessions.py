"""A session that only initializes the variables and is left for another one:

    sess = tf.Session()
    sess.run(init)
    with tf.Session() as sess:   # the session the program runs in
        sess.run(tf.global_variables_initializer())
        ...

TF1 keeps the variables' values per session: each session initializes and updates
its own copy, and its random kernels draw from their seeds afresh. So a session that
runs initializers and nothing else changes nothing another session computes; it goes
with its statements and an info note (TFG103). A session is abandoned when

- it is made by `NAME = tf.Session(...)` or `with tf.Session(...) as NAME:`, a
  statement of the graph block (not inside a loop, a condition or a function);
- from there to the statement that binds NAME again (another session, or anything
  else; else the end of the block), the only statements reading NAME are
  `NAME.run(INIT)`, INIT an initializer call or a name bound to one, with no feed,
  and `NAME.close()`, statements of the block themselves; a `with` block holds only
  those;
- no function or lambda of the module reads NAME: called then, it would run in it;
- a `tf.InteractiveSession()`, which makes itself the default session of `.eval()` and
  `.run()` until it is closed, is closed right after its initializer runs.

Anything else keeps the refusal of a second session; the two conditions after the first
have reasons of their own. One session stays: the last, where every one is abandoned.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, free_names, loads, matches, name_nodes
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Init

INTERACTIVE = "tensorflow.InteractiveSession"
NOTE = ("`{name}` only initializes the variables, and TF1 keeps their values per session: nothing it "
        "does reaches the session the program runs in; dropped with its statements")


@dataclass(eq=False)
class Opened:
    """A session of the block: the call, its name, and the items that open it (one for
    `NAME = tf.Session()`, the body of a `with`, flattened)."""

    call: cst.Call
    name: str
    items: list[int]
    interactive: bool


def dropped(program, sessions: list[cst.Call], module: cst.Module, builder) -> list[cst.Call]:
    """The sessions that stay; the items of each abandoned one are dropped, with a note.
    A refusal where a session looks abandoned but something else may run in it."""
    if len(sessions) < 2:
        return sessions
    qualified = builder.qualified
    by_call = {id(s.call): s for s in opened(program, sessions, qualified)}
    starts = {s.items[0]: s.name for s in by_call.values() if with_item(program, s)}
    gone: list[Opened] = []
    for call in sessions:
        session = by_call.get(id(call))
        if session is None or len(sessions) - len(gone) < 2:
            continue
        statements = _abandoned(program, session, starts, qualified)
        if statements is None:
            continue
        _check_unread(module, session)
        for i in statements:
            program.items[i].drop = True
        builder.note(call, "TFG103", NOTE.format(name=session.name))
        gone.append(session)
    staying = {s.name for s in by_call.values() if not any(s is g for g in gone)}
    program.sessions -= {s.name for s in gone} - staying   # (a name bound again to a host value is one)
    return [c for c in sessions if not any(c is s.call for s in gone)]


def opened(program, sessions: list[cst.Call], qualified) -> list[Opened]:
    """The sessions made by a statement of the block or a `with` of it (flattened)."""
    found = []
    for call in sessions:
        interactive = qualified(call.func) == INTERACTIVE
        for i, item in enumerate(program.items):
            small = item.stmt.body[0] if isinstance(item.stmt, cst.SimpleStatementLine) and len(item.stmt.body) == 1 else None
            if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1 \
                    and isinstance(small.targets[0].target, cst.Name):
                found.append(Opened(call, small.targets[0].target.value, [i], interactive))
                break
        else:
            block = _session_with(program.owner, call)
            if block is None or interactive:   # (a `with` of an InteractiveSession: default twice over)
                continue
            inside = {id(n) for stmt in block.body.body for n in walk(stmt)}
            items = [i for i, item in enumerate(program.items) if id(item.stmt) in inside]
            asname = block.items[0].asname
            if items and asname is not None and isinstance(asname.name, cst.Name):
                found.append(Opened(call, asname.name.value, items, interactive))
    return found


def _session_with(owner, call: cst.Call) -> cst.With | None:
    for node in walk(owner, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node) is cst.With and len(node.items) == 1 and node.items[0].item is call:
            return node
    return None


def with_item(program, session: Opened) -> bool:
    """Is the session opened by a `with` (its items are its body's)?"""
    small = program.items[session.items[0]].stmt
    return not (isinstance(small, cst.SimpleStatementLine) and isinstance(small.body[0], cst.Assign)
                and small.body[0].value is session.call)


def _abandoned(program, session: Opened, starts: dict[int, str], qualified) -> list[int] | None:
    """The items to drop if `session` is abandoned (its own, its initializer runs and
    closes), else None. `starts`: item -> the session name a `with` binds from there."""
    name = session.name
    opening = with_item(program, session)
    statements = [] if opening else [session.items[0]]
    if opening:
        for i in session.items:
            if use(program, program.items[i].stmt, name, qualified) != "run":
                return None
            statements.append(i)
    closed = default = False   # (default: something else ran while it was the default session)
    for i in range(session.items[-1] + 1, len(program.items)):
        stmt = program.items[i].stmt
        if starts.get(i) == name or _rebinds(stmt, name):
            break
        found = use(program, stmt, name, qualified)
        if found is None:
            if name in loads(stmt):
                return None
            default = default or not closed
            continue
        if found == "close":
            closed = True
        elif closed:   # (a run after close fails in TF1)
            return None
        statements.append(i)
    if session.interactive and (default or not closed):
        raise Refusal.of(session.call, "abandoned_session_default", name=name)
    return statements


def use(program, stmt, name: str, qualified) -> str | None:
    """"run" for `NAME.run(INIT)`, "close" for `NAME.close()`, else None."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) \
            or not isinstance(call.func.value, cst.Name) or call.func.value.value != name:
        return None
    method = call.func.attr.value
    if method == "close" and not call.args:
        return "close"
    fetch = arg(call, 0, "fetches")
    if method != "run" or fetch is None or len(call.args) != 1 or name in loads(fetch):
        return None
    if isinstance(fetch, cst.Call) and matches(qualified(fetch.func), "initializers"):
        return "run"
    if isinstance(fetch, cst.Name) and isinstance(program.node(fetch.value), Init):
        return "run"
    return None


def _rebinds(stmt, name: str) -> bool:
    """`NAME = ...` (reading no NAME): from there NAME is another value."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
        and small.targets[0].target.value == name and name not in loads(small.value)


def _check_unread(module: cst.Module, session: Opened) -> None:
    """No function or lambda of the module reads the session's name: called while it is
    bound, it would run in that session."""
    for node in walk(module):
        if type(node) is cst.FunctionDef and session.name in free_names(node):
            raise Refusal.of(node, "abandoned_session_read", name=session.name, function=node.name.value)
        if type(node) is cst.Lambda:
            params = {p.name.value for p in node.params.params}
            if session.name in set(loads(node.body)) - params:
                raise Refusal.of(node, "abandoned_session_read", name=session.name, function="lambda")
