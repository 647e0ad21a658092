"""Model classes: a class whose `__init__` builds the graph into attributes
(`self.loss = ...`), run from other functions and methods through
`sess.run(model.loss, feed_dict={model.x: ...})`, with the session passed
along as a parameter.

The class becomes a `tf.Module`. Its `__init__` still creates the variables,
layers and optimizers; the step functions become its methods (emit_class);
each run calls one on the instance the run named (`model.train_step(xb, yb)`);
session parameters disappear from functions and their calls (session_params).

How: `desugar` first reads `self.<attr>` inside `__init__` (and the methods it
builds the graph with) as a plain name, so the rest of the rewrite sees one
function building a graph; emit_class turns the names `__init__` shares with
the methods back into attributes. Methods `__init__` calls as `self.build()` or
`x = self.build()` are inlined (parameters with literal defaults bound to them
first); those it calls with arguments are functions of them (layer_methods.py),
except those making placeholders, read in place at each call (input_methods.py).
An `if` on what the class's construction fixes (class_settings) is read as the
branch TF1 takes, and a `return` it reaches ends the build (`built`).
`with self.g.as_default():` of a graph the class only enters, and
`with tf.device(...)`, are read as if unindented (graph_contexts.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from tf1gradfix.constructs import input_methods, layer_methods
from tf1gradfix.constructs.class_settings import ClassDecisions, Decision, branch, literal_default
from tf1gradfix.constructs.builders import MODULE_ATTRIBUTES
from tf1gradfix.cst.printing import source_bytes
from tf1gradfix.constructs.session_params import SessionParameters
from tf1gradfix.cst.walk import walk
from tf1gradfix.cst.syntax import Refusal, bound_names, free_names, is_docstring, loads, name_nodes
from tf1gradfix.model.nodes import LayerNode, Optimizer, Static, Variable, VariableGroup


class ClassFound(Exception):
    """The graph is built by a class's `__init__`: the program is read again, desugared."""

    def __init__(self, cls: cst.ClassDef, decisions: ClassDecisions | None = None):
        super().__init__(cls.name.value)
        self.cls, self.decisions = cls, decisions or ClassDecisions()


@dataclass
class ModelClass:
    name: str
    self_name: str                          # `__init__`'s first parameter
    attributes: dict[str, str]              # name inside `__init__` after desugar -> attribute
    members: frozenset[str]                 # every attribute and method name the class uses
    inlined: tuple[str, ...] = ()           # methods `__init__` builds the graph with (`self.build()`)
    layered: tuple[str, ...] = ()           # methods it calls with arguments (layer_methods)
    decisions: ClassDecisions = field(default_factory=ClassDecisions)   # its `if`s the construction decides
    expanded: tuple[str, ...] = ()          # methods making graph inputs, read at each call (input_methods)
    origins: dict = field(default_factory=dict)   # id of an expanded statement -> the method's (for positions)

    def helpers(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        """The static helper methods (static_helpers) under the names `__init__` reads them by."""
        init = cast(cst.FunctionDef, init_of(cls))
        inlined = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value in self.inlined + self.expanded]
        by_method = static_helpers(cls, self.self_name, init, inlined)
        return {name: by_method[attr] for name, attr in self.attributes.items() if attr in by_method}

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


def model_class(module: cst.Module, owner: cst.CSTNode, decided=None) -> cst.ClassDef | None:
    """The module-level class whose `__init__` is `owner`, or one of the methods
    `__init__` builds the graph with, if it is one. `decided`: id of an `if` -> its Decision."""
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and owner in stmt.body.body and isinstance(owner, cst.FunctionDef):
            init = init_of(stmt)
            if init is owner:
                return stmt
            named = owner.name.value
            if init is None or not any(type(a) is cst.Attribute and a.attr.value == named or type(a) is cst.Name
                                       and a.value == named for m in stmt.body.body if m is not owner for a in walk(m)):
                continue   # (a method nothing of the class names: `__init__` does not build with it)
            if any(m is owner for m in _graph_methods(stmt, init, decided or {})):
                return stmt
    return None


def _graph_methods(cls: cst.ClassDef, init: cst.FunctionDef, decided) -> list[cst.FunctionDef]:
    """The methods `__init__` builds the graph with: inlined ones, layer methods and static helpers."""
    inlined = build_methods(cls, init, decided)
    self_name = init.params.params[0].name.value if init.params.params else None
    expanded = input_methods.found(cls, self_name, [init, *inlined])
    return inlined + expanded + layer_methods.found(cls, self_name, [init, *inlined], {m.name.value: m for m in expanded},
                                                    bare=True)


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
        if below is not None:   # (under a condition or loop: where the build ends is not known)
            if decision is not None:
                raise decision.refusal(stmt)
            raise Refusal.of(below, "class_build_return", method=method)
        out.append(stmt)
    return out, False


