"""Model classes: a class whose `__init__` builds the graph into attributes
(`self.loss = ...`), run from other functions and methods through
`sess.run(model.loss, feed_dict={model.x: ...})`, with the session passed
along as a parameter.

The class becomes a `tf.Module`. Its `__init__` still creates the variables,
layers and optimizers; the step functions become its methods; each run calls
one on the instance the run named (`model.train_step(xb, yb)`); session
parameters disappear from functions and from their calls.

How: `desugar` first reads `self.<attr>` inside `__init__` as a plain name, so
the rest of the rewrite sees one function building a graph. `Attributes` then
turns the names that `__init__` shares with the methods back into attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tf1gradfix.builders import MODULE_ATTRIBUTES
from tf1gradfix.syntax import Refusal, bound_names, free_names, loads, name_nodes


class ClassFound(Exception):
    """The graph is built by a class's `__init__`: the program is read again, desugared."""

    def __init__(self, cls: cst.ClassDef):
        super().__init__(cls.name.value)
        self.cls = cls


@dataclass
class ModelClass:
    name: str
    self_name: str                          # `__init__`'s first parameter
    attributes: dict[str, str]              # name inside `__init__` after desugar -> attribute
    members: frozenset[str]                 # every attribute and method name the class uses
    inlined: tuple[str, ...] = ()           # methods `__init__` builds the graph with (`self.build()`)

    def graph_attributes(self, graph_names) -> dict[str, str]:
        """attribute -> model name, for the attributes that hold graph values."""
        return {attr: name for name, attr in self.attributes.items() if name in graph_names}

    def session_attributes(self, sessions) -> set[str]:
        """Attributes that hold a session `__init__` opened (`self.sess`)."""
        return {attr for name, attr in self.attributes.items() if name in sessions}


def init_of(cls: cst.ClassDef) -> cst.FunctionDef | None:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            return stmt
    return None


def model_class(module: cst.Module, owner: cst.CSTNode) -> cst.ClassDef | None:
    """The module-level class whose `__init__` is `owner`, or one of the methods
    `__init__` builds the graph with, if it is one."""
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and owner in stmt.body.body and isinstance(owner, cst.FunctionDef):
            init = init_of(stmt)
            if init is owner or init is not None and any(m is owner for m in build_methods(stmt, init)):
                return stmt
    return None


def build_methods(cls: cst.ClassDef, init: cst.FunctionDef) -> list[cst.FunctionDef]:
    """Methods that `__init__` calls as statements `self.build()` (and those they call
    so), in call order: their statements are read as if written at the call."""
    self_name = init.params.params[0].name.value if init.params.params else None
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s is not init}
    found: list[cst.FunctionDef] = []

    def expand(statements) -> None:
        for stmt in statements:
            method = methods.get(_self_call(stmt, self_name))
            if method is None:
                continue
            if any(m is method for m in found):
                raise Refusal(stmt, "TFG904", f"`{self_name}.{method.name.value}()` called twice while the graph is built")
            params = method.params
            if [p.name.value for p in params.params] != [self_name] or params.star_arg != cst.MaybeSentinel.DEFAULT \
                    or params.kwonly_params or params.star_kwarg or params.posonly_params or method.decorators \
                    or not isinstance(method.body, cst.IndentedBlock) or _returns_value(method):
                raise Refusal(stmt, "TFG904", f"`{self_name}.{method.name.value}()` builds the graph but takes "
                              "arguments, is decorated or returns a value")
            found.append(method)
            expand(method.body.body)

    if self_name is not None:
        expand(init.body.body)
    return found


def init_statements(cls: cst.ClassDef, plan: "ModelClass") -> list[cst.BaseStatement]:
    """`__init__`'s statements, with each `self.build()` replaced by that method's own
    (without its docstring)."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}

    def expand(statements) -> list[cst.BaseStatement]:
        out = []
        for stmt in statements:
            name = _self_call(stmt, plan.self_name)
            if name in plan.inlined:
                body = list(methods[name].body.body)
                out += expand(body[1:] if body and _is_docstring(body[0]) else body)
            else:
                out.append(stmt)
        return out

    return expand(init_of(cls).body.body)


def _self_call(stmt: cst.CSTNode, self_name: str | None) -> str | None:
    """`m` for a statement `self.m()`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
            and isinstance(call.func.value, cst.Name) and call.func.value.value == self_name:
        return call.func.attr.value
    return None


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


