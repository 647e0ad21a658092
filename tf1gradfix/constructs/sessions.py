"""`sess = tf.Session(...)` in graph code: TF2 has no session, so the statement
goes and its runs become calls (model/sites.py); only `config=` options are
accepted, dropped with a note (session_options.py)."""

from __future__ import annotations

from tf1gradfix.cst.syntax import matches
from tf1gradfix.model.nodes import Statement


def build(builder, s: Statement) -> bool:
    """Records the session and drops its statement; False if not a session."""
    if not matches(s.q, "sessions") or not s.one or s.call is None:
        return False
    builder.session_arguments(s.call, s.call)
    builder.program.sessions.add(s.one)
    s.item.drop = True
    return True
