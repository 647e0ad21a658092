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
the methods back into attributes. What TF1 runs building the graph is read by one
walker (build_flow.py): methods `__init__` calls as `self.build()` or `x =
self.build()` are inlined (parameters with literal defaults bound to them first,
their locals that the build reads after the call renamed apart), an `if` on what the
class's construction fixes (class_settings) is read as the branch TF1 takes, and a
`return` it reaches ends the build; only that counts for the attributes the build
reads and sets and the methods it calls. Methods it calls with arguments are
functions of them (layer_methods.py), except those making placeholders, read in
place at each call (input_methods.py); methods building graph code nothing runs
are dropped (unbuilt_methods.py).
`with self.g.as_default():` of a graph the class only enters, and
`with tf.device(...)`, are read as if unindented (graph_contexts.py).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from tf1gradfix.constructs import input_methods, layer_methods
from tf1gradfix.constructs.build_flow import CALL, END, WITH, Flow, result_target
from tf1gradfix.constructs.class_settings import ClassDecisions
from tf1gradfix.constructs.builders import MODULE_ATTRIBUTES
from tf1gradfix.cst.printing import source_bytes
from tf1gradfix.constructs.session_params import SessionParameters
from tf1gradfix.cst.walk import walk
from tf1gradfix.cst.syntax import Refusal, bound_names, free_names, loads, name_nodes
from tf1gradfix.model.nodes import LayerNode, Optimizer, Static, Variable, VariableGroup


class ClassFound(Exception):
    """The graph is built by a class's `__init__`: the program is read again, desugared."""

    def __init__(self, cls: cst.ClassDef, decisions: ClassDecisions | None = None, unbuilt: tuple[str, ...] = ()):
        super().__init__(cls.name.value)
        self.cls, self.decisions, self.unbuilt = cls, decisions or ClassDecisions(), unbuilt


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
    as_written: dict = field(default_factory=dict)   # id of a desugared line -> the user's, `self.` and all (layout)
    unbuilt: tuple[str, ...] = ()           # methods building graph code TF1 never runs (unbuilt_methods)

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


def definition_names(module: cst.Module, cls: cst.ClassDef, plan: ModelClass) -> Callable[[cst.CSTNode], bool]:
    """Whether an expression of the desugared `__init__` (a placeholder's shape or dtype)
    reads the same values where the class's methods are defined: only names the module
    binds before the class (or builtins) that the class binds nowhere (a class or
    desugared attribute, a method's parameter or local)."""
    bound = [bound_names(s) | _imported(s) for s in module.body]
    names = set(dir(builtins)) - set().union(*bound) | {"None", "True", "False"}
    at = next((i for i, s in enumerate(module.body) if s is cls), 0)   # (a class elsewhere: builtins only)
    names |= set().union(*bound[:at])
    for node in walk(cls):
        if isinstance(node, cst.FunctionDef):
            names -= {p.name.value for p in (*node.params.params, *node.params.kwonly_params, *node.params.posonly_params)}
            names -= set(loads(node.body)) - free_names(node)   # (its locals)
    names -= set().union(*(bound_names(s) for s in cls.body.body)) | set(plan.attributes) | {plan.self_name}
    return lambda expr: all(n in names for n in loads(expr))


def set_after_init(cls: cst.ClassDef, plan: ModelClass) -> set[str]:
    """Attributes a method sets other than `__init__` and those it builds with."""
    skip = {"__init__", *plan.inlined, *plan.expanded}
    return set().union(*(_set_in(m.body, plan.self_name) for m in cls.body.body
                         if isinstance(m, cst.FunctionDef) and m.name.value not in skip))


def _imported(stmt: cst.CSTNode) -> set[str]:
    """Names an `import` statement binds."""
    out: set[str] = set()
    for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                out.add(alias.evaluated_alias or alias.evaluated_name.partition(".")[0])
    return out


def init_of(cls: cst.ClassDef) -> cst.FunctionDef | None:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            return stmt
    return None


