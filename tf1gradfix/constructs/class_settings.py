"""Settings branches: a model class whose `__init__` (or a method it builds the graph
with) tests what its construction fixes, and builds a different graph for each answer.

    def __init__(self, n_in, is_training, use_l2=False):
        self.is_training = is_training
        ...
        if not is_training:
            return
        if self.use_l2:
            ...

The test reads constructor parameters, setting attributes (`self.a = param` or a
literal, set once, in `__init__`, before it is read) and literals; `self.x is not None`
on an attribute holding a placeholder or a variable is always true. Where every
`Model(...)` of the file passes the parameter the same literal (directly, or through a
name bound once to one before the call: class_arguments), or leaves it to a literal
default, the branch TF1 builds is known: only it is built
(build_flow.built), and a `return` it reaches ends the build. Where the value is
known only when the program runs, or the file makes the class with different
values, the `if` is refused wherever it decides graph code (`Decision.refusal`).

Decisions are taken on the module as written (`self.<attr>` still attributes) and
kept by the `if`'s place in its method (the k-th `if` of the method), which
model_classes.desugar does not change.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, cast

import libcst as cst

from tf1gradfix.constructs import host_values
from tf1gradfix.constructs.class_arguments import NotFixed, Unknown, binds, param_values
from tf1gradfix.cst.syntax import Refusal, loads
from tf1gradfix.cst.walk import visit, walk
from tf1gradfix.model.owners import GRAPH_CALLS

NOT_NONE = object()   # an attribute holding a placeholder or variable: only `is (not) None` may test it


class _NotSetting(NotFixed):
    """The test reads something the construction does not fix: no decision (plain Python)."""


@dataclass(frozen=True)
class Decision:
    """What TF1 builds at an `if` of the construction."""

    taken: bool | None      # True: its body; False: its `else`; None: not known (see `refusal`)
    test: str               # the test, as written
    why: str = ""           # (not known) why: varies, runtime, used, unfixed
    fields: tuple = ()

    def refusal(self, node: cst.CSTNode) -> Refusal:
        f = {**dict(self.fields), "test": self.test}
        if self.why == "varies":
            return Refusal.of(node, "class_setting_varies", test=f["test"], cls=f["cls"], param=f["param"],
                              first=f["first"], line=f["line"], other=f["other"], other_line=f["other_line"])
        if self.why == "used":
            return Refusal.of(node, "class_setting_class_used", test=f["test"], cls=f["cls"], param=f["param"],
                              line=f["line"])
        if self.why == "runtime":
            return Refusal.of(node, "class_setting_runtime", test=f["test"], cls=f["cls"], param=f["param"],
                              value=f["value"], line=f["line"])
        return Refusal.of(node, "class_setting_unfixed", test=f["test"], cls=f["cls"], param=f["param"])


@dataclass
class ClassDecisions:
    """The decisions of one class's `if`s, by (method, k): the k-th `if` of the method; and the
    values of its settings a loop may run over (a parameter, or `.attr` for `self.attr`:
    the value, lists as tuples, or the host_values.NotFixed saying there is none)."""

    by_place: dict[tuple[str, int], Decision] = field(default_factory=dict)
    values: dict[str, object] = field(default_factory=dict)

    def named(self, attributes: dict[str, str], init: cst.FunctionDef | None) -> dict[str, object]:
        """The values by the names the desugared `__init__` reads them by (`attributes`:
        name -> attribute, model_classes.ModelClass.attributes)."""
        params = {p.name.value for p in init.params.params[1:]} if init is not None else set()
        out = {name: self.values[f".{attr}"] for name, attr in attributes.items() if f".{attr}" in self.values}
        return {**out, **{p: v for p, v in self.values.items() if p in params and p not in attributes}}

    def nodes(self, cls: cst.ClassDef) -> dict[int, Decision]:
        """id of each `if` node of `cls` (this parse of it) -> its decision."""
        out = {}
        for method in _methods(cls):
            for k, node in enumerate(_ifs(method)):
                decision = self.by_place.get((method.name.value, k))
                if decision is not None:
                    out[id(node)] = decision
        return out


def branch(stmt: cst.If, taken: bool) -> list[cst.BaseStatement]:
    """The statements of the branch taken (`elif`: the `if` it is), after the other branch
    kept as a guard where it raises (`if not (test): raise ...`): a construction that
    would take it still fails as it did."""
    block = stmt.body if taken else stmt.orelse.body if isinstance(stmt.orelse, cst.Else) else None
    if isinstance(stmt.orelse, cst.If) and not taken:
        return [stmt.orelse]   # (`elif`: an `if` of its own)
    other = _raising(stmt, not taken)
    guard: list[cst.BaseStatement] = [] if other is None else [
        cst.If(test=_negated(stmt.test) if taken else stmt.test, body=other)]
    if block is None:
        return guard
    if isinstance(block, cst.SimpleStatementSuite):   # `else: a(); b = c`: one statement each
        return guard + [cst.SimpleStatementLine(body=[small]) for small in block.body]
    return guard + list(cast(cst.IndentedBlock, block).body)


# a comparison's operator -> the one that negates it (`head in (...)` -> `head not in (...)`)
_NEGATED = {cst.In: cst.NotIn, cst.NotIn: cst.In, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal,
            cst.Is: cst.IsNot, cst.IsNot: cst.Is}


def _negated(test: cst.BaseExpression) -> cst.BaseExpression:
    """`not (test)`, or the comparison with its operator negated where it has one."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and not test.lpar \
            and type(test.comparisons[0].operator) in _NEGATED:
        target = test.comparisons[0]
        return test.with_changes(comparisons=[target.with_changes(operator=_NEGATED[type(target.operator)]())])
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return cst.UnaryOperation(cst.Not(), test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))


