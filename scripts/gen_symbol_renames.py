"""Write rules/renames.toml (symbol renames and positional reorders) from TensorFlow's own upgrade tables.

    .venv/bin/python scripts/gen_symbol_renames.py            # rewrite the table
    .venv/bin/python scripts/gen_symbol_renames.py --check    # exit 1 if the shipped table differs

TensorFlow's tf_upgrade_v2 (tensorflow/tools/compatibility, shipped in the wheel) keeps
`symbol_renames` (TF1 name -> TF2 name, or -> `tf.compat.v1.NAME` where TF2 has no
plain name) and `function_reorders` (functions whose positional order TF2 changed).
Each entry is kept only when checking the installed TensorFlow shows it is right:

- a rename is kept when TF2 lacks the TF1 name and the TF2 name *behaves the same*:
  it is the very same Python object as TF1's, or a TF2 function with the same
  parameters whose body is a call of TF1's (`tf.random.set_seed` calls
  `set_random_seed`), or TF1's body is a call of it passing each parameter on
  under the name the keyword table renames it to (`tf.gfile.Exists(filename)`
  returns `tf.io.gfile.exists(path=filename)`). Where the upgrade table only knows `tf.compat.v1.NAME`, the
  TF2 name is searched among the functions of TF1's module by that same test.
- its reach: `safe` when `tf.compat.v1` has the TF2 name too, as the same function
  (a file that stays TF1 graph code keeps running); otherwise it is listed in
  `restructured_only`: written into restructured programs, and spelled
  `tf.compat.v1.NAME` (TF1's own function, which both TensorFlows have) in files
  that stay TF1.
- a reorder is kept when the `tf.compat.v1` function's parameters are the table's
  names in that order; the table records the TF1 names, the first position TF2
  no longer takes positionally the same, and TF2's parameter names, so a call's
  positional arguments from there on are written as keywords (TF1's own names:
  right under both, once the keyword renames give TF2's) and a keyword TF2's
  function does not take is known before anything is written.
- a cast (`function_transformers` entries of its cast transformer: `tf.to_float(x)`
  is `tf.cast(x, dtype=tf.float32)`) is kept when TF1's function takes `(x, name)`;
  its dtype is the one a call returns here. TF2 lacks these functions and
  `tf.cast` names its op otherwise, so only restructured programs get them.

Entries whose TF2 name does not exist or behaves otherwise (another function under
the new name: dropout, losses, ...) are left out and counted on stderr: the
constructs that translate them own their tables.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import os
import sys
import types
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "rules" / "renames.toml"
HEADER = """\
# Symbol renames (TF1 name -> TF2 name, both under the `tensorflow` root) and positional
# reorders, from TensorFlow {version}'s tf_upgrade_v2 (symbol_renames, function_reorders),
# each checked against the installed TensorFlow by scripts/gen_symbol_renames.py (do not
# edit by hand; run it again for another TensorFlow version):
#   [renames]           the TF2 name is TF1's object, or a TF2 function with TF1's
#                       parameters that calls TF1's: same arguments, same numbers
#   restructured_only   renames whose TF2 name tf.compat.v1 lacks (or names another
#                       function): written into restructured programs only; a file that
#                       stays TF1 gets TF1's own `tf.compat.v1.NAME` instead
#   [reorders]          TF1 parameter names of functions whose positional order TF2
#                       changed, `from`: the first position to write as a keyword, and
#                       `tf2`: TF2's parameter names (empty: TF2 has no such function)
#   [casts]             functions TF2 lacks that the upgrade table writes as
#                       `tf.cast(x, dtype=...)`, with that dtype: restructured programs only
"""


def _resolve(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _parameters(function) -> list[tuple[str, object]] | None:
    try:
        return [(p.name, p.default) for p in inspect.signature(inspect.unwrap(function)).parameters.values()]
    except (TypeError, ValueError):
        return None


def _behaves_as(new, old, renamed: dict[str, str] | None = None) -> bool:
    """`new` is `old`, or a function of `old`'s module whose whole body is a call of `old`
    passing each of its own parameters through under the same name, with `old`'s parameters
    (less the deprecated keywords the upgrade table renames) and defaults (or `old`'s None)."""
    if new is None or old is None:
        return False
    new, old = inspect.unwrap(new), old
    if new is old or new is inspect.unwrap(old):
        return True
    if not isinstance(new, types.FunctionType) or not callable(old):
        return False
    if _calls_through(inspect.unwrap(old), new, renamed or {}):
        return True
    name = next((k for k, v in new.__globals__.items() if v is old and not k.startswith("_")), None)
    new_params, old_params = _parameters(new), _parameters(old)
    if name is None or new_params is None or old_params is None:
        return False
    old_params = [(p, d) for p, d in old_params if p not in (renamed or {})]
    if [p for p, _ in new_params] != [p for p, _ in old_params]:
        return False
    if any(d != od and od is not None for (_, d), (_, od) in zip(new_params, old_params)):
        return False
    return _only_passes_through(new, name, [p for p, _ in new_params])


def _calls_through(old, new, renamed: dict[str, str]) -> bool:
    """`old` (TF1's) is a function whose whole body is a call of `new` (TF2's, by a name of
    `old`'s module) passing each of its parameters through, in order, to `new`'s parameter
    of the name the upgrade table renames it to (`gfile.Exists(filename)` returns
    `file_exists_v2(filename)`, whose parameter is `path`), with the same defaults."""
    if not isinstance(old, types.FunctionType):
        return False
    name = next((k for k, v in old.__globals__.items() if v is new and not k.startswith("_")), None)
    new_params, old_params = _parameters(new), _parameters(old)
    if name is None or new_params is None or old_params is None:
        return False
    if [p for p, _ in new_params] != [renamed.get(p, p) for p, _ in old_params]:
        return False
    if any(d != od for (_, d), (_, od) in zip(new_params, old_params)):
        return False
    return _only_passes_through(old, name, [p for p, _ in old_params])


def _only_passes_through(function, callee: str, params: list[str]) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]   # (the docstring)
    if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)):
        return False
    call = body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == callee):
        return False
    passed = [a.id for a in call.args if isinstance(a, ast.Name)]
    passed += [k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == k.arg]
    positional_ok = all(isinstance(a, ast.Name) and a.id == p for a, p in zip(call.args, params))
    return positional_ok and sorted(passed) == sorted(params) and len(call.args) + len(call.keywords) == len(params)


