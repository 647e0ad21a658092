"""The name model on Python's own syntax tree: what a name or an attribute chain refers to.

NameResolver's model (names.py), term for term, on `scopes.ScopeMap`: imports and
aliases, `compat.v1`, names bound by assignment to a TensorFlow module, star
imports, shadowing, and names bound to something else too (`ambiguous`: no
rename); with the kind of a value (a session, an optimizer...) where the catalog's
tables tell it. The rule engine on `ast` (ast_rules.py) asks it of every node.
"""

from __future__ import annotations

import ast

from tf1gradfix.detect.chains import chain_base, reads_a_name, referents_answer, referents_shape
from tf1gradfix.detect.scopes import ScopeMap, full_name
from tf1gradfix.rules.catalog import ASSIGNABLE_MODULES, Catalog, normalize

def dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


class Bindings:
    """names.BindingCollector on `ast`: values bound to Name targets (by node) and to `a.b` keys."""

    def __init__(self, tree: ast.Module):
        self.values: dict[int, list[ast.expr]] = {}
        self.attributes: dict[str, list[ast.expr]] = {}
        self.star_modules: list[str] = []
        self._suite(tree.body)

    def _bind(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.values.setdefault(id(target), []).append(value)
        elif isinstance(target, ast.Attribute):
            key = dotted(target)
            if key is not None:
                self.attributes.setdefault(key, []).append(value)

    def _suite(self, body) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self._bind(target, stmt.value)
            elif isinstance(stmt, ast.AnnAssign):
                if stmt.value is not None:
                    self._bind(stmt.target, stmt.value)
            elif isinstance(stmt, ast.ImportFrom):
                if not stmt.level and stmt.module is not None and any(a.name == "*" for a in stmt.names):
                    self.star_modules.append(stmt.module)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        self._bind(item.optional_vars, item.context_expr)
                self._suite(stmt.body)
            elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self._suite(stmt.body)
                for handler in stmt.handlers:
                    self._suite(handler.body)
                self._suite(stmt.orelse)
                self._suite(stmt.finalbody)
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    self._suite(case.body)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If,
                                   ast.For, ast.AsyncFor, ast.While)):
                self._suite(stmt.body)
                self._suite(getattr(stmt, "orelse", ()))