def desugar(module: cst.Module, cls: cst.ClassDef) -> tuple[cst.Module, ModelClass]:
    """The module with `self.<attr>` read as a name inside `cls.__init__`, parsed again
    (the scope analysis must see the new names); lines stay where they were."""
    init = init_of(cls)
    params = init.params.params
    if not params or init.params.posonly_params:
        raise Refusal(init, "TFG904", "a model class whose `__init__` has no `self` parameter")
    if cls.keywords or any(cst.Module([]).code_for_node(b.value) != "object" for b in cls.bases):
        raise Refusal(cls, "TFG904", f"model class `{cls.name.value}` with a base class of its own")
    self_name = params[0].name.value
    members = _members(cls, self_name)
    methods = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    inlined = build_methods(cls, init)
    regions = [init.body] + [m.body for m in inlined]   # where `self.<attr>` is read as a name
    calls = {id(stmt.body[0].value.func) for region in regions for stmt in region.body
             if _self_call(stmt, self_name) in {m.name.value for m in inlined}}
    used = [a for region in regions for a in _self_attributes(region, self_name) if id(a) not in calls]
    assigned = set().union(*(_set_in(region, self_name) for region in regions))
    class_level = set().union(*(bound_names(s) for s in cls.body.body if not isinstance(s, cst.FunctionDef)))
    taken = set().union(*(loads(r) for r in regions)) | {p.name.value for p in params}
    attributes: dict[str, str] = {}
    for attr in sorted({a.attr.value for a in used}):
        if attr in methods or attr not in assigned | class_level:
            # a method, or something a base class provides: a plain name would mean another thing
            raise Refusal(init, "TFG904", f"`{self_name}.{attr}`, a method or an attribute `__init__` does not "
                          "set, used while the graph is built")
        name, k = attr, 1
        while name in taken:
            k += 1
            name = f"{attr}_{k}"
        taken.add(name)
        attributes[name] = attr
    local = {attr: name for name, attr in attributes.items()}
    for region, owner in zip(regions, [init, *inlined]):
        bare = [n for n in name_nodes(region) if n.value == self_name]
        if len(bare) != len(_self_attributes(region, self_name)):
            raise Refusal(owner, "TFG904", f"`{self_name}` used in `{owner.name.value}` other than to set or read an attribute")

    inside = _Descendants(*regions)
    path = {id(module), id(cls), id(cls.body), id(init)} | {id(m) for m in inlined}

    class Desugar(cst.CSTTransformer):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return id(node) in path or node in inside

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if isinstance(updated.value, cst.Name) and updated.value.value == self_name and id(original) not in calls:
                return cst.Name(local[updated.attr.value], lpar=updated.lpar, rpar=updated.rpar)
            return updated

    new = module.visit(Desugar())
    plan = ModelClass(cls.name.value, self_name, attributes, members, tuple(m.name.value for m in inlined))
    return cst.parse_module(new.bytes), plan


class _Descendants:
    """Membership test for the nodes under one node (by identity)."""

    def __init__(self, *roots: cst.CSTNode):
        self.ids: set[int] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            self.ids.add(id(node))
            stack.extend(node.children)

    def __contains__(self, node: cst.CSTNode) -> bool:
        return id(node) in self.ids


def _set_in(body: cst.CSTNode, self_name: str) -> set[str]:
    """Attributes `self.<attr> = ...` (or a tuple of them) sets."""
    found = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node]
            for t in targets:
                a = t.value if isinstance(t, cst.Element) else t.target
                if isinstance(a, cst.Attribute) and isinstance(a.value, cst.Name) and a.value.value == self_name:
                    found.add(a.attr.value)

    body.visit(V())
    return found


def _self_attributes(node: cst.CSTNode, self_name: str) -> list[cst.Attribute]:
    found = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, a: cst.Attribute) -> None:
            if isinstance(a.value, cst.Name) and a.value.value == self_name:
                found.append(a)

    node.visit(V())
    return found


def _members(cls: cst.ClassDef, self_name: str) -> frozenset[str]:
    """Names the class's instances may answer to: its methods and class-level
    names, every `self.<attr>` it uses, and what `tf.Module` itself defines."""
    names = set(MODULE_ATTRIBUTES)
    for stmt in cls.body.body:
        names |= {stmt.name.value} if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else bound_names(stmt)
    names |= {a.attr.value for a in _self_attributes(cls.body, self_name)}
    return frozenset(names)