def _raising(stmt: cst.If, body: bool) -> cst.BaseSuite | None:
    """The `if`'s body (or its `else`'s block) where it always raises: it ends with a `raise`
    and leaves no other way (`return`, `break`, `continue`); None otherwise."""
    block = stmt.body if body else stmt.orelse.body if isinstance(stmt.orelse, cst.Else) else None
    if block is None:
        return None
    last = block.body[-1] if block.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if not isinstance(last, cst.Raise) or any(isinstance(n, (cst.Return, cst.Break, cst.Continue)) for n in walk(block)):
        return None
    return block


def guarded(stmt: cst.If, decision: "Decision | None") -> "Decision | None":
    """A decision not known before the program runs, of an `if` one of whose two branches
    always raises: the other is the one a graph is built by (a run taking the raising one
    fails in TF1 as in TF2, where `branch` keeps it as a guard)."""
    if decision is None or decision.taken is not None or isinstance(stmt.orelse, cst.If):
        return decision
    body, other = _raising(stmt, True), _raising(stmt, False)
    if (body is None) == (other is None):
        return decision
    return Decision(body is None, decision.test)


def _methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    return [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]


def _ifs(method: cst.FunctionDef) -> list[cst.If]:
    return [n for n in walk(method.body) if type(n) is cst.If]


def decide_module(module: cst.Module, qualified, line_of: Callable[[cst.CSTNode], int]) -> dict[str, ClassDecisions]:
    """The decisions of each module-level class with an `__init__` and an `if` in a method;
    the values of the settings of each class whose `__init__` takes some."""
    out = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.ClassDef):
            continue
        init = next((m for m in _methods(stmt) if m.name.value == "__init__"), None)
        if init is not None and init.params.params and any(_ifs(m) for m in _methods(stmt)):
            out[stmt.name.value] = _decide_class(module, stmt, init, qualified, line_of)
        if init is not None and len(init.params.params) > 1 and isinstance(init.body, cst.IndentedBlock):
            out.setdefault(stmt.name.value, ClassDecisions()).values = _loop_values(module, stmt, init, qualified, line_of)
    return out


def _loop_values(module, cls, init, qualified, line_of) -> dict[str, object]:
    """The class's settings as a loop may iterate them (ClassDecisions.values): lists read
    as tuples where nothing in the class (or the file, for a constant passed) may change them."""
    self_name = init.params.params[0].name.value
    params = [p.name.value for p in init.params.params[1:]] + [p.name.value for p in init.params.kwonly_params]
    rebound = set().union(*(binds(s) for s in init.body.body))
    values = param_values(module, cls, init, params, line_of, _loop_reader(module, cls))
    fixed = {p: values[p] for p in params if p not in rebound}
    settings = _setting_attributes(cls, init, self_name, fixed, qualified, lists=True)
    out: dict[str, object] = {**fixed, **{f".{a}": v for a, (v, _) in settings.items()}}
    for key, value in list(out.items()):
        if isinstance(value, tuple) and not _only_read(cls, init, self_name, key):
            value = Unknown("used", param=key.lstrip("."), line=line_of(init))
        out[key] = host_values.NotFixed(value.why) if isinstance(value, Unknown) else value
    return out


