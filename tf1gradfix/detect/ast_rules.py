"""Detection on Python's own syntax tree: the rule engine of `detector.py` without LibCST.

`check` reads a file with this alone (LibCST costs a quarter second to
import), and `rewrite` takes its rename plans for files that need nothing
else. The name model is NameResolver's, term for term, on `scopes.ScopeMap`:
imports and aliases, `compat.v1`, names bound by assignment to a TensorFlow
module, star imports, shadowing, and names bound to something else too
(`ambiguous`: no rename). Positions are LibCST's: 1-based columns in
characters.
"""

from __future__ import annotations

import ast
import functools

from tf1gradfix.records import record
from tf1gradfix.detect.chains import chain_base, referents_shape
from tf1gradfix.detect.scopes import ScopeMap, full_name
from tf1gradfix.rules.catalog import ASSIGNABLE_MODULES, Catalog, Rule, _read, matches, normalize
from tf1gradfix.rules.compiled import kept


@record
class Hit:
    """A rule hit: detector.Detection with the `ast` node it fired on."""

    rule: Rule
    node: ast.AST
    line: int
    col: int
    message: str
    replacement: tuple[int, list[str]] | None = None
    ambiguous: bool = False


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
        self._by_name: dict[tuple, tuple[str | None, bool]] = {}   # (as NameResolver's)

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
        rest = full[len(base.id):]
        found, foreign = set(), False
        referents = [r for access in accesses for r in access.referents]
        for referent in referents:
            if referent.kind == "import":
                for name, _source in referent.qualified_names(full):
                    if normalize(name) is not None:
                        found.add(name)
                    else:
                        foreign = True
                continue
            values = self.bindings.values.get(id(referent.node), ()) if referent.node is not None else ()
            modules = [self._module_of(value) for value in values]
            found.update(module + rest for module in modules if module is not None)
            foreign = foreign or not modules or None in modules
        if not referents and self.bindings.star_modules:
            found.update(f"{module}{'.' if full else ''}{full}" for module in self.bindings.star_modules
                         if normalize(module) is not None)
        if not found:
            return None
        names = sorted(found, key=lambda raw: (not raw.startswith("tensorflow.compat."), raw))
        if foreign or len(names) > 1:
            self._ambiguous.add(id(node))
        return names[0]

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
            values = [v for a in scope.resolve(expr.id, scope) if a.node is not None
                      for v in self.bindings.values.get(id(a.node), ())]
            return self._first_kind(values, depth)
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


class _Source:
    """Byte lines of the text `ast` read, to turn its UTF-8 offsets into character columns."""

    def __init__(self, data: bytes):
        self.lines = data.splitlines(keepends=True) if not data.isascii() else None
        self._data = data

    def col(self, line: int, offset: int) -> int:
        if self.lines is None or line > len(self.lines):
            return offset + 1
        return len(self.lines[line - 1][:offset].decode("utf-8", "replace")) + 1


def detect(tree: ast.Module, data: bytes, catalog: Catalog) -> list[Hit]:
    """Rule hits of the module `tree` parsed from `data`, in LibCST's visiting order."""
    return analyze(tree, data, catalog)[0]


def analyze(tree: ast.Module, data: bytes, catalog: Catalog) -> tuple[list[Hit], bool]:
    """(rule hits, whether the module opens a session the restructuring would take up).

    The restructuring does nothing to a module that calls no session
    (owners.GraphCallScan, `sessions` of graph_ops.toml): such a module needs
    only the hits' renames, and says why it is not restructured (run/sessionless.py).
    """
    return _analyzed(tree, data, catalog)[:2]


def analyze_sessions(tree: ast.Module, data: bytes, catalog: Catalog) -> tuple[list[Hit], bool, list[tuple[ast.Call, str]]]:
    """`analyze`, and the calls making a session of another kind (`other_sessions` of
    graph_ops.toml: `tf.train.Supervisor`...) with their qualified names, for a module
    that opens no session."""
    return _analyzed(tree, data, catalog, others=True)


# Calls that make variables: a module whose functions make them builds part of a model,
# though TF2 has `tf.Variable` too (run/project.py reads it with the script importing it).
_VARIABLE_MAKERS = ("tensorflow.Variable", "tensorflow.get_variable")
_LAYER_MODULES = ("tensorflow.layers.", "tensorflow.contrib.layers.")


def analyze_variables(tree: ast.Module, data: bytes, catalog: Catalog) -> tuple[list[Hit], bool, list[int]]:
    """`analyze`, and the lines of the module's calls that make variables (`tf.Variable`,
    `tf.get_variable`, a `tf.layers` or `tf.contrib.layers` function), from the same pass."""
    hits, session, _, calls = _analyzed(tree, data, catalog, calls=True)
    return hits, session, [call.lineno for call, q in calls
                           if q is not None and (q in _VARIABLE_MAKERS or q.startswith(_LAYER_MODULES))]


