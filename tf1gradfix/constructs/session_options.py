"""Session options: `tf.Session(config=...)`, `tf.ConfigProto(...)`, `tf.GPUOptions(...)`
and `config.gpu_options.allow_growth = True`, with literal values or settings read from
an object (`log_device_placement=FLAGS.log_device_placement`). They decide device placement, threads
and GPU memory, never the numbers, and TF2 has no session to give them to: the
rewrite drops them with the session, with an info note (TFG103). An options
object read anywhere else (printed, passed to a function) keeps the refusal.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, matches, name_nodes
from tf1gradfix.cst.walk import walk

LITERALS = ("True", "False", "None")
NOTE = ("`config=` of `{session}` only places ops and sizes GPU memory: it does not change "
        "what the program computes, and TF2 has no session to take it; dropped with the session")


class SessionOptions:
    """The option objects a graph owner builds for its sessions, and their statements."""

    def __init__(self, owner: cst.CSTNode, qualified):
        self.qualified = qualified
        self.statements: set[cst.SimpleStatementLine] = set()
        defined: dict[str, list] = {}        # name -> statements that build or edit it
        allowed: set[int] = set()             # ids of the Name nodes those uses are
        for stmt in walk(owner):
            small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
            if type(small) is not cst.Assign or len(small.targets) != 1:
                continue
            target = small.targets[0].target
            if isinstance(target, cst.Name) and self.is_options(small.value, set(defined) | {target.value}):
                defined.setdefault(target.value, []).append(stmt)
                allowed |= {id(target)} | {id(n) for n in name_nodes(small.value)}
            elif isinstance(target, cst.Attribute) and _literal(small.value):
                root: cst.BaseExpression = target
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name) and root.value in defined:   # `config.gpu_options.allow_growth = True`
                    defined[root.value].append(stmt)
                    allowed.add(id(root))
        for call in walk(owner):
            if type(call) is cst.Call and matches(qualified(call.func), "sessions"):
                allowed |= {id(a.value) for a in call.args if a.keyword is not None and a.keyword.value == "config"
                            and isinstance(a.value, cst.Name)}
        used_elsewhere = {n.value for n in name_nodes(owner) if n.value in defined and id(n) not in allowed}
        self.names = set(defined) - used_elsewhere
        for name in self.names:
            self.statements.update(defined[name])

    def is_options(self, expr: cst.BaseExpression, names: set[str]) -> bool:
        """`tf.ConfigProto(...)` whose arguments are literals, option objects or other option calls."""
        if not isinstance(expr, cst.Call) or not matches(self.qualified(expr.func), "session_options"):
            return False
        for a in expr.args:
            value = a.value
            if a.star or not (_literal(value) or isinstance(value, cst.Name) and value.value in names
                              or _setting(value) or self.is_options(value, names)):
                return False
        return True

    def check(self, call: cst.Call, where: cst.CSTNode, builder=None) -> None:
        """A session call may take `config=` with an option object, nothing else; with a
        note on `builder` (ModelBuilder, or anything with `note`) when it does."""
        if not call.args:
            return
        config = call.args[0] if len(call.args) == 1 and call.args[0].keyword is not None \
            and call.args[0].keyword.value == "config" else None
        value = config.value if config is not None else None
        if value is None or not (isinstance(value, cst.Name) and value.value in self.names
                                 or self.is_options(value, self.names)):
            raise Refusal.of(where, "session_arguments")
        if builder is not None:
            session = (self.qualified(call.func) or "tf.Session").replace("tensorflow", "tf", 1)
            builder.note(config, "TFG103", NOTE.format(session=session))


def _literal(expr: cst.BaseExpression) -> bool:
    """A number, string or True/False/None (negated numbers too)."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)) \
        or isinstance(expr, cst.Name) and expr.value in LITERALS


def _setting(expr: cst.BaseExpression) -> bool:
    """A setting read from an object, as `FLAGS.log_device_placement`: an attribute of a
    name, nothing called (an option's value decides placement and logging only)."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value not in LITERALS