def _loop_reader(module: cst.Module, cls: cst.ClassDef):
    """class_arguments' `read` for loop values: a list is a value too (a tuple), and a list
    passed by a name only where the code that sees that name only reads it or hands it to
    the class (functions with a name of their own that spells the same are other names)."""
    def read(held: cst.BaseExpression, given: cst.BaseExpression):
        value = _host_literal(held)
        if isinstance(held, cst.List) and isinstance(given, cst.Name):
            name = given.value
            holder, binding = _binding_of(module, held)
            shadowing = [f for f in walk(holder) if type(f) is cst.FunctionDef and f is not holder and name in (
                {p.name.value for p in (*f.params.params, *f.params.kwonly_params, *f.params.posonly_params)}
                | binds(f.body))]
            if not host_values.only_read(holder, lambda n: type(n) is cst.Name and n.value == name,
                                         [*binding, *shadowing], frozenset({cls.name.value})):
                raise _NotSetting
        return value
    return read


def _binding_of(module: cst.Module, held: cst.BaseExpression) -> tuple[cst.CSTNode, list[cst.CSTNode]]:
    """(the function, else the module, whose statement `name = <held>` binds the value; that statement)."""
    stack: list[cst.CSTNode] = [module]
    found: list[tuple[cst.CSTNode, cst.CSTNode]] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.append(node)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.pop()

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if len(node.body) == 1 and isinstance(node.body[0], cst.Assign) and node.body[0].value is held:
                found.append((stack[-1], node))

    visit(module, V())
    return (found[0][0], [found[0][1]]) if found else (module, [])


def _only_read(cls: cst.ClassDef, init: cst.FunctionDef, self_name: str, key: str) -> bool:
    """Does the class only read the setting `key` (a parameter, or `.a` for `self.a`)? The
    statement setting `self.a` (to the parameter) is checked as a use of `self.a`."""
    statements = list(cast(cst.IndentedBlock, init.body).body)
    if key.startswith("."):
        def held(node: cst.CSTNode) -> bool:
            return _self_target(node, self_name, bare=True) == key[1:]
        setting = [s for s in statements if _self_target(s, self_name) == key[1:]]
        return host_values.only_read(cls.body, held, setting)

    def named(node: cst.CSTNode) -> bool:
        return type(node) is cst.Name and node.value == key
    settings = [s for s in statements if _self_target(s, self_name) is not None
                and named(cast(cst.Assign, cast(cst.SimpleStatementLine, s).body[0]).value)]
    return host_values.only_read(init.body, named, settings) and all(
        _only_read(cls, init, self_name, f".{_self_target(s, self_name)}") for s in settings)


def _self_target(node: cst.CSTNode, self_name: str, bare: bool = False) -> str | None:
    """`a` of a statement `self.a = ...` (`bare`: of the expression `self.a`)."""
    if not bare:
        small = node.body[0] if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 else None
        node = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else cst.Pass()
    if isinstance(node, cst.Attribute) and type(node.value) is cst.Name and node.value.value == self_name:
        return node.attr.value
    return None


def _decide_class(module, cls, init, qualified, line_of) -> ClassDecisions:
    self_name = init.params.params[0].name.value
    positional = [p.name.value for p in init.params.params[1:]]
    params = positional + [p.name.value for p in init.params.kwonly_params]
    rebound = set().union(*(binds(s) for s in init.body.body)) if isinstance(init.body, cst.IndentedBlock) else set(params)
    values = param_values(module, cls, init, params, line_of, lambda held, given: _literal(held))
    fixed = {p: values[p] for p in params if p not in rebound}
    settings = _setting_attributes(cls, init, self_name, fixed, qualified)
    body = list(init.body.body) if isinstance(init.body, cst.IndentedBlock) else []
    first_call = next((i for i, s in enumerate(body) if _calls_method(s, self_name, cls)), len(body))
    out = ClassDecisions()
    for method in _methods(cls):
        for k, node in enumerate(_ifs(method)):
            if method is init:
                where = next(i for i, s in enumerate(body) if any(n is node for n in walk(s)))
                names, attributes = fixed, {a: v for a, (v, i) in settings.items() if i < where}
                own = self_name
            else:
                names = {}
                attributes = {a: v for a, (v, i) in settings.items() if i < first_call}
                own = method.params.params[0].name.value if method.params.params else None
            decision = guarded(node, _decide(node.test, names, attributes, own, cls.name.value))
            if decision is not None:
                out.by_place[(method.name.value, k)] = decision
    return out


def _decide(test: cst.BaseExpression, names: dict, attributes: dict, own: str | None, cls: str) -> Decision | None:
    text = cst.Module([]).code_for_node(test)

    def lookup(node: cst.BaseExpression):
        if type(node) is cst.Name and node.value in names:
            value = names[node.value]
        elif type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == own \
                and node.attr.value in attributes:
            value = attributes[node.attr.value]
        else:
            raise _NotSetting
        if isinstance(value, Unknown):
            raise value
        return value

    try:
        taken = _truth(_evaluate(test, lookup))
    except _NotSetting:
        return None
    except Unknown as unknown:
        return Decision(None, text, why=unknown.why, fields=tuple(sorted({**unknown.fields, "cls": cls}.items())))
    return Decision(taken, text)


