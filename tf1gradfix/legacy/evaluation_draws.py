"""TFG804: a run that only evaluates something executes a random op that training draws from.

In a TF1 graph each random op keeps one stream of numbers: every run that executes it
moves the stream on, so evaluating a gradient or a metric between training steps
changes the dropout masks and samples of every later step (seeded or not, the
results differ from the same program without that evaluation). Reported where the
evaluated values depend on the draw (a sampling op, dropout not fed off) and a
training run follows; a dropout fed `keep_prob` 1.0 draws too in TF1, but its values
do not depend on it (rules/legacy.toml).
"""

from __future__ import annotations

import functools

import libcst as cst

from tf1gradfix.cst.syntax import bound_args
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Computed, Placeholder, TrainOp
from tf1gradfix.model.slicing import closure
from tf1gradfix.rules.catalog import _read


@functools.lru_cache(maxsize=1)
def table() -> dict:
    return _read("legacy.toml")


def find(program, updates, sites, qualified, span) -> list[tuple[cst.CSTNode, dict, list[int]]]:
    """`span`: a CST node -> its (first, last) line."""
    training = [s for s in sites if any(isinstance(program.nodes[program.final[f]], TrainOp) for f in s.fetches)]
    if not training:
        return []
    trained_slice = set().union(*(_slice(program, s) for s in training))
    loops: list[tuple[int, int]] | None = None   # (positions cost a printing of the module: only where needed)
    out: list[tuple[cst.CSTNode, dict, list[int]]] = []
    for site in sites:
        if site in training:
            continue
        drawn = [(i, call) for i in sorted(_slice(program, site) & trained_slice)
                 for call in _draws(program, program.nodes[i], site, qualified)]
        if not drawn:
            continue
        if loops is None:
            loops = [span(n) for n in walk(program.owner) if type(n) in (cst.For, cst.While)]
        if not any(_before(span(site.call), span(t.call), loops) for t in training):
            continue
        i, call = drawn[0]
        out.append((site.call, {"op": qualified(call.func).replace("tensorflow", "tf", 1),
                                "value": program.nodes[i].names[0], "line": span(call)[0]}, []))
    return out


def _slice(program, site) -> set[int]:
    return closure(program, [program.final[f] for f in site.fetches], frozenset(program.final[n] for n in site.fed_dtypes))


def _draws(program, node, site, qualified) -> list[cst.Call]:
    """The calls of `node`'s statement that draw numbers its value depends on in the run of `site`."""
    if not isinstance(node, Computed) or not isinstance(node.value, cst.CSTNode):
        return []   # (a variable's initializer draws once, when the variables are initialized)
    out = []
    for call in walk(node.value):
        if type(call) is not cst.Call:
            continue
        q = qualified(call.func)
        if q in table()["sampling"]:
            out.append(call)
        elif q in table()["dropout"] and not _off(program, node, call, table()["dropout"][q], site):
            out.append(call)
    return out


def _off(program, node, call, row, site) -> bool:
    """Is the dropout the identity in this run (its keep fed 1.0, its rate 0.0)? Unknown: off."""
    bound = bound_args(call, row["params"], call)
    for param, identity in row["identity"].items():
        given = bound.get(param)
        if given is None or isinstance(given, cst.Name) and given.value == "None":
            continue
        value = _value(program, node, given, site)
        return value is None or value == identity
    return True


def _value(program, node, expr, site) -> float | None:
    """The number `expr` is in the run of `site`: a literal, or a placeholder fed one (or defaulting to one)."""
    if isinstance(expr, (cst.Float, cst.Integer)):
        return float(expr.evaluated_value)
    if not isinstance(expr, cst.Name):
        return None
    placeholder = next((program.nodes[d] for d in node.deps if expr.value in program.nodes[d].names), None)
    if not isinstance(placeholder, Placeholder):
        return None
    feed = site.feed if site.feed is not None else _bound_feed(program, site.feed_name)
    given = feed.get(expr.value, placeholder.default) if feed is not None else None
    return float(given.evaluated_value) if isinstance(given, (cst.Float, cst.Integer)) else None


def _bound_feed(program, name: str | None) -> dict[str, cst.BaseExpression] | None:
    """A feed dict bound to `name` (`feeds = {x: ..., keep: 0.8}`): its values where every
    binding of the name writes the same text for a key (a key they differ on is left out)."""
    found: dict[str, set[str]] = {}
    values: dict[str, cst.BaseExpression] = {}
    for node in walk(program.owner):
        if type(node) is cst.Assign and isinstance(node.value, cst.Dict) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
            for e in node.value.elements:
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name):
                    found.setdefault(e.key.value, set()).add(cst.Module([]).code_for_node(e.value))
                    values[e.key.value] = e.value
    return {key: values[key] for key, texts in found.items() if len(texts) == 1} if found else None


def _before(evaluation: tuple[int, int], training: tuple[int, int], loops: list[tuple[int, int]]) -> bool:
    """Can a training run follow the evaluation: written after it, or in a loop holding both?"""
    return training[0] > evaluation[0] or any(a <= min(evaluation[0], training[0]) and max(evaluation[1], training[1]) <= b
                                               for a, b in loops)
