"""Benchmark corpora, generated on the fly from the bundled fixtures.

* ``tf1_variants``: varied copies of ``fixtures/rewrite/*/input.py`` and
  ``fixtures/verify/*/original.py``.  Each copy renames the file's own
  identifiers consistently (never imported names, builtins, attributes,
  keyword arguments or names used inside f-strings), sometimes swaps adjacent
  top-level ``def``/``class`` blocks and sometimes adds a comment header.
  Every copy is checked to compile.
* ``plain_module``: an ordinary Python module that never imports TensorFlow
  (classes, dataclasses, loops, comprehensions, try/except, f-strings,
  decorators), using syntax that Python 3.7 already had.
* ``large_tf1_file``: one file with many small TF1 models, one function each.
* ``MODERN_SYNTAX``: small TF1 files using newer syntax, to probe parsers.

Everything is deterministic for a given seed.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import random
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def tf1_sources() -> list[tuple[str, str]]:
    """(name, text) of every TF1 fixture program, sorted by name."""
    found = []
    for path in sorted((FIXTURES / "rewrite").glob("*/input.py")):
        found.append((f"rewrite_{path.parent.name}", path.read_text(encoding="utf-8")))
    for path in sorted((FIXTURES / "verify").glob("*/original.py")):
        found.append((f"verify_{path.parent.name}", path.read_text(encoding="utf-8")))
    return found


# --------------------------------------------------------------------------- renaming

def _bound_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names the file binds itself, names that must never be renamed)."""
    bound: set[str] = set()
    frozen: set[str] = set(dir(builtins)) | set(keyword.kwlist) | {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                frozen.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.keyword) and node.arg:
            frozen.add(node.arg)  # `f(steps=3)` must keep matching `def f(steps)`
        elif isinstance(node, ast.Attribute):
            frozen.add(node.attr)
        elif isinstance(node, ast.JoinedStr):  # f-strings are one token before 3.12
            frozen.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            frozen.update(node.names)
    return {n for n in bound if not (n.startswith("__") and n.endswith("__"))} - frozen, frozen


_STYLES = (
    lambda name, k: f"{name}_{k}",
    lambda name, k: f"v{k}_{name}",
    lambda name, k: f"{name}{k}x",
    lambda name, k: f"my_{name}_{k}",
    lambda name, k: f"{name}_r{k}",
)


