"""Sessions passed as parameters: `train(sess, model, batches)` loses the
session in its definition and in every call, found by following calls from
where a session is opened (by position or keyword, through calls of calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from tf1gradfix.constructs import host_builds
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.cst.walk import walk

@dataclass
class SessionParameters:
    """Parameters that receive the session, found by following calls from where a
    session is opened: they go from the function and from every call."""

    functions: dict[str, tuple[cst.FunctionDef, int]]   # callee name -> (def, parameters before the arguments)
    removed_params: dict[cst.FunctionDef, str] = field(default_factory=dict)
    removed_args: dict[cst.Call, int] = field(default_factory=dict)   # call -> position of the session argument

    def find(self, calls: list[tuple[cst.Call, str]], sessions: set[str]) -> None:
        """`calls`: (call, callee name) of every call of a known function."""
        changed = True
        while changed:
            changed = False
            for call, callee in calls:
                fn, offset = self.functions[callee]
                for position, a in enumerate(call.args):
                    if not (isinstance(a.value, cst.Name) and a.value.value in sessions) or a.star:
                        continue
                    param = parameter(fn, offset, position, a)
                    if param is None:
                        raise Refusal.of(call, "session_param_unmatched", function=callee)
                    known = self.removed_params.setdefault(fn, param)
                    if known != param:
                        raise Refusal.of(call, "session_param_twice", function=callee)
                    if param not in sessions:
                        sessions.add(param)
                        changed = True
        for call, callee in calls:
            fn, offset = self.functions[callee]
            if fn not in self.removed_params:
                continue
            param = self.removed_params[fn]
            passed = [i for i, a in enumerate(call.args) if parameter(fn, offset, i, a) == param]
            value = call.args[passed[0]].value if len(passed) == 1 else None
            if not (isinstance(value, cst.Name) and value.value in sessions):
                raise Refusal.of(call, "session_param_missing", function=callee, param=param)
            self.removed_args[call] = passed[0]

    def session_arguments(self) -> set[cst.Arg]:
        return {call.args[i] for call, i in self.removed_args.items()}

    def edits(self) -> dict:
        """Replacements for `restructure._Replace`: parameter lists, and calls (as functions
        of the rewritten call, whose other arguments may hold rewritten runs)."""
        out: dict = {}
        for fn, param in self.removed_params.items():
            kept = [p for p in fn.params.params if p.name.value != param]
            out[fn.params] = fn.params.with_changes(params=_without_trailing_comma(kept, fn.params.params))
        for call, i in self.removed_args.items():
            out[call] = lambda updated, i=i: updated.with_changes(
                args=_without_trailing_comma([a for j, a in enumerate(updated.args) if j != i], updated.args))
        return out


def parameter(fn: cst.FunctionDef, offset: int, position: int, a: cst.Arg) -> str | None:
    """The parameter of `fn` argument `a` (at `position`, after `offset` bound ones: `self`) binds; None: none."""
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if a.keyword is not None:
        names = params + [p.name.value for p in fn.params.kwonly_params]
        return a.keyword.value if a.keyword.value in names else None
    index = position + offset
    return params[index] if index < len(params) else None


def _without_trailing_comma(kept: list, original: Sequence) -> list:
    """Keep the last element's comma as the original last one had it."""
    if kept and original and kept[-1] is not original[-1]:
        kept = [*kept[:-1], kept[-1].with_changes(comma=original[-1].comma)]
    return kept


def session_parameters(module: cst.Module, cls: cst.ClassDef | None, host, sessions: set[str]) -> SessionParameters:
    """The parameters that receive the session (module functions, the class's methods, when
    there is a model class), found from the calls in `host`; their names join `sessions`."""
    # (a method is `Class.name`, apart from a module function of the same name: `sample(args)` is
    # not `model.sample(sess, ...)`)
    functions = {s.name.value: (s, 0) for s in module.body if isinstance(s, cst.FunctionDef)}
    owner = cls.name.value if cls is not None else None
    if cls is not None:
        functions.update({f"{owner}.{s.name.value}": (s, 1) for s in cls.body.body
                          if isinstance(s, cst.FunctionDef) and s.name.value != "__init__"})
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is not None:   # (the class constructed with the session: `Model(sess, ...)`)
            functions[cls.name.value] = (init, 1)
    calls: list[tuple[cst.Call, str]] = []
    called: set[int] = set()
    references: list[tuple[cst.Name, str]] = []
    attributes: set[int] = set()
    instances = {"self"} | ({name for stmt in host for line in walk(stmt) if type(line) is cst.SimpleStatementLine
                             if (name := host_builds.construction(line, owner)) is not None} if owner else set())

    def key_of(func: cst.BaseExpression) -> str | None:
        if isinstance(func, cst.Name):
            return func.value if func.value in functions else None   # (a module function, the class)
        if isinstance(func, cst.Attribute) and owner is not None:
            method = f"{owner}.{func.attr.value}"
            return method if method in functions else None
        return None

    class V(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            name = key_of(call.func)
            if name is not None:
                calls.append((call, name))
                called.add(id(call.func) if isinstance(call.func, cst.Name) else id(cast(cst.Attribute, call.func).attr))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            attributes.add(id(node.attr))
            name = key_of(node)
            if name is not None and isinstance(node.value, cst.Name) and node.value.value in instances:
                references.append((node.attr, name))

        def visit_Name(self, node: cst.Name) -> None:
            name = key_of(node) if id(node) not in attributes else None
            if name is not None:
                references.append((node, name))

    for stmt in host:
        stmt.visit(V())
    found = SessionParameters(functions)
    found.find(calls, sessions)
    changed = {name for name, (fn, _) in functions.items() if fn in found.removed_params}
    for ref, name in references:
        if name in changed and id(ref) not in called and not _defines(ref, functions):
            raise Refusal.of(ref, "session_param_other_use", name=ref.value)
    return found


def kept_sessions(program, param: str | None) -> set[str]:
    """The names `__init__` keeps the session it receives in (`self.sess = sess`, read as
    `sess_2 = sess`): they hold the session, and their statements go with the parameter."""
    if param is None:
        return set()
    kept = set()
    for item in program.items:
        small = item.stmt.body[0] if isinstance(item.stmt, cst.SimpleStatementLine) and len(item.stmt.body) == 1 else None
        if item.node is None and isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and isinstance(small.targets[0].target, cst.Name) and isinstance(small.value, cst.Name) \
                and small.value.value == param:
            kept.add(small.targets[0].target.value)
            item.drop = True
    return kept


def _defines(name: cst.Name, functions) -> bool:
    """The name node of a `def` itself."""
    return any(fn.name is name for fn, _ in functions.values())
