"""Scopes of a Python syntax tree, read the way LibCST's ScopeProvider reads them.

Detection must give the same answers with or without LibCST, so this is a
small copy of its rules on Python's own `ast`: which assignments an access
sees (those of an enclosing scope, and those made earlier in its own), class
bodies hidden from their methods, `global` and `nonlocal`, comprehension
scopes, and an access inside a chain keyed by the longest dotted prefix
that an import of a dotted name binds (`import tensorflow.compat.v1`).
"""

from __future__ import annotations

import ast
import builtins

from tf1gradfix.detect.cuts import Cut, earlier


class Scope:
    __slots__ = ("kind", "parent", "assignments", "overwrites", "count", "prefix")

    def __init__(self, kind: str, parent: Scope | None, name: str | None = None):
        self.kind, self.parent = kind, parent if parent is not None else self
        self.assignments: dict[str, list[Assignment]] = {}
        self.overwrites: dict[str, Scope] = {}
        self.count = 0
        if parent is None or kind in ("module", "builtin"):
            self.prefix = ""
        else:
            parts = [parent.prefix, name] + ([] if kind == "class" else ["<locals>"])
            if kind == "comprehension":
                parts = [parent.prefix, "<comprehension>"]
            self.prefix = ".".join(p for p in parts if p)

    def visible_from(self, child: Scope) -> bool:
        return self.kind != "class"   # (LibCST: only an annotation scope sees its class)

    def next_visible(self, from_scope: Scope, first: Scope | None = None) -> Scope:
        parent = first if first is not None else self.parent
        while not parent.visible_from(from_scope):
            parent = parent.parent
        return parent

    def target(self, name: str) -> Scope:
        if self.kind in ("function", "class", "comprehension") and name in self.overwrites:
            return self.next_visible(self, self.overwrites[name]).target(name)
        return self

    def contains(self, name: str) -> bool:
        if self.kind == "builtin":
            return name in self.assignments or hasattr(builtins, name)
        if name in self.overwrites:
            return self.overwrites[name].contains(name)
        if self.assignments.get(name):
            return True
        return self.next_visible(self).contains(name)

    def resolve(self, name: str, from_scope: Scope) -> list[Assignment]:
        if self.kind == "builtin":
            if name not in self.assignments and hasattr(builtins, name):
                self.assignments[name] = [Assignment(name, self, None, 0, "builtin")]
            return self.assignments.get(name, [])
        if self.kind == "module":
            if name in self.assignments:
                return self.assignments[name]
            return self.next_visible(from_scope).resolve(name, from_scope)
        if name in self.overwrites:
            return self.next_visible(from_scope, self.overwrites[name]).resolve(name, from_scope)
        if name in self.assignments:
            return self.assignments[name]
        return self.next_visible(from_scope).resolve(name, from_scope)


class Assignment:
    __slots__ = ("name", "scope", "node", "index", "kind", "alias_nodes")

    def __init__(self, name, scope, node, index, kind="plain"):
        self.name, self.scope, self.node, self.index, self.kind = name, scope, node, index, kind

    def qualified_names(self, full: str) -> set[tuple[str, str]]:
        """(qualified name, source) pairs, as LibCST's assignments give them."""
        if self.kind == "builtin":
            return {(f"builtins.{self.name}", "builtin")}
        if self.kind == "import":
            return _import_names(self.node, full)
        return {(f"{self.scope.prefix}.{full}" if self.scope.prefix else full, "local")}


def _import_names(stmt, full: str) -> set[tuple[str, str]]:
    """ImportAssignment.get_qualified_names_for, on an `ast.Import`/`ast.ImportFrom`."""
    module = ""
    if isinstance(stmt, ast.ImportFrom):
        module = "." * (stmt.level or 0) + (stmt.module or "")
    results = set()
    for alias in stmt.names:
        if alias.name == "*":
            return set()
        parts = alias.name.split(".")
        for i in range(len(parts), 0, -1):
            real = ".".join(parts[:i])
            as_name = real
            if module and module.endswith("."):
                real = f"{module}{real}"
            elif module:
                real = f"{module}.{real}"
            if alias.asname:
                as_name = alias.asname
            if full.startswith(as_name):
                rest = full.split(as_name, 1)[1]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                results.add((f"{real}.{rest}" if rest else real, "import"))
                break
    return results


class Access:
    __slots__ = ("node", "scope", "index", "referents")

    def __init__(self, node, scope, index):
        self.node, self.scope, self.index = node, scope, index
        self.referents: Cut = Cut()


