"""Batch normalization in builder functions: which runs update the moving statistics.

TF1 adds the update of each call of `tf.layers.batch_normalization(..., training=True)`
to `UPDATE_OPS`; a train op made under `tf.control_dependencies(<UPDATE_OPS>)` runs
all the updates collected before it, any other run none. In TF2 the Keras layer
updates in each call with `training=True`, so a step function updates exactly the
calls its slice makes. The rewrite computes the same moving statistics where, for
each run: it runs such a call only as a train op under that dependency; the
collection holds no call outside the run's slice (TF1 would run its update too);
and no layer is called in training mode twice (TF1 runs those updates of one
variable in no fixed order: two sessions of one program gave a moving mean of 1.75
and of 1.25; Keras one after the other). contrib's `updates_collections=None` updates
with the output in every run, as Keras does: only the last check applies to it.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs.builder_layers import parameters
from tf1gradfix.constructs import layers as layers_module
from tf1gradfix.constructs.layers import updates_in_place
from tf1gradfix.cst.syntax import Refusal, bound_args
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import BuilderModule, Placeholder
from tf1gradfix.model.parts import BuilderLayer


def check(program, sig, site) -> None:
    """Refusal where the run's moving-statistics updates would differ from TF1's."""
    modules = {n.index: n for n in program.nodes if isinstance(n, BuilderModule) and _normalizing(n)}
    if not modules:
        return
    members = set(sig.nodes)
    train = sig.train
    collected = train is not None and train.stats
    # what `UPDATE_OPS` held for the train op: the calls made before it was read (into a name, the
    # last read before the train op; inline in `tf.control_dependencies(...)`, the train op's own place)
    cut = max((at for at in program.collected if train is not None and at <= train.index),
              default=train.index if train is not None else 0)
    seen: dict[tuple[int, str], int] = {}
    for node in program.nodes:
        reached = [modules[d] for d in sorted(node.deps) if d in modules]
        if not reached or isinstance(node, BuilderModule):
            continue
        for module in reached:
            calls = [c for c in walk(node.stmt) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name)
                     and c.func.value == module.var]
            if not calls:   # (reached other than by a call: which of its calls train is not seen here)
                raise Refusal.of(node.stmt, "builder_called_inside", function="this statement", builder=module.var)
            for call in calls:
                for layer in _training(module, call, site):
                    in_place = updates_in_place(layer.row, layer.bound)   # (updated in the run, as in Keras)
                    if node.index in members:
                        if not in_place and (not collected or node.index >= cut):
                            raise Refusal.of(site.call, "batch_norm_updates_not_run")
                        key = (module.index, layer.attribute)
                        seen[key] = seen.get(key, 0) + 1
                        if seen[key] > 1:
                            raise Refusal.of(call, "builder_batch_norm_twice_in_run", layer=f"{module.scope}/{layer.label}",
                                             function=module.var)
                    elif collected and node.index < cut and not in_place:
                        raise Refusal.of(call, "batch_norm_update_outside_step", layer=f"{module.scope}/{layer.label}",
                                         function=module.var)


def _normalizing(module: BuilderModule) -> bool:
    return any(layer.row.get("statistics") for layer in module.layers)


def _training(module: BuilderModule, call: cst.Call, site) -> list[BuilderLayer]:
    """The module's statistics layers this call of the builder runs with `training=True`
    in the run `site`: a flag passed as `True`, `False`, or a placeholder this run feeds
    one of them (`{is_training: True}`; the step function binds it to that value)."""
    given = parameters(module.builder)
    order = [p.name.value for p in module.builder.params.params]
    passed = bound_args(call, order, call)
    out = []
    for layer in module.layers:
        flag = dict(layer.call_args).get("training")
        if not layer.row.get("statistics") or flag is None:
            continue   # (no `training=`: TF1's default False, Keras's too)
        assert isinstance(flag, cst.Name)   # (True, False or a parameter: builder_layers._site)
        value: cst.BaseExpression | None = flag
        if flag.value not in ("True", "False"):
            value = passed.get(flag.value, given.get(flag.value))
        if isinstance(value, cst.Name) and site.feed is not None and value.value in site.feed:
            value = site.feed[value.value]   # (a placeholder: what this run feeds it)
        if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
            raise Refusal.of(value if value is not None else call, "builder_training_argument",
                             function=module.var, name=flag.value)
        if value.value == "True":
            out.append(layer)
    return out


def mode_flags(builder, module: BuilderModule, call: cst.Call) -> None:
    """A bool placeholder a call of the builder passes on as a batch normalization's
    `training=` is a mode flag (constructs/layers.py): each step function binds it to the
    literal its runs feed, so the Keras layer is given a Python bool."""
    order = [p.name.value for p in module.builder.params.params]
    passed = bound_args(call, order, call)
    for layer in module.layers:
        flag = dict(layer.call_args).get("training")
        value = passed.get(flag.value) if layer.row.get("statistics") and isinstance(flag, cst.Name) else None
        node = builder.program.node(value.value) if isinstance(value, cst.Name) else None
        if isinstance(node, Placeholder) and layers_module.is_bool(builder, node):
            node.mode_flag = True
