"""Name resolution: which TensorFlow symbol an expression names, and what kind
of value a name holds.

Qualified names come from LibCST's scope analysis (the same facts its
``QualifiedNameProvider`` serves, asked only for the nodes we look at) so that
``import tensorflow as tf``, ``import tensorflow.compat.v1 as tf``,
``from tensorflow import Session`` and ``import tensorflow as T`` all read the
same. A name bound to a TensorFlow module by assignment (``tf = tf.compat.v1``,
``tf = __import__("tensorflow")``) reads as that module, a bare name no
binding explains reads through ``from tensorflow import *``, and a name also
bound to something else (``import math as tf``, ``tf = math``) still reads as
TensorFlow but is `ambiguous`: no rename is safe on it. Kinds (session, optimizer, graph value) come from the call that bound a
name, so ``.run()`` on an unrelated object is never taken for ``sess.run``.
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import Assignment, ImportAssignment, QualifiedNameSource

from tf1gradfix.detect.chains import chain_base, reads_a_name, referents_answer, referents_shape
from tf1gradfix.cst import walk
from tf1gradfix.rules.catalog import ASSIGNABLE_MODULES, Catalog, normalize

def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as text for a pure Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


class BindingCollector(cst.CSTVisitor):
    """Maps each bound Name node (and `self.attr` key) to the values bound to it."""

    def __init__(self) -> None:
        self.values: dict[cst.Name, list[cst.BaseExpression]] = {}
        self.attributes: dict[str, list[cst.BaseExpression]] = {}
        self.star_modules: list[str] = []  # `from M import *` at module level

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target, []).append(value)
        elif isinstance(target, cst.Attribute):
            key = dotted(target)
            if key is not None:
                self.attributes.setdefault(key, []).append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, node.item)

    # Bindings live in statements only, so a whole module is read statement by
    # statement, in the order LibCST would visit them: a full visitor walk
    # rebuilds every expression node and costs as much as the rest of detection.
    def visit_Module(self, node: cst.Module) -> bool:
        for stmt in node.body:
            self._statement(stmt)
        return False

    def _statement(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            self._small(stmt.body)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self._suite(stmt.body)
        elif isinstance(stmt, cst.If):
            self._suite(stmt.body)
            if isinstance(stmt.orelse, cst.If):
                self._statement(stmt.orelse)
            elif stmt.orelse is not None:
                self._suite(stmt.orelse.body)
        elif isinstance(stmt, (cst.For, cst.While)):
            self._suite(stmt.body)
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                self.visit_WithItem(item)
            self._suite(stmt.body)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self._suite(stmt.body)
            for handler in stmt.handlers:
                self._suite(handler.body)
            for tail in (stmt.orelse, stmt.finalbody):
                if tail is not None:
                    self._suite(tail.body)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self._suite(case.body)
        else:  # a statement kind this walk does not know: a visit of all of it
            walk.visit(stmt, self)

    def _suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):
            self._small(suite.body)
        else:
            for stmt in suite.body:
                self._statement(stmt)

    def _small(self, statements) -> None:
        for small in statements:
            if isinstance(small, cst.Assign):
                self.visit_Assign(small)
            elif isinstance(small, cst.AnnAssign):
                self.visit_AnnAssign(small)
            elif isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar) \
                    and not small.relative and small.module is not None:
                self.star_modules.append(get_full_name_for_node(small.module))


class NameResolver:
    """Answers "which TF symbol is this" and "what kind of value is this" for one module.

    `scopes`: the module's ``ScopeProvider`` table (node -> scope). One resolver
    serves detection and the restructuring of a module (AnalysisWrapper.names),
    so each name is looked up once.
    """

    def __init__(self, scopes, bindings: BindingCollector, catalog: Catalog):
        self._scopes = scopes
        self._bindings = bindings
        self._catalog = catalog
        # Both keyed by the node itself (identity), which keeps it alive: an id could
        # be reused by a node made later, a node cannot.
        self._kind_cache: dict[cst.CSTNode, str | None] = {}
        self._values: dict[tuple, list] = {}   # (_name_kind)
        self._targets: dict[object, set] = {}   # scope -> the names it binds by plain assignment (_lookup)
        self._import_names: dict[cst.CSTNode, str | None] = {}
        self._ambiguous: set[cst.CSTNode] = set()
        # (scope, name, dotted name, its referents' shape) -> (the answer, ambiguous?): reads
        # of a name with the same referents get the same answer, and walking them for each
        # read made a file of N `with tf.Session() as sess:` blocks cost N * N
        self._by_name: dict[tuple, tuple[str | None, bool]] = {}
        self._contributions: dict[tuple, tuple[frozenset, bool]] = {}   # (_contribution)
        self._prefixes: dict = {}   # (chains.referents_answer's memo)

    def import_name(self, node: cst.CSTNode) -> str | None:
        """The raw qualified name of `node` when it comes from a TensorFlow/Keras import."""
        if node in self._import_names:   # (the analysis asks about the same call many times)
            return self._import_names[node]
        found = self._import_names[node] = self._lookup(node)
        return found

    def ambiguous(self, node: cst.CSTNode) -> bool:
        """Whether `node`'s name may also be bound to something that is not that
        TensorFlow symbol (another module, a compat.v1 alias besides the root):
        no rename can be right for every binding."""
        self.import_name(node)
        return node in self._ambiguous

    def _lookup(self, node: cst.CSTNode) -> str | None:
        scope = self._scopes.get(node)
        if scope is None:
            return None
        base, full = chain_base(node, cst), get_full_name_for_node(node)
        accesses = getattr(scope, "_accesses_by_node", {}).get(base) if base is not None else None
        if not accesses or full is None:  # (a node the scope analysis keeps no access for)
            if isinstance(node, cst.Name) and node in self._plain_targets(scope):
                return None   # (LibCST would find its assignment among all of the name's: a local name)
            return self._libcst_lookup(scope, node)
        key = (scope, base.value, full, referents_shape(accesses))
        if key in self._by_name:
            answer, ambiguous = self._by_name[key]
            if ambiguous:
                self._ambiguous.add(node)
            return answer
        self._import_names[node] = None   # cycle guard: `tf = tf.compat.v1` reads `tf`
        answer = self._resolved(node, base, full, accesses)
        self._by_name[key] = (answer, node in self._ambiguous)
        return answer

    def _plain_targets(self, scope) -> set:
        """The Name nodes `scope` binds by plain assignment (not an import): each has only its
        scope's local qualified name."""
        targets = self._targets.get(scope)
        if targets is None:
            targets = self._targets[scope] = {a.node for a in scope.assignments
                                              if type(a) is Assignment and isinstance(a.node, cst.Name)}
        return targets

    def _resolved(self, node: cst.CSTNode, base, full: str, accesses) -> str | None:
        """_lookup's answer from the referents of the read of `base` (`full`: its dotted name)."""
        answer, ambiguous = referents_answer(accesses, self._contribution, full, full[len(base.value):],
                                             self._bindings.star_modules, self._prefixes, (base.value, full),
                                             lambda referent: (referent, full) in self._contributions)
        if ambiguous:
            self._ambiguous.add(node)
        return answer

    def _contribution(self, referent, full: str, rest: str) -> tuple[frozenset, bool]:
        """What one referent adds to a read's answer: (names, whether it may be something else).
        Kept per (referent, read), since the reads after N bindings of a name see N referents
        each; not where a bound value reads a name (that read may be under way: a cycle)."""
        key = (referent, full)
        known = self._contributions.get(key)
        if known is not None:
            return known
        if isinstance(referent, ImportAssignment):
            pairs = [(q.name, normalize(q.name) is not None) for q in referent.get_qualified_names_for(full)]
            known = frozenset(name for name, ours in pairs if ours), not all(ours for _, ours in pairs)
        else:
            values = self._bindings.values.get(getattr(referent, "node", None), ())
            modules = [self._module_of(value) for value in values]
            known = (frozenset(module + rest for module in modules if module is not None),
                     not modules or None in modules)
            if any(reads_a_name(value, cst) for value in values):
                return known
        self._contributions[key] = known
        return known

    def _module_of(self, value: cst.BaseExpression) -> str | None:
        """The TensorFlow module `value` evaluates to, if it is one:
        `tf.compat.v1`, `__import__("tensorflow")`, `importlib.import_module("tensorflow.compat.v1")`."""
        attrs = []
        while isinstance(value, cst.Attribute):
            attrs.append(value.attr.value)
            value = value.value
        if isinstance(value, cst.Call):
            module = _imported_module(value, self._scopes)
        elif isinstance(value, cst.Name):
            module = self.import_name(value)
        else:
            return None
        if module is None:
            return None
        module = ".".join([module, *reversed(attrs)])
        return module if module in ASSIGNABLE_MODULES else None

    def _libcst_lookup(self, scope, node: cst.CSTNode) -> str | None:
        try:
            names = scope.get_qualified_names_for(node)
        except Exception:  # nodes the scope analysis has no record of
            return None
        for name in sorted(names, key=lambda q: q.name):  # same answer on every run
            if name.source is QualifiedNameSource.IMPORT and normalize(name.name) is not None:
                return name.name
        return None

    @staticmethod
    def normalized(raw: str) -> str | None:
        return normalize(raw)

    def qualified(self, node: cst.CSTNode) -> str | None:
        """The normalized TensorFlow name of `node`, when it comes from an import."""
        raw = self.import_name(node)
        return None if raw is None else normalize(raw)

    def kind(self, expr: cst.BaseExpression, _depth: int = 0) -> str | None:
        """Kind of the value `expr` evaluates to: session, optimizer, graph_value, keras or None."""
        if _depth > 20:
            return None
        if expr in self._kind_cache:
            return self._kind_cache[expr]
        self._kind_cache[expr] = None  # cycle guard
        result = self._infer(expr, _depth)
        self._kind_cache[expr] = result
        return result

    def _infer(self, expr: cst.BaseExpression, depth: int) -> str | None:
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, depth)
        if isinstance(expr, cst.Name):
            return self._name_kind(expr, depth)
        if isinstance(expr, cst.Attribute):
            key = dotted(expr)
            if key is not None and key in self._bindings.attributes:
                return self._first_kind(self._bindings.attributes[key], depth)
            return None
        if isinstance(expr, cst.Subscript):
            return "graph_value" if self.kind(expr.value, depth + 1) == "graph_value" else None
        if isinstance(expr, cst.BinaryOperation):
            sides = (self.kind(expr.left, depth + 1), self.kind(expr.right, depth + 1))
            return "graph_value" if "graph_value" in sides else None
        if isinstance(expr, cst.UnaryOperation):
            return "graph_value" if self.kind(expr.expression, depth + 1) == "graph_value" else None
        return None

    def _call_kind(self, call: cst.Call, depth: int) -> str | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in self._catalog.method_results and self.kind(func.value, depth + 1) == "optimizer":
                return self._catalog.method_results[method]
        qualified = self.qualified(func)
        if qualified is not None:
            return self._catalog.kind_of_call(qualified)
        return None

    def _name_kind(self, name: cst.Name, depth: int) -> str | None:
        scope = self._scopes.get(name)
        if scope is None:
            return None
        key = (scope, name.value)   # (the same for every read in the scope: kept, as N reads of a
        values = self._values.get(key)   # name bound N times would walk all N bindings each)
        if values is None:
            values = self._values[key] = [value for assignment in scope[name.value]
                                          for value in self._bindings.values.get(getattr(assignment, "node", None), ())]
        return self._first_kind(values, depth)

    def _first_kind(self, values: list[cst.BaseExpression], depth: int) -> str | None:
        for value in values:
            found = self.kind(value, depth + 1)
            if found is not None:
                return found
        return None


def _imported_module(call: cst.Call, scopes) -> str | None:
    """The module `__import__("M")` (its top package) or `importlib.import_module("M")` returns."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    arg = call.args[0].value
    if not isinstance(arg, cst.SimpleString) or arg.prefix.lower() not in ("", "u"):
        return None
    module = arg.evaluated_value
    scope = scopes.get(call.func)
    try:
        callee = {q.name for q in scope.get_qualified_names_for(call.func)} if scope is not None else set()
    except Exception:  # nodes the scope analysis has no record of
        return None
    if "builtins.__import__" in callee:
        return module.split(".", 1)[0]
    if "importlib.import_module" in callee:
        return module
    return None
