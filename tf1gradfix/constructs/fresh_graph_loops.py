"""A loop at module level whose every pass starts a fresh default graph
(`for lr in rates: tf.reset_default_graph(); <build>; with tf.Session() as sess: ...`,
or a body that is one `with tf.Graph().as_default():`).

Each pass builds and runs a program of its own, and TF1 drops the last pass's
graph, variables and all. The restructuring already follows such a program in a
function (its variables, step functions and runs in the body), so the loop is
read as `def pass_(target): <body>` and `for target in iter: pass_(target)`; once
rewritten, the function's statements go back into the loop, as the user wrote it.

Only where that reading is the loop itself: the body binds no name that code
outside the loop reads or binds (a function's locals are gone when it returns,
and a global read before the body binds it would be an unbound local); it has
no `break`, `continue`, `return`, `yield`, `global` or `nonlocal` of its own;
the loop has no `else`. The rewritten body goes back only where it binds no
name the rest of the module uses and holds no `return` or `nonlocal` of its own:
otherwise the reading is not taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from tf1gradfix.cst import line_maps
from tf1gradfix.cst.syntax import (alias_qualified, bound_names, call_root, enters_new_graph, loads,
                                   tensorflow_aliases)
from tf1gradfix.cst.walk import walk

PREFIX = "__tf1gradfix_pass_"
_OWN_EXITS = (cst.Return, cst.Yield, cst.Await, cst.Global, cst.Nonlocal)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class Outlining:
    module: cst.Module                 # the module read so, parsed again
    origin: Callable[[int], int]       # its line -> the user's line
    spans: tuple[tuple[int, int], ...]   # the user's lines of each loop read so


def outlined(module: cst.Module) -> Outlining | None:
    """The module with each such loop read as a function called per pass, or None."""
    aliases = tensorflow_aliases(module)
    found = [k for k, stmt in enumerate(module.body) if _fresh_pass(stmt, aliases) and _alone(module, k)]
    if not found:
        return None
    body: list[cst.BaseStatement] = []
    for k, stmt in enumerate(module.body):
        if k not in found:
            body.append(stmt)
            continue
        loop = stmt if isinstance(stmt, cst.For) else None
        assert loop is not None
        name = f"{PREFIX}{k}"
        params = [cst.Param(cst.Name(n)) for n in _targets(loop.target) or ()]
        body.append(cst.FunctionDef(name=cst.Name(name), params=cst.Parameters(params=params), body=loop.body,
                                    leading_lines=loop.leading_lines))
        call = cst.Call(cst.Name(name), args=[cst.Arg(cst.Name(p.name.value)) for p in params])
        body.append(loop.with_changes(leading_lines=(), body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Expr(call)])])))
    made = module.with_changes(body=body)
    lines = line_maps.statement_lines(module, (cst.For,))
    spans = tuple(lines[id(module.body[k])] for k in found)
    return Outlining(cst.parse_module(made.code), line_maps.origin(module, made, {}), spans)


def spoken(message: str) -> str:
    """A refusal's message of the reading, naming the user's loop, not the function read for it."""
    return re.sub(rf"`{PREFIX}\d+`", "the loop's body", message)


def restored(new: cst.Module) -> cst.Module | None:
    """The rewritten module with each function's statements back in its loop, or None where
    one cannot go back as it is (see the module's docstring)."""
    defs = {s.name.value: k for k, s in enumerate(new.body)
            if isinstance(s, cst.FunctionDef) and s.name.value.startswith(PREFIX)}
    if not defs:
        return new
    body = list(new.body)
    for name, k in defs.items():
        func = body[k]
        assert isinstance(func, cst.FunctionDef)
        at = next((j for j, s in enumerate(body) if _calls(s, name)), None)
        if at is None or any(name in loads(s) for j, s in enumerate(body) if j not in (k, at)):
            return None
        if any(isinstance(n, _OWN_EXITS) for n in walk(func.body, skip=_SCOPES)):
            return None
        inside = set().union(*(bound_names(s) for s in func.body.body)) if isinstance(func.body, cst.IndentedBlock) else set()
        rest = [s for j, s in enumerate(body) if j not in (k, at)]
        if inside & set().union(*(set(loads(s)) | bound_names(s) for s in rest)):
            return None
        loop = body[at]
        assert isinstance(loop, cst.For)
        body[at] = loop.with_changes(body=func.body, leading_lines=func.leading_lines)
        body[k] = None   # type: ignore[call-overload]
    return new.with_changes(body=[s for s in body if s is not None])


def _fresh_pass(stmt: cst.BaseStatement, aliases: set[str]) -> bool:
    """A plain `for` at module level whose body first resets the default graph, or is
    one block on a new graph."""
    if not (isinstance(stmt, cst.For) and stmt.orelse is None and stmt.asynchronous is None
            and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body and _targets(stmt.target)):
        return False
    first = stmt.body.body[0]
    if isinstance(first, cst.With) and len(stmt.body.body) == 1:
        return enters_new_graph(first, alias_qualified(aliases))
    call = first.body[0].value if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 \
        and isinstance(first.body[0], cst.Expr) else None
    if not (isinstance(call, cst.Call) and not call.args and call_root(call.func) in aliases):
        return False
    func = call.func
    return (func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)) == "reset_default_graph"


def _alone(module: cst.Module, k: int) -> bool:
    """The loop's body reads as a function's: no exit of its own, no name shared with the rest."""
    loop = module.body[k]
    assert isinstance(loop, cst.For)
    if any(isinstance(n, _OWN_EXITS) for n in walk(loop.body, skip=_SCOPES)):
        return False
    if any(isinstance(n, (cst.Break, cst.Continue)) for n in walk(loop.body, skip=(*_SCOPES, cst.For, cst.While))):
        return False
    inside = set(_targets(loop.target) or ()) | set().union(*(bound_names(s) for s in loop.body.body))
    rest = [s for j, s in enumerate(module.body) if j != k]
    outside = set(loads(loop.iter)).union(*(set(loads(s)) | bound_names(s) for s in rest))
    return not inside & outside


def _targets(target: cst.BaseExpression) -> tuple[str, ...] | None:
    """The names a loop target binds, where it binds only names (`lr`, `lr, decay`)."""
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        return tuple(e.value.value for e in target.elements if isinstance(e.value, cst.Name))
    return None


def _calls(stmt: cst.BaseStatement, name: str) -> bool:
    """`for ...: name(...)`, the loop that calls the function once per pass."""
    if not (isinstance(stmt, cst.For) and isinstance(stmt.body, cst.IndentedBlock) and len(stmt.body.body) == 1):
        return False
    only = stmt.body.body[0]
    return isinstance(only, cst.SimpleStatementLine) and len(only.body) == 1 and isinstance(only.body[0], cst.Expr) \
        and isinstance(only.body[0].value, cst.Call) and isinstance(only.body[0].value.func, cst.Name) \
        and only.body[0].value.func.value == name
