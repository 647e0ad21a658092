"""Written files that would fail on a TensorFlow name or keyword: AttributeError or TypeError.

    .venv/bin/python benchmarks/written_api.py DIR [DIR ...] [--json F]

Each `.py` file under the folders goes through the rewrite as `rewrite --no-verify`
writes it (nothing is proven, nothing is touched on disk). Every written file is then
read against the installed TensorFlow's own objects: a restructured program (no
session left) against `tensorflow`, a file that stays TF1 graph code against
`tensorflow.compat.v1`, which is what it runs under (there only what its original
does not fail on already counts: `tf.contrib` is the original's). Counted per file: an attribute
chain of the `tensorflow` import that the module lacks (AttributeError when the line
runs), a call giving a keyword the function does not take, or more positional
arguments than it has (TypeError), and a `tf.nn.dropout` whose second argument says
`keep` in a restructured program (TF2 reads it as the rate: no error, another
mask). Calls are judged only where the function's signature can be read.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import sys
from pathlib import Path


def _modules():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tensorflow.compat.v1 as v1

    return tf, v1


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> `tensorflow` path of its import (`tf` -> "", `v1` -> "compat.v1")."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tensorflow" or alias.name.startswith("tensorflow."):
                    out[alias.asname or alias.name.split(".")[0]] = alias.name[len("tensorflow."):] if alias.asname else ""
    return out


def _chain(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve(root, path: list[str]):
    obj = root
    for part in path:
        if not hasattr(obj, part):
            return None, part
        obj = getattr(obj, part)
    return obj, None


def problems(source: bytes, root, restructured: bool) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ["does not parse"]
    aliases, found = _aliases(tree), []
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner.add(id(node.value))
    stored = {id(t) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
              for t in ([*n.targets] if isinstance(n, ast.Assign) else [n.target])}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner and id(node) not in stored:
            chain = _chain(node)
            if chain and chain[0] in aliases:
                prefix = [p for p in aliases[chain[0]].split(".") if p]
                _, missing = _resolve(root, prefix + chain[1:])
                if missing is not None:
                    found.append(f"{node.lineno}: AttributeError tf.{'.'.join(chain[1:])}")
        if isinstance(node, ast.Call):
            chain = _chain(node.func)
            if not chain or chain[0] not in aliases:
                continue
            prefix = [p for p in aliases[chain[0]].split(".") if p]
            function, _ = _resolve(root, prefix + chain[1:])
            name = "tf." + ".".join(chain[1:])
            if restructured and name == "tf.nn.dropout" and len(node.args) >= 2 \
                    and "keep" in ast.unparse(node.args[1]):
                found.append(f"{node.lineno}: keep_prob read as the rate by {name}")
            found += [f"{node.lineno}: TypeError {name}: {why}" for why in _call_errors(function, node)]
    return found


def _call_errors(function, call: ast.Call) -> list[str]:
    if function is None or not callable(function) or inspect.isclass(function):
        return []
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return []
    if any(p.kind == p.VAR_KEYWORD for p in params):
        keywords = set()
    else:
        names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        keywords = {k.arg for k in call.keywords if k.arg is not None and k.arg not in names}
    out = [f"no keyword `{k}`" for k in sorted(keywords)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    if not starred and not any(p.kind == p.VAR_POSITIONAL for p in params) and len(call.args) > len(positional):
        out.append(f"{len(call.args)} positional arguments, takes {len(positional)}")
    return out


def census(folders: list[Path]) -> dict:
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter

    tf, v1 = _modules()
    rows = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            data = path.read_bytes()
            try:
                result = process_source(str(path), data, CodeFilter())
            except Exception as error:   # (a crash of the tool is counted elsewhere: coverage.py)
                rows[str(path)] = {"written": False, "crash": repr(error)}
                continue
            if result.new_source is None:
                continue
            restructured = b"Session(" in data and b"Session(" not in result.new_source
            found = problems(result.new_source, tf if restructured else v1, restructured)
            if not restructured:   # (what the original fails on already is not the rewrite's)
                before = {_unlined(p) for p in problems(data, v1, False)}
                found = [p for p in found if _unlined(p) not in before]
            rows[str(path)] = {"written": True, "restructured": restructured, "problems": found}
    return rows


def _unlined(problem: str) -> str:
    return problem.split(": ", 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = census(args.folders)
    written = [r for r in rows.values() if r.get("written")]
    failing = {p: r for p, r in rows.items() if r.get("problems")}
    print(f"{len(written)} files written ({sum(r['restructured'] for r in written)} restructured); "
          f"{len(failing)} would fail on a TensorFlow name or keyword "
          f"({sum(r['restructured'] for r in failing.values())} restructured)")
    for path, row in failing.items():
        print(f"  {path} ({'TF2' if row['restructured'] else 'TF1'}): {'; '.join(row['problems'][:4])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