def build_methods(cls: cst.ClassDef, init: cst.FunctionDef, decided=None) -> list[cst.FunctionDef]:
    """Methods that `__init__` calls as statements `self.build()` or `x = self.build()`
    (and those they call so), in call order: their statements are read as if written at
    the call, a final `return value` as `x = value`. Parameters after `self` must have
    literal defaults (bound first, `l2 = 0.001`). `decided`: id of an `if` -> its Decision."""
    self_name = init.params.params[0].name.value if init.params.params else None
    decided = decided or {}
    methods: dict[str | None, cst.FunctionDef] = {
        s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s is not init}
    found: list[cst.FunctionDef] = []

    def expand(statements, where: str) -> None:
        statements = built(statements, decided, where)[0]
        for position, stmt in enumerate(statements):
            if isinstance(stmt, cst.With):   # (a graph context: graph_contexts)
                expand(stmt.body.body, where)
                continue
            method = methods.get(_self_call(stmt, self_name))
            result = _result_target(stmt)
            if method is None or result is not None and (_final_return(method) is None or self_name not in {
                    n.value for n in name_nodes(method.body)} or not _defaults_only(method)):
                continue   # (`x = self.m()` of a method that never reads `self`, takes arguments or returns elsewhere: layer_methods)
            if any(m is method for m in found):
                raise Refusal.of(stmt, "class_method_called_twice", instance=self_name, method=method.name.value)
            params = method.params
            if not params.params or params.params[0].name.value != self_name or not _defaults_only(method) \
                    or params.star_arg != cst.MaybeSentinel.DEFAULT \
                    or params.kwonly_params or params.star_kwarg or params.posonly_params or method.decorators \
                    or not isinstance(method.body, cst.IndentedBlock) or result is None and _returns_value(method):
                raise Refusal.of(stmt, "class_method_form", instance=self_name, method=method.name.value)
            # its statements join the caller's: a local of its own the caller reads after the call would change
            local = set(loads(method.body)) - free_names(method) - {self_name}
            later = set().union(*(loads(s) for s in statements[position + 1:])) & local
            if later:
                raise Refusal.of(stmt, "class_method_local_reused", method=method.name.value, name=sorted(later)[0])
            found.append(method)
            expand(method.body.body, method.name.value)

    if self_name is not None:
        expand(init.body.body, "__init__")
    for method in found:   # a default bound in `__init__` is one host value there: nothing else of it may name it
        others = [m for m in [init, *found] if m is not method]
        for p in method.params.params[1:]:
            if any(p.name.value in loads(m.body) or p.name.value in {q.name.value for q in m.params.params} for m in others):
                raise Refusal.of(p, "class_method_local_reused", method=method.name.value, name=p.name.value)
    return found


def _defaults_only(method: cst.FunctionDef) -> bool:
    """Every parameter after `self` has a literal default (the call passes none)."""
    return all(p.default is not None and literal_default(p.default) for p in method.params.params[1:])


def init_statements(cls: cst.ClassDef, plan: "ModelClass", module: cst.Module) -> list[cst.BaseStatement]:
    """`__init__`'s statements as TF1 runs them, with each `self.build()` replaced by that
    method's own (without its docstring, after `param = default` for its parameters),
    each call of an input method by its statements (input_methods; `plan.origins` then
    says where they come from), and decided `if`s as their branch, up to a `return`."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    init = cast(cst.FunctionDef, init_of(cls))
    names = input_methods.expansion(module, cls, init, [methods[m] for m in plan.expanded])
    decided = plan.decisions.nodes(cls)

    def expand(statements, where: str) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in built(statements, decided, where)[0]:
            name = _self_call(stmt, plan.self_name)
            called = next((c for s, n, c in input_methods.calls_in([stmt], plan.self_name) if n in plan.expanded), None)
            if isinstance(stmt, cst.With):
                body = expand(stmt.body.body, where)
                out.append(stmt if all(a is b for a, b in zip(body, stmt.body.body)) and len(body) == len(stmt.body.body)
                           else stmt.with_changes(body=stmt.body.with_changes(body=body)))
            elif called is not None:
                method = methods[cast(cst.Attribute, called.func).attr.value]
                out += names.statements(stmt, method, called)
            elif name in plan.inlined:
                method = methods[name]
                body = list(cast(cst.IndentedBlock, method.body).body)
                body = body[1:] if body and is_docstring(body[0]) else body
                target = _result_target(stmt)
                if target is not None:   # `x = self.build()`: its `return value` as `x = value`
                    value = cast(cst.Return, cast(cst.SimpleStatementLine, body[-1]).body[0]).value
                    body[-1] = cast(cst.SimpleStatementLine, body[-1]).with_changes(
                        body=[cst.Assign([cst.AssignTarget(target)], cast(cst.BaseExpression, value))])
                bound = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(p.name.value))],
                                                             cast(cst.BaseExpression, p.default))])
                         for p in method.params.params[1:]]
                out += bound + expand(body, name)
            else:
                out.append(stmt)
        return out

    out = expand(init.body.body, "__init__")
    plan.origins.update(names.origins)
    return out


def _self_call(stmt: cst.CSTNode, self_name: str | None) -> str | None:
    """`m` for a statement `self.m()` or `x = self.m()`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) or isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
            and isinstance(call.func.value, cst.Name) and call.func.value.value == self_name:
        return call.func.attr.value
    return None


