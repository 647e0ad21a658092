"""The names TF1 gives optimizers' own variables, for filters over `tf.global_variables()`.

Once a train op of a v1 optimizer with slots exists, TF1's global collection lists its
slots (`disc/dense/kernel/Adam:0`, `.../Adam_1:0`) and accumulators (`beta1_power:0`);
TF2 keeps them inside the optimizer. A comprehension that filters the collection by
name (`[v for v in tf.global_variables() if "moving_mean" in v.name]`) selects the same
variables in both where its filter is false on every such name: it is evaluated on
them here (graph_ops `optimizer_slots`), for every trainable variable made before
(a superset of the ones each optimizer trains: a filter that might keep one is refused).
"""

from __future__ import annotations

from tf1gradfix.cst.syntax import graph_ops, literal_string
from tf1gradfix.model.nodes import OptimizerCall, Optimizer


def names(program, before: int, trainable: list[str]) -> list[str] | None:
    """TF1's names of the optimizers' variables made before node `before` (`trainable`: TF1's
    names of the trainable variables, `w:0`); None where one is not known (an optimizer of no
    row, a `name=` that is not a string)."""
    table = graph_ops()["optimizer_slots"]
    slotless = graph_ops()["slotless_optimizers"]
    out: list[str] = []
    counts: dict[str, int] = {}
    seen: set[int] = set()
    for node in program.nodes[:before]:
        if not isinstance(node, OptimizerCall) or node.optimizer in seen:
            continue
        seen.add(node.optimizer)
        opt = program.nodes[node.optimizer]
        if not isinstance(opt, Optimizer) or opt.cls in slotless:
            continue
        row = table.get(opt.cls)
        given = next((a.value for a in opt.call.args if a.keyword is not None and a.keyword.value == "name"), None)
        label = literal_string(given) if given is not None else None
        positional = sum(1 for a in opt.call.args if a.keyword is None)
        if row is None or given is not None and label is None or positional > 4:   # (a `name` given by position)
            return None
        base = row["slots"][0]
        slots = [label + s[len(base):] if label is not None else s for s in row["slots"]]
        out += [f"{v[:-2]}/{s}:0" for v in trainable for s in slots]
        for extra in row["extra"]:
            k = counts.get(extra, 0)
            counts[extra] = k + 1
            out.append(f"{extra}:0" if k == 0 else f"{extra}_{k}:0")
    return out