@dataclass
class Attributes:
    """Turns `__init__`'s names back into attributes, and step functions into methods."""

    plan: ModelClass
    init: cst.FunctionDef
    tf_alias: str
    renamed: dict[str, str] = field(default_factory=dict)    # name -> attribute
    kept_params: list[str] = field(default_factory=list)     # `__init__` parameters a method reads
    method_names: frozenset[str] = frozenset()
    init_names: frozenset[str] = frozenset()                 # what `__init__` binds or receives

    def plan_names(self, init_body: list[cst.BaseStatement], methods: list[cst.FunctionDef]) -> None:
        """Which names become attributes: every desugared one, and each name of
        `__init__` (local or parameter) that a method reads."""
        self.renamed = dict(self.plan.attributes)
        bound = set().union(*(bound_names(s) for s in init_body)) if init_body else set()
        params = {p.name.value for p in self.init.params.params[1:]} | \
            {p.name.value for p in self.init.params.kwonly_params}
        self.init_names = frozenset(bound | params)
        read = set().union(*(free_names(m) for m in methods)) if methods else set()
        method_names = self.method_names = frozenset(m.name.value for m in methods)
        taken = set(self.plan.members) | method_names
        for name in sorted(read & (bound | params)):
            if name in self.renamed:
                continue
            if name in params and name in bound:
                raise Refusal(self.init, "TFG904", f"`{name}` is both a parameter of `__init__` and bound in it")
            attr, k = name, 1
            while attr in taken:
                k += 1
                attr = f"{name}_{k}"
            taken.add(attr)
            self.renamed[name] = attr
            if name in params:
                self.kept_params.append(name)
        kept = {attr for name, attr in self.renamed.items() if name in bound or name in params}   # (the rest are gone)
        clash = kept & (method_names | MODULE_ATTRIBUTES)
        if clash:
            raise Refusal(self.init, "TFG904", f"attribute `{sorted(clash)[0]}` would clash with a method "
                          "of the rewritten class or of `tf.Module`")

    def init_body(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """`super().__init__()` first (after a docstring), parameters a method reads
        kept as attributes, and every renamed name as `self.<attribute>`."""
        renamed = {k: v for k, v in self.renamed.items() if k not in self.kept_params}
        out = [self._attributes(stmt, renamed) for stmt in body]
        first = 1 if out and _is_docstring(out[0]) else 0
        head = [cst.parse_statement("super().__init__()\n")]
        head += [cst.parse_statement(f"{self.plan.self_name}.{self.renamed[p]} = {p}\n") for p in self.kept_params]
        if out and first == 0:
            head[0] = head[0].with_changes(leading_lines=out[0].leading_lines)
            out[0] = out[0].with_changes(leading_lines=())
        return out[:first] + head + out[first:]

    def method(self, fn: cst.FunctionDef) -> cst.FunctionDef:
        """A step function as a method: `self` first, shared names read through it."""
        free = free_names(fn) & (set(self.renamed) | self.method_names)
        body = self._attributes(fn.body, {n: self.renamed.get(n, n) for n in free})
        params = fn.params.with_changes(params=[cst.Param(cst.Name(self.plan.self_name)), *fn.params.params])
        decorators = fn.decorators
        if any(set(loads(d)) & (self.init_names | set(self.renamed)) for d in decorators):
            # an input signature whose shapes `__init__` knows: not yet known where the class is defined
            decorators = [cst.Decorator(cst.parse_expression(f"{self.tf_alias}.function"))]
        return fn.with_changes(body=body, params=params, decorators=decorators)

    def _attributes(self, node: cst.CSTNode, renamed: dict[str, str]):
        targets = {id(n) for n in name_nodes(node) if n.value in renamed}
        self_name = self.plan.self_name

        class Rename(cst.CSTTransformer):
            def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
                if id(original) not in targets:
                    return updated
                return cst.Attribute(cst.Name(self_name), cst.Name(renamed[original.value]),
                                     lpar=updated.lpar, rpar=updated.rpar)

        return node.visit(Rename()) if targets else node

    def class_def(self, cls: cst.ClassDef, init: cst.FunctionDef, methods: list[cst.FunctionDef]) -> cst.ClassDef:
        """`cls` (as rewritten elsewhere) with its new `__init__`, the methods after it,
        and `tf.Module` as its base (it had none, or `object`: see desugar)."""
        body = []
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.plan.inlined:
                continue   # its statements are `__init__`'s and the methods'
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                body.append(init)
                body += [m.with_changes(leading_lines=[cst.EmptyLine(indent=False)]) for m in methods]
            else:
                body.append(stmt)
        base = cst.Arg(cst.parse_expression(f"{self.tf_alias}.Module"))
        return cls.with_changes(bases=[base], body=cls.body.with_changes(body=body),
                                lpar=cst.LeftParen(), rpar=cst.RightParen())


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


# -- sessions passed as parameters ------------------------------------------
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
                    param = _parameter(fn, offset, position, a)
                    if param is None:
                        raise Refusal(call, "TFG905", f"the session passed to `{callee}` matches no parameter")
                    known = self.removed_params.setdefault(fn, param)
                    if known != param:
                        raise Refusal(call, "TFG905", f"`{callee}` receives the session in two parameters")
                    if param not in sessions:
                        sessions.add(param)
                        changed = True
        for call, callee in calls:
            fn, offset = self.functions[callee]
            if fn not in self.removed_params:
                continue
            param = self.removed_params[fn]
            passed = [i for i, a in enumerate(call.args) if _parameter(fn, offset, i, a) == param]
            value = call.args[passed[0]].value if len(passed) == 1 else None
            if not (isinstance(value, cst.Name) and value.value in sessions):
                raise Refusal(call, "TFG905", f"`{callee}` called without the session for `{param}`")
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


def _parameter(fn: cst.FunctionDef, offset: int, position: int, a: cst.Arg) -> str | None:
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if a.keyword is not None:
        names = params + [p.name.value for p in fn.params.kwonly_params]
        return a.keyword.value if a.keyword.value in names else None
    index = position + offset
    return params[index] if index < len(params) else None


def _without_trailing_comma(kept: list, original: list) -> list:
    """Keep the last element's comma as the original last one had it."""
    if kept and original and kept[-1] is not original[-1]:
        kept = [*kept[:-1], kept[-1].with_changes(comma=original[-1].comma)]
    return kept


# -- the pieces restructure asks for ------------------------------------------
@dataclass
class ClassHost:
    """Where a model class's graph runs, for slicing.HostScan."""

    statements: list[cst.BaseStatement]        # the module outside the class, the class's other methods
    init_statements: list[cst.BaseStatement]   # `__init__`'s own host statements (`sess.run(init)`)
    init_sessions: set[str]                    # sessions `__init__` opens (`self.sess = tf.Session()`)
    attributes: dict[str, str]                 # attribute -> graph name
    session_attributes: set[str]               # attributes holding a session
    session_params: SessionParameters


def host_statements(module: cst.Module, cls: cst.ClassDef, plan: ModelClass) -> list[cst.BaseStatement]:
    """Where a model class's graph may run: the module outside the class, and the
    class's other methods and statements. The methods that build the graph go with
    `__init__`, so nothing else may call them."""
    init = init_of(cls)
    host = [s for s in module.body if s is not cls] + [
        s for s in cls.body.body if s is not init and not (isinstance(s, cst.FunctionDef) and s.name.value in plan.inlined)]
    if plan.inlined:
        for stmt in host:
            for a in _attributes_named(stmt, plan.inlined):
                raise Refusal(a, "TFG904", f"`{a.attr.value}` builds the graph in `__init__` and is used again")
    return host


def _attributes_named(node: cst.CSTNode, names) -> list[cst.Attribute]:
    found = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, a: cst.Attribute) -> None:
            if a.attr.value in names:
                found.append(a)

    node.visit(V())
    return found


