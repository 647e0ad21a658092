"""Variable lists host code reads after the graph is built, written where it reads them:
`len(tf.trainable_variables())` as the list of the variables TF1 listed, `sess.run(g_vars)`
as `[v.numpy() for v in [...]]` (sites.HostScan asks; var_lists reads the lists).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builder_layers, graph_collections, var_lists
from tf1gradfix.cst.syntax import Refusal, graph_ops, matches
from tf1gradfix.model.parts import Listed


def collection_text(program, call: cst.Call, qualified, in_class: bool) -> str | None:
    """`tf.trainable_variables()` read by host code: the list it names, written out; None where
    `call` is no collection (or var_lists reads none); Refusal in a model class's host code."""
    q = qualified(call.func)
    if q not in graph_ops()["variable_collections"] and not matches(q, "collection_getters"):
        return None
    if in_class:
        raise Refusal.of(call, "collection_outside_class")
    listed = var_lists.members(program, call, len(program.nodes), qualified)
    return None if listed is None else f"[{', '.join(names(program, listed, call))}]"


def values(program, listed: list[Listed], call: cst.Call, stepped: bool):
    """`[v.numpy() for v in [...]]` of a list's variables; where it lists a layer's weights,
    written once the emitter named the layers (a function of its naming), and only after a
    step function was called (`stepped`: a Keras layer makes its weights at its first call)."""
    if not any(e.text is None and e.site is None for e in listed):
        return f"[v.numpy() for v in [{', '.join(names(program, listed, call))}]]"
    if not stepped or var_lists.loop_entries(listed):
        layer = next(program.nodes[e.node] for e in listed if e.text is None and e.site is None)
        raise Refusal.of(call, "collection_layer_not_called", layer=layer.names[0] if layer.names else "")
    return lambda naming: f"[v.numpy() for v in [{', '.join(graph_collections.list_text(program, naming, listed))}]]"


def names(program, listed: list[Listed], call: cst.Call) -> list[str]:
    """The names of a variable list the host reads; Refusal for a loop's variables (their
    lists are named when the TF2 program is written) and a layer builder's."""
    if var_lists.loop_entries(listed):
        raise Refusal.of(call, "collection_loop_read_by_host")
    builder_layers.check_host_list(program, listed, call)
    return [cast(str, e.text) for e in listed]
