"""What a class is made with: at each `Cls(...)` of the module, the expression each
parameter of `__init__` gets, bound as Python binds it (positional arguments in the
order of the parameters, then keywords, else the default), and what a name passed
there holds when the call runs:

    def test():
        multi_label = True                       # bound once, before the call
        net = TextNet(3, 5, multi_label=multi_label)

A name is read as the expression of its one binding `name = <expr>` in the function
(or module) making the call, where that binding runs before the call (an earlier
statement of a block the call is in); a name the function does not bind, as the one
module-level `name = <expr>`. Anything else (a parameter, a loop target, a binding
under a condition, after the call, or also elsewhere, `global`) is known only when
the program runs. class_settings reads literals this way, class_initializers
initializer calls.
"""

from __future__ import annotations

from typing import Callable, cast

import libcst as cst

from tf1gradfix.cst.syntax import loads
from tf1gradfix.cst.walk import visit, walk


class NotFixed(Exception):
    """The expression is not one the reader takes (or a name's value is known only at run time)."""


class Unknown(Exception):
    """A parameter whose value the file does not fix: (why, fields) of the refusal."""

    def __init__(self, why: str, **fields):
        super().__init__(why)
        self.why, self.fields = why, fields


def param_values(module: cst.Module, cls: cst.ClassDef, init: cst.FunctionDef, params: list[str], line_of,
                 read: Callable[[cst.BaseExpression, cst.BaseExpression], object], key=lambda value: (type(value), value),
                 shown=repr) -> dict[str, object]:
    """parameter -> the value `read` takes from what every `Cls(...)` of the module gives
    it (or its default), or the Unknown saying why there is none. `read(held, given)`:
    the expression held (a name's value) and the argument as written. `key`: what makes
    two values the same; `shown`: a value as a message writes it."""
    positional = [p.name.value for p in init.params.params[1:]]
    defaults = {p.name.value: p.default for p in [*init.params.params[1:], *init.params.kwonly_params]
                if p.default is not None}
    sites: list[tuple[cst.Call, cst.CSTNode]] = []   # (call, the function or module it is in)
    other: list[cst.Name] = []
    _find_sites(module, cls.name.value, cls, sites, other)
    if other:   # (passed around, subclassed: made where this file cannot see)
        return {p: Unknown("used", param=p, line=line_of(other[0])) for p in params}
    if not sites:
        return {p: Unknown("unfixed", param=p) for p in params}
    seen: dict[str, list[tuple[object, int]]] = {p: [] for p in params}
    out: dict[str, object] = {}
    for call, scope in sites:
        loose = next((a for a in call.args if a.star), None) or next(
            (a for a in call.args[len(positional):] if a.keyword is None), None)
        if loose is not None:   # (`Cls(*args)`: which parameter gets what is known when it runs)
            for p in params:
                out.setdefault(p, Unknown("runtime", param=p, value=cst.Module([]).code_for_node(loose).strip(" ,"),
                                          line=line_of(call)))
            continue
        given = {a.keyword.value if a.keyword is not None else positional[i]: a.value for i, a in enumerate(call.args)}
        for p in params:
            expr = given.get(p, defaults.get(p))
            if expr is None:
                out.setdefault(p, Unknown("unfixed", param=p))
                continue
            try:   # (a default is evaluated where the class is defined)
                held = held_expression(expr, call, scope, module) if p in given else held_expression(expr, cls, module, module)
                value = read(held, expr)
            except NotFixed:
                text = cst.Module([]).code_for_node(expr) + ("" if p in given else " (its default)")
                out.setdefault(p, Unknown("runtime", param=p, value=text, line=line_of(expr)))
                continue
            seen[p].append((value, line_of(call)))
    for p in params:
        if p in out:
            continue
        first = seen[p][0]
        other_value = next(((v, line) for v, line in seen[p] if key(v) != key(first[0])), None)
        if other_value is not None:
            out[p] = Unknown("varies", param=p, first=shown(first[0]), line=first[1], other=shown(other_value[0]),
                             other_line=other_value[1])
        else:
            out[p] = first[0]
    return out


