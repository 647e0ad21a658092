"""`opt.minimize(loss)`, `opt.compute_gradients(loss)`, `opt.apply_gradients(pairs)`
(on a named optimizer or one created in place): a train op or the gradient pairs.
In TF2 they become `tf.GradientTape` gradients and `apply_gradients` in the step
functions (emit/tape.py)."""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import global_step, grad_pairs, gradient_calls, optimizers
from tf1gradfix.cst.syntax import Refusal, bound_args, matches
from tf1gradfix.model.nodes import ComputeGradients, Optimizer, Statement, TrainGroup, TrainOp, Variable

METHODS = ("minimize", "compute_gradients", "apply_gradients")


def build(builder, s: Statement) -> bool:
    """A `TrainOp` or `ComputeGradients` node; False if the value calls no optimizer method."""
    return _alias(builder, s) or _group(builder, s) or _model(builder, s.item, s.names, s.value, s.deps)


def _group(builder, s: Statement) -> bool:
    """`train = tf.group(opt.apply_gradients(a), opt.minimize(loss), named_train_op)`: each
    optimizer call a train op of its own (named as the program does not), the group a
    `TrainGroup` whose run runs them together, as a run fetching them all would. Its
    `name=` names the graph op only, which TF2 has none of (a fetch by that name is
    refused where runs are read)."""
    value = s.value
    if not (isinstance(value, cst.Call) and s.one is not None and builder.qualified(value.func) == "tensorflow.group"
            and any(a.keyword is None for a in value.args)
            and all(not a.star and (a.keyword is None or a.keyword.value == "name") for a in value.args)):
        return False
    args = [a.value for a in value.args if a.keyword is None]
    named = [builder.program.node(e.value) if isinstance(e, cst.Name) else None for e in args]
    if not all(isinstance(n, TrainOp) or isinstance(e, cst.Call) and _optimizer_call(builder, e)
               and cast(cst.Attribute, e.func).attr.value != "compute_gradients" for e, n in zip(args, named)):
        return False
    members = []
    for e, node in zip(args, named):
        if not isinstance(node, TrainOp):
            fresh = builder.invent("train_op")
            _model(builder, s.item, (fresh,), e, builder.deps_of(e))
            node = builder.program.node(fresh)
        members.append(cast(TrainOp, node).index)
    builder.add(s.item, TrainGroup, s.names, value, set(s.deps) | set(members), members=tuple(members))
    builder.program.checked.add(id(value))   # (tf.group of them: written as the run of them)
    return True


def _alias(builder, s: Statement) -> bool:
    """`x = train_op`: another name of the same train op, not a value computed from it
    (a model class's `self.train_op = self.train()`, whose method ends `return train_op`).
    The statement goes: a run of `x` runs that op."""
    node = builder.program.node(s.value.value) if isinstance(s.value, cst.Name) and s.one is not None else None
    if not isinstance(node, TrainOp):
        return False
    builder.program.final[cast(str, s.one)] = node.index
    s.item.drop = True
    return True


def _model(builder, item, names, value, deps) -> bool:
    """`opt.minimize/compute_gradients/apply_gradients(...)` as the value, or
    `compute_gradients` inside a larger expression (`zip(*opt.compute_gradients(loss))`)."""
    call = value if isinstance(value, cst.Call) else None
    nested = call is None or not isinstance(call.func, cst.Attribute) or \
        call.func.attr.value not in ("minimize", "compute_gradients", "apply_gradients")
    if nested:
        found = [c for c, _ in builder.calls(value) if c is not value and _optimizer_call(builder, c)]
        if not found:
            return False
        call = found[0]
        if len(found) > 1 or cast(cst.Attribute, call.func).attr.value != "compute_gradients":
            raise Refusal.of(call, "method_in_expression", method=cast(cst.Attribute, call.func).attr.value)
    call = cast(cst.Call, call)   # (`_optimizer_call`: a call of an optimizer's method)
    func = cast(cst.Attribute, call.func)
    if not nested and len(names) != 1 and func.attr.value != "compute_gradients":
        return False
    method = func.attr.value
    receiver = func.value
    opt = None
    if isinstance(receiver, cst.Name):
        opt = builder.program.node(receiver.value)
        if not isinstance(opt, Optimizer):
            return False
    elif isinstance(receiver, cst.Call) and optimizers.is_optimizer(builder.qualified(receiver.func)):
        opt = Optimizer(index=-1, names=(), stmt=item.stmt, value=receiver, deps=frozenset(builder.deps_of(receiver)),
                        cls=builder.qualified(receiver.func).rsplit(".", 1)[1], call=receiver, inline=True)
    else:
        return False
    params = {"minimize": ["loss", "global_step", "var_list"],
              "compute_gradients": ["loss", "var_list"],
              "apply_gradients": ["grads_and_vars", "global_step", "name"]}[method]
    bound = bound_args(call, params, call)
    extra = set(bound) - set(params) - set(gradient_calls.DROPPED)
    gradient_calls.note_dropped(builder, call, bound)
    if extra or "grad_loss" in bound:
        raise Refusal.of(call, "method_arguments", method=method, args=', '.join(sorted(extra)))
    if method == "apply_gradients" and "grads_and_vars" in bound:
        grad_pairs.check(builder, bound["grads_and_vars"])
    step = bound.get("global_step")
    step_name = None
    if step is not None:
        node = builder.program.node(step.value) if isinstance(step, cst.Name) else None
        if isinstance(step, cst.Call) and not step.args and matches(builder.qualified(step.func), "global_step_getters"):
            node = global_step.find(builder.program)   # `global_step=tf.train.get_global_step()`
        if not isinstance(node, Variable) or node.trainable:
            raise Refusal.of(step, "global_step_form")
        step_name = step.value if isinstance(step, cst.Name) else node.names[0]
    if opt.index == -1:
        builder.append(opt)
    deps = set(deps) | {opt.index}
    cls = ComputeGradients if method == "compute_gradients" else TrainOp
    builder.add(item, cls, names, value, deps, method=method, optimizer=opt.index, bound=bound, call=call,
             step=step_name, stats=item.stats)
    builder.own(call, but=[bound.get("grads_and_vars")])   # (the pairs applied: checked as a tensor's)
    return True

def _optimizer_call(builder, call: cst.Call) -> bool:
    """A method call on an optimizer (named, or created in place)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("minimize", "compute_gradients", "apply_gradients"):
        return False
    if isinstance(func.value, cst.Name):
        node = builder.program.node(func.value.value)
        return isinstance(node, Optimizer)
    return isinstance(func.value, cst.Call) and optimizers.is_optimizer(builder.qualified(func.value.func))
