"""Input methods: a model class's method that makes graph inputs (placeholders,
and usually variables) and returns them, called from `__init__` once per network:

    def create_net(self, n_in, n_out):
        state = tf.placeholder(tf.float32, [None, n_in])
        w = tf.Variable(...)
        return w, state, tf.matmul(state, w)

    self.w, self.state, self.out = self.create_net(n_in, n_out)
    self.t_w, self.t_state, self.t_out = self.create_net(n_in, n_out)

A placeholder is a parameter of the functions that feed it, so it cannot stay
inside a method TF2 calls: each call is read as the method's statements written
at the call (as TF1 ran them there), every returned local under the name of the
attribute it is bound to, the other locals and the parameters renamed apart per
call. The placeholders are then `__init__`'s, named after their attributes
(`state`, `t_state`), and the class loses the method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import (Refusal, bound_args, bound_names, free_names, fresh_name, is_docstring, loads,
                                   name_nodes)
from tf1gradfix.cst.walk import TargetedTransformer, walk

MAKERS = ("placeholder", "placeholder_with_default")   # (read before names are resolved: the attribute's name)


def makes_inputs(method: cst.FunctionDef) -> bool:
    """Does the method make a placeholder itself?"""
    return any(type(c) is cst.Call and isinstance(c.func, cst.Attribute) and c.func.attr.value in MAKERS
               for c in walk(method.body))


def calls_in(statements, self_name: str | None):
    """(statement, method name, call) of each `self.m(...)` call statement (`x = ...`,
    `a, b = ...` or alone), also inside `with` blocks."""
    for stmt in statements:
        if isinstance(stmt, cst.With):
            yield from calls_in(stmt.body.body, self_name)
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) or isinstance(small, cst.Assign) and len(small.targets) == 1 else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) \
                and call.func.value.value == self_name:
            yield stmt, call.func.attr.value, call


def found(cls: cst.ClassDef, self_name: str | None, statements) -> list[cst.FunctionDef]:
    """The methods called as statements, with arguments, that make placeholders, in
    `statements`: (statement, the method it is in) of what `__init__` and the methods it
    inlines run building the graph (build_flow); checked for the form read at each call."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    out: list[cst.FunctionDef] = []
    for statement, owner in statements:
        for stmt, name, call in calls_in([statement], self_name):
            method = methods.get(name)
            if method is None or method is owner or not call.args and len(method.params.params) == 1 \
                    or not makes_inputs(method):
                continue   # (no arguments, none taken: an inlined method, build_flow)
            _check(method, cast(str, self_name))
            if not any(m is method for m in out):
                out.append(method)
    return out


def _returned(method: cst.FunctionDef) -> list[cst.BaseExpression] | None:
    """The values of its last statement `return a, b` (None: no return)."""
    last = cast(cst.IndentedBlock, method.body).body[-1]
    small = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
    if not isinstance(small, cst.Return) or small.value is None:
        return None
    value = small.value
    return [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]


def _check(method: cst.FunctionDef, self_name: str) -> None:
    params = method.params
    body = method.body.body if isinstance(method.body, cst.IndentedBlock) else []
    statements = body[1:] if body and is_docstring(body[0]) else body
    plain = not method.decorators and method.asynchronous is None and bool(statements) \
        and params.params[0].name.value == self_name and not params.posonly_params and not params.kwonly_params \
        and params.star_arg == cst.MaybeSentinel.DEFAULT and params.star_kwarg is None \
        and all(isinstance(s, cst.SimpleStatementLine) for s in statements) \
        and all(p.default is None or not name_nodes(p.default) and not any(type(n) is cst.Call for n in walk(p.default))
                for p in params.params)
    returns = [n for n in walk(method.body) if type(n) in (cst.Return, cst.Yield, cst.Lambda, cst.FunctionDef, cst.Global,
                                                          cst.Nonlocal)]
    final = cast(cst.SimpleStatementLine, statements[-1]).body[0] if plain else None
    if not plain or len(returns) > (1 if isinstance(final, cst.Return) else 0):
        raise Refusal.of(method, "class_input_method_form", method=method.name.value)