def model_class(module: cst.Module, owner: cst.CSTNode, decided=None, plan=None) -> cst.ClassDef | None:
    """The module-level class whose `__init__` is `owner`, or one of the methods
    `__init__` builds the graph with, if it is one. `decided`: id of an `if` -> its Decision;
    `plan`: the ModelClass `module` was desugared for."""
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and owner in stmt.body.body and isinstance(owner, cst.FunctionDef):
            init = init_of(stmt)
            if init is owner:
                return stmt
            named = owner.name.value
            if init is None or not any(type(a) is cst.Attribute and a.attr.value == named or type(a) is cst.Name
                                       and a.value == named for m in stmt.body.body if m is not owner for a in walk(m)):
                continue   # (a method nothing of the class names: `__init__` does not build with it)
            inlined = plan.inlined if plan is not None and plan.name == stmt.name.value else None
            if any(m is owner for m in _graph_methods(stmt, init, decided or {}, inlined)):
                return stmt
    return None


def _graph_methods(cls: cst.ClassDef, init: cst.FunctionDef, decided, inlined=None) -> list[cst.FunctionDef]:
    """The methods `__init__` builds the graph with: inlined ones, layer methods and static helpers."""
    flow = Flow.of(cls, init, decided, inlined)
    inlined = flow.inlined()
    expanded = input_methods.found(cls, flow.self_name, flow.statements())
    return inlined + expanded + layer_methods.found(cls, flow.self_name, [init, *inlined],
                                                    {m.name.value: m for m in expanded}, bare=True,
                                                    reached=[node for node, _ in flow.reached()])