def _analyzed(tree: ast.Module, data: bytes, catalog: Catalog, others: bool = False, calls: bool = False):
    names = Names(tree, catalog, data)
    detector = _Detector(names, catalog, data)
    hits = detector.run(tree)
    patterns, other = _sessions()
    session = any(_matches(names.qualified(call.func), patterns) for call in detector.calls)
    made = [] if session or not others else \
        [(call, q) for call in detector.calls if _matches(q := names.qualified(call.func), other)]
    if calls:   # (every call with its qualified name)
        return hits, session, made, [(call, names.qualified(call.func)) for call in detector.calls]
    return hits, session, made


@functools.lru_cache(maxsize=1)
@kept("sessions")
def _sessions() -> tuple[tuple[str, ...], tuple[str, ...]]:
    table = _read("graph_ops.toml")
    return tuple(table["sessions"]), tuple(table["other_sessions"])


def _matches(qualified: str | None, patterns) -> bool:
    return qualified is not None and any(matches(qualified, p) for p in patterns)


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


class _Detector:
    def __init__(self, names: Names, catalog: Catalog, data: bytes):
        self.names, self.catalog, self.source = names, catalog, _Source(data)
        self.data = data
        self.found: list[Hit] = []
        self.calls: list[ast.Call] = []   # (every call: a session call hands the module to the restructuring)
        self.inner: set[int] = set()
        self.stores: set[int] = set()
        self.method_rules: dict[str, list[Rule]] = {}
        for rule in catalog.rules:
            for method in rule.methods:
                self.method_rules.setdefault(method, []).append(rule)

    def run(self, tree) -> list[Hit]:
        stack = list(reversed(tree.body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            self._enter(node)
            stack.extend(reversed(_children(node)))
        return self.found

    def _store(self, target) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._store(element)
        elif isinstance(target, ast.Starred):
            self._store(target.value)
        else:
            self.stores.add(id(target))

    def _enter(self, node) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._store(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            self._store(node.target)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._store(target)
        elif isinstance(node, ast.Name):
            if id(node) not in self.inner:
                self._symbol(node)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, (ast.Name, ast.Attribute)):
                self.inner.add(id(node.value))
            if id(node) not in self.inner:
                self._symbol(node)
        elif isinstance(node, ast.Call):
            self._call(node)

    def _symbol(self, node) -> None:
        raw = self.names.import_name(node)
        if raw is None:
            return
        qualified = normalize(raw)
        if qualified is None:
            return
        hit = self.catalog.symbol_rule(qualified)
        if hit is None:
            return
        rule, _pattern = hit
        if rule.renames and self.catalog.tf1_spelling(qualified, dotted(node)):
            return
        replacement, ambiguous = None, self.names.ambiguous(node)
        args = {"symbol": "tf" + qualified[len("tensorflow"):] if qualified.startswith("tensorflow") else qualified}
        if "{advice}" in rule.message:   # (TFG901: the contrib table's TF2 form for the name)
            from tf1gradfix.rules import contrib

            args["advice"] = contrib.advice(qualified)
        if rule.renames:
            target = self.catalog.renames[qualified]
            args["replacement"] = "tf" + target[len("tensorflow"):]
            if id(node) not in self.stores and not ambiguous:
                replacement = self._rename_plan(node, raw, target)
        self._add(rule, node, replacement, args)
        self.found[-1].ambiguous = ambiguous

    def _call(self, node: ast.Call) -> None:
        self.calls.append(node)
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        rules = self.method_rules.get(func.attr)
        if not rules:
            return
        kind = self.names.kind(func.value)
        if kind is None:
            return
        for rule in rules:
            if rule.receiver == kind:
                self._add(rule, func, None, {"receiver": dotted(func.value) or "...", "method": func.attr})
                return

    def _add(self, rule, node, replacement, args) -> None:
        try:
            message = rule.message.format(**args)
        except (KeyError, IndexError):
            message = rule.message
        line, col = _start(node)
        self.found.append(Hit(rule, node, line, self.source.col(line, col), message, replacement))

    def _rename_plan(self, node, raw: str, target: str):
        if not isinstance(node, ast.Attribute) or not raw.startswith("tensorflow.") or raw.startswith("tensorflow.compat."):
            return None
        text = dotted(node)
        remainder = raw[len("tensorflow."):]
        if text is None or not text.endswith("." + remainder):
            return None
        old_parts = remainder.count(".") + 1
        inner = node.value
        for _ in range(old_parts - 1):
            inner = inner.value
        if b"#" in segment(self.data, inner, node.value):
            return None
        return old_parts, target[len("tensorflow."):].split(".")


def segment(data: bytes, after, upto) -> bytes:
    """The bytes from the end of node `after` to the end of node `upto`."""
    lines = data.splitlines(keepends=True)
    a_line, a_col, b_line, b_col = after.end_lineno, after.end_col_offset, upto.end_lineno, upto.end_col_offset
    if a_line == b_line:
        return lines[a_line - 1][a_col:b_col]
    return lines[a_line - 1][a_col:] + b"".join(lines[a_line:b_line - 1]) + lines[b_line - 1][:b_col]


def _start(node) -> tuple[int, int]:
    """Where LibCST's range of `node` starts: a chain starts at its base (ast: the same)."""
    return node.lineno, node.col_offset


def _children(node) -> list:
    """Children in LibCST's field order where it differs from `ast`'s (none that matters for hits)."""
    return list(ast.iter_child_nodes(node))
