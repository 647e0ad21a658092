"""`tf.gradients(ys, xs, ...)` in the model and as `tape.gradient` text.

- `grad_ys=` becomes `output_gradients=`; a list of `ys` keeps its meaning
  (the tape sums the gradients of its targets, as TF1 does).
- `unconnected_gradients=` passes through (`'zero'`: zeros where the tape
  gives None).
- `stop_gradients=[t]` has no tape argument: `t = tf.stop_gradient(t)` right
  after t's statement, allowed only when every gradient of that run stops at
  t too (otherwise the others would change).
- `gate_gradients`, `aggregation_method`, `colocate_gradients_with_ops` do
  nothing in eager TF2: dropped, each with a note.
- A call nested in a larger expression (`grads, _ = tf.clip_by_global_norm(
  tf.gradients(loss, tvars), 5)`, `opt.apply_gradients(zip(tf.gradients(loss,
  params), params))`) is read as if bound to a fresh name on a line of its own
  just before its statement, which then reads that name (`lifted`): TF1 built
  it once, before what reads it, and it changes nothing else. Where it would not
  run exactly once (a lambda, a comprehension but its first iterable, a branch
  of `x if c else y`, after `and` / `or`) or its statement binds a name with
  `:=`, it is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args, literal_string, target_names
from tf1gradfix.cst.walk import children, replaced, walk
from tf1gradfix.model.nodes import GRADIENT_NODES, Gradients, Placeholder, Statement, Tensor, TrainOp, VariableGroup, VarList

PARAMS = ["ys", "xs", "grad_ys", "name", "colocate_gradients_with_ops", "gate_gradients",
          "aggregation_method", "stop_gradients", "unconnected_gradients"]
DROPPED = ("gate_gradients", "aggregation_method", "colocate_gradients_with_ops")


def model(builder, item, names, target, value, deps) -> bool:
    """Adds a `gradients` node for `target = tf.gradients(...)` (or `[0]` of it)."""
    program = builder.program
    index = None
    call = value
    if isinstance(value, cst.Subscript) and len(value.slice) == 1:
        element = value.slice[0].slice
        if isinstance(element, cst.Index) and isinstance(element.value, cst.Integer):
            index, call = int(element.value.value), value.value
    if not isinstance(call, cst.Call) or builder.qualified(call.func) != "tensorflow.gradients":
        return False
    bound = bound_args(call, PARAMS, call)
    if "xs" not in bound:
        raise Refusal.of(call, "gradients_without_xs")
    xs = bound["xs"]
    xs_names = [xs.value] if isinstance(xs, cst.Name) else target_names(xs) if isinstance(xs, (cst.List, cst.Tuple)) else None
    group = program.node(xs.value) if isinstance(xs, cst.Name) else None
    layered = False
    if isinstance(group, VarList):   # `params = [w, b]`: the gradients of its variables, a list like theirs
        # (a loop's: by their list, trainable; a layer's weight, `dense.kernel`: by the list, which names it)
        xs_names = [e.text for e in group.members if e.site is None and e.text is not None]
        layered = any(e.site is None and e.text is None for e in group.members)
    literal = isinstance(group, VariableGroup) and isinstance(group.value, (cst.List, cst.Tuple))
    if isinstance(group, VariableGroup) and not (literal and all(m.trainable for m in group.members)):
        raise Refusal.of(call, "gradients_xs_not_named")   # (a dict's: TF1 takes no dict; untrained ones: unwatched)
    looped = isinstance(group, VarList) and any(e.site is not None for e in group.members)
    if xs_names is None or not (xs_names or looped or layered) or any(program.node(n) is None for n in xs_names):
        raise Refusal.of(call, "gradients_xs_not_named")
    unpacked = not isinstance(target, cst.Name)
    if unpacked and (index is not None or not isinstance(xs, (cst.List, cst.Tuple)) or len(names) != len(xs_names)):
        raise Refusal.of(target, "gradients_unpacked_count")
    single = isinstance(xs, cst.Name) and index == 0 or unpacked
    if (isinstance(group, VarList) or literal) and index is not None:
        raise Refusal.of(value, "gradients_indexed_other")
    listed = isinstance(xs, (cst.List, cst.Tuple)) and index is not None and 0 <= index < len(xs_names)
    if index is not None and not single and not listed:
        raise Refusal.of(value, "gradients_indexed_other")
    stops = _stops(program, bound.get("stop_gradients"), xs_names, call)
    if listed:   # `tf.gradients(y, [a, b])[1]`: the gradient with respect to b alone (each is its own)
        xs_names, single = [xs_names[cast(int, index)]], True
    unconnected = _unconnected(builder, bound.get("unconnected_gradients"))
    note_dropped(builder, call, bound)
    builder.add(item, Gradients, names, value, deps, ys=bound["ys"], xs=xs_names, single=single,
                target=target, grad_ys=bound.get("grad_ys"), stops=stops, unconnected=unconnected,
                listed=cast(cst.Name, xs).value if isinstance(group, VarList) or literal else None)
    builder.own(call, but=[bound["ys"], bound.get("grad_ys")])   # (what they are taken of: checked as a tensor's)
    return True


def lifted(builder, item, small: cst.Assign, value: cst.BaseExpression, deps: set[int], tf_calls: list):
    """(statement line, statement, value, the nodes it reads, its TensorFlow calls) with each
    `tf.gradients` call nested in the value read as a `gradients` node of its own, bound to a
    fresh name just before (innermost first), and replaced by that name; as they are where it
    has none. Refusal where such a call would not run exactly once as its statement runs."""
    top = value.value if isinstance(value, cst.Subscript) else value   # (`tf.gradients(...)[0]`: model's)
    found = [(call, why) for call, why in _nested(builder, value) if call is not top]
    if not found:
        return item.stmt, small, value, deps, tf_calls
    if any(type(n) is cst.NamedExpr for n in walk(value)):
        raise Refusal.of(found[0][0], "gradients_nested_assignment_expression")
    for call, why in found:
        if why == "repeated":
            raise Refusal.of(call, "gradients_nested_repeated")
        if why == "conditional":
            raise Refusal.of(call, "gradients_nested_conditional")
    names: dict[cst.CSTNode, cst.BaseExpression] = {}
    start = len(builder.program.nodes)
    for call, _ in found:   # (an argument's first, as Python calls them)
        fresh = builder.invent("gradients")
        inner = _replaced(call, names)
        model(builder, item, (fresh,), cst.Name(fresh), inner, builder.deps_of(inner))
        names[call] = cst.Name(fresh)
    new = small.with_changes(value=_replaced(value, names))
    line = item.stmt.with_changes(body=[new])
    if getattr(builder.v, "origins", None) is None:
        builder.v.origins = {}
    builder.v.origins[id(line)] = (line, item.stmt)   # (its positions and layout: the statement's)
    builder.program.as_written[id(line)] = builder.program.as_written.get(id(item.stmt), item.stmt)
    calls = [(c, q) for c, q in builder.calls(new.value) if q is not None]
    return line, new, new.value, set(deps) | set(range(start, len(builder.program.nodes))), calls


def _nested(builder, value: cst.BaseExpression) -> list[tuple[cst.Call, str | None]]:
    """The `tf.gradients` calls of `value` in the order Python calls them, each with the
    reason it would not run exactly once as the statement runs (`_why`)."""
    found: list[tuple[cst.Call, str | None]] = []

    def visit(node: cst.CSTNode, why: str | None) -> None:
        for child in children(node):
            visit(child, _why(node, child, why))
        if type(node) is cst.Call and builder.qualified(node.func) == "tensorflow.gradients":
            found.append((node, why))

    visit(value, None)
    return found


def _why(parent: cst.CSTNode, child: cst.CSTNode, why: str | None) -> str | None:
    """Why what `child` computes would not run exactly once when `parent` does ("repeated",
    "conditional"; None: it would)."""
    if why is not None:
        return why
    if isinstance(parent, cst.Lambda) or isinstance(parent, cst.CompFor) and child is not parent.iter:
        return "repeated"
    if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)) and child is not parent.for_in:
        return "repeated"   # (of the comprehension, only its first `for`'s iterable runs once)
    if isinstance(parent, cst.IfExp) and child is not parent.test or isinstance(parent, cst.BooleanOperation) \
            and child is parent.right:
        return "conditional"
    return None


def _replaced(node, names: dict):
    """`node` with the calls of `names` replaced by their names (the rest kept as they are)."""
    if not names or not any(n in names for n in walk(node)):
        return node
    return replaced(node, names)


def note_dropped(builder, call: cst.Call, bound: dict) -> None:
    """An info note (TFG206) per argument that only tuned graph-mode gradient building."""
    what = "tf.gradients" if isinstance(call.func, cst.Name) or builder.qualified(call.func) == "tensorflow.gradients" \
        else cast(cst.Attribute, call.func).attr.value
    for name in DROPPED:
        if name in bound:
            builder.note(bound[name], "TFG206", f"`{name}=` of `{what}` does nothing in TF2 (eager gradients); dropped")


def _stops(program, given, xs_names, call) -> Sequence[str]:
    if given is None:
        return []
    names = [given.value] if isinstance(given, cst.Name) else target_names(given) if isinstance(given, (cst.List, cst.Tuple)) else None
    if not names:
        raise Refusal.of(given, "stop_gradients_form")
    for name in names:
        node = program.node(name)
        if not isinstance(node, (Tensor, Placeholder)):
            raise Refusal.of(given, "stop_gradients_not_graph_tensor", name=name)
        if name in xs_names:
            raise Refusal.of(given, "stop_gradients_also_xs", name=name)
    return names


def _unconnected(builder, given) -> str | None:
    if given is None:
        return None
    text = literal_string(given)
    if text is None:
        q = builder.qualified(given) or ""
        text = q.rsplit(".", 1)[1].lower() if q.startswith("tensorflow.UnconnectedGradients.") else None
    if text not in ("none", "zero"):
        raise Refusal.of(given, "unconnected_gradients_form")
    return None if text == "none" else text


def gradient_text(emitter, node: Gradients, tape: str | None = None, ys: str | None = None) -> str:
    """`target = tape.gradient(ys, xs[, output_gradients=..., unconnected_gradients=...])`
    (`tape`, `ys`: an inner tape's name and the name its block bound the targets to, for a
    gradient another is taken through)."""
    xs = node.xs
    args = [ys or emitter.code(node.ys), node.listed if node.listed is not None else
            xs[0] if isinstance(node.target, cst.Name) and node.single else f"[{', '.join(xs)}]"]
    if node.grad_ys is not None:
        args.append(f"output_gradients={emitter.code(node.grad_ys)}")
    if node.unconnected == "zero":
        args.append(f"unconnected_gradients={emitter.tf}.UnconnectedGradients.ZERO")
    return f"{emitter.code(node.target)} = {tape or emitter.tape}.gradient({', '.join(args)})"


def stop_lines(program, sig_nodes, closure, tf: str) -> dict[int, list[str]]:
    """{node index: lines after its statement} that stop gradients where a
    `tf.gradients(..., stop_gradients=...)` of the run asks."""
    after: dict[int, list[str]] = {}
    gradient_nodes = [program.nodes[i] for i in sig_nodes
                      if isinstance(program.nodes[i], GRADIENT_NODES)]
    for node in gradient_nodes:
        for name in _stopped(node):
            stopped = program.node(name)
            for other in gradient_nodes:
                if isinstance(other, TrainOp) and other.method == "apply_gradients":
                    continue   # applies gradients computed elsewhere in the run
                if stopped.index in closure(program, [other.index]) and name not in _stopped(other):
                    raise Refusal.of(other.value, "stop_gradients_differ_in_run", name=name)
            line = f"{name} = {tf}.stop_gradient({name})"
            # a placeholder is a constant to the tape unless watched (and it is not: see _stops)
            if isinstance(stopped, Tensor) and line not in after.get(stopped.index, []):
                after.setdefault(stopped.index, []).append(line)
    return after


def _stopped(node) -> list[str]:
    """The `stop_gradients=` of a `tf.gradients` node (an optimizer's gradients stop nowhere)."""
    return node.stops if isinstance(node, Gradients) else []


def build(builder, s: Statement) -> bool:
    """A `Gradients` node for `g = tf.gradients(ys, xs)`; False if not one."""
    return model(builder, s.item, s.names, s.small.targets[0].target, s.value, s.deps)
