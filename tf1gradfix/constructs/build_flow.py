"""What TF1 runs building a model class's graph: `__init__`'s statements in order,
each method it calls as a statement (`self.build()`, `x = self.build()`) read where
it is called, an `if` the construction decides (class_settings) as the branch
taken, up to a `return` that ends the build.

    self.add_placeholders()
    self.logits = self.inference()     # its statements, then `logits = <its return value>`
    if multi_label:                    # decided: only this branch is built
        self.loss = self.multi_loss()
    else:
        self.loss = self.single_loss() # never built: neither read nor inlined

One walker (`steps`) yields it; model_classes reads the class from it (what the
build reads and sets, which methods it calls with arguments) and writes `__init__`
from it. An inlined method's statements join the caller's namespace, so a local of
its own that code running after it reads (the caller's `h` after `h =
self.cnn_layer()`, where the method binds an `h` too) is renamed apart (`renames`);
a method that reads its locals by name (`locals()`, `global`) is refused instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, cast

import libcst as cst

from tf1gradfix.constructs.class_settings import Decision, branch, literal_default
from tf1gradfix.cst.syntax import Refusal, fresh_name, free_names, is_docstring, loads, name_nodes
from tf1gradfix.cst.walk import walk

RUN, WITH, CALL, END = "run", "with", "call", "end"
BY_NAME = ("locals", "vars", "eval", "exec")   # (read a function's locals by their names)


@dataclass(frozen=True)
class Step:
    """RUN: a statement TF1 runs as written. WITH / CALL: a `with` entered, or a call
    `self.m()` read in place; its statements follow, up to the END of the same `stmt`."""

    kind: str
    stmt: cst.BaseStatement
    owner: cst.FunctionDef                   # `__init__`, or the inlined method the statement is in
    method: cst.FunctionDef | None = None    # CALL and its END: the method read in place


def built(statements, decided: dict[int, Decision], method: str) -> tuple[list, bool]:
    """The statements TF1 runs building the graph: an `if` the construction decides
    (class_settings) as the statements of the branch it takes, up to a `return` at this
    level (True: one is reached; the rest is never built)."""
    out: list[cst.BaseStatement] = []
    for stmt in statements:
        decision = decided.get(id(stmt)) if type(stmt) is cst.If else None
        if decision is not None and decision.taken is not None:
            inner, returned = built(branch(cast(cst.If, stmt), decision.taken), decided, method)
            out += inner
            if returned:
                return out, True
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Return):
            return out, True
        below = next((n for n in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
                      if type(n) is cst.Return), None) if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else None
        if below is not None and not isinstance(stmt, cst.With):   # (under a condition or loop: where the build ends is not known)
            if decision is not None:
                raise decision.refusal(stmt)
            raise Refusal.of(below, "class_build_return", method=method)
        out.append(stmt)
    return out, False


def steps(cls: cst.ClassDef, init: cst.FunctionDef, decided: dict[int, Decision],
          inlined: tuple[str, ...] | None = None) -> Iterator[Step]:
    """The build, in the order TF1 runs it. `decided`: id of an `if` -> its Decision.
    `inlined`: the methods read in place, as found before the class was desugared
    (their `self` is gone then)."""
    self_name = init.params.params[0].name.value if init.params.params else None
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s is not init}
    seen: list[cst.FunctionDef] = []

    def expand(statements, owner: cst.FunctionDef):
        statements, returned = built(statements, decided, owner.name.value)
        for stmt in statements:
            if isinstance(stmt, cst.With):   # (a graph context: graph_contexts; a scope)
                yield Step(WITH, stmt, owner)
                inner = yield from expand(stmt.body.body, owner)
                yield Step(END, stmt, owner)
                if inner:   # (a `return` inside it ends the build of `owner`)
                    return True
                continue
            if inlined is None:
                method = _inlined(stmt, cast(str, self_name), methods)
            else:
                name = self_call(stmt, self_name)
                method = methods[name] if name in inlined else None
            if method is None:
                yield Step(RUN, stmt, owner)
                continue
            if any(m is method for m in seen):
                raise Refusal.of(stmt, "class_method_called_twice", instance=self_name, method=method.name.value)
            seen.append(method)
            yield Step(CALL, stmt, owner, method)
            yield from expand(body_of(method), method)
            yield Step(END, stmt, owner, method)
        return returned

    if self_name is not None:
        yield from expand(init.body.body, init)


def _inlined(stmt: cst.BaseStatement, self_name: str, methods: dict) -> cst.FunctionDef | None:
    """The method a statement `self.m()` or `x = self.m()` reads in place (None: not such
    a call, or a method called for its result that is not one: layer_methods)."""
    method = methods.get(self_call(stmt, self_name))
    result = result_target(stmt)
    if method is None or result is not None and (final_return(method) is None or self_name not in {
            n.value for n in name_nodes(method.body)} or not defaults_only(method)):
        return None
    params = method.params
    if not params.params or params.params[0].name.value != self_name or not defaults_only(method) \
            or params.star_arg != cst.MaybeSentinel.DEFAULT \
            or params.kwonly_params or params.star_kwarg or params.posonly_params or method.decorators \
            or not isinstance(method.body, cst.IndentedBlock) or result is None and _returns_value(method):
        raise Refusal.of(stmt, "class_method_form", instance=self_name, method=method.name.value)
    return method


def body_of(method: cst.FunctionDef) -> list[cst.BaseStatement]:
    """Its statements without the docstring."""
    body = list(cast(cst.IndentedBlock, method.body).body)
    return body[1:] if body and is_docstring(body[0]) else body


@dataclass
class Flow:
    """The steps of one class's build, and what follows from them."""

    steps: list[Step]
    init: cst.FunctionDef
    self_name: str | None

    @classmethod
    def of(cls_, cls: cst.ClassDef, init: cst.FunctionDef, decided=None, inlined=None) -> "Flow":
        self_name = init.params.params[0].name.value if init.params.params else None
        return cls_(list(steps(cls, init, decided or {}, inlined)), init, self_name)

    def inlined(self) -> list[cst.FunctionDef]:
        """The methods read in place, in call order."""
        return [cast(cst.FunctionDef, s.method) for s in self.steps if s.kind == CALL]

    def statements(self, calls: bool = False) -> list[tuple[cst.BaseStatement, cst.FunctionDef]]:
        """(statement, owner) of the statements run as written (`calls`: and the inlined calls)."""
        return [(s.stmt, s.owner) for s in self.steps if s.kind == RUN or calls and s.kind == CALL]

    def reached(self) -> list[tuple[cst.CSTNode, cst.FunctionDef]]:
        """(node, owner) of what the build evaluates: statements, inlined calls, `with`
        items, and the `return value` of a method inlined for its result."""
        out: list[tuple[cst.CSTNode, cst.FunctionDef]] = []
        for s in self.steps:
            if s.kind == RUN or s.kind == CALL:
                out.append((s.stmt, s.owner))
            elif s.kind == WITH:
                out += [(item, s.owner) for item in cast(cst.With, s.stmt).items]
            elif s.kind == END and s.method is not None and result_target(s.stmt) is not None:
                out.append((cast(cst.IndentedBlock, s.method.body).body[-1], s.method))
        return out

    def collisions(self, shared: frozenset[str] = frozenset()) -> list[tuple[Step, cst.FunctionDef, list[str]]]:
        """(the call, its method, its locals to rename apart) for each inlined call whose
        method binds a name the build reads in the caller's namespace after the call, or
        a parameter (bound in `__init__` first) named by another part of that namespace.
        `shared`: names that stand for attributes (the class desugared), no method's own."""
        out = []
        inlined = self.inlined()
        free = {id(m): free_names(m) for m in inlined}
        for start, step in enumerate(self.steps):
            if step.kind != CALL:
                continue
            method = cast(cst.FunctionDef, step.method)
            end = next(i for i in range(start + 1, len(self.steps))
                       if self.steps[i].kind == END and self.steps[i].stmt is step.stmt)
            callers = self._callers(start)
            params = {p.name.value for p in method.params.params[1:]}
            local = (set(loads(method.body)) - free[id(method)] | params) - {self.self_name} - shared
            read: set[str] = set()
            for i, later in enumerate(self.steps[start + 1:], start + 1):
                if later.kind == END and (later.method is None or result_target(later.stmt) is None):
                    continue
                who = later.method if later.kind == END else later.owner   # (a `return value`: the method's)
                if who is method:
                    continue
                names = set().union(*(loads(node) for node in _evaluated(later)))
                if who is self.init or i > end and any(who is c for c in callers):
                    read |= names   # (a caller's own names, after the call)
                else:
                    read |= names & free[id(who)]   # (another method's globals)
            others = [m for m in [self.init, *inlined] if m is not method]
            named = set().union(*(set(loads(m.body)) | {p.name.value for p in m.params.params} for m in others))
            clash = sorted(local & read | params & named)
            if clash:
                out.append((step, method, clash))
        return out

    def _callers(self, index: int) -> list[cst.FunctionDef]:
        """The methods whose inlined call the step at `index` is inside (innermost last)."""
        open_calls: list[cst.FunctionDef] = []
        for s in self.steps[:index]:
            if s.kind == CALL:
                open_calls.append(cast(cst.FunctionDef, s.method))
            elif s.kind == END and s.method is not None:
                open_calls.pop()
        return open_calls

    def renames(self, taken: set[str]) -> dict[str, dict[str, str]]:
        """method -> {local: new name} for the collisions, each new name fresh in `taken`."""
        out: dict[str, dict[str, str]] = {}
        for step, method, clash in self.collisions():
            blocked = _by_name(method)
            for name in clash:
                if name in blocked or "*" in blocked:
                    raise Refusal.of(step.stmt, "class_method_local_reused", method=method.name.value, name=name)
                out.setdefault(method.name.value, {})[name] = fresh_name(name, taken)
        return out


