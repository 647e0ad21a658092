"""How a list written in the step functions names what a loop made (variables, layers'
weights) that a variable collection listed, in TF1's order: the loop's lists zipped, or
each by its iteration. Text only, from the typed entries (model.parts.Listed), at emit
time, once the emitter has named the loop's lists."""

from __future__ import annotations

from tf1gradfix.model.nodes import LayerLoop
from tf1gradfix.model.parts import Listed


def listed_text(node: LayerLoop, entries: list[Listed], lists: dict) -> list[str]:
    """How a list names what the loop made that a collection listed (`entries`, in TF1's order):
    where every iteration lists the same variables and weights, the loop's lists zipped
    (`*[v for made in zip(W_variables, norm_layers) for v in (made[0], made[1].beta)]`), else
    each by its iteration (`W_variables[1]`, `norm_layers[1].beta`)."""
    pattern = [(e.site, e.weight) for e in entries if e.iteration == 0]
    runs = node.runs or 0
    uniform = bool(pattern) and len(entries) == runs * len(pattern) and all(
        (e.iteration, e.site, e.weight) == (k // len(pattern), *pattern[k % len(pattern)]) for k, e in enumerate(entries))
    if not uniform:
        return [entry_text(e, lists) for e in entries]
    sites = list(dict.fromkeys(site for site, _ in pattern))
    if len(sites) == 1:   # (one list: its members, or their weights)
        if pattern == [(sites[0], None)]:
            return [f"*{lists[sites[0]]}"]
        parts = [f"made.{weight}" for _, weight in pattern]
        made = f"made.{pattern[0][1]}" if len(parts) == 1 else None
        return [f"*[{made} for made in {lists[sites[0]]}]" if made else
                f"*[v for made in {lists[sites[0]]} for v in ({', '.join(parts)})]"]
    zipped = f"zip({', '.join(lists[s] for s in sites)})"
    if [site for site, _ in pattern] == sites and all(weight is None for _, weight in pattern):
        return [f"*[v for made in {zipped} for v in made]"]
    parts = [f"made[{sites.index(site)}]" + (f".{weight}" if weight else "") for site, weight in pattern]
    return [f"*[v for made in {zipped} for v in ({', '.join(parts)})]"]


def entry_text(entry: Listed, lists: dict) -> str:
    """One variable (or layer weight) the loop made, by its iteration: `W_variables[1]`, `norm_layers[1].beta`."""
    return f"{lists[entry.site]}[{entry.iteration}]" + (f".{entry.weight}" if entry.weight else "")
