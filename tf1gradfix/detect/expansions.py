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
from tf1gradfix.detect.casts import tf_calls


@lru_cache(maxsize=1)
def table() -> dict[str, dict]:
    """function (without `tf.`) -> its `params` and `template`."""
    from tf1gradfix.rules.catalog import _read

    return dict(_read("expansions.toml"))


def hits(source: bytes, tree: ast.AST | None = None) -> list[ArgumentHit]:
    """Each call of such a function, with the edit that writes it as the expression (not
    editable: a call spelled without its module, given `*args` or `**kwargs`, an unknown
    keyword or not every parameter but `name`), in source order."""
    functions = table()
    found = [_hit(node, name, functions[name], source, starts) for node, name, starts in tf_calls(source, tree, functions)]
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