def rename_identifiers(text: str, variant: int) -> str:
    """Rename the file's own identifiers on token boundaries, consistently."""
    tree = ast.parse(text)
    bound, _ = _bound_names(tree)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    every_name = {t.string for t in tokens if t.type == tokenize.NAME}
    style = _STYLES[variant % len(_STYLES)]
    mapping = {}
    for name in sorted(bound):
        new = style(name, variant)
        if name.startswith("_") and not new.startswith("_"):
            new = "_" + new  # keep the "unused" convention: `loss, _ = ...` stays discarded
        while new in every_name or new in mapping.values():
            new += "_"
        mapping[name] = new
    edits = []  # (row, col, old, new)
    previous = None
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string in mapping and not (previous and previous.string == "."):
            edits.append((tok.start[0], tok.start[1], tok.string, mapping[tok.string]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
    lines = text.splitlines(keepends=True)
    for row, col, old, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        assert line[col:col + len(old)] == old
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def swap_adjacent_defs(text: str, rng: random.Random) -> str:
    """Swap one pair of adjacent top-level def/class blocks (independent at import time)."""
    tree = ast.parse(text)
    body = tree.body
    pairs = [i for i in range(len(body) - 1)
             if isinstance(body[i], (ast.FunctionDef, ast.ClassDef))
             and isinstance(body[i + 1], (ast.FunctionDef, ast.ClassDef))
             and not body[i].decorator_list and not body[i + 1].decorator_list
             and body[i].name != body[i + 1].name]
    if not pairs:
        return text
    i = rng.choice(pairs)
    lines = text.splitlines(keepends=True)
    first_start, first_end = body[i].lineno - 1, body[i].end_lineno
    second_start, second_end = body[i + 1].lineno - 1, body[i + 1].end_lineno
    first, gap, second = lines[first_start:first_end], lines[first_end:second_start], lines[second_start:second_end]
    if not first[-1].endswith("\n") or not second[-1].endswith("\n"):
        return text
    return "".join(lines[:first_start] + second + gap + first + lines[second_end:])


def tf1_variants(copies: int, seed: int = 0) -> list[tuple[str, str]]:
    """`copies` varied versions of every TF1 fixture: [(file name, text)]."""
    rng = random.Random(seed)
    out = []
    for name, text in tf1_sources():
        for k in range(copies):
            new = rename_identifiers(text, k + 1) if k else text
            if k % 2 == 1:
                new = swap_adjacent_defs(new, rng)
            if k % 3 == 2:
                new = f"# copy {k} of {name}\n# generated for a benchmark\n" + new
            try:
                compile(new, name, "exec", dont_inherit=True)
            except SyntaxError:  # never ship a broken copy: fall back to the plain one
                new = text
            out.append((f"{name}_{k:02d}.py", new))
    return out


# --------------------------------------------------------------------------- plain modules

_WORDS = ("alpha", "beta", "gamma", "delta", "order", "record", "item", "value", "batch", "user",
          "event", "price", "count", "label", "entry", "node", "path", "token", "score", "group")


def plain_module(index: int, rng: random.Random) -> str:
    """An ordinary module, 60-110 lines, that never mentions TensorFlow."""
    w = lambda: rng.choice(_WORDS)  # noqa: E731
    cls = f"{w().title()}{w().title()}{index}"
    parts = [
        f'"""Module {index}: helpers for {w()} and {w()} handling."""',
        "from __future__ import annotations",
        "",
        "import collections",
        "import functools",
        "import itertools",
        "import json",
        "import math",
        "import os",
        "import re",
        "from dataclasses import dataclass, field",
        "from typing import Dict, Iterable, List, Optional",
        "",
        f"LIMIT_{index} = {rng.randint(3, 99)}",
        f"PATTERN = re.compile(r\"^{w()}_(\\d+)$\")",
        "",
        "",
        "@dataclass",
        f"class {cls}Record:",
        f"    name: str",
        f"    {w()}_count: int = 0",
        f"    tags: List[str] = field(default_factory=list)",
        "",
        "    def describe(self) -> str:",
        "        return f\"{self.name} ({len(self.tags)} tags)\"",
        "",
        "",
        f"class {cls}:",
        f'    """Keeps {w()} records and answers questions about them."""',
        "",
        "    def __init__(self, items: Optional[Iterable[str]] = None) -> None:",
        "        self._items: Dict[str, int] = {}",
        "        for position, item in enumerate(items or ()):",
        "            self._items[item] = position",
        "",
        "    @property",
        "    def size(self) -> int:",
        "        return len(self._items)",
        "",
        "    @staticmethod",
        "    def normalise(text: str) -> str:",
        "        return \" \".join(part for part in text.strip().split() if part).lower()",
        "",
        "    def add(self, *names: str, **weights: int) -> None:",
        "        for name in names:",
        "            key = self.normalise(name)",
        "            self._items[key] = self._items.get(key, 0) + weights.get(key, 1)",
        "",
        "    def __iter__(self):",
        "        yield from sorted(self._items)",
    ]
    for f in range(rng.randint(1, 5)):
        a, b = w(), w()
        kind = rng.randrange(5)
        parts += ["", ""]
        if kind == 0:
            parts += [
                f"def {a}_{b}_{f}(values: List[int], scale: float = 1.0) -> List[float]:",
                f"    result = []",
                f"    for i, value in enumerate(values):",
                f"        if value % {rng.randint(2, 5)} == 0:",
                f"            result.append(value * scale)",
                f"        elif i > LIMIT_{index}:",
                f"            break",
                f"        else:",
                f"            result.append(math.sqrt(abs(value)) + i)",
                f"    return result",
            ]
        elif kind == 1:
            parts += [
                f"def load_{a}_{f}(path: str) -> Dict[str, object]:",
                f"    try:",
                f"        with open(path, encoding=\"utf-8\") as handle:",
                f"            data = json.load(handle)",
                f"    except (OSError, ValueError) as exc:",
                f"        print(f\"cannot read {{path}}: {{exc}}\")",
                f"        return {{}}",
                f"    finally:",
                f"        pass",
                f"    return {{key: value for key, value in data.items() if not key.startswith(\"_\")}}",
            ]
        elif kind == 2:
            parts += [
                f"@functools.lru_cache(maxsize=None)",
                f"def {a}_{f}(n: int) -> int:",
                f"    if n < 2:",
                f"        return n",
                f"    return {a}_{f}(n - 1) + {a}_{f}(n - 2)",
                "",
                "",
                f"def pairs_{b}_{f}(items):",
                f"    counts = collections.Counter(items)",
                f"    seen = {{x for x in items if counts[x] > 1}}",
                f"    return [(x, y) for x, y in itertools.combinations(sorted(seen), 2) if x != y]",
            ]
        elif kind == 3:
            parts += [
                f"class {a.title()}{b.title()}Error(Exception):",
                f"    pass",
                "",
                "",
                f"def walk_{a}_{f}(root: str):",
                f"    total = 0",
                f"    for folder, _dirs, files in os.walk(root):",
                f"        for name in files:",
                f"            match = PATTERN.match(name)",
                f"            if match is None:",
                f"                continue",
                f"            total += int(match.group(1))",
                f"    if total < 0:",
                f"        raise {a.title()}{b.title()}Error(root)",
                f"    return total",
            ]
        else:
            parts += [
                f"def summarise_{a}_{f}(records, key=lambda r: r.name):",
                f"    groups = collections.defaultdict(list)",
                f"    for record in records:",
                f"        groups[key(record)].append(record)",
                f"    lines = []",
                f"    while groups:",
                f"        name, members = groups.popitem()",
                f"        lines.append(\"%s: %d\" % (name, len(members)))",
                f"    return \"\\n\".join(sorted(lines))",
            ]
    parts += ["", "", "if __name__ == \"__main__\":", f"    print({cls}([\"a\", \"b\"]).size)", ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------- large file

def large_tf1_file(models: int) -> str:
    """One file with `models` small TF1 models, each built and trained in its own function."""
    parts = ['"""Many small TF1 models, one per function."""', "import numpy as np", "import tensorflow as tf", ""]
    for i in range(models):
        opt = ("tf.train.GradientDescentOptimizer(0.1)", "tf.train.AdamOptimizer(0.01)",
               "tf.train.MomentumOptimizer(0.05, 0.9)")[i % 3]
        parts.append(f'''
def model_{i}(steps=3):
    data_{i} = np.ones((4, 3), dtype=np.float32) * {i % 7 + 1}
    x_{i} = tf.placeholder(tf.float32, [None, 3])
    w_{i} = tf.Variable(tf.zeros([3, 1]), name="w_{i}")
    b_{i} = tf.Variable(0.0, name="b_{i}")
    out_{i} = tf.matmul(x_{i}, w_{i}) + b_{i}
    loss_{i} = tf.reduce_mean(tf.square(out_{i} - 1.0))
    train_{i} = {opt}.minimize(loss_{i})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            value, _ = sess.run([loss_{i}, train_{i}], feed_dict={{x_{i}: data_{i}}})
    return value''')
    parts.append("\n\nif __name__ == \"__main__\":")
    parts += [f"    print(model_{i}())" for i in range(models)]
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- parser probes

_TF1_HEAD = "import tensorflow as tf\n\nx = tf.placeholder(tf.float32, [None, 2])\n"

MODERN_SYNTAX = {
    "walrus (3.8)": _TF1_HEAD + "items = [1, 2, 3]\nif (n := len(items)) > 2:\n    print(n)\n",
    "match (3.10)": _TF1_HEAD + "command = 'go'\nmatch command:\n    case 'go':\n        print(1)\n    case _:\n        print(2)\n",
    "positional-only params (3.8)": _TF1_HEAD + "def f(a, /, b):\n    return a + b\n\nprint(f(1, 2))\n",
    "f-string = (3.8)": _TF1_HEAD + "value = 3\nprint(f'{value=}')\n",
    "except* (3.11)": _TF1_HEAD + "try:\n    pass\nexcept* ValueError:\n    pass\n",
    "parenthesized with (3.10)": _TF1_HEAD + "with (open(__file__) as a,\n      open(__file__) as b):\n    pass\n",
}