def _refer(scope: Scope, name: str, accesses: list[Access]) -> None:
    """Each read of `name` in `scope` refers to the bindings of an enclosing scope and those
    of its own made before it, or when there are none to those one scope up: a cut of
    one list per name (detect/cuts.py), not a set per read (N bindings, M reads: N x M)."""
    seen = scope.resolve(name, scope)

    def above():
        return scope.parent.resolve(name, scope) if seen and scope.parent is not scope else ()

    for access, found in zip(accesses, earlier(seen, scope, accesses, lambda item: item.index, above)):
        access.referents = found


def full_name(node) -> str | None:
    """libcst.helpers.get_full_name_for_node on `ast`: `tf.Session().run` is `tf.Session.run`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = full_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Call):
        return full_name(node.func)
    if isinstance(node, ast.Subscript):
        return full_name(node.value)
    return None


def _dotted_prefixes(top: ast.Attribute):
    """(dotted name, node) for each prefix of a pure chain, longest first (LibCST's _gen_dotted_names)."""
    out, node = [], top
    while isinstance(node, ast.Attribute):
        name = full_name(node) if _pure(node) else None
        if name is not None:
            out.append((name, node))
        node = node.value
    if isinstance(node, ast.Name):
        out.append((node.id, node))
    return out


def _pure(node) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


_ASSIGNING = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom,
              ast.Global, ast.Nonlocal, ast.NamedExpr)


