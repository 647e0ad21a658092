"""`opt = tf.train.<Name>Optimizer(...)`: an optimizer. What each becomes in TF2
is the table `rules/optimizers.toml` (emit/state.py writes it)."""

from __future__ import annotations

import fnmatch
import functools
from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args, loads, matches, schedule_table
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import (BuilderModule, LayerNode, Optimizer, OptimizerCall, Placeholder, Statement, Static, Summary,
                                    Update, Variable)
from tf1gradfix.rules.catalog import _read

# Statuses whose target takes a learning rate set before every update (a fed one).
FED_LR_STATUSES = ("exact", "within_tolerance")


@functools.lru_cache(maxsize=None)
def optimizer_table() -> dict[str, dict]:
    return {row["v1"]: row for row in _read("optimizers.toml")["optimizer"]}


def is_optimizer(q: str | None) -> bool:
    """Is `q` the name of a v1 optimizer class?"""
    return q is not None and fnmatch.fnmatchcase(q, "tensorflow.train.*Optimizer")


def slots_of_keras_weights(program, node: Optimizer) -> bool:
    """Does a kept v1 optimizer that makes slot variables (`v1_slots`) train weights of
    Keras layers? It makes a slot from a variable's `get_shape`, which a Keras 3 weight
    lacks; the `tf.Variable` under the weight (`weight.value`) has it and is the weight's
    storage, so the update is applied to that (slots named `layer/kernel/RMSProp` as in
    TF1). Builder modules of methods make plain `tf.Variable`s (constructs/layer_methods.py)."""
    if not optimizer_table().get(node.cls, {}).get("v1_slots"):
        return False
    return any(isinstance(n, LayerNode) and n.weights and not (isinstance(n, BuilderModule) and n.method_of is not None)
               for n in program.nodes)


def build(builder, s: Statement) -> bool:
    """An `Optimizer` for `opt = tf.train.AdamOptimizer(...)`; False if not one."""
    if not is_optimizer(s.q) or not s.one:
        return False
    builder.add(s.item, Optimizer, s.names, s.value, s.deps, cls=cast(str, s.q).rsplit(".", 1)[1], call=s.call)
    return True


def check(node: Optimizer, fed_lr: bool) -> None:
    """Refusal for an optimizer the table cannot write (`fed_lr`: its learning rate is fed or
    scheduled, set before every update), decided before its statement is written."""
    row = optimizer_table().get(node.cls)
    if row is None or row["status"] == "manual":
        why = row["why"] if row else "not in rules/optimizers.toml"
        raise Refusal.of(node.call, "optimizer_no_rewrite", optimizer=node.cls, detail=why)
    mapped = {row["map"][v1_name] for v1_name in bound_args(node.call, row["params"], node.call) if v1_name in row["map"]}
    if fed_lr and row["status"] not in FED_LR_STATUSES:
        raise Refusal.of(node.call, "optimizer_rate_changes", optimizer=node.cls, detail=row.get('changing_lr_why', row['why']))
    if not fed_lr and "learning_rate" not in set(row["defaults"]) | mapped:
        raise Refusal.of(node.call, "optimizer_without_rate")


def check_settings(program, node: Optimizer, schedule, lr, qualified) -> bool:
    """Refusal for settings the optimizer statement cannot take; whether its learning
    rate is fed or scheduled (set before every update). `schedule`: the node of the
    schedule its learning rate names, or None; `lr`: its learning-rate argument."""
    fed = False
    if schedule is not None:   # the Keras schedule is called on the step TF1's was computed from
        row = schedule_table()[qualified(schedule.value.func)]
        if bound_args(schedule.value, row["params"], schedule.value).get(row["step"]) is None:
            raise Refusal.of(schedule.value, "schedule_without_step")
        fed = True
    computed = {d for d in node.deps if not isinstance(program.nodes[d], (Static, Placeholder))}
    held = _rate_variable(program, node, lr)
    if held is not None:   # read at every update, as the fed rate is: TF1 read the variable there
        computed.discard(held.index)
        fed = True
    if computed - {schedule.index if schedule else None}:
        raise Refusal.of(node.value, "optimizer_setting_from_graph")
    placeholders = {n.index for n in program.nodes if isinstance(n, Placeholder)}
    if node.deps & placeholders:
        others = [a for a in node.call.args if a.value is not lr]
        if lr is None or any(set(loads(a.value)) & {program.nodes[i].names[0] for i in placeholders} for a in others):
            raise Refusal.of(node.value, "optimizer_setting_fed")
        fed = True
    check(node, fed)
    return fed


def _rate_variable(program, node: Optimizer, lr) -> Variable | None:
    """The variable a learning rate names (`lr = tf.Variable(0.1, trainable=False)`,
    assigned between epochs), when no other setting reads it; None otherwise. A trainable
    one only where nothing but optimizers, assignments and summaries read it (no loss reaches it, so
    no update trains it)."""
    held = program.node(lr.value) if isinstance(lr, cst.Name) else None
    if not isinstance(held, Variable):
        return None
    if held.trainable and any(held.index in n.deps and not isinstance(n, (Optimizer, OptimizerCall, Update, Summary)) for n in program.nodes):
        return None
    others = [a for a in node.call.args if a.value is not lr]
    return None if any(lr.value in loads(a.value) for a in others) else held


def sparse_tables(program, node, qualified, closure) -> set[int] | None:
    """The variables an update's gradients reach as slices: the tables its loss looks rows
    up in (`tf.gather(E, ids)`, graph_ops.toml `sparse_gradients`); None where a lookup's
    table is not a variable the program names (computed, or in a helper's body)."""
    tables: set[int] = set()
    for j in closure(program, [node.index]):
        member = program.nodes[j]
        wanted = [q for q in member.called() if matches(q, "sparse_gradients")]
        calls = [c for c in walk(member.stmt) if type(c) is cst.Call and matches(qualified(c.func), "sparse_gradients")] \
            if wanted and member.stmt is not None else []
        if len(calls) != len(wanted):
            return None
        for call in calls:
            params = call.args[0].value if call.args and call.args[0].keyword is None else \
                next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "params"), None)
            table = program.node(params.value) if isinstance(params, cst.Name) else None
            if not isinstance(table, Variable):
                return None
            tables.add(table.index)
    return tables