class Names:
    """names.NameResolver on `ast` (see its docstring for the model)."""

    def __init__(self, tree: ast.Module, catalog: Catalog, data: bytes = b""):
        self.data, self._starts = data, None
        self.scopes = ScopeMap(tree)
        self.bindings = Bindings(tree)
        self.catalog = catalog
        self._import_names: dict[int, str | None] = {}
        self._ambiguous: set[int] = set()
        self._kinds: dict[int, str | None] = {}
        self._values: dict[tuple, list] = {}   # (_bound_values)
        self._by_name: dict[tuple, tuple[str | None, bool]] = {}   # (as NameResolver's)
        self._contributions: dict[tuple, tuple[frozenset, bool]] = {}   # (_contribution)
        self._prefixes: dict = {}   # (chains.referents_answer's memo)

    def import_name(self, node) -> str | None:
        key = id(node)
        if key not in self._import_names:
            self._import_names[key] = self._lookup(node)
        return self._import_names[key]

    def ambiguous(self, node) -> bool:
        self.import_name(node)
        return id(node) in self._ambiguous

    def qualified(self, node) -> str | None:
        raw = self.import_name(node)
        return None if raw is None else normalize(raw)

    def _lookup(self, node) -> str | None:
        scope = self.scopes.scope(node)
        if scope is None:
            return None
        base, full = chain_base(node, ast), full_name(node)
        accesses = self.scopes.accesses.get(id(base)) if base is not None else None
        if not accesses or full is None:
            return self._plain_lookup(node)
        key = (id(scope), base.id, full, referents_shape(accesses))
        if key in self._by_name:
            answer, ambiguous = self._by_name[key]
            if ambiguous:
                self._ambiguous.add(id(node))
            return answer
        self._import_names[id(node)] = None   # cycle guard: `tf = tf.compat.v1` reads `tf`
        answer = self._resolved(node, base, full, accesses)
        self._by_name[key] = (answer, id(node) in self._ambiguous)
        return answer

    def _resolved(self, node, base, full: str, accesses) -> str | None:
        """_lookup's answer from the referents of the read of `base` (`full`: its dotted name)."""
        answer, ambiguous = referents_answer(accesses, self._contribution, full, full[len(base.id):],
                                             self.bindings.star_modules, self._prefixes, (base.id, full),
                                             lambda referent: (id(referent), full) in self._contributions)
        if ambiguous:
            self._ambiguous.add(id(node))
        return answer

    def _contribution(self, referent, full: str, rest: str) -> tuple[frozenset, bool]:
        """What one referent adds to a read's answer: (names, whether it may be something else).
        Kept per (referent, read), since the reads after N bindings of a name see N referents
        each; not where a bound value reads a name (that read may be under way: a cycle)."""
        key = (id(referent), full)
        known = self._contributions.get(key)
        if known is not None:
            return known
        if referent.kind == "import":
            pairs = [(name, normalize(name) is not None) for name, _source in referent.qualified_names(full)]
            known = frozenset(name for name, ours in pairs if ours), not all(ours for _, ours in pairs)
        else:
            values = self.bindings.values.get(id(referent.node), ()) if referent.node is not None else ()
            modules = [self._module_of(value) for value in values]
            known = (frozenset(module + rest for module in modules if module is not None),
                     not modules or None in modules)
            if any(reads_a_name(value, ast) for value in values):
                return known
        self._contributions[key] = known
        return known

    def _plain_lookup(self, node) -> str | None:
        for name, source in sorted(self.scopes.qualified_names(node)):
            if source == "import" and normalize(name) is not None:
                return name
        return None

    def _module_of(self, value) -> str | None:
        attrs = []
        while isinstance(value, ast.Attribute):
            attrs.append(value.attr)
            value = value.value
        if isinstance(value, ast.Call):
            module = self._imported_module(value)
        elif isinstance(value, ast.Name):
            module = self.import_name(value)
        else:
            return None
        if module is None:
            return None
        module = ".".join([module, *reversed(attrs)])
        return module if module in ASSIGNABLE_MODULES else None

    def _imported_module(self, call: ast.Call) -> str | None:
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
            return None
        arg = call.args[0]
        if not (isinstance(arg, ast.Constant) and type(arg.value) is str and self._plain(arg)):
            return None
        callee = {name for name, _ in self.scopes.qualified_names(call.func)}
        if "builtins.__import__" in callee:
            return arg.value.split(".", 1)[0]
        if "importlib.import_module" in callee:
            return arg.value
        return None

    def _plain(self, arg: ast.Constant) -> bool:
        """Whether the string `arg` is one literal without prefix (or `u`), as `__import__`'s must be."""
        if self._starts is None:
            self._starts = line_starts(self.data)
        starts = self._starts
        return _one_literal(self.data[starts[arg.lineno] + arg.col_offset:starts[arg.end_lineno] + arg.end_col_offset])

    def kind(self, expr, depth: int = 0) -> str | None:
        if depth > 20:
            return None
        key = id(expr)
        if key in self._kinds:
            return self._kinds[key]
        self._kinds[key] = None
        result = self._kinds[key] = self._infer(expr, depth)
        return result

    def _bound_values(self, scope, name: str) -> list:
        """The values `name` is bound to in `scope`, the same for every read there: kept, since
        each of N reads of a name bound N times would walk all N bindings."""
        key = (id(scope), name)
        if key not in self._values:
            self._values[key] = [v for a in scope.resolve(name, scope) if a.node is not None
                                 for v in self.bindings.values.get(id(a.node), ())]
        return self._values[key]

    def _infer(self, expr, depth: int) -> str | None:
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in self.catalog.method_results \
                    and self.kind(func.value, depth + 1) == "optimizer":
                return self.catalog.method_results[func.attr]
            qualified = self.qualified(func)
            return self.catalog.kind_of_call(qualified) if qualified is not None else None
        if isinstance(expr, ast.Name):
            scope = self.scopes.scope(expr)
            if scope is None:
                return None
            return self._first_kind(self._bound_values(scope, expr.id), depth)
        if isinstance(expr, ast.Attribute):
            key = dotted(expr)
            if key is not None and key in self.bindings.attributes:
                return self._first_kind(self.bindings.attributes[key], depth)
            return None
        if isinstance(expr, (ast.Subscript, ast.UnaryOp)):
            inner = expr.value if isinstance(expr, ast.Subscript) else expr.operand
            return "graph_value" if self.kind(inner, depth + 1) == "graph_value" else None
        if isinstance(expr, ast.BinOp):
            sides = (self.kind(expr.left, depth + 1), self.kind(expr.right, depth + 1))
            return "graph_value" if "graph_value" in sides else None
        return None

    def _first_kind(self, values, depth: int) -> str | None:
        for value in values:
            found = self.kind(value, depth + 1)
            if found is not None:
                return found
        return None


def line_starts(data: bytes) -> list[int]:
    """Byte offset of each line (1-based), lines counted as Python's tokenizer counts them."""
    starts, at = [0, 0], 0
    for line in data.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


def _one_literal(text: bytes) -> bool:
    """Whether `text` is one string literal, with no prefix or `u` (not two joined ones)."""
    if text[:1] in (b"u", b"U"):
        text = text[1:]
    quote = next((q for q in (b'"""', b"'''", b'"', b"'") if text.startswith(q)), None)
    if quote is None:
        return False
    at = len(quote)
    while at < len(text):
        if text[at:at + 1] == b"\\":
            at += 2
        elif text.startswith(quote, at):
            return at + len(quote) == len(text)
        else:
            at += 1
    return False