def held_expression(expr: cst.BaseExpression, at: cst.CSTNode, scope: cst.CSTNode, module: cst.Module) -> cst.BaseExpression:
    """`expr`, or for a name the expression it holds where `at` (in `scope`, a function
    or the module) reads it."""
    if not isinstance(expr, cst.Name) or expr.value in ("True", "False", "None"):
        return expr
    name = expr.value
    for holder in ([scope, module] if scope is not module else [module]):
        body = list(holder.body.body) if isinstance(holder, cst.FunctionDef) else list(cast(cst.Module, holder).body)
        if isinstance(holder, cst.FunctionDef):
            params = holder.params
            if name in {p.name.value for p in (*params.params, *params.kwonly_params, *params.posonly_params)}:
                raise NotFixed
        binders = [n for s in body for n in walk(s, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if _binds_here(n, name)]
        binders += [s for s in body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name]
        if not binders:
            continue
        everywhere = any(isinstance(n, (cst.Global, cst.Nonlocal)) and name in {i.name.value for i in n.names}
                         for n in walk(module))
        small = binders[0].body[0] if len(binders) == 1 and isinstance(binders[0], cst.SimpleStatementLine) \
            and len(binders[0].body) == 1 else None
        if everywhere or not isinstance(small, cst.Assign) or len(small.targets) != 1 \
                or type(small.targets[0].target) is not cst.Name or _binds_nested(body, name):
            raise NotFixed
        if holder is scope and not _runs_before(binders[0], body, at) \
                or holder is not scope and not any(binders[0] is b for b in body):   # (a module constant: at its top level)
            raise NotFixed
        return small.value
    raise NotFixed


def _binds_here(node: cst.CSTNode, name: str) -> bool:
    """Does `node` itself (a simple statement, a loop, a `with`, a handler, `:=`) bind `name`?"""
    if type(node) is cst.SimpleStatementLine:
        return name in binds(node)
    if type(node) in (cst.For, cst.CompFor):
        return name in loads(cast(cst.For, node).target)
    if type(node) is cst.AsName:
        return name in loads(node.name)
    if type(node) is cst.NamedExpr:
        return name in loads(node.target)
    return False


def _runs_before(binding: cst.CSTNode, body: list, at: cst.CSTNode) -> bool:
    """Is `binding` an earlier statement of a block `at` is in (so it ran before `at`)?"""
    block: list | None = body
    while block is not None:
        index = next((i for i, s in enumerate(block) if any(n is at for n in walk(s))), None)
        if index is None:
            return False
        if any(s is binding for s in block[:index]):
            return True
        block = next((b for b in _blocks(block[index]) if any(n is at for s in b for n in walk(s))), None)
    return False


def _blocks(stmt: cst.CSTNode) -> list[list]:
    """The statement lists a compound statement holds."""
    out = []
    for node in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if node is not stmt and isinstance(node, cst.BaseStatement):
            continue
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            out.append(list(node.body) if isinstance(node, cst.IndentedBlock) else [node])
    return out


def binds(stmt: cst.CSTNode) -> set[str]:
    """Names bound anywhere in `stmt`, nested blocks included (not inside nested functions)."""
    out: set[str] = set()
    for node in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)):
            out |= set(loads(node.target))
        elif isinstance(node, cst.AsName):
            out |= set(loads(node.name))
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            out |= {n.name.value for n in node.names}
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        out.add(stmt.name.value)
    return out


def _binds_nested(statements, name: str) -> bool:
    """Does a function defined among `statements` (or a comprehension) rebind `name`?"""
    return any(type(n) is cst.FunctionDef and name in binds(n.body) for s in statements for n in walk(s))


def _find_sites(module: cst.Module, name: str, cls: cst.ClassDef, sites: list, other: list) -> None:
    """The calls `name(...)` with the function (or module) each is in; other uses of `name`."""
    stack: list[cst.CSTNode] = [module]
    calls: set[int] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.append(node)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.pop()

        def visit_Call(self, node: cst.Call) -> None:
            if type(node.func) is cst.Name and node.func.value == name:
                sites.append((node, stack[-1]))
                calls.add(id(node.func))

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and id(node) not in calls and node is not cls.name:
                other.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)   # (`x.Cls` is another name)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)   # (a keyword is no use of the name)
            return False

    visit(module, V())
