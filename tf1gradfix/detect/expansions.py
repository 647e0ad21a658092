"""TF1 functions TF2 lacks that are one expression of TF2 functions (`tf.nn.xw_plus_b(x, w,
b)`, TF1's `bias_add(matmul(x, w), b)`), written as that expression in restructured programs
(rules/expansions.toml; emit/keyword_renames.py applies the edits). The arguments keep their
text and their order, so Python evaluates them as before; only the ops' default names
differ, which a program that stays TF1 may read, so it keeps its call. Python's `ast` alone.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from tf1gradfix.detect.arguments import ArgumentHit, _span


@lru_cache(maxsize=1)
def table() -> dict[str, dict]:
    """function (without `tf.`) -> its `params` and `template`."""
    from tf1gradfix.rules.catalog import _read

    return dict(_read("expansions.toml"))


def hits(source: bytes, tree: ast.AST | None = None) -> list[ArgumentHit]:
    """Each call of such a function, with the edit that writes it as the expression (not
    editable: a call spelled without its module, given `*args` or `**kwargs`, an unknown
    keyword or not every parameter but `name`), in source order."""
    from tf1gradfix.detect.ast_names import line_starts
    from tf1gradfix.detect.keywords import names_of
    from tf1gradfix.detect.prefilter import python_tree

    functions = table()
    if b"tensorflow" not in source or not any(name.rpartition(".")[2].encode() in source for name in functions):
        return []
    tree = tree if tree is not None else python_tree(source)
    if tree is None:
        return []
    names, starts = names_of(tree, source), line_starts(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
            continue
        qualified = names.qualified(node.func) or ""
        name = qualified[len("tensorflow."):].replace("compat.v1.", "", 1)
        if qualified.startswith("tensorflow.") and name in functions:
            found.append(_hit(node, name, functions[name], source, starts))
    return sorted(found, key=lambda h: h.start)


def _hit(call: ast.Call, name: str, entry: dict, source: bytes, starts) -> ArgumentHit:
    params: list[str] = entry["params"]
    given: dict[str, ast.expr] = dict(zip(params, call.args))
    plain = not any(isinstance(a, ast.Starred) for a in call.args) and len(call.args) <= len(params) \
        and all(k.arg in params and k.arg not in given for k in call.keywords)
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    func = call.func
    editable = plain and isinstance(func, ast.Attribute) and all(p in given for p in params if p != "name")
    start, end = _span(call, starts)
    text = b""
    expression = entry["template"]
    if editable:
        assert isinstance(func, ast.Attribute)
        spelled = source[slice(*_span(func, starts))].decode("utf-8")
        module = spelled[:-len(name)].rstrip(".") if spelled.endswith(name) else spelled.split(".")[0]
        texts = {p: source[slice(*_span(v, starts))].decode("utf-8") for p, v in given.items()}
        name_text = f", name={texts['name']}" if "name" in texts else ""
        text = entry["template"].format(tf=module, name=name_text, **{p: texts[p] for p in params if p != "name"}).encode()
        expression = text.decode("utf-8")
    col = len(source[starts[call.lineno]:start].decode("utf-8", "replace")) + 1
    message = f"`tf.{name}` does not exist in TF2: a restructured program computes `{expression}`, TF1's own body"
    return ArgumentHit(call.lineno, col, start, end, text, f"tf.{name}", message, editable, True)
