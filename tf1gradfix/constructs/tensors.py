"""Any other graph statement: a tensor computed from graph values (in the step
functions), or a static value computed from constants only (kept where the graph
was built). The last construct of the registry: it takes what no other one did."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import control_flow, dropout, graph_collections, layers, losses, made_ops, summaries, variable_factories
from tf1gradfix.cst.syntax import Refusal, arg, bound_names, literal_string, loads, matches, name_nodes, schedule_table
from tf1gradfix.model.nodes import OPS, ComputeGradients, Computed, Gradients, Static, Statement, Tensor


def build(builder, s: Statement) -> bool:
    """A `Tensor` or `Static` node (always: the registry's last entry)."""
    _model(builder, s.item, s.names, s.value, s.deps, s.tf_calls)
    return True


# where an aligned random op takes its seed (random_uniform/normal/truncated_normal: the fifth)
SEED_AT = {"tensorflow.multinomial": 2, "tensorflow.random.categorical": 3}


def _seeded(call: cst.Call, q: str) -> bool:
    """An op seed (`seed=7`): a program that fixes it expects those very numbers, which TF2's
    generators do not draw (the verifier aligns the draws of both sides, so it could not show
    the difference). A multinomial given more than its logits and count positionally is
    refused too: categorical, its TF2 name, takes the dtype third."""
    seed = arg(call, SEED_AT.get(q, 4), "seed")
    if q == "tensorflow.multinomial" and sum(a.keyword is None for a in call.args) > 2:
        return True
    return seed is not None and not (isinstance(seed, cst.Name) and seed.value == "None")


def _model(builder, item, names, value, deps, tf_calls) -> None:
    collections, listed, read = graph_collections.model(builder, value, tf_calls)   # (their calls are written out)
    for call in listed:
        builder.own(call)
    deps = set(deps) | read
    unsupported = checked_calls(builder, [(call, q) for call, q in tf_calls if call not in listed])
    for name in names:
        prior = builder.program.node(name)
        # gradients edited in place (`grads, norm = tf.clip_by_global_norm(grads, 5.0)`) run in source order
        if prior is not None and not isinstance(prior, (Tensor, Static, ComputeGradients, Gradients)):
            raise Refusal.of(item.stmt, "rebinds_graph_node", name=name, kind=prior.kind)
    check_inputs(builder, item.stmt, deps)
    static = all(isinstance(builder.program.nodes[i], Static) for i in deps) and all(
        matches(q, "pure") or matches(q, "host_math") and _fetched(builder, item, value) for _, q in tf_calls)
    if static and any(n in builder.program.final for n in names):
        static = False
    node: Computed = builder.add(item, Static if static else Tensor, names, value, deps, calls=[q for _, q in tf_calls],
                                 collections=collections)
    node.op_name = made_ops.name_ops(builder, value, item.scope)
    inner, helper_unsupported = helper_calls(builder, item.stmt, value, item)
    node.calls += inner
    node.unsupported = unsupported or helper_unsupported


def _fetched(builder, item, value) -> bool:
    """Does `value` read a name that host code before it bound from a run (`pred_y =
    sess.run(pred, ...)`)? Math on it is TF1 used as NumPy: made where it is (graph_ops `host_math`)."""
    read = set(loads(value))
    for earlier in builder.program.items:
        if earlier is item:
            return False
        if earlier.node is None and read & bound_names(earlier.stmt) and builder.runs_graph(earlier.stmt):
            return True
        if type(earlier.node) is Static and read & set(earlier.node.names) \
                and _fetched(builder, earlier, earlier.node.value):   # (made from such a value: `hits`, then its mean)
            return True
    return False


def checked_calls(builder, tf_calls) -> Refusal | None:
    """Refusal for a TensorFlow call a computed statement cannot make; the refusal of a call
    refused only if some run needs it (returned); else None."""
    unsupported = hoisted = None
    builder.program.checked.update(id(call) for call, _ in tf_calls)
    for call, q in tf_calls:
        if matches(q, "queues"):
            raise queue_refusal(call, q)
        if q in ("tensorflow.placeholder", "tensorflow.placeholder_with_default", "tensorflow.Variable", "tensorflow.get_variable"):
            raise Refusal.of(call, "graph_input_in_expression", api=q)
        if matches(q, "sessions") or matches(q, "initializers") or q == "tensorflow.gradients":
            raise Refusal.of(call, "api_in_graph_code", api=q)
        dropped = control_flow.argument_refusal(call, q)
        if dropped is not None:
            raise dropped
        if q in losses.loss_table():
            losses.check(call, q, builder.module.code_for_node)
        elif q == dropout.SYMBOL:   # refused only if some run needs it
            unsupported = dropout.refusal(call, tf_calls) or unsupported
        elif matches(q, "aligned_random") and _seeded(call, q):
            unsupported = Refusal.of(call, "random_op_seed", api=q)
        elif q == "tensorflow.train.Saver":   # (its own reason: what TF2 checkpoints with)
            unsupported = Refusal.of(call, "saver")
        elif q in layers.layer_table():   # (a layer's own statement makes it: statement_forms hoists it there)
            hoisted = hoisted or Refusal.of(call, "layer_in_expression", api=q)
        elif matches(q, "refuse") and q not in schedule_table() and not matches(q, "aligned_random"):
            unsupported = Refusal.of(call, "api_unsupported", api=q)
    return hoisted or unsupported   # (hoisted first: the calls of its arguments go with it, layer_hoist)


def check_inputs(builder, stmt: cst.CSTNode, deps) -> None:
    """Refusal for a value computed from an op (a train op, an initializer, ...)."""
    for n in (builder.program.nodes[i] for i in deps):
        if isinstance(n, OPS):
            raise Refusal.of(stmt, "computed_from_op", kind=n.kind)


def helper_calls(builder, stmt: cst.CSTNode, value: cst.CSTNode, item=None) -> tuple[list[str], Refusal | None]:
    """(the TensorFlow calls of the helper functions `value` calls, the refusal of one refused
    only if some run needs it); Refusal for a helper that makes weights, or summaries other
    than those summary_helpers reads at the calls of a graph statement's `item`."""
    calls: list[str] = []
    unsupported = None
    program = builder.program
    read = [n for n in name_nodes(value) if n.value in program.helpers and id(n) not in program.checked
            and id(n) not in program.owned]
    program.checked.update(id(n) for n in read)   # (each read is checked once: constructs/nested_calls.py)
    for name in dict.fromkeys(n.value for n in read):   # a helper's calls count as this statement's
        helper = program.helpers[name]
        inner = [q for _, q in builder.calls(helper) if q]
        unsupported = unsupported or dropout.helper_refusal(name, builder.calls(helper),
                                                            helper if builder.is_builder(name) else None)
        if any(q in summaries.summary_ops() for q in inner) and \
                (item is None or not builder.summaries_at_calls(item, value, name)):
            raise Refusal.of(stmt, "function_makes_summary", name=name)
        creates = [] if builder.is_builder(name) else \
            [q for q in inner if q in layers.layer_table() or q == "tensorflow.Variable"]
        factory = variable_factories.reached(builder, helper)
        creates += [factory] if factory is not None else []
        if creates:   # called in every step, it would make new weights each time
            raise Refusal.of(stmt, "function_creates_weights", name=name, api=creates[0])
        calls += inner
    return calls, unsupported


def queue_refusal(node: cst.CSTNode, q: str) -> Refusal:
    return Refusal.of(node, "input_queue", api=q)