@dataclass
class Expansion:
    """The names chosen so far for the expanded calls of one `__init__`."""

    taken: set[str]
    origins: dict[int, tuple[cst.CSTNode, cst.CSTNode]]   # id of a statement written anew -> (it, the method's)

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken)

    def statements(self, stmt: cst.BaseStatement, method: cst.FunctionDef, call: cst.Call) -> list[cst.BaseStatement]:
        """The statements a call statement `targets = self.m(args)` stands for."""
        small = cast(cst.SimpleStatementLine, stmt).body[0]
        target = small.targets[0].target if isinstance(small, cst.Assign) else None
        targets = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else \
            [target] if target is not None else []
        body = list(cast(cst.IndentedBlock, method.body).body)
        body = body[1:] if body and is_docstring(body[0]) else body
        returned = _returned(method)
        if returned is not None:
            body = body[:-1]
        if returned is None and targets or returned is not None and len(returned) != len(targets) \
                or not all(isinstance(t, cst.Name) for t in targets):
            raise Refusal.of(stmt, "class_input_method_result", method=method.name.value)
        params = [p.name.value for p in method.params.params[1:]]
        bound = bound_args(call, params, call)
        assigned = set().union(*(bound_names(s) for s in body))
        local = assigned | set(params)
        read = set().union(*(loads(a) for a in bound.values()))
        names: dict[str, str] = {}
        for value, t in zip(returned or [], targets):   # a returned local: the attribute's name
            name = cast(cst.Name, t).value
            if isinstance(value, cst.Name) and value.value in local - set(params) and value.value not in names:
                if name in read:
                    raise Refusal.of(stmt, "class_input_method_result", method=method.name.value)
                names[value.value] = name
                self.taken.add(name)
        before: list[cst.BaseStatement] = []
        for p in method.params.params[1:]:
            given = bound.get(p.name.value, p.default)
            if given is None:
                raise Refusal.of(call, "class_input_method_form", method=method.name.value)
            if isinstance(given, cst.Name) and given.value not in local - set(params) and p.name.value not in assigned:
                names[p.name.value] = given.value   # (read as it is: nothing of the call rebinds it)
            else:
                names[p.name.value] = self.fresh(p.name.value)
                before.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(names[p.name.value]))],
                                                                  given)]))
        for name in sorted(local - set(names)):
            names[name] = self.fresh(name)
        after = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cast(cst.Name, t))], _renamed(v, names))])
                 for v, t in zip(returned or [], targets) if not (isinstance(v, cst.Name) and names.get(v.value) == cast(cst.Name, t).value)]
        out: list[cst.BaseStatement] = []
        for s in body:
            new = _renamed(s, names)
            if new is not s:
                self.origins[id(new)] = (new, s)
            out.append(new)
        if out:
            out[0] = cast(cst.SimpleStatementLine, out[0]).with_changes(leading_lines=cast(cst.SimpleStatementLine, stmt).leading_lines)
        return before + out + after


def _renamed(node, names: dict[str, str]):
    targets = {n for n in name_nodes(node) if names.get(n.value, n.value) != n.value}
    if not targets:
        return node

    class Rename(TargetedTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            return updated.with_changes(value=names[original.value]) if original in targets else updated

    return node.visit(Rename(targets))


def expansion(module: cst.Module, cls: cst.ClassDef, init: cst.FunctionDef, methods: list[cst.FunctionDef]) -> Expansion:
    """Names are kept apart from every name the module reads outside these methods,
    from what the methods read from outside, and from `__init__`'s parameters."""
    inside = {id(n) for m in methods for n in walk(m)}   # (their parameters too)
    taken = {n.value for n in name_nodes(module) if id(n) not in inside}
    taken |= set().union(*(free_names(m) for m in methods)) | {p.name.value for p in init.params.params}
    return Expansion(taken, {})


def origin(origins: dict, node: cst.CSTNode) -> cst.CSTNode | None:
    """The method's statement that `node`, in a statement written anew, stands for."""
    return next((old for new, old in origins.values() if any(n is node for n in walk(new))), None)
