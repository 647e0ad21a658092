"""Layer wrappers: a function that returns one layer call of its parameters, read as that
call where it is called.

    def bn(x, is_training, scope):
        return tf.contrib.layers.batch_norm(x, decay=0.9, scale=True, is_training=is_training, scope=scope)

    h = bn(conv, True, "d_bn1")
reads as
    h = tf.contrib.layers.batch_norm(conv, decay=0.9, scale=True, is_training=True, scope="d_bn1")

TF1 made the layer's variables under the scope each call gives, as the layer call written
there would; the rewrite makes a Keras layer where the graph calls one (layers.py), which
needs the call's own arguments, so the wrapper is read as the call it makes, at every call
(the definition goes once nothing names it). Python evaluates a call's arguments, then the
body: read in place, the ops are the same, in the same order, where the arguments that are
not plain (a name, a literal, an attribute of a name) are one at most, for a parameter the
body reads once. Only a module function with plain parameters (literal defaults), no
decorator, whose one statement returns a call of a layer (layers.toml) that reads its
parameters and names of the module (none of them bound where it is called), named only
where it is called. The reading is tried where the module as written is refused
(emit/restructure.py, with inlined_calls.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import libcst as cst

from tf1gradfix.constructs import builder_layers
from tf1gradfix.constructs.inlined_calls import Inlining, bound_arguments, module_functions
from tf1gradfix.cst import line_maps
from tf1gradfix.cst.syntax import alias_qualified, bound_names, is_docstring, loads, tensorflow_aliases
from tf1gradfix.cst.walk import walk

_PLAIN = (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Attribute)


@dataclass(frozen=True)
class _Wrapper:
    function: cst.FunctionDef
    call: cst.Call   # what it returns


def read(module: cst.Module) -> Inlining | None:
    """The module with every call of a layer wrapper read as the layer call it makes, or None."""
    qualified = alias_qualified(tensorflow_aliases(module))
    wrappers = {s.name.value: w for s in module.body if isinstance(s, cst.FunctionDef)
                and (w := _wrapper(s, qualified)) is not None}
    if not wrappers:
        return None
    names = [n for n in walk(module) if isinstance(n, cst.Name) and n.value in wrappers]
    calls = [c for c in walk(module) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name) and c.func.value in wrappers]
    for name in wrappers.copy():
        named = sum(1 for n in names if n.value == name)
        called = sum(1 for c in calls if cast(cst.Name, c.func).value == name)
        if not called or named != called + 1 or sum(name in bound_names(s) for s in module.body) > 1:
            del wrappers[name]   # (passed as a value, bound again: not only called)
    if not wrappers:
        return None
    reading = _Reading(wrappers, module)
    made = module.visit(reading)
    if not reading.done or reading.refused:
        return None
    left = [n.value for n in walk(made) if isinstance(n, cst.Name)]
    kept = module_functions(module)   # (a project's other file keeps its functions for its other importers)
    made = made.with_changes(body=[s for s in made.body if not (
        isinstance(s, cst.FunctionDef) and s.name.value in reading.done and s.name.value not in kept
        and left.count(s.name.value) == 1)])
    return Inlining(module=cst.parse_module(made.code), origin=line_maps.origin(module, made, reading.source),
                    functions=tuple(sorted(reading.done)))


def _wrapper(function: cst.FunctionDef, qualified) -> _Wrapper | None:
    params = function.params
    if function.decorators or params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg \
            or params.kwonly_params or params.posonly_params or not isinstance(function.body, cst.IndentedBlock):
        return None
    if any(p.default is not None and not (isinstance(p.default, _PLAIN[1:4]) or isinstance(p.default, cst.Name)
                                          and p.default.value in ("None", "True", "False")) for p in params.params):
        return None   # (a default Python evaluated once, where the function was defined: a literal alone)
    body = [s for s in function.body.body if not is_docstring(s)]
    small = body[0].body[0] if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) \
        and len(body[0].body) == 1 else None
    call = small.value if isinstance(small, cst.Return) else None
    if not isinstance(call, cst.Call) or not builder_layers.is_layer_call(qualified(call.func)):
        return None
    if any(isinstance(n, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr))
           for n in walk(call)):
        return None
    return _Wrapper(function, call)


class _Reading(cst.CSTTransformer):
    """Each wrapper call replaced by the layer call, its parameters by the arguments."""

    def __init__(self, wrappers: dict[str, _Wrapper], module: cst.Module) -> None:
        super().__init__()
        self.wrappers = wrappers
        self.done: set[str] = set()
        self.refused = False
        self.locals: list[set[str]] = [set()]
        self.source: dict[int, int] = {}   # id of a statement made -> id of the user's

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        own = {p.name.value for p in node.params.params} | set().union(
            *(bound_names(s) for s in walk(node.body) if isinstance(s, cst.BaseSmallStatement)))
        self.locals.append(own)
        return node.name.value not in self.wrappers

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.locals.pop()
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if updated is not original:
            self.source[id(updated)] = id(original)
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = updated.func.value if isinstance(updated.func, cst.Name) else None
        wrapper = self.wrappers.get(name or "")
        if wrapper is None:
            return updated
        arguments = bound_arguments(wrapper.function, updated)
        params = {p.name.value for p in wrapper.function.params.params}
        reads = loads(wrapper.call)
        free = set(reads) - params
        if arguments is None or free & self.locals[-1]:
            self.refused = True   # (a global the wrapper reads, shadowed where it is called)
            return updated
        heavy = [p for p, value in arguments.items() if not isinstance(value, _PLAIN)]
        if len(heavy) > 1 or heavy and reads.count(heavy[0]) != 1:
            self.refused = True   # (an argument computed twice, never, or out of Python's order)
            return updated
        self.done.add(cast(str, name))
        return cast(cst.BaseExpression, wrapper.call.visit(_Substitute(arguments)))


class _Substitute(cst.CSTTransformer):
    def __init__(self, arguments: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.arguments = arguments

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)   # (`x.shape`: `x` is read; `shape` is no parameter)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)   # (`scope=scope`: the keyword stays)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.arguments.get(original.value, updated)
