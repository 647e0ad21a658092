"""Batch normalization made in graph code and in loops: which runs update the moving statistics.

TF1 adds the update of each `tf.layers.batch_normalization` and contrib `batch_norm` call
to `UPDATE_OPS` (conditional on its training mode); a train op made under
`tf.control_dependencies(<UPDATE_OPS>)` runs every update collected before the collection
was read, any other run none. The Keras layer updates in each call with `training=True`,
so a step function updates exactly the calls its slice makes. The moving statistics are
TF1's where, for each run: a call in training mode is made only by a train op under that
dependency, and every call the collection holds whose mode may be True in that run is
computed by the train step (TF1 would run its update too). A loop's layers are all called
where the loop is (constructs/loop_layers.py), once per run. contrib's
`updates_collections=None` updates with the output in every run, as Keras does. Builder
functions' calls: builder_statistics.py.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from tf1gradfix.constructs import builder_statistics
from tf1gradfix.constructs.layers import symbol_of, updates_in_place
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.model.nodes import Layer, LayerCall, LayerLoop, LayerLoopCall, Node, Placeholder


def check(program, sig, site) -> None:
    """Refusal where the run's (`sig`, first made by `site`) moving-statistics updates would
    differ from TF1's."""
    members = set(sig.nodes)
    train = sig.train
    collected = train is not None and train.stats
    cut = max((at for at in program.collected if train is not None and at <= train.index),
              default=train.index if train is not None else 0)   # (what UPDATE_OPS held for the train op)
    for node in program.nodes:
        for label, mode in _statistics(program, node):
            value = _value(program, sig, site, mode)
            if node.index in members and value == "True" and not collected:
                raise Refusal.of(site.call, "batch_norm_updates_not_run")
            if node.index not in members and collected and node.index < cut and value != "False":
                raise Refusal.of(node.stmt, "batch_norm_update_not_computed", layer=label)
    builder_statistics.check(program, sig, site)


def _statistics(program, node: Node) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """(the layer's name, its mode) of each call of a statistics layer the statement makes that
    updates through UPDATE_OPS (its mode: the call's `training`, None for Keras's default False)."""
    if isinstance(node, LayerCall):
        layer = program.nodes[node.layer]
        if isinstance(layer, Layer) and layer.row.get("statistics") and not updates_in_place(layer.row, layer.bound):
            yield layer.full_name, dict(node.call_args).get("training")
    elif isinstance(node, LayerLoopCall):
        loop = program.nodes[node.layer_loop]
        assert isinstance(loop, LayerLoop)
        for site in loop.sites:
            if site.row.get("statistics") and not updates_in_place(site.row, site.bound):
                label = site.tf1_names[0] if site.tf1_names else f"{symbol_of(site.row)} in the loop"
                yield label, dict(site.call_args).get("training")


def _value(program, sig, site, mode: cst.BaseExpression | None) -> str | None:
    """"True" or "False": the training mode of a call in this run (a literal, the literal of a
    mode flag in the run's function, else what the run feeds the flag or its default); None
    where the run does not fix it."""
    if mode is None:
        return "False"
    if not isinstance(mode, cst.Name):
        return None
    if mode.value in ("True", "False"):
        return mode.value
    if mode.value in sig.flags:
        return sig.flags[mode.value]
    flag = program.node(mode.value)
    fed = (site.feed or {}).get(mode.value)
    value = fed if fed is not None or not isinstance(flag, Placeholder) else flag.default
    return value.value if isinstance(value, cst.Name) and value.value in ("True", "False") else None