def _evaluated(step: Step) -> list[cst.CSTNode]:
    """What a step reads: a `with`'s items; an inlined call's END, its method's `return value`."""
    if step.kind == WITH:
        return list(cast(cst.With, step.stmt).items)
    if step.kind == END:
        return [cast(cst.IndentedBlock, cast(cst.FunctionDef, step.method).body).body[-1]]
    return [step.stmt]


def _by_name(method: cst.FunctionDef) -> set[str]:
    """Names the method declares `global`/`nonlocal`, or "*" where it reads its locals
    by name (`locals()`, `eval`): renaming would change what they mean."""
    out = {"*"} if any(type(c) is cst.Call and type(c.func) is cst.Name and c.func.value in BY_NAME
                       for c in walk(method.body)) else set()
    for node in walk(method.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            out |= {n.name.value for n in node.names}
    return out


def self_call(stmt: cst.CSTNode, self_name: str | None) -> str | None:
    """`m` for a statement `self.m()` or `x = self.m()`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) or isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
            and isinstance(call.func.value, cst.Name) and call.func.value.value == self_name:
        return call.func.attr.value
    return None


def result_target(stmt: cst.CSTNode) -> cst.BaseAssignTargetExpression | None:
    """`x` of a statement `x = ...`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None


def final_return(method: cst.FunctionDef) -> cst.Return | None:
    """The method's `return value` if it is its last statement and its only return."""
    last = method.body.body[-1] if isinstance(method.body, cst.IndentedBlock) and method.body.body else None
    small = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
    if not isinstance(small, cst.Return) or small.value is None:
        return None
    returns = [n for n in walk(method.body) if type(n) in (cst.Return, cst.Yield, cst.FunctionDef, cst.Lambda)]
    return small if returns == [small] else None


def defaults_only(method: cst.FunctionDef) -> bool:
    """Every parameter after `self` has a literal default (the call passes none)."""
    return all(p.default is not None and literal_default(p.default) for p in method.params.params[1:])


def _returns_value(method: cst.FunctionDef) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            found.append(node.value is not None)

        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(True)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is method

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    method.visit(V())
    return any(found)
