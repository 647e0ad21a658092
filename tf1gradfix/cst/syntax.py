"""Reading LibCST syntax the way the restructuring needs it: call arguments
by parameter, the names an expression reads, a function's free names, and
the graph-op tables. Shared by the model and the emitters.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import cast

import libcst as cst

from tf1gradfix.rules.catalog import _read
from tf1gradfix.cst.walk import TargetedTransformer, children, visit, walk
from tf1gradfix.model.refusals import Refusal  # noqa: F401 - (its old home: importable from here)


@functools.lru_cache(maxsize=None)
def graph_ops() -> dict:
    return _read("graph_ops.toml")


@functools.lru_cache(maxsize=None)
def schedule_table() -> dict[str, dict]:
    """Learning-rate schedules the optimizer stage translates (rules/schedules.toml)."""
    return {name: row for row in _read("schedules.toml")["schedule"] for name in row["v1"]}


def without_defaults(bound: dict, maker: str) -> dict:
    """A variable maker's bound arguments less those written with their default value
    (`regularizer=None`, `trainable=True`): as if left out (graph_ops.toml)."""
    defaults = graph_ops()["variable_defaults"][maker]
    return {k: v for k, v in bound.items() if not (isinstance(v, cst.Name) and v.value in defaults.get(k, ()))}


def matches(qualified: str | None, table: str) -> bool:
    return qualified is not None and any(fnmatch.fnmatchcase(qualified, p) for p in graph_ops()[table])


def enters_new_graph(stmt: cst.With, qualified) -> bool:
    """`with tf.Graph().as_default():` (one item, no `as`): a graph of its own,
    which TF2 does not need. `qualified` resolves a callee's name."""
    item = stmt.items[0] if len(stmt.items) == 1 else None
    call = item.item if item is not None and item.asname is None else None
    func = call.func if isinstance(call, cst.Call) and not call.args else None
    return isinstance(func, cst.Attribute) and func.attr.value == "as_default" \
        and isinstance(func.value, cst.Call) and not func.value.args \
        and qualified(func.value.func) == "tensorflow.Graph"