def vanishing(plan: ModelClass, program) -> set[str]:
    """Attributes that hold placeholders, tensors or ops: they do not exist after the
    rewrite, so a method may take such a name (`train_step`)."""
    kept = ("variable", "static", "layer", "optimizer")
    return {attr for name, attr in plan.attributes.items()
            if name in program.final and program.node(name).kind not in kept}


def session_parameters(module: cst.Module, cls: cst.ClassDef, host, sessions: set[str]) -> SessionParameters:
    """The parameters that receive the session (module functions, the class's methods),
    found from the calls in `host`; their names join `sessions`."""
    functions = {s.name.value: (s, 0) for s in module.body if isinstance(s, cst.FunctionDef)}
    functions.update({s.name.value: (s, 1) for s in cls.body.body
                      if isinstance(s, cst.FunctionDef) and s.name.value != "__init__"})
    calls: list[tuple[cst.Call, str]] = []
    called: set[int] = set()
    references: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            func = call.func
            name = func.value if isinstance(func, cst.Name) else \
                func.attr.value if isinstance(func, cst.Attribute) and func.attr.value in functions \
                and functions[func.attr.value][1] == 1 else None
            if name in functions:
                calls.append((call, name))
                called.add(id(func) if isinstance(func, cst.Name) else id(func.attr))

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in functions:
                references.append(node)

    for stmt in host:
        stmt.visit(V())
    found = SessionParameters(functions)
    found.find(calls, sessions)
    changed = {fn.name.value for fn in found.removed_params}
    for ref in references:
        if ref.value in changed and id(ref) not in called and not _defines(ref, functions):
            raise Refusal(ref, "TFG905", f"`{ref.value}` receives the session but is used other than by a call")
    return found


def _defines(name: cst.Name, functions) -> bool:
    """The name node of a `def` itself."""
    return any(fn.name is name for fn, _ in functions.values())


def rewritten_class(plan: ModelClass, init: cst.FunctionDef, tf_alias: str, init_body, methods):
    """The replacement of the class: a function of the class as rewritten elsewhere
    (its other methods may hold runs)."""
    attributes = Attributes(plan, init, tf_alias)
    attributes.plan_names(init_body, methods)
    new_init = init.with_changes(body=init.body.with_changes(body=attributes.init_body(init_body)))
    new_methods = [attributes.method(m) for m in methods]
    return lambda updated: attributes.class_def(updated, new_init, new_methods)