def _truth(value) -> bool:
    if value is NOT_NONE:   # (TF1 refuses a tensor as a Python bool)
        raise _NotSetting
    return bool(value)


def _evaluate(node: cst.BaseExpression, lookup, literal=None):
    """The value of a test of settings and literals, as Python computes it (`and`/`or` short-circuit).
    `literal`: how a literal is read (lists too, for a loop: host_values)."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Name, cst.Attribute)):
        return lookup(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return not _truth(_evaluate(node.expression, lookup))
    if isinstance(node, cst.BooleanOperation):
        left = _evaluate(node.left, lookup)
        if _truth(left) == isinstance(node.operator, cst.Or):
            return left
        return _evaluate(node.right, lookup)
    if isinstance(node, cst.Comparison):
        left = _evaluate(node.left, lookup)
        for target in node.comparisons:
            right = _evaluate(target.comparator, lookup)
            if not _compare(left, target.operator, right):
                return False
            left = right
        return True
    if loads(node):
        raise _NotSetting
    return _literal(node) if literal is None else literal(node)


def _compare(left, operator, right) -> bool:
    kind = type(operator)
    if kind in (cst.Is, cst.IsNot):
        if right is not None and left is not None:
            raise _NotSetting   # (only `is None` is a question of value)
        same = left is right
        return same if kind is cst.Is else not same
    if left is NOT_NONE or right is NOT_NONE:
        raise _NotSetting
    ops: dict[type, Callable] = {cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b, cst.LessThan: lambda a, b: a < b,
           cst.LessThanEqual: lambda a, b: a <= b, cst.GreaterThan: lambda a, b: a > b,
           cst.GreaterThanEqual: lambda a, b: a >= b, cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}
    if kind not in ops:
        raise _NotSetting
    try:
        return bool(ops[kind](left, right))
    except TypeError:
        raise _NotSetting from None


def _literal(node: cst.BaseExpression):
    """A Python literal's value (numbers, strings, booleans, None, tuples of them); _NotSetting otherwise."""
    try:
        value = ast.literal_eval(cst.Module([]).code_for_node(node).strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _NotSetting from None
    if not _immutable(value):
        raise _NotSetting
    return value


def _immutable(value) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes))


def _calls_method(stmt: cst.CSTNode, self_name: str, cls: cst.ClassDef) -> bool:
    methods = {m.name.value for m in _methods(cls)}
    return any(type(c) is cst.Call and type(c.func) is cst.Attribute and type(c.func.value) is cst.Name
               and c.func.value.value == self_name and c.func.attr.value in methods for c in walk(stmt))


def _setting_attributes(cls, init, self_name: str, fixed: dict, qualified, lists: bool = False) -> dict[str, tuple[object, int]]:
    """attribute -> (its value, the index of `__init__`'s statement setting it) for the
    attributes set once in the class, by a statement of `__init__` itself, to a setting or
    a literal (or to a placeholder or variable: NOT_NONE)."""
    counts: dict[str, int] = {}
    for node in walk(cls.body):
        targets = [node.target] if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) else []
        for target in targets:
            for a in walk(target):
                if type(a) is cst.Attribute:
                    counts[a.attr.value] = counts.get(a.attr.value, 0) + 1
    out: dict[str, tuple[object, int]] = {}
    for index, stmt in enumerate(init.body.body if isinstance(init.body, cst.IndentedBlock) else []):
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target = small.targets[0].target
        if not (type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == self_name) \
                or counts.get(target.attr.value) != 1:
            continue
        value = small.value
        if type(value) is cst.Call and qualified(value.func) in GRAPH_CALLS:
            out[target.attr.value] = (NOT_NONE, index)
            continue

        def lookup(node, fixed=fixed):
            if type(node) is cst.Name and node.value in fixed:
                if isinstance(fixed[node.value], Unknown):
                    raise fixed[node.value]
                return fixed[node.value]
            raise _NotSetting
        try:
            result = _evaluate(value, lookup, _host_literal if lists else None)
        except _NotSetting:
            continue
        except Unknown as unknown:
            result = unknown
        out[target.attr.value] = (result, index)
    return out


def _host_literal(expr: cst.BaseExpression):
    try:
        return host_values.literal(expr)
    except host_values.NotFixed:
        raise _NotSetting from None


def literal_default(expr: cst.BaseExpression) -> bool:
    """Is `expr` a literal (a default a call may be read as binding anew)?"""
    try:
        _literal(expr)
    except _NotSetting:
        return False
    return True