def _delegate(old_object, module_names: dict[str, object], renamed: dict[str, str]) -> str | None:
    """The TF2 name of a public function that behaves as `old_object`, if one does."""
    found = [name for name, value in module_names.items()
             if value.__module__ == getattr(old_object, "__module__", None) and value is not old_object
             and _behaves_as(value, old_object, renamed)]
    return min(found, key=lambda n: (n.count("."), len(n), n)) if found else None


def _tf2_functions(tf) -> dict[str, object]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_api_surface import walk

    objects: dict[str, object] = {}
    walk(tf, objects)
    return {name: value for name, value in objects.items() if isinstance(value, types.FunctionType)
            and not name.startswith(("raw_ops.", "keras."))}


def renames(tf, v1, symbol_renames: dict[str, str], keyword_renames: dict) -> tuple[dict[str, str], list[str], int]:
    tf2 = _tf2_functions(tf)
    kept, only, dropped = {}, [], 0
    for full_old, full_new in sorted(symbol_renames.items()):
        old = full_old[len("tf."):]
        old_object = _resolve(v1, old)
        if old_object is None or _resolve(tf, old) is not None:
            continue          # (gone from this TensorFlow, or TF2 still has the name)
        new = full_new[len("tf."):]
        renamed = keyword_renames.get(full_old, {})
        if new.startswith("compat.v1.") and old.startswith(KEPT_UNDER_V1):
            pass              # (no TF2 name, and no graph: the upgrade table's own spelling)
        elif new.startswith("compat.v1."):
            new = _delegate(old_object, tf2, renamed)
            if new is None:
                continue      # (no TF2 name: the restructure owns it, or it is TF1-only)
        if not _behaves_as(_resolve(tf, new), old_object, renamed):
            dropped += 1
            continue
        kept[old] = new
        if not _behaves_as(_resolve(v1, new), old_object):
            only.append(old)
    return kept, only, dropped


