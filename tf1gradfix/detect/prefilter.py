"""Which rules could fire on a source, read without LibCST.

Detection resolves a name through the imports, so every part of a qualified
name it matches (`tensorflow.train.AdamOptimizer`) is written somewhere in
the file as an identifier: in the import or in the attribute chain. A rule
whose symbol has a part the file never spells cannot fire, nor can a method
rule whose method is never spelled or whose receiver kind cannot be made.
This is a necessary condition, checked first on tokens of the raw bytes
(a tenth of a millisecond), then, where those leave a rule possible, on the
names the imports make (Python's own parser, about two milliseconds). When
it says nothing can fire, LibCST need not parse the text at all.
"""

from __future__ import annotations

import ast
import functools
import re

from tf1gradfix.records import record
from tf1gradfix.rules import catalog as catalog_module
from tf1gradfix.rules.catalog import ASSIGNABLE_MODULES, Catalog, normalize
from tf1gradfix.rules.compiled import kept

# Runs of ASCII identifier characters. TensorFlow's names are ASCII, so an
# identifier equal to, starting with or ending with one of them yields a run
# that does too; extra runs (from strings, comments, non-ASCII names) only
# make more rules possible, never fewer.
# The dropout whose second argument TF1 reads as kept and TF2 as dropped, and the word
# TF1 programs name that argument with (detect/arguments reads both from here).
DROPOUT = "nn.dropout"
KEEP = "keep"

_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_WILDCARDS = "*?["


@record(frozen=True)
class Spelling:
    """What a name pattern needs written in the file: whole parts, starts and ends of parts."""

    parts: frozenset[str]
    starts: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()

    @classmethod
    def of(cls, pattern: str) -> Spelling:
        """An fnmatch pattern over dotted names (`*` may span dots): a part between dots
        with no wildcard is a whole part of every match; one with a wildcard still
        fixes how the first matched part starts and the last one ends."""
        parts, starts, ends = set(), [], []
        for part in pattern.split("."):
            cut = min((part.index(c) for c in _WILDCARDS if c in part), default=None)
            if cut is None:
                parts.add(part)
                continue
            if cut:
                starts.append(part[:cut])
            if "?" not in part and "[" not in part and not part.endswith("*"):
                ends.append(part[part.rindex("*") + 1:])
        return cls(frozenset(parts), tuple(starts), tuple(ends))

    def written_in(self, tokens: frozenset[str]) -> bool:
        return (self.parts <= tokens
                and all(any(t.startswith(s) for t in tokens) for s in self.starts)
                and all(any(t.endswith(e) for t in tokens) for e in self.ends))


@record(frozen=True)
class Possible:
    codes: frozenset[str]  # rules that could fire
    kinds: frozenset[str]  # kinds of value a call could make (kinds.toml)

    @property
    def anything(self) -> bool:
        """Whether the rewrite could find anything: a rule, or a session to restructure."""
        return bool(self.codes) or "session" in self.kinds


class Prefilter:
    def __init__(self, catalog: Catalog):
        self._symbols = [(rule.code, Spelling.of(p)) for rule in catalog.rules
                         for p in rule.symbols + (tuple(catalog.renames) if rule.renames else ())]
        self._calls = _call_tables()
        self._call_spellings = [(name, Spelling.of(name)) for name in self._calls]
        self._methods = [(rule.code, method, rule.receiver) for rule in catalog.rules for method in rule.methods]
        self._kinds = [(kind, Spelling.of(p)) for kind, patterns in catalog.kinds.items() for p in patterns]
        self._method_results = dict(catalog.method_results)
        self._receivers = {rule.receiver for rule in catalog.rules if rule.methods}
        self._catalog = catalog

    def __getstate__(self) -> dict:
        """Kept without its catalog (compiled.py): that one is kept on its own, and read anyway."""
        return {name: value for name, value in vars(self).items() if name != "_catalog"}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state, _catalog=catalog_module.load())

    def worth_parsing(self, data: bytes) -> bool:
        """Whether LibCST must read `data`: a rule could fire on it or a session be made.

        The imports are read only when the identifiers leave that open without
        spelling a session: a TF1 program makes one, and reading its imports
        (about 1.8 ms) would not spare it the parse.
        """
        found = self.possible(data)
        if not found.anything or "session" in found.kinds:
            return found.anything
        return self.possible(data, resolve=True).anything

    def possible(self, data: bytes, resolve: bool = False) -> Possible:
        """`resolve`: when the identifiers leave a rule possible, ask Python's parser
        which names the imports actually make (`imported_names`), and match those."""
        tokens = frozenset(t.decode("ascii") for t in _TOKEN.findall(data))
        kinds = {kind for kind, spelling in self._kinds if spelling.written_in(tokens)}
        codes = {code for code, spelling in self._symbols if spelling.written_in(tokens)}
        codes |= {self._calls[name][0] for name, spelling in self._call_spellings
                  if _said(self._calls[name][1], tokens) and spelling.written_in(tokens)}
        methods = tokens
        if resolve and (codes or kinds & self._receivers):
            found = imported_names(data)
            if found is not None:
                names, methods = found
                qualified = [q for q in map(normalize, names) if q is not None]
                kinds = {kind for kind in map(self._catalog.kind_of_call, qualified) if kind is not None}
                codes = {hit[0].code for hit in map(self._catalog.symbol_rule, qualified) if hit is not None}
                codes |= {self._calls[q][0] for q in qualified if q in self._calls and _said(self._calls[q][1], tokens)}
        if "optimizer" in kinds:  # `opt.minimize(...)` makes what method_results says
            kinds |= {kind for method, kind in self._method_results.items() if method in methods}
        codes |= {code for code, method, receiver in self._methods if method in methods and receiver in kinds}
        return Possible(frozenset(codes), frozenset(kinds))


