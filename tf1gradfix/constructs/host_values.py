"""Host values the file fixes, read without running it: what a Python loop over them
iterates (a literal list, tuple or range, a constant bound once, a constructor setting
every construction of the class gives one literal) and the strings the loop computes
from them (TF1 names written with `%`, `.format` or an f-string).

Lists are read as tuples: a value is taken as fixed only where nothing may change it
(no method called on it, no item assigned, not handed to a function that could), so
the loop runs over the same values when the rewrite runs it again.
"""

from __future__ import annotations

import ast
import string
from typing import Callable, Collection, Iterator, cast

import libcst as cst

from tf1gradfix.cst.syntax import literal_string, loads
from tf1gradfix.cst.walk import walk

# builtins that read a value and return a new one (a loop's iterable is built with them)
BUILTINS: dict[str, Callable] = {"range": range, "enumerate": enumerate, "zip": zip, "len": len, "str": str,
                                 "list": list, "tuple": tuple, "reversed": reversed, "int": int}
# functions handed a fixed value that read it only
READERS = frozenset(BUILTINS) | {"print", "sorted", "sum", "max", "min", "set", "any", "all", "float", "isinstance"}


class NotFixed(Exception):
    """A value the file does not fix before it runs (or that this reader does not compute)."""


def literal(expr: cst.BaseExpression):
    """A Python literal's value, lists read as tuples; NotFixed for anything else."""
    try:
        value = ast.literal_eval(cst.Module([]).code_for_node(expr).strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise NotFixed from None
    return frozen(value)


def frozen(value):
    """`value` with its lists as tuples; NotFixed for a dict, a set or bytes (not iterated here)."""
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise NotFixed


def iterations(builder, loop: cst.For) -> list[dict[str, object]]:
    """One environment per iteration of `loop` (the names its target binds -> their values),
    in order; NotFixed where the file does not fix what it iterates."""
    items = value(builder, loop.iter, {})
    if not isinstance(items, tuple):
        raise NotFixed
    return [unpack(loop.target, item) for item in items]


def unpack(target: cst.BaseExpression, item) -> dict[str, object]:
    """The names a loop target binds to `item`."""
    if isinstance(target, cst.Name):
        return {target.value: item}
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(item, tuple) and len(item) == len(target.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in target.elements):
        out: dict[str, object] = {}
        for element, part in zip(target.elements, item):
            out.update(unpack(element.value, part))
        return out
    raise NotFixed


def value(builder, expr: cst.BaseExpression, env: dict[str, object], depth: int = 0):
    """The value of `expr` from literals, fixed names and the loop's values (`env`)."""
    if depth > 20:
        raise NotFixed
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return literal(expr)
    if isinstance(expr, cst.Name):
        if expr.value in env:
            held = env[expr.value]
            if isinstance(held, NotFixed):
                raise held
            return held
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        return _named(builder, expr.value, depth)
    if isinstance(expr, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            raise NotFixed
        return tuple(value(builder, e.value, env, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        number = value(builder, expr.expression, env, depth + 1)
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            raise NotFixed
        return -number
    if isinstance(expr, cst.BinaryOperation):
        return _binary(expr.operator, value(builder, expr.left, env, depth + 1), value(builder, expr.right, env, depth + 1))
    if isinstance(expr, cst.Subscript):
        return _subscript(builder, expr, env, depth)
    if isinstance(expr, cst.FormattedString):
        return _formatted(builder, expr, env, depth)
    if isinstance(expr, cst.Call):
        return _call(builder, expr, env, depth)
    raise NotFixed


def _binary(operator: cst.BaseBinaryOp, left, right):
    if isinstance(operator, cst.Modulo) and isinstance(left, str):
        if not isinstance(right, (tuple, int, float, str)):
            raise NotFixed
        try:
            return left % right
        except (TypeError, ValueError, KeyError):
            raise NotFixed from None
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
    if isinstance(operator, cst.Add) and (numbers or type(left) is type(right) and isinstance(left, (str, tuple))):
        return left + right
    if numbers and isinstance(operator, (cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)) \
            and not (isinstance(operator, (cst.FloorDivide, cst.Modulo)) and right == 0):
        return {cst.Subtract: lambda: left - right, cst.Multiply: lambda: left * right,
                cst.FloorDivide: lambda: left // right, cst.Modulo: lambda: left % right}[type(operator)]()
    raise NotFixed


def _subscript(builder, expr: cst.Subscript, env, depth: int):
    held = value(builder, expr.value, env, depth + 1)
    if not isinstance(held, (tuple, str)) or len(expr.slice) != 1:
        raise NotFixed
    index = expr.slice[0].slice
    if isinstance(index, cst.Index):
        at = value(builder, index.value, env, depth + 1)
        if not isinstance(at, int) or isinstance(at, bool) or not -len(held) <= at < len(held):
            raise NotFixed
        return held[at]
    index = cast(cst.Slice, index)
    bounds = [None if part is None else value(builder, part, env, depth + 1) for part in (index.lower, index.upper)]
    if index.step is not None or not all(b is None or isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        raise NotFixed
    return held[bounds[0]:bounds[1]]


def _formatted(builder, expr: cst.FormattedString, env, depth: int) -> str:
    if expr.prefix.lower() != "f":
        raise NotFixed
    out = []
    for part in expr.parts:
        if isinstance(part, cst.FormattedStringText):
            if "\\" in part.value:
                raise NotFixed
            out.append(part.value.replace("{{", "{").replace("}}", "}"))
            continue
        part = cast(cst.FormattedStringExpression, part)
        held = value(builder, part.expression, env, depth + 1)
        spec = part.format_spec
        if spec is not None and not all(isinstance(p, cst.FormattedStringText) for p in spec):
            raise NotFixed
        if part.conversion is not None or part.equal is not None:
            raise NotFixed
        try:
            out.append(format(held, "".join(cast(cst.FormattedStringText, p).value for p in spec or ())))
        except (TypeError, ValueError):
            raise NotFixed from None
    return "".join(out)


def _call(builder, call: cst.Call, env, depth: int):
    if any(a.star for a in call.args):
        raise NotFixed
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and literal_string(func.value) is not None:
        template = literal_string(func.value)
        fields = [f for _, f, _, _ in string.Formatter().parse(template or "") if f is not None]
        if any(not (f == "" or f.isdigit() or f.isidentifier()) for f in fields):   # (no `{0.attr}`, `{0[1]}`)
            raise NotFixed
        args = [value(builder, a.value, env, depth + 1) for a in call.args if a.keyword is None]
        kwargs = {a.keyword.value: value(builder, a.value, env, depth + 1) for a in call.args if a.keyword is not None}
        try:
            return (template or "").format(*args, **kwargs)
        except (IndexError, KeyError, ValueError, TypeError):
            raise NotFixed from None
    if not isinstance(func, cst.Name) or func.value not in BUILTINS or _rebound(builder, func.value) \
            or any(a.keyword is not None for a in call.args):
        raise NotFixed
    args = [value(builder, a.value, env, depth + 1) for a in call.args]
    if func.value == "range" and not (all(isinstance(a, int) and not isinstance(a, bool) for a in args)
                                      and 0 < len(args) <= 3 and (len(args) < 3 or args[2] != 0)
                                      and len(range(*args)) <= 10_000):
        raise NotFixed
    if func.value in ("enumerate", "zip", "reversed", "list", "tuple", "len") and \
            not all(isinstance(a, (tuple, str)) for a in args[:None if func.value == "zip" else 1]):
        raise NotFixed
    try:
        result = BUILTINS[func.value](*args)
    except (TypeError, ValueError, OverflowError):
        raise NotFixed from None
    if isinstance(result, (range, enumerate, zip, reversed, list)):
        result = list(result)
    return frozen(result)


class _Cache:
    """What is asked again for each iteration and name, kept for the last module read."""

    module: cst.Module | None = None
    bound: set[str] = set()
    named: dict[tuple[int, str], object] = {}

    @classmethod
    def of(cls, module: cst.Module) -> type[_Cache]:
        if cls.module is not module:
            cls.module, cls.named = module, {}
            cls.bound = set().union(*(_targets(node) for node in walk(module) if type(node) in (
                cst.AssignTarget, cst.For, cst.AsName, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.Param,
                cst.AugAssign, cst.AnnAssign, cst.CompFor, cst.Global)))
        return cls


def _rebound(builder, name: str) -> bool:
    """Does the module bind `name` itself (a builtin it shadows)?"""
    return name in _Cache.of(builder.module).bound


def _targets(node: cst.CSTNode) -> set[str]:
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
        return {node.name.value}
    if isinstance(node, cst.ImportAlias):
        held = node.asname.name if node.asname is not None else node.name
        return set(loads(held)) if isinstance(held, cst.Name) else {cst.Module([]).code_for_node(held).split(".")[0]}
    if isinstance(node, cst.Global):
        return {n.name.value for n in node.names}
    if isinstance(node, cst.AsName):
        return set(loads(node.name))
    return set(loads(cast(cst.AssignTarget, node).target))   # (AssignTarget, For, AugAssign, AnnAssign, CompFor)


def _named(builder, name: str, depth: int):
    """A name's fixed value: a model class's setting (ModelBuilder.host_settings), else
    its one binding `name = value` in the function building the graph or the module."""
    settings = getattr(builder, "host_settings", None) or {}
    if name in settings:
        held = settings[name]
        if isinstance(held, NotFixed):
            raise held
        return held
    owner = builder.program.owner
    named = _Cache.of(builder.module).named
    key = (id(owner), name)
    if key not in named:
        try:
            named[key] = _bound_value(builder, name, owner, depth)
        except NotFixed as unknown:
            named[key] = unknown
    if isinstance(named[key], NotFixed):
        raise cast(NotFixed, named[key])
    return named[key]


def _bound_value(builder, name: str, owner, depth: int):
    """The value of `name = value`, its one binding in the function building the graph (or,
    bound nowhere there, in the module), where the module only reads it."""
    scopes = [owner, builder.module] if isinstance(owner, cst.FunctionDef) else [builder.module]
    for scope in scopes:
        if isinstance(scope, cst.FunctionDef) and name in {p.name.value for p in scope.params.params}:
            raise NotFixed
        statements = list(scope.body.body) if isinstance(scope, cst.FunctionDef) else list(scope.body)
        binding = [s for s in statements if name in _bound_in(s)]
        if not binding:
            continue
        small = binding[0].body[0] if len(binding) == 1 and isinstance(binding[0], cst.SimpleStatementLine) \
            and len(binding[0].body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name) \
                or not only_read(builder.module, lambda node: type(node) is cst.Name and node.value == name, [small]):
            raise NotFixed
        return value(builder, small.value, {}, depth + 1)
    raise NotFixed


def _bound_in(stmt: cst.CSTNode) -> set[str]:
    """Names bound anywhere in `stmt`, nested blocks and functions included."""
    return set().union(*(_targets(n) for n in walk(stmt)
                         if type(n) in (cst.AssignTarget, cst.For, cst.AsName, cst.AugAssign, cst.AnnAssign,
                                        cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.Global)))


def only_read(root: cst.CSTNode, held: Callable[[cst.CSTNode], bool], passed: Collection[cst.CSTNode] = (),
              constructors: frozenset[str] = frozenset()) -> bool:
    """Is every use under `root` of the value `held` recognizes a read that cannot change it?
    Not: a method or attribute of it, an item assigned or deleted, another name bound to it,
    an argument of a function other than the READERS (and `constructors`, whose use of their
    arguments is checked apart). `passed`: statements passed by (its binding)."""
    for node in _walk_except(root, {id(n) for n in passed}):
        if isinstance(node, cst.Attribute) and held(node.value):
            return False
        if isinstance(node, cst.Call):
            func = node.func
            if any(held(a.value) for a in node.args) and not (
                    isinstance(func, cst.Name) and (func.value in READERS or func.value in constructors)):
                return False
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value is not None and held(node.value):
            return False
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.Del)) and any(
                isinstance(t, cst.Subscript) and held(t.value) or held(t) for t in walk(node.target)):
            return False
    return True


def _walk_except(root: cst.CSTNode, skipped: set[int]) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in skipped:
            continue
        yield node
        stack.extend(reversed(list(node.children)))
