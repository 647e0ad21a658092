"""Detection on Python's own syntax tree: the rule engine of `detector.py` without LibCST.

`check` reads a file with this alone (LibCST costs a quarter second to
import), and `rewrite` takes its rename plans for files that need nothing
else. The name model is NameResolver's, term for term (ast_names.py).
Positions are LibCST's: 1-based columns in characters.
"""

from __future__ import annotations

import ast
import functools

from tf1gradfix.records import record
from tf1gradfix.detect.ast_names import Names, dotted
from tf1gradfix.rules.catalog import Catalog, Rule, _read, matches, normalize
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
