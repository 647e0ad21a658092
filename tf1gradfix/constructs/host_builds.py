"""Build methods the script calls after construction, read as part of `__init__`.

TF1 scripts often construct a model and build its graph in a second call:
`model = Model(...)` then `model.build_model()`, before any session runs.
A model class is read from its `__init__` (model_classes.py), so graph code
built by a method called from outside has no place in it.

Python runs `Model(...)` then `model.build_model()`: the same as an `__init__`
ending with `self.build_model()`, when the call is the next statement of the
block, its value unused, with no arguments, and the class is constructed
nowhere else (nor derived from, nor named otherwise), and its `__init__` has no
`return` that would skip the call. `moved` gives the module read so (the host
call dropped, `self.<method>()` appended to `__init__`), or None; the rewrite
reads it in place of the original, which it keeps when that reading is refused.
Other forms of such a call are named (`apart`), with what keeps them apart, where
the reading as written is refused for the method they call.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.unbuilt_methods import RUNS
from tf1gradfix.cst.walk import walk


def moved(module: cst.Module) -> cst.Module | None:
    """`module` with the build calls that follow the one construction of a class moved
    into its `__init__`, or None when there is none to move."""
    changed = False
    for name in [s.name.value for s in module.body if isinstance(s, cst.ClassDef)]:
        cls = next(s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == name)
        hit = _site(module, name, cls)   # (on the module as changed so far: nodes are replaced)
        if hit is not None:
            module, changed = _apply(module, *hit), True
    return module if changed else None


def _site(module: cst.Module, name: str, cls: cst.ClassDef):
    """(block, index of the construction, the build calls after it, the class) or None."""
    init = initializer(cls)
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    if init is None or any(isinstance(n, cst.Return) for n in walk(init.body, skip=(cst.FunctionDef, cst.Lambda))):
        return None
    uses = [n for n in walk(module) if isinstance(n, cst.Name) and n.value == name]
    if len(uses) != 2:   # (its definition and one construction, nothing else)
        return None
    inside = {id(n) for n in walk(cls)}
    for block in walk(module):
        if not isinstance(block, (cst.Module, cst.IndentedBlock)) or id(block) in inside:
            continue
        body = list(block.body)
        for i, stmt in enumerate(body):
            instance = construction(stmt, name)
            if instance is None:
                continue
            calls = []
            for after in body[i + 1:]:
                method = build_call(after, instance)
                if method is None or method not in methods or method == "__init__" or \
                        not _no_parameters(methods[method]) or _runs(methods[method]):
                    break
                calls.append(method)
            return (block, i, calls, cls) if calls else None
    return None


def apart(module: cst.Module) -> list[tuple[cst.BaseStatement, str, str, str, str]]:
    """(statement, `inst.method()`, class, method, what keeps it from `__init__`) for each
    statement calling a method of an instance of a class of `module` without arguments,
    where `moved` leaves it: why it is not read as the end of `__init__`."""
    out = []
    for cls in [s for s in module.body if isinstance(s, cst.ClassDef)]:
        name, init = cls.name.value, initializer(cls)
        methods = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)} - {"__init__"}
        named = sum(isinstance(n, cst.Name) and n.value == name for n in walk(module))
        for block in walk(module):
            if not isinstance(block, (cst.Module, cst.IndentedBlock)):
                continue
            body = list(block.body)
            for i, stmt in enumerate(body):
                instance = construction(stmt, name)
                calls = [(j, m) for j, s in enumerate(body) if j > i and (m := build_call(s, instance)) in methods] \
                    if instance else []
                takes = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef) and not _no_parameters(s)}
                for j, method in calls:
                    between = j - i - 1 - sum(1 for k, _ in calls if i < k < j)
                    why = ("but the class is named elsewhere too (constructed again or passed on)" if named != 2 else
                           "but `__init__` may return before its end" if init is None or any(
                               isinstance(n, cst.Return) for n in walk(init.body, skip=(cst.FunctionDef, cst.Lambda)))
                           else f"but `{method}` takes parameters" if method in takes
                           else f"with {between} other statement(s) run between them")
                    out.append((body[j], f"{instance}.{method}()", name, method, why))
    return out


def dispatched(module: cst.Module) -> list[tuple[cst.BaseStatement, str, str, str, str]]:
    """(statement, `inst.method()`, the listed classes having the method, method, the
    constructor's name) for each build call on an instance made by a name that is neither
    a class nor a function of `module` (`gan = model(sess)`), where classes of `module` with
    that method are listed in a collection (`models = [GAN, WGAN]`): a class chosen at run
    time, so no construction of it is read as its build."""
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    defined = set(classes) | {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    elements = [e.value for n in walk(module) if isinstance(n, (cst.List, cst.Tuple, cst.Set, cst.Dict))
                for e in n.elements if isinstance(e, (cst.Element, cst.DictElement))]
    methods = {e.value: {s.name.value for s in classes[e.value].body.body if isinstance(s, cst.FunctionDef)}
               for e in elements if isinstance(e, cst.Name) and e.value in classes}
    if not methods:
        return []
    made = {n.targets[0].target.value: n.value.func.value for n in walk(module)   # instance -> what made it
            if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
            and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) and n.value.func.value not in defined}
    out: list[tuple[cst.BaseStatement, str, str, str, str]] = []
    for stmt in (n for n in walk(module) if isinstance(n, cst.SimpleStatementLine)):   # (a build call is one line)
        for instance, maker in made.items():
            method = build_call(stmt, instance)
            having = sorted(name for name, own in methods.items() if method in own)
            if method is not None and having:
                listing = ", ".join(f"`{n}`" for n in having[:3]) + (", ..." if len(having) > 3 else "")
                out.append((stmt, f"{instance}.{method}()", listing, method, maker))
    return out


def _apply(module: cst.Module, block, index: int, calls: list[str], cls: cst.ClassDef) -> cst.Module:
    init = initializer(cls)
    assert init is not None
    self_name = init.params.params[0].name.value
    added = [cst.SimpleStatementLine([cst.Expr(cst.Call(cst.Attribute(cst.Name(self_name), cst.Name(m))))])
             for m in calls]
    new_init = init.with_changes(body=init.body.with_changes(body=(*init.body.body, *added)))
    new_cls = cls.deep_replace(init, new_init)
    body = [new_cls if s is cls else s for s in block.body]   # (the class itself, when the block is the module)
    new_block = block.with_changes(body=(*body[:index + 1], *body[index + 1 + len(calls):]))
    return module.visit(_Swap({id(block): new_block, id(cls): new_cls}))


class _Swap(cst.CSTTransformer):
    """Replaces nodes by identity, in one pass (a replacement changes the nodes above it)."""

    def __init__(self, by_id: dict):
        super().__init__()
        self.by_id = by_id

    def on_leave(self, original_node, updated_node):
        return self.by_id.get(id(original_node), updated_node)


def _runs(method: cst.FunctionDef) -> bool:
    """Does the method run the graph? It is then the script's training or evaluation, not a
    part of the build."""
    return runs(method.body)


def runs(node: cst.CSTNode) -> bool:
    """Does the code run the graph (`self.sess.run(...)`, `op.run()`, `t.eval()`)?"""
    return any(type(n) is cst.Call and isinstance(n.func, cst.Attribute) and n.func.attr.value in RUNS
               for n in walk(node))


def initializer(cls: cst.ClassDef) -> cst.FunctionDef | None:
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    return init if init is not None and init.params.params else None


def construction(stmt: cst.CSTNode, name: str) -> str | None:
    """`x = Name(...)` -> "x"."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and \
                isinstance(assign.value, cst.Call) and isinstance(assign.value.func, cst.Name) and \
                assign.value.func.value == name:
            return assign.targets[0].target.value
    return None


def build_call(stmt: cst.CSTNode, instance: str) -> str | None:
    """`instance.method()` as a statement of its own -> "method"."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        call = stmt.body[0].value
        if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) and \
                isinstance(call.func.value, cst.Name) and call.func.value.value == instance:
            return call.func.attr.value
    return None


def _no_parameters(method: cst.FunctionDef) -> bool:
    """Only `self` (a method the call gives nothing)."""
    p = method.params
    return len(p.params) == 1 and not (p.posonly_params or p.kwonly_params or p.star_kwarg) \
        and not isinstance(p.star_arg, (cst.Param, cst.ParamStar)) and not method.decorators
