"""Which `tf.*` names a program spells that TensorFlow 2 does not have.

A rewrite must never write a reference to a name TF2 lacks (it would fail
with an AttributeError the first time that line runs), and `check` reports
TF1-only names the rule tables do not know by name. The TF2 surface is data
(`rules/tf2_api.txt`, generated from the installed TensorFlow by
`scripts/gen_api_surface.py`), so this module never imports TensorFlow.

Names are read from Python's own syntax tree: a chain counts when its base
is bound, anywhere in the module, only by an import of the `tensorflow` root
or of one of its public modules (`import tensorflow as tf`, `from tensorflow
import keras`, `import tensorflow.keras.layers as L`). A base bound also by
anything else (an assignment, a `compat.v1` import, a parameter) is not
followed: which module it holds at that line is not known here. (The
prefilter's import reading is the opposite bound, every name a chain *may*
have, so it cannot serve: a finding here must be certain.)
"""

from __future__ import annotations

import ast
import functools
from tf1gradfix.records import record
from tf1gradfix.rules.catalog import _rules_text
from tf1gradfix.rules.compiled import kept

ROOT = "tensorflow"


@record(frozen=True)
class Surface:
    names: frozenset[str]      # every public name, without the `tensorflow.` root
    modules: frozenset[str]    # the names that are modules (their attributes are listed too)

    def first_missing(self, parts: list[str]) -> str | None:
        """The shortest prefix of `parts` (below the root) that TF2 lacks, or None.

        Past a name that is not a module (a class, a function) attributes are
        not listed, so the chain is not followed further.
        """
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name not in self.names:
                return name
            if name not in self.modules:
                return None
        return None


@functools.lru_cache(maxsize=1)
@kept("api_surface")
def load() -> Surface:
    text = _rules_text("tf2_api.txt")
    names = [line for line in text.splitlines() if line and not line.startswith("#")]
    modules = frozenset(n[:-1] for n in names if n.endswith("."))
    return Surface(frozenset(n.rstrip(".") for n in names), modules)


@record(frozen=True)
class Missing:
    line: int
    col: int       # 1-based
    name: str      # below the root: `global_norm`, `train.Saver`
    chain: str = ""   # the whole chain it starts (`app.flags.DEFINE_string`): what the advice is read for


def _bindings(tree: ast.Module) -> dict[str, str | None]:
    """Name -> the `tensorflow` path its imports bind it to; None where anything else binds it too."""
    bound: dict[str, str | None] = {}

    def bind(name: str, target: str | None) -> None:
        if name in bound and bound[name] != target:
            bound[name] = None
        else:
            bound.setdefault(name, target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                target = alias.name if alias.asname else top
                bind(alias.asname or top, target if target.split(".")[0] == ROOT else None)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    continue
                module = node.module or ""
                ours = node.level == 0 and module.split(".")[0] == ROOT
                bind(alias.asname or alias.name, f"{module}.{alias.name}" if ours else None)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bind(node.id, None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, None)
        elif isinstance(node, ast.arg):
            bind(node.arg, None)
    # A chain under `compat` is TF1's surface on purpose (kept by the user or the rewrite).
    return {n: t for n, t in bound.items() if t is None or not t.startswith(ROOT + ".compat")}


def missing(tree: ast.Module, surface: Surface | None = None) -> list[Missing]:
    """Every outermost `tf.a.b` chain of `tree` whose name TF2 lacks, in source order."""
    surface = surface or load()
    roots = {name: target for name, target in _bindings(tree).items() if target is not None}
    if not roots:
        return []
    found: list[Missing] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        parts, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            inner.add(id(base))
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in roots:
            continue
        below = roots[base.id].split(".")[1:] + parts[::-1]
        name = surface.first_missing(below)
        if name is not None:
            found.append(Missing(node.lineno, node.col_offset + 1, name, ".".join(below)))
    found.sort(key=lambda m: (m.line, m.col))
    return found


def missing_in_source(source: bytes | str) -> list[Missing]:
    """`missing` of a program's text; nothing for text Python cannot parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return missing(tree)


@functools.lru_cache(maxsize=1)
@kept("removed_api")
def _advice_table() -> dict[str, str]:
    from tf1gradfix.rules.catalog import _read

    return _read("removed_api.toml")["advice"]


def advised(chain: str, missing: str = "") -> tuple[str, str]:
    """(the name a finding names, what to use instead) for the chain `tf.<chain>` whose
    prefix `missing` TF2 lacks: the longest prefix of the chain with a row of
    rules/removed_api.toml (`app.flags` of `tf.app.flags.DEFINE_string`, though TF2
    lacks `tf.app` already), else `missing` and the general advice."""
    table = _advice_table()
    parts = chain.split(".")
    for depth in range(len(parts), 0, -1):
        hit = table.get(".".join(parts[:depth]))
        if hit is not None:
            return ".".join(parts[:max(depth, len(missing.split(".")) if missing else 0)]), hit
    return missing or chain, "look up its TF2 form, or keep it as `tf.compat.v1` with a note"