def init_statements(cls: cst.ClassDef, plan: "ModelClass", module: cst.Module) -> list[cst.BaseStatement]:
    """`__init__`'s statements as TF1 runs them (build_flow), with each `self.build()`
    replaced by that method's own (without its docstring, after `param = default` for
    its parameters, its `return value` as `x = value` for `x = self.build()`), each call
    of an input method by its statements (input_methods; `plan.origins` then says where
    they come from), and decided `if`s as their branch, up to a `return`."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    init = cast(cst.FunctionDef, init_of(cls))
    names = input_methods.expansion(module, cls, init, [methods[m] for m in plan.expanded])
    flow = Flow.of(cls, init, plan.decisions.nodes(cls), plan.inlined)
    for step, method, clash in flow.collisions(frozenset(plan.attributes)):   # (desugar renamed them apart)
        raise Refusal.of(step.stmt, "class_method_local_reused", method=method.name.value, name=clash[0])
    blocks: list[list[cst.BaseStatement]] = [[]]
    for step in flow.steps:
        if step.kind == WITH:
            blocks.append([])
        elif step.kind == CALL:
            method = cast(cst.FunctionDef, step.method)
            blocks.append([cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(p.name.value))],
                                                               cast(cst.BaseExpression, p.default))])
                           for p in method.params.params[1:]])
        elif step.kind == END and step.method is not None:   # `x = self.build()`: its `return value` as `x = value`
            body = blocks.pop()
            target = result_target(step.stmt)
            if target is not None:
                last = cast(cst.SimpleStatementLine, cast(cst.IndentedBlock, step.method.body).body[-1])
                value = cast(cst.BaseExpression, cast(cst.Return, last.body[0]).value)
                body.append(last.with_changes(body=[cst.Assign([cst.AssignTarget(target)], value)]))
            blocks[-1] += body
        elif step.kind == END:
            body, stmt = blocks.pop(), cast(cst.With, step.stmt)
            same = len(body) == len(stmt.body.body) and all(a is b for a, b in zip(body, stmt.body.body))
            blocks[-1].append(stmt if same else stmt.with_changes(body=stmt.body.with_changes(body=body)))
        else:
            called = next((c for s, n, c in input_methods.calls_in([step.stmt], plan.self_name)
                           if n in plan.expanded), None)
            blocks[-1] += [step.stmt] if called is None else names.statements(
                step.stmt, methods[cast(cst.Attribute, called.func).attr.value], called)
    plan.origins.update(names.origins)
    return blocks[0]


def desugar(module: cst.Module, cls: cst.ClassDef, decisions: ClassDecisions | None = None,
            unbuilt: tuple[str, ...] = ()) -> tuple[cst.Module, ModelClass]:
    """The module with `self.<attr>` read as a name inside `cls.__init__`, parsed again
    (the scope analysis must see the new names); lines stay where they were.
    `decisions`: of the class's `if`s (class_settings), taken on `module`; `unbuilt`:
    its methods TF1 never builds (unbuilt_methods)."""
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
    flow = Flow.of(cls, init, decided)   # (only what TF1 builds counts: not a branch decided against)
    inlined = flow.inlined()
    reached = flow.reached()
    # an inlined method's locals that the build reads after its call: renamed apart
    renames = flow.renames({n.value for n in name_nodes(module)} | methods
                           | {a.attr.value for a in _self_attributes(cls.body, self_name)})
    expanded = input_methods.found(cls, self_name, flow.statements())
    helpers = static_helpers(cls, self_name, init, inlined + expanded)
    layered = layer_methods.found(cls, self_name, [init, *inlined], {**helpers, **{m.name.value: m for m in expanded}},
                                  reached=[node for node, _ in reached])
    apart_regions = [m.body for m in layered + expanded]
    # (where `self.<attr>` is read as a name; the calls of the methods read in place stay)
    read_in_place = {m.name.value for m in inlined + expanded}
    calls = {id(call.func) for statements in [[s for s, _ in flow.statements(calls=True)]] + [list(m.body.body) for m in layered]
             for _, name, call in input_methods.calls_in(statements, self_name) if name in read_in_place}
    evaluated = [node for node, _ in reached] + apart_regions
    used = [a for node in evaluated for a in _self_attributes(node, self_name) if id(a) not in calls]
    assigned = set().union(*(_set_in(node, self_name) for node in evaluated))
    class_level = set().union(*(bound_names(s) for s in cls.body.body if not isinstance(s, cst.FunctionDef)))
    # (one namespace: `__init__` and what it inlines, with the names of its renamed locals)
    taken = set().union(*(loads(m) for m in [init.body, *(m.body for m in inlined)])) | {p.name.value for p in params}
    taken |= {p.name.value for m in inlined for p in m.params.params} | {n for r in renames.values() for n in r.values()}
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
    for owner in [init, *inlined]:
        nodes = [node for node, o in reached if o is owner]
        if sum(1 for node in nodes for n in name_nodes(node) if n.value == self_name) \
                != sum(len(_self_attributes(node, self_name)) for node in nodes):
            raise Refusal.of(owner, "class_self_other_use", instance=self_name, function=owner.name.value)
    for owner in layered + expanded:
        bare = [n for n in name_nodes(owner.body) if n.value == self_name]
        if len(bare) != len(_self_attributes(owner.body, self_name)):
            raise Refusal.of(owner, "class_self_other_use", instance=self_name, function=owner.name.value)

    regions = [init.body] + [m.body for m in inlined] + apart_regions
    inside = {id(n) for region in regions for n in walk(region)}
    renamed = {id(n): renames[m.name.value][n.value] for m in inlined if m.name.value in renames
               for n in name_nodes(m) if n.value in renames[m.name.value]}
    inside |= {id(n) for m in inlined if m.name.value in renames for n in walk(m.params)}
    path = {id(module), id(cls), id(cls.body), id(init)} | {id(m) for m in [*inlined, *layered, *expanded]}

    class Desugar(cst.CSTTransformer):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return id(node) in path or id(node) in inside

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if isinstance(updated.value, cst.Name) and updated.value.value == self_name and id(original) not in calls \
                    and updated.attr.value in local:   # (not: what a branch never built reads)
                return cst.Name(local[updated.attr.value], lpar=updated.lpar, rpar=updated.rpar)
            return updated

        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=renamed[id(original)]) if id(original) in renamed else updated

    desugared = cst.parse_module(source_bytes(module.visit(Desugar())))
    plan = ModelClass(cls.name.value, self_name, attributes, members, tuple(m.name.value for m in inlined),
                      tuple(m.name.value for m in layered), decisions=decisions,
                      expanded=tuple(m.name.value for m in expanded), unbuilt=unbuilt,
                      as_written=_lines_as_written(module, desugared))
    return desugared, plan


def _lines_as_written(module: cst.Module, desugared: cst.Module) -> dict[int, cst.SimpleStatementLine]:
    """Each line the desugaring changed -> the user's: the rewrite lays a line out again
    where the user's was laid out as black lays it out (a split that `self.` made needed)."""
    before, after = ([n for n in walk(m) if type(n) is cst.SimpleStatementLine] for m in (module, desugared))
    if len(before) != len(after):   # (the desugaring keeps every statement: never, unless that changes)
        return {}
    return {id(new): old for old, new in zip(before, after) if not old.deep_equals(new)}


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
    gone = graph_methods + plan.unbuilt
    host = cast("list[cst.BaseStatement]", [s for s in module.body if s is not cls] + [
        s for s in cls.body.body if s is not init and not (isinstance(s, cst.FunctionDef) and s.name.value in gone)])
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