def _result_target(stmt: cst.CSTNode) -> cst.BaseAssignTargetExpression | None:
    """`x` of a statement `x = ...`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None


def _final_return(method: cst.FunctionDef) -> cst.Return | None:
    """The method's `return value` if it is its last statement and its only return."""
    last = method.body.body[-1] if isinstance(method.body, cst.IndentedBlock) and method.body.body else None
    small = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
    if not isinstance(small, cst.Return) or small.value is None:
        return None
    returns = [n for n in walk(method.body) if type(n) in (cst.Return, cst.Yield, cst.FunctionDef, cst.Lambda)]
    return small if returns == [small] else None


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


def desugar(module: cst.Module, cls: cst.ClassDef, decisions: ClassDecisions | None = None) -> tuple[cst.Module, ModelClass]:
    """The module with `self.<attr>` read as a name inside `cls.__init__`, parsed again
    (the scope analysis must see the new names); lines stay where they were.
    `decisions`: of the class's `if`s (class_settings), taken on `module`."""
    decisions = decisions or ClassDecisions()
    decided = decisions.nodes(cls)
    init = cast(cst.FunctionDef, init_of(cls))   # (a model class has an `__init__`)
    params = init.params.params
    if not params or init.params.posonly_params:
        raise Refusal.of(init, "class_init_without_self")
    if cls.keywords or any(cst.Module([]).code_for_node(b.value) != "object" for b in cls.bases):
        raise Refusal.of(cls, "class_with_base", cls=cls.name.value)
    self_name = params[0].name.value
    members = _members(cls, self_name)
    methods = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    inlined = build_methods(cls, init, decided)
    expanded = input_methods.found(cls, self_name, [init, *inlined])
    helpers = static_helpers(cls, self_name, init, inlined + expanded)
    layered = layer_methods.found(cls, self_name, [init, *inlined], {**helpers, **{m.name.value: m for m in expanded}})
    regions = [init.body] + [m.body for m in inlined] + [m.body for m in layered] + [m.body for m in expanded]
    # (where `self.<attr>` is read as a name; the calls of the methods read in place stay)
    read_in_place = {m.name.value for m in inlined + expanded}
    flows = [built(region.body, decided, owner.name.value)[0] for region, owner in zip(regions, [init, *inlined])]
    calls = {id(call.func) for statements in flows + [list(m.body.body) for m in layered]
             for _, name, call in input_methods.calls_in(statements, self_name) if name in read_in_place}
    used = [a for region in regions for a in _self_attributes(region, self_name) if id(a) not in calls]
    assigned = set().union(*(_set_in(region, self_name) for region in regions))
    class_level = set().union(*(bound_names(s) for s in cls.body.body if not isinstance(s, cst.FunctionDef)))
    shared = regions[:1 + len(inlined)]   # (one namespace: `__init__` and what it inlines)
    taken = set().union(*(loads(r) for r in shared)) | {p.name.value for p in params}
    # a layer method is a function of its own: only the attributes it reads must not meet its names
    apart = [(set(loads(m.body)) | {p.name.value for p in m.params.params},
              {a.attr.value for a in _self_attributes(m.body, self_name)}) for m in layered + expanded]
    taken |= set().union(*(free_names(m) - {self_name} for m in layered + expanded))   # (the globals they read)
    attributes: dict[str, str] = {}
    for attr in sorted({a.attr.value for a in used}):
        if attr in methods and attr not in helpers and attr not in {m.name.value for m in layered} \
                or attr not in methods | assigned | class_level:
            # a method, or something a base class provides: a plain name would mean another thing
            raise Refusal.of(init, "class_attribute_unset", instance=self_name, attr=attr)
        name, k = attr, 1
        while name in taken or any(name in names for names, attrs in apart if attr in attrs):
            k += 1
            name = f"{attr}_{k}"
        taken.add(name)
        attributes[name] = attr
    local = {attr: name for name, attr in attributes.items()}
    for region, owner in zip(regions, [init, *inlined, *layered, *expanded]):
        bare = [n for n in name_nodes(region) if n.value == self_name]
        if len(bare) != len(_self_attributes(region, self_name)):
            raise Refusal.of(owner, "class_self_other_use", instance=self_name, function=owner.name.value)

    inside = {id(n) for region in regions for n in walk(region)}
    path = {id(module), id(cls), id(cls.body), id(init)} | {id(m) for m in [*inlined, *layered, *expanded]}

    class Desugar(cst.CSTTransformer):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return id(node) in path or id(node) in inside

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if isinstance(updated.value, cst.Name) and updated.value.value == self_name and id(original) not in calls:
                return cst.Name(local[updated.attr.value], lpar=updated.lpar, rpar=updated.rpar)
            return updated

    new = module.visit(Desugar())
    plan = ModelClass(cls.name.value, self_name, attributes, members, tuple(m.name.value for m in inlined),
                      tuple(m.name.value for m in layered), decisions=decisions,
                      expanded=tuple(m.name.value for m in expanded))
    return cst.parse_module(source_bytes(new)), plan