def arg(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument bound to a parameter, given by position or keyword."""
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
        if a.keyword is None and a.star == "" and i == position:
            return a.value
    return None


def bound_args(call: cst.Call, params: list[str], node: cst.CSTNode) -> dict[str, cst.BaseExpression]:
    """Parameter -> argument for a call with the given positional parameter order."""
    out = {}
    for i, a in enumerate(call.args):
        if a.star:
            raise Refusal.of(node, "star_arguments")
        if a.keyword is not None:
            out[a.keyword.value] = a.value
        elif i < len(params):
            out[params[i]] = a.value
        else:
            raise Refusal.of(node, "too_many_positional")
    return out


def loads(expr: cst.CSTNode) -> list[str]:
    """Names an expression reads (attribute bases, not attribute names or keywords)."""
    return [n.value for n in name_nodes(expr)]


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def outer_reads(expr: cst.CSTNode) -> set[str]:
    """The names of `loads` that the expression reads from its scope: not the targets of its
    comprehensions (`[g for g, v in pairs]` reads `pairs` alone) or its lambdas' parameters,
    where they read them (Python 3 keeps those local)."""
    if isinstance(expr, _COMPREHENSIONS):
        bound: set[str] = set()
        reads: set[str] = set()
        loop: cst.CompFor | None = expr.for_in
        while loop is not None:
            reads |= outer_reads(loop.iter) - bound   # (the first iterable: read in the scope itself)
            bound |= set(loads(loop.target))
            for cond in loop.ifs:
                reads |= outer_reads(cond.test) - bound
            loop = loop.inner_for_in
        parts = (expr.key, expr.value) if isinstance(expr, cst.DictComp) else (expr.elt,)
        return reads | set().union(*(outer_reads(part) - bound for part in parts))
    if isinstance(expr, cst.Lambda):
        params = expr.params
        own = {p.name.value for p in (*params.params, *params.kwonly_params, *params.posonly_params)}
        own |= {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
        defaults = [p.default for p in (*params.params, *params.kwonly_params, *params.posonly_params) if p.default]
        return set().union(*(outer_reads(d) for d in defaults)) | (outer_reads(expr.body) - own)
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, (cst.Attribute, cst.Arg)):
        return outer_reads(expr.value)
    return set().union(*(outer_reads(child) for child in children(expr, past_tokens=True)))


def name_nodes(expr: cst.CSTNode) -> list[cst.Name]:
    """The Name nodes of `loads`, in visiting order."""
    found: list[cst.Name] = []
    stack = [expr]
    while stack:  # in visiting order: each node's children pushed last-first
        node = stack.pop()
        kind = type(node)
        if kind is cst.Attribute or kind is cst.Arg:
            stack.append(node.value)
            continue
        if kind is cst.Name:
            found.append(node)
        below = children(node, past_tokens=True)   # (no token holds a name)
        below.reverse()
        stack.extend(below)
    return found


def call_text(head: str, args: list[str], close: str = ")") -> str:
    """`head` + the arguments + `close` on one line when it fits in 100 columns, else one
    argument per line, as a formatter would write it."""
    one_line = f"{head}{', '.join(args)}{close}"
    if len(one_line) <= 100:
        return one_line
    return head + "\n" + "".join(f"    {a},\n" for a in args) + close


def is_docstring(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def names_as_attributes(node: cst.CSTNode, attribute: dict[str, str], self_name: str = "self"):
    """`node` with each name `loads` finds in `attribute` written `self.<attribute[name]>`:
    a function's locals that become an object's state."""
    targets = {n for n in name_nodes(node) if n.value in attribute}
    if not targets:
        return node

    class Rename(TargetedTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            if original not in targets:
                return updated
            return cst.Attribute(cst.Name(self_name), cst.Name(attribute[original.value]),
                                 lpar=updated.lpar, rpar=updated.rpar)

    return node.visit(Rename(targets))


def names_renamed(node: cst.CSTNode, renames: dict[str, str]):
    """`node` with each name `loads` finds in `renames` renamed."""
    targets = {n for n in name_nodes(node) if n.value in renames}

    class Rename(TargetedTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=renames[original.value]) if original in targets else updated

    return node.visit(Rename(targets)) if targets else node


def literal_bool(expr: cst.BaseExpression | None, what: str) -> bool | None:
    """True/False written as such (None when absent); Refusal for anything else."""
    if expr is None:
        return None
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    raise Refusal.of(expr, "flag_not_bool", param=what)


def literal_index(subscript: cst.Subscript) -> int | None:
    """`x[2]` or `x[-1]`: the integer; None for any other subscript."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    value = subscript.slice[0].slice.value
    negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
    number = cast(cst.UnaryOperation, value).expression if negative else value
    if not isinstance(number, cst.Integer):
        return None
    return -int(number.value) if negative else int(number.value)


def literal_string(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value if isinstance(expr.evaluated_value, str) else None
    return None


def target_names(target: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)):
        names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
        return tuple(names) if len(names) == len(target.elements) else None
    return None


def stored_name_nodes(target: cst.BaseExpression) -> list[cst.Name]:
    """The names an assignment target binds (`_, value`, `[a, *rest]`), not those it reads (`d[k]`)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, cst.StarredElement):
        return stored_name_nodes(target.value)
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in stored_name_nodes(e.value)]
    return []


def literal_dtype(expr) -> str | None:
    """dtype of a placeholder_with_default's literal default, as TF1 infers it (an
    integer outside int32's range is int64)."""
    sign = 1
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr, sign = expr.expression, -1
    if isinstance(expr, cst.Float):
        return "float32"
    if isinstance(expr, cst.Integer):
        return "int32" if -2 ** 31 <= sign * int(expr.value.replace("_", ""), 0) < 2 ** 31 else "int64"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    return None


def bound_names(stmt: cst.CSTNode) -> set[str]:
    """Names a statement binds (assignment, loop and with targets, definitions)."""
    holder = cst.FunctionDef(name=cst.Name("_"), params=cst.Parameters(), body=cst.IndentedBlock([stmt]))
    defined = {stmt.name.value} if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else set()
    return (set(loads(stmt)) - free_names(holder)) | defined


class TakenNames(set[str]):
    """A set of taken names that remembers, per base, the last number fresh_name gave: names
    are never given back, so the next search starts there (a file of N blocks naming N step
    functions would otherwise try 1, 2, ... N each time)."""

    __slots__ = ("last",)

    def __init__(self, names=()):
        super().__init__(names)
        self.last: dict[str, int] = {}


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`...: the first not in `taken`, which then holds it."""
    last = getattr(taken, "last", None)
    k = last.get(base, 1) if last is not None else 1
    name = base if k == 1 else f"{base}_{k}"
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    if last is not None:
        last[base] = k
    return name


def free_names(func: cst.FunctionDef) -> set[str]:
    """Names a function reads that it neither receives nor binds itself."""
    bound = {p.name.value for p in (*func.params.params, *func.params.kwonly_params, *func.params.posonly_params)}
    for star in (func.params.star_arg, func.params.star_kwarg):
        if isinstance(star, cst.Param):
            bound.add(star.name.value)

    visit(func.body, _Binder(bound))
    return set(loads(func.body)) - bound


class _Binder(cst.CSTVisitor):
    """Adds the names a function body binds to `bound` (one class for all calls:
    a visitor class made on every call would cost more than its walk)."""

    def __init__(self, bound: set[str]) -> None:
        super().__init__()
        self.bound = bound

    def _targets(self, target) -> None:
        """The names a target binds: `x.a = v` and `x[i] = v` bind none (they read `x`)."""
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value)

    def visit_AssignTarget(self, node) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._targets(node.target)

    def visit_For(self, node) -> None:
        self._targets(node.target)

    def visit_CompFor(self, node) -> None:
        self._targets(node.target)

    def visit_AsName(self, node) -> None:
        self._targets(node.name)

    def visit_FunctionDef(self, node) -> None:
        self.bound.add(node.name.value)


def call_root(expr: cst.BaseExpression) -> str | None:
    """The name an expression starts from (`tf` of `tf.nn.relu(x).shape`), if a name."""
    while isinstance(expr, (cst.Attribute, cst.Call, cst.Subscript)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr.value if isinstance(expr, cst.Name) else None


def tensorflow_aliases(module: cst.Module) -> set[str]:
    """The names the module's imports bind to TensorFlow or its members."""
    found: set[str] = set()
    for node in walk(module, skip=(cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = cst.Module(body=[]).code_for_node(alias.name)
                if dotted == "tensorflow" or dotted.startswith("tensorflow."):
                    found.add(alias.asname.name.value if alias.asname is not None
                              and isinstance(alias.asname.name, cst.Name) else dotted.split(".")[0])
        elif isinstance(node, cst.ImportFrom) and node.module is not None:
            dotted = cst.Module(body=[]).code_for_node(node.module)
            if (dotted == "tensorflow" or dotted.startswith("tensorflow.")) and not isinstance(node.names, cst.ImportStar):
                found |= {(a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
                           else cst.Module(body=[]).code_for_node(a.name)) for a in node.names}
    return found


def alias_qualified(aliases: set[str]):
    """A resolver for where no scope analysis exists yet (a reading of the module): `tf.X.Y`
    spelled from a name the module's imports bind to TensorFlow is `tensorflow.X.Y`
    (`compat.v1.` read as TF1's own), anything else None."""
    def qualified(expr: cst.BaseExpression) -> str | None:
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.insert(0, expr.attr.value)
            expr = expr.value
        if not (isinstance(expr, cst.Name) and expr.value in aliases and parts):
            return None
        dotted = ".".join(parts)
        return "tensorflow." + (dotted[len("compat.v1."):] if dotted.startswith("compat.v1.") else dotted)
    return qualified


def binding_counts(tree: cst.CSTNode) -> dict[str, int]:
    """How many places below `tree` bind each name (targets, parameters, definitions, imports;
    a `global`/`nonlocal` declaration counts twice: the name is bound in another scope too)."""
    counts: dict[str, int] = {}
    for node in walk(tree):
        names: list[str] = []
        if isinstance(node, (cst.AssignTarget, cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign)):
            names = [n.value for n in stored_name_nodes(node.target)]
        elif isinstance(node, cst.AsName):
            names = [n.value for n in stored_name_nodes(cast(cst.BaseExpression, node.name))]
        elif isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
            names = [node.name.value]
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            names = [cst.Module(body=[]).code_for_node(node.name).split(".")[0]]
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            names = [n.name.value for n in node.names] * 2
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts
