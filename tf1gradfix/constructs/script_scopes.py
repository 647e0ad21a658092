"""A script's variable scope opened around the calls of one model function, read as the
function opening it.

    with tf.variable_scope("critic") as scope:
        real_score = critic(images)
        scope.reuse_variables()
        fake_score = critic(made)

TF1 made the variables of the function's first call under `critic/` and gave them back at
the call after `reuse_variables()` (or in a second block opened with `reuse=True`). The
function opening that scope itself with `reuse=tf.AUTO_REUSE` around its body means the
same: its first call makes them, every later call gets them back, and each call opens a
name scope of its own (`critic/`, `critic_1/`) as each block did. The rewrite reads the
module so (outer_scopes.py and builders.py read a function opening its scope) where:

* every call of the function stands directly in such a block, as a statement of its own
  (`name = f(...)` or `f(...)`), whose arguments call nothing (a call there would make
  its ops, or variables, under the scope too), and the function is named nowhere else
  (passed on, it could be called outside the scope);
* every block opens the same literal scope, with `reuse=` at most, and holds only such
  calls and `scope.reuse_variables()` of its own `as` name (read nowhere else);
* the function opens no variable scope of its own and is not nested or decorated.

A program whose original would fail (a reuse before the variables exist) fails in its
proof. `folded` gives the module read so with the map of its lines back to the user's, or
None; the rewrite keeps the module as written where that reading is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, cast

import libcst as cst

from tf1gradfix.constructs import scope_reuse
from tf1gradfix.cst import line_maps
from tf1gradfix.cst.syntax import is_docstring, literal_string, tensorflow_aliases
from tf1gradfix.cst.walk import replaced, walk


@dataclass(frozen=True)
class Folding:
    module: cst.Module
    origin: Callable[[int], int]


def folded(module: cst.Module) -> Folding | None:
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef) and not s.decorators}
    tf = tensorflow_aliases(module)
    blocks = [b for b in walk(module) if isinstance(b, cst.With) and _scope_call(b, tf) is not None]
    chosen: dict[str, tuple[cst.With, ...]] = {}
    for block in blocks:
        name = _called(block, functions)
        if name is not None:
            chosen[name] = (*chosen.get(name, ()), block)
    for name, found in chosen.items():
        labels = {literal_string(cast(cst.Call, _scope_call(b, tf)).args[0].value) for b in found}
        uses = [n for n in walk(module) if type(n) is cst.Name and n.value == name and n is not functions[name].name]
        inside = {id(cast(cst.Call, cast(cst.Expr, s.body[0]).value).func) for b in found for s in _statements(b)}
        if len(labels) == 1 and None not in labels and all(id(n) in inside for n in uses) \
                and not any(isinstance(n, cst.With) and _scope_call(n, tf) is not None for n in walk(functions[name])):
            return _apply(module, functions[name], found, tf)
    return None


def _scope_call(block: cst.With, tf: set[str]) -> cst.Call | None:
    """`tf.variable_scope("NAME"[, reuse=...])` of a one-item `with`, `tf` one of the module's
    names for TensorFlow (`tf`, `tensorflow.compat.v1 as tf`), else None."""
    item = block.items[0].item if len(block.items) == 1 else None
    ok = isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute) and item.func.attr.value == "variable_scope" \
        and isinstance(item.func.value, cst.Name) and item.func.value.value in tf \
        and bool(item.args) and item.args[0].keyword is None \
        and all(a.keyword is not None and a.keyword.value == "reuse" for a in item.args[1:])
    return cast(cst.Call, item) if ok else None


def _statements(block: cst.With) -> list[cst.SimpleStatementLine]:
    """The block's call statements (its reuse statements left out)."""
    body = cast(cst.IndentedBlock, block.body).body
    return [cast(cst.SimpleStatementLine, s) for s in body if not _reuse(block, s)]


def _reuse(block: cst.With, stmt: cst.BaseStatement) -> bool:
    asname = block.items[0].asname
    return asname is not None and isinstance(asname.name, cst.Name) and scope_reuse.reuses(stmt, asname.name.value)


def _called(block: cst.With, functions: dict) -> str | None:
    """The one module function every statement of the block calls, as a statement of its own
    with arguments that call nothing; None where the block holds anything else."""
    asname = block.items[0].asname
    alias = asname.name.value if asname is not None and isinstance(asname.name, cst.Name) else None
    if asname is not None and alias is None:
        return None
    names = set()
    for stmt in cast(cst.IndentedBlock, block.body).body:
        if _reuse(block, stmt):
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not (isinstance(small, cst.Expr) or isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)):
            return None
        call = small.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in functions) \
                or any(isinstance(n, (cst.Call, cst.Lambda)) for a in call.args for n in walk(a.value)) \
                or alias is not None and any(type(n) is cst.Name and n.value == alias for n in walk(stmt)):
            return None
        names.add(call.func.value)
    return names.pop() if len(names) == 1 else None


def _apply(module: cst.Module, function: cst.FunctionDef, blocks: tuple[cst.With, ...], tf: set[str]) -> Folding:
    opened = cast(cst.Call, _scope_call(blocks[0], tf))
    func = cast(cst.Attribute, opened.func)
    reuse = cst.Arg(keyword=cst.Name("reuse"), value=cst.Attribute(func.value, cst.Name("AUTO_REUSE")),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    scope = cst.Call(func=func, args=[opened.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT), reuse])
    body = list(cast(cst.IndentedBlock, function.body).body)
    lead = body[:1] if body and is_docstring(body[0]) else []
    wrapped = cst.With(items=[cst.WithItem(scope)], body=cst.IndentedBlock(body=body[len(lead):]))
    new_function = function.with_changes(body=function.body.with_changes(body=[*lead, wrapped]))
    swaps: dict[cst.CSTNode, object] = {function: new_function}
    source: dict[int, int] = {}
    for block in blocks:
        kept = _statements(block)
        first = kept[0].with_changes(leading_lines=(*block.leading_lines, *kept[0].leading_lines))
        source[id(first)] = id(kept[0])   # (the blank lines and comments above the block stay above)
        swaps[block] = cst.FlattenSentinel([first, *kept[1:]])
    made = cast(cst.Module, replaced(module, swaps))
    return Folding(cst.parse_module(made.code), line_maps.origin(module, made, source))