def reorders(tf, v1, function_reorders: dict[str, list]) -> tuple[dict[str, tuple[list[str], int, list[str]]], int]:
    """function -> (TF1 parameter names, the first position whose TF2 parameter differs,
    TF2's parameter names)."""
    kept, dropped = {}, 0
    for full, names in sorted(function_reorders.items()):
        if not full.startswith("tf."):
            continue
        name = full[len("tf."):]
        old = _resolve(v1, name)
        params = _parameters(old) if old is not None else None
        if params is None:
            continue
        tf1 = [p for p, _ in params]
        if [n for n in names if n is not None] and tf1[:len(names)] != [n if n is not None else tf1[i]
                                                                       for i, n in enumerate(names)]:
            dropped += 1
            continue
        tf1 = tf1[:len(names)]
        tf2_function = _resolve(tf, name) or _resolve(tf, _compat_free(name))
        tf2 = [p for p, _ in (_parameters(tf2_function) or [])] if tf2_function is not None else []
        start = next((i for i, p in enumerate(tf1) if i >= len(tf2) or tf2[i] != p), None)
        if start is not None:
            kept[name] = (tf1, start, tf2)
    return kept, dropped


def casts(tf, v1, function_transformers: dict) -> dict[str, str]:
    """function -> the dtype its call returns, for the functions the upgrade table turns
    into `tf.cast(x, dtype=...)` (its cast transformer): kept when TF1's function takes
    `(x, name)` and returns that dtype, as running it here shows."""
    from tensorflow.tools.compatibility import tf_upgrade_v2

    kept = {}
    for full, transformer in sorted(function_transformers.items()):
        if transformer is not tf_upgrade_v2._cast_transformer or not full.startswith("tf."):
            continue
        old = _resolve(v1, full[len("tf."):])
        params = _parameters(old) if old is not None else None
        if params is None or [p for p, _ in params] != ["x", "name"]:
            continue
        kept[full[len("tf."):]] = old(tf.constant([1])).dtype.name
    return kept


def _compat_free(name: str) -> str:
    from tensorflow.tools.compatibility import all_renames_v2

    return all_renames_v2.symbol_renames.get(f"tf.{name}", f"tf.{name}")[len("tf."):]


# Functions (and constants) TF2 has only under tf.compat.v1 that build no graph and run
# the same eagerly: their upgrade-table spelling, `tf.compat.v1.NAME`, is kept in every
# file (TF1's own objects under both TensorFlows). Python 2 division (`div`: floor for
# integers, true division otherwise) has no TF2 name; TF1's logging is Python logging.
KEPT_UNDER_V1 = ("div", "logging.")


# Renames TensorFlow's table leaves to tf.compat.v1 but the restructure writes itself
# (restructured programs only): tf.multinomial's draw is aligned with
# tf.random.categorical's by the verifier, and a seeded or longer call is refused there.
RESTRUCTURE_OWNED = {"multinomial": "random.categorical"}


def build() -> tuple[str, str]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.pop("TF_USE_LEGACY_KERAS", None)
    import tensorflow as tf
    import tensorflow.compat.v1 as v1
    from tensorflow.tools.compatibility import all_renames_v2, tf_upgrade_v2

    spec = tf_upgrade_v2.TFAPIChangeSpec()
    kept, only, dropped = renames(tf, v1, all_renames_v2.symbol_renames, spec.function_keyword_renames)
    orders, unordered = reorders(tf, v1, spec.function_reorders)
    cast = casts(tf, v1, spec.function_transformers)
    kept.update(RESTRUCTURE_OWNED)
    only = sorted(set(only) | set(RESTRUCTURE_OWNED))
    lines = [HEADER.format(version=tf.__version__), "\nrestructured_only = [\n"]
    lines += [f'    "{name}",\n' for name in only]
    lines.append("]\n\n[renames]\n")
    lines += [f'"{old}" = "{new}"\n' for old, new in kept.items()]
    lines.append("\n[reorders]\n")
    lines += [f'"{name}" = {{ names = {_strings(names)}, from = {start}, tf2 = {_strings(tf2)} }}\n'
              for name, (names, start, tf2) in orders.items()]
    lines.append("\n[casts]\n")
    lines += [f'"{name}" = "{dtype}"\n' for name, dtype in cast.items()]
    note = (f"{len(kept)} renames ({len(only)} restructured only), {len(orders)} reorders, {len(cast)} casts; left out: "
            f"{dropped} renames whose TF2 name behaves otherwise, {unordered} reorders tf.compat.v1 disagrees with")
    return "".join(lines), note


def _strings(names: list[str]) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


def main(argv: list[str] | None = None) -> int:
    from table_cli import main as table_main   # (scripts/: on sys.path when run as a script)

    def tables():
        text, note = build()
        return {TABLE: text}, note
    return table_main(__doc__.splitlines()[0], tables, argv)


if __name__ == "__main__":
    sys.exit(main())