def static_helpers(cls: cst.ClassDef, self_name: str | None, init: cst.FunctionDef,
                   inlined=()) -> dict[str, cst.FunctionDef]:
    """Methods that never read their `self` (`def _accuracy(self, logits, labels)`), as
    the functions they are without it: graph code calls them like the module's helper
    functions, and the TF2 class keeps them as methods (emit/model_class.py reads the
    calls back as `self._accuracy(...)`)."""
    out = {}
    for stmt in cls.body.body:
        if not isinstance(stmt, cst.FunctionDef) or stmt is init or any(m is stmt for m in inlined) \
                or stmt.decorators or not stmt.params.params or stmt.params.posonly_params:
            continue
        own = stmt.params.params[0].name.value
        if own != self_name or own in {n.value for n in name_nodes(stmt.body)}:
            continue
        out[stmt.name.value] = stmt.with_changes(params=stmt.params.with_changes(params=stmt.params.params[1:]))
    return out


def _set_in(body: cst.CSTNode, self_name: str) -> set[str]:
    """Attributes `self.<attr> = ...` (or a tuple of them) sets."""
    found = set()
    for node in walk(body):
        if type(node) is cst.AssignTarget:
            target = node.target
            for a in [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]:
                if _on(a, self_name):
                    found.add(cast(cst.Attribute, a).attr.value)
    return found


def _self_attributes(node: cst.CSTNode, self_name: str) -> list[cst.Attribute]:
    return [cast(cst.Attribute, a) for a in walk(node) if _on(a, self_name)]


def _on(node: cst.CSTNode, self_name: str) -> bool:
    """Is `node` an attribute of `self` (`self.<attr>`)?"""
    return type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == self_name


def _members(cls: cst.ClassDef, self_name: str) -> frozenset[str]:
    """Names the class's instances may answer to: its methods and class-level
    names, every `self.<attr>` it uses, and what `tf.Module` itself defines."""
    names = set(MODULE_ATTRIBUTES)
    for stmt in cls.body.body:
        names |= {stmt.name.value} if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else bound_names(stmt)
    names |= {a.attr.value for a in _self_attributes(cls.body, self_name)}
    return frozenset(names)


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
    init = cast(cst.FunctionDef, init_of(cls))
    graph_methods = plan.inlined + plan.layered + plan.expanded
    host = cast("list[cst.BaseStatement]", [s for s in module.body if s is not cls] + [
        s for s in cls.body.body if s is not init and not (isinstance(s, cst.FunctionDef) and s.name.value in graph_methods)])
    if graph_methods:
        for stmt in host:
            for a in _attributes_named(stmt, graph_methods):
                raise Refusal.of(a, "class_init_builder_reused", attr=a.attr.value)
    return host


def _attributes_named(node: cst.CSTNode, names) -> list[cst.Attribute]:
    return [a for a in walk(node) if type(a) is cst.Attribute and a.attr.value in names]


def vanishing(plan: ModelClass, program) -> set[str]:
    """Attributes that hold placeholders, tensors or ops: they do not exist after the
    rewrite, so a method may take such a name (`train_step`)."""
    kept = (Variable, VariableGroup, Static, LayerNode, Optimizer)
    return {attr for name, attr in plan.attributes.items()
            if name in program.final and not isinstance(program.node(name), kept)}
