"""Build code TF1 never runs: a model class's method that builds graph code and that
nothing the program runs calls or names.

    def __init__(self, ..., multi_label=False):
        if multi_label:                        # (every `Net(...)` passes True: decided)
            self.loss = self.multi_loss()
        else:
            self.loss = self.single_loss()     # never run: `single_loss` is never built
        self.train_op = self.train()

    def train_old(self):                       # named nowhere: never built
        return tf.contrib.layers.optimize_loss(self.loss, ...)

Such a method (it calls TensorFlow and runs no session; one named only in a branch the
construction decides against counts too) does not block the rewrite: the rewrite
drops it with the graph it would have built, with an info note. What the program
runs is the module outside the class, the class's other statements, `__init__` as
TF1 builds it (build_flow), and every method one of these names (`x.m`,
`getattr(x, "m")`; `m` in the class body itself), and what those name in turn.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.build_flow import Flow
from tf1gradfix.cst.syntax import Refusal, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.owners import GRAPH_CALLS

NOTE = "`{method}` builds graph code that nothing here runs (TF1 never built it): dropped with the graph"
RUNS = ("run", "eval", "partial_run")   # (a session's or a tensor's: host code)
BY_STRING = ("getattr", "hasattr", "setattr", "delattr")


def found(module: cst.Module, decided: dict, qualified, plan=None) -> dict[str, list[cst.FunctionDef]]:
    """class name -> its methods TF1 never builds, for each module-level class whose
    `__init__` takes `self`. `plan`: the ModelClass `module` was desugared for (its
    class's were found before: desugared, `self.m` may read as `m`)."""
    out: dict[str, list[cst.FunctionDef]] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.ClassDef):
            continue
        if plan is not None and plan.name == stmt.name.value:
            dead = [m for m in stmt.body.body if isinstance(m, cst.FunctionDef) and m.name.value in plan.unbuilt]
            if dead:
                out[stmt.name.value] = dead
            continue
        init = next((s for s in stmt.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None or not init.params.params:
            continue
        try:
            flow = Flow.of(stmt, init, decided)
        except Refusal:
            continue   # (the class is refused where it is read)
        if not any(type(c) is cst.Call and qualified(c.func) in GRAPH_CALLS for node, _ in flow.reached() for c in walk(node)):
            continue   # (not a model class: its `__init__` builds no graph)
        dead = [m for m in _unnamed(module, stmt, init, flow) if _builds(m, qualified)]
        if dead:
            out[stmt.name.value] = dead
    return out


def _unnamed(module: cst.Module, cls: cst.ClassDef, init: cst.FunctionDef, flow: Flow) -> list[cst.FunctionDef]:
    """The class's methods that nothing the program runs names."""
    methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
    inlined = flow.inlined()
    live = {id(init)} | {id(m) for m in inlined} | {
        id(m) for m in methods if m.decorators or m.name.value.startswith("__") and m.name.value.endswith("__")}
    run: list[cst.CSTNode] = [s for s in module.body if s is not cls] + [node for node, _ in flow.reached()]
    run += [m.params for m in methods]
    run += [m.body for m in methods if id(m) in live and m is not init and not any(m is i for i in inlined)]
    # (a method's bare name means it only in the class body itself: `alias = m`, `@m.setter`)
    named = _names([s for s in cls.body.body if not isinstance(s, cst.FunctionDef)]
                   + [d for m in methods for d in m.decorators], bare=True)
    while run:
        named |= _names(run)
        run = []
        for m in methods:
            if id(m) not in live and (m.name.value in named or "*" in named):
                live.add(id(m))
                run.append(m.body)
    return [m for m in methods if id(m) not in live]


def _names(nodes, bare: bool = False) -> set[str]:
    """The attribute names (`x.m`) and strings in `nodes` (`bare`: and the names)."""
    out: set[str] = set()
    for root in nodes:
        for node in walk(root):
            if type(node) is cst.Attribute:
                out.add(node.attr.value)
            elif type(node) is cst.Name and bare:
                out.add(node.value)
            elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in BY_STRING:
                named = node.args[1].value if len(node.args) > 1 else None
                value = named.evaluated_value if isinstance(named, cst.SimpleString) else None
                out.add(value if isinstance(value, str) else "*")   # (a name known when it runs: any)
    return out


def _builds(method: cst.FunctionDef, qualified) -> bool:
    """Does the method call TensorFlow, and run no session (host code)?"""
    calls = [c for c in walk(method.body) if type(c) is cst.Call]
    names = [qualified(c.func) for c in calls]
    if any(matches(q, "sessions") for q in names) or any(
            type(c.func) is cst.Attribute and c.func.attr.value in RUNS for c in calls):
        return False
    return any(q is not None and q.split(".")[0] == "tensorflow" for q in names)


def note(builder, method: cst.FunctionDef) -> None:
    builder.note(method, "TFG208", NOTE.format(method=method.name.value))