def _call_tables() -> dict[str, tuple[str, frozenset[str]]]:
    """Functions whose calls the keyword and argument tables judge -> (code, words one of
    which the file must spell): TFG403 (detect/keywords) needs one of the function's old
    keywords; TFG404 (detect/arguments) a `keep` word for dropout, whose positional
    argument TF1 code names so (other calls are judged only in files with other TF1
    findings, which their own rules make possible)."""
    from tf1gradfix.rules.catalog import _read

    calls = {f"tensorflow.{name}": ("TFG403", frozenset(olds)) for name, olds in _read("keyword_renames.toml").items()}
    calls[f"tensorflow.{DROPOUT}"] = ("TFG404", frozenset({KEEP}))
    return calls


def _said(words: frozenset[str], tokens: frozenset[str]) -> bool:
    """A word of `words` is a token of the file (the dropout's `keep`: part of one)."""
    return any(KEEP in t for t in tokens) if KEEP in words else not words.isdisjoint(tokens)


def imported_names(data: bytes) -> tuple[set[str], set[str]] | None:
    """Every qualified name LibCST's scope analysis could give a name or attribute
    chain of `data` through an import, and the names of the methods `data`
    calls (None when Python cannot parse it).

    As in LibCST, a chain's name reads through calls and subscripts
    (`tf.Session().run` is `tf.Session.run`) and its first part is replaced by
    what an import binds it to. Scopes are ignored: a chain counts if any
    import anywhere binds its first part, which only adds names.
    """
    tree = python_tree(data)
    if tree is None:
        return None
    bound: dict[str, set[str]] = {}
    chains: set[str] = set()
    methods: set[str] = set()
    assigned: list[tuple[str, ast.expr]] = []
    stars: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.setdefault(alias.asname, set()).add(alias.name)
                else:
                    root = alias.name.split(".", 1)[0]
                    bound.setdefault(root, set()).add(root)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                for alias in node.names:
                    if alias.name == "*":
                        stars.add(node.module)
                    bound.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
        elif isinstance(node, (ast.Name, ast.Attribute)):
            chain = _chain(node)
            if chain is not None:
                chains.add(chain)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            methods.add(node.func.attr)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned.extend((t.id, node.value) for t in targets if isinstance(t, ast.Name))
    _bind_assigned(bound, assigned)
    names = {path for paths in bound.values() for path in paths}
    for chain in chains:
        root, dot, rest = chain.partition(".")
        names.update(path + dot + rest for path in bound.get(root, ()))
        names.update(f"{module}.{chain}" for module in stars)  # a bare name a star import may bind
    return names, methods


def _bind_assigned(bound: dict[str, set[str]], assigned: list[tuple[str, ast.expr]]) -> None:
    """`tf = tf.compat.v1`, `tf = __import__("tensorflow")`: the target may name the module
    the value's chain names, when NameResolver follows it (ASSIGNABLE_MODULES; also what
    keeps `tf = tf.compat.v1` from growing without end). A worklist: when what a name
    may be grows, the assignments reading it are done again."""
    readers: dict[str, list[tuple[str, str, str]]] = {}
    work: list[str] = []
    for target, value in assigned:
        chain = _chain(value, calls=False)
        if chain is None:
            continue
        root, dot, rest = chain.partition(".")
        readers.setdefault(root, []).append((target, dot, rest))
        module = _imported(value)
        if module is not None:
            paths = {module + dot + rest for module in (module, module.split(".")[0])} & ASSIGNABLE_MODULES
            if not paths <= bound.setdefault(target, set()):
                bound[target] |= paths
                work.append(target)
    work.extend(root for root in readers if root in bound)
    while work:
        root = work.pop()
        for target, dot, rest in readers.get(root, ()):
            paths = {path + dot + rest for path in bound[root]} & ASSIGNABLE_MODULES
            if not paths <= bound.setdefault(target, set()):
                bound[target] |= paths
                work.append(target)


def _imported(value: ast.expr) -> str | None:
    """"M" of `__import__("M").a.b` or `importlib.import_module("M").a`, whatever the callee is named."""
    while isinstance(value, ast.Attribute):
        value = value.value
    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Constant) \
            and isinstance(value.args[0].value, str):
        return value.args[0].value
    return None


@functools.lru_cache(maxsize=2)
def python_tree(data: bytes) -> ast.Module | None:
    """Python's own syntax tree of `data` (None when Python cannot parse it).

    Kept for the last texts read: the engine compiles the rewritten text it
    has just read the imports of (rewrite_check._unparsable).
    """
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the user's own warnings are not ours to print
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _chain(node, calls: bool = True) -> str | None:
    """`a.b.c` of a chain; `calls`: read through calls and subscripts (`tf.Session().run`);
    otherwise a call at the root reads as the empty name (`__import__("M").b` is `.b`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _chain(node.value, calls)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Call):
        return _chain(node.func) if calls else ""
    if isinstance(node, ast.Subscript) and calls:
        return _chain(node.value)
    return None


@functools.lru_cache(maxsize=None)
@kept("prefilter")
def load() -> Prefilter:
    """The prefilter of the shipped rule tables."""
    return Prefilter(catalog_module.load())