class ScopeMap:
    """Scope of every node, and the accesses keyed by node (see module docstring)."""

    def __init__(self, tree: ast.Module):
        self.scope_of: dict[int, Scope] = {}
        self.accesses: dict[int, list[Access]] = {}
        self.module = Scope("module", Scope("builtin", None))
        self.module.parent.kind = "builtin"
        self._deferred: list[tuple[Access, ast.Attribute | None]] = []
        self._scope = self.module
        self._top: list[ast.Attribute | None] = [None]
        for stmt in tree.body:
            self._visit(stmt)
        self._infer()

    # -- walking, in LibCST's order -----------------------------------------
    def _visit(self, node) -> None:
        self.scope_of[id(node)] = self._scope
        method = getattr(self, "_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            for child in ast.iter_child_nodes(node):
                self._visit(child)
        if isinstance(node, _ASSIGNING):
            self._scope.count += 1

    def _all(self, nodes) -> None:
        for node in nodes:
            if node is not None:
                self._visit(node)

    def _assign(self, name: str, node, kind: str = "plain") -> None:
        target = self._scope.target(name)
        target.assignments.setdefault(name, []).append(Assignment(name, target, node, target.count, kind))

    def _Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._assign(node.id, node)
        else:
            access = Access(node, self._scope, self._scope.count)
            self._deferred.append((access, self._top[-1]))

    def _Attribute(self, node: ast.Attribute) -> None:
        if self._top[-1] is None:
            self._top[-1] = node
        self._visit(node.value)
        if self._top[-1] is node:
            self._top[-1] = None

    def _Call(self, node: ast.Call) -> None:
        self._top.append(None)
        self._visit(node.func)
        self._all(node.args)
        for keyword in node.keywords:
            self.scope_of[id(keyword)] = self._scope
            self._visit(keyword.value)
        self._top.pop()

    def _Import(self, node) -> None:
        for alias in node.names:
            self.scope_of[id(alias)] = self._scope
            if alias.name == "*":
                return
            if alias.asname:
                self._assign(alias.asname, node, "import")
            else:
                parts = alias.name.split(".")
                for i in range(len(parts), 0, -1):
                    self._assign(".".join(parts[:i]), node, "import")

    _ImportFrom = _Import

    def _Global(self, node) -> None:
        if self._scope is self.module:
            return
        for name in node.names:
            self._scope.overwrites[name] = self.module

    def _Nonlocal(self, node) -> None:
        if self._scope is self.module:
            return
        for name in node.names:
            self._scope.overwrites[name] = self._scope.parent

    def _Assign(self, node) -> None:
        self._all(node.targets)
        self._visit(node.value)

    def _AugAssign(self, node) -> None:
        target = node.target
        if isinstance(target, ast.Name):  # (LibCST: a store only)
            self.scope_of[id(target)] = self._scope
            self._assign(target.id, target)
        else:
            self._visit(target)
        self._visit(node.value)

    def _AnnAssign(self, node) -> None:
        self._all((node.target, node.annotation, node.value))

    def _NamedExpr(self, node) -> None:
        self._all((node.target, node.value))

    def _function(self, node, name: str | None, body) -> None:
        outer = self._scope
        self._scope = Scope("function", outer, name)
        self._arguments(node.args, outer)
        self._scope.count += 1   # (Parameters)
        if isinstance(body, list):
            self._all(body)
        else:
            self._visit(body)
        self._scope = outer

    def _arguments(self, args: ast.arguments, outer: Scope) -> None:
        self.scope_of[id(args)] = self._scope
        every = args.posonlyargs + args.args + ([args.vararg] if args.vararg else []) \
            + args.kwonlyargs + ([args.kwarg] if args.kwarg else [])
        defaults = dict(zip([id(a) for a in (args.posonlyargs + args.args)[::-1]], args.defaults[::-1]))
        defaults.update((id(a), d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        for arg in every:
            self.scope_of[id(arg)] = self._scope
            self._assign(arg.arg, arg)
            inner, self._scope = self._scope, outer
            self._all((defaults.get(id(arg)), arg.annotation))
            self._scope = inner

    def _FunctionDef(self, node) -> None:
        self._assign(node.name, node)
        self._function(node, node.name, node.body)
        self._all(node.decorator_list)
        self._all((node.returns,))
        self._scope.count += 1

    _AsyncFunctionDef = _FunctionDef

    def _Lambda(self, node) -> None:
        self._function(node, None, node.body)

    def _ClassDef(self, node) -> None:
        self._assign(node.name, node)
        self._all(node.decorator_list)
        self._all(node.bases)
        for keyword in node.keywords:
            self._visit(keyword.value)
        outer = self._scope
        self._scope = Scope("class", outer, node.name)
        self._all(node.body)
        self._scope = outer
        self._scope.count += 1

    def _comprehension(self, node, results) -> None:
        first, *rest = node.generators
        self._visit(first.iter)
        outer = self._scope
        self._scope = Scope("comprehension", outer)
        self.scope_of[id(first)] = self._scope
        self._visit(first.target)
        self._scope.count += 1
        self._all(first.ifs)
        for gen in rest:
            self.scope_of[id(gen)] = self._scope
            self._all((gen.target, gen.iter, *gen.ifs))
            self._scope.count += 1
        self._all(results)
        self._scope = outer

    def _ListComp(self, node) -> None:
        self._comprehension(node, (node.elt,))

    _SetComp = _GeneratorExp = _ListComp

    def _DictComp(self, node) -> None:
        self._comprehension(node, (node.key, node.value))

    def _For(self, node) -> None:
        self._visit(node.target)
        self._scope.count += 1
        self._visit(node.iter)
        self._all(node.body)
        self._all(node.orelse)

    _AsyncFor = _For

    def _With(self, node) -> None:
        for item in node.items:
            self.scope_of[id(item)] = self._scope
            self._all((item.context_expr, item.optional_vars))
            self._scope.count += 1
        self._all(node.body)

    _AsyncWith = _With

    def _ExceptHandler(self, node) -> None:
        self._all((node.type,))
        if node.name:
            self._assign(node.name, node)
            self._scope.count += 1
        self._all(node.body)

    # -- resolution, after the walk (LibCST's infer_accesses) -----------------
    def _infer(self) -> None:
        groups: dict[tuple, list[Access]] = {}
        for access, top in self._deferred:
            name, key = access.node.id, access.node
            if top is not None:
                for dotted, node in _dotted_prefixes(top):
                    if access.scope.contains(dotted):
                        name, key = dotted, node
                        break
            groups.setdefault((access.scope, name), []).append(access)
            self.accesses.setdefault(id(key), []).append(access)
        for (scope, name), accesses in groups.items():
            _refer(scope, name, accesses)
        self._deferred = []

    def scope(self, node) -> Scope | None:
        return self.scope_of.get(id(node))

    def qualified_names(self, node) -> set[tuple[str, str]]:
        """Scope.get_qualified_names_for: every (name, source) `node` may have."""
        accesses = self.accesses.get(id(node))
        if accesses:
            return {q for a in accesses for r in a.referents for q in r.qualified_names(r.name)}
        scope = self.scope(node)
        full = full_name(node)
        if scope is None or full is None:
            return set()
        found: list[Assignment] = []
        prefix = full
        while prefix:
            if scope.contains(prefix):
                found = scope.resolve(prefix, scope)
                break
            prefix = prefix.rpartition(".")[0]
        for assignment in found:
            if assignment.node is node:
                return assignment.qualified_names(full)
        return {q for a in found for q in a.qualified_names(full)}
