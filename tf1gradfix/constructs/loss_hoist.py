"""A loss written as an expression in the update's call, moved to a statement of its own.

`D_solver = tf.train.RMSPropOptimizer(5e-5).minimize(-D_loss, var_list=theta_D)` means:
compute `-D_loss`, then build the update of that value. The model reads the loss of an
update by name (the step function records it under the tape), so the expression is
written first on its own line under a fresh name (`neg_D_loss = -D_loss`) and the call
reads that name. Python evaluates the argument right there as well, so the graph TF1
builds is the same, on one condition: nothing the statement evaluates before the loss
may make an op (an op made earlier keeps its place in the graph, and with it its op
seed). So the receiver is a name, an attribute, or a v1 optimizer's constructor whose
arguments call nothing (a v1 optimizer makes no op until it applies), and the arguments
written before the loss call nothing either.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import fresh_name
from tf1gradfix.cst.walk import walk

_DIFFERENTIATING = frozenset({"minimize", "compute_gradients"})


def hoisted(small: cst.BaseSmallStatement, taken: set[str]) -> list[cst.BaseSmallStatement] | None:
    """`small` preceded by the assignment of the loss expression its update call reads, or
    None where there is none to move or moving it could reorder ops (the caller keeps `small`)."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        base = target.value if isinstance(target, cst.Name) else "update"
    elif isinstance(small, cst.Expr):
        base = "update"
    else:
        return None
    call = small.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _DIFFERENTIATING and _inert(call.func.value)):
        return None
    at = _loss_at(call)
    if at is None or any(_calls(arg.value) for arg in call.args[:at]):
        return None
    loss = call.args[at].value
    if isinstance(loss, cst.Name) or any(isinstance(n, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr))
                                         for n in walk(loss)):
        return None
    name = fresh_name(_named(loss, base), taken)
    args = list(call.args)
    args[at] = args[at].with_changes(value=cst.Name(name))
    lifted = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=_bare(loss))
    return [lifted, cast(cst.BaseSmallStatement, small.with_changes(value=call.with_changes(args=args)))]


def _loss_at(call: cst.Call) -> int | None:
    """The index of the loss among `call`'s arguments: the first positional one, or `loss=`."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None and i == 0 or arg.keyword is not None and arg.keyword.value == "loss":
            return i
    return None


def _inert(receiver: cst.BaseExpression) -> bool:
    """Is evaluating the optimizer `receiver` sure to make no op: a name, an attribute of
    one, or a v1 optimizer's constructor (`...AdamOptimizer(...)`) whose arguments call nothing?"""
    if isinstance(receiver, cst.Call):
        func = receiver.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return last.endswith("Optimizer") and _inert(func) and not any(_calls(arg.value) for arg in receiver.args)
    if isinstance(receiver, cst.Attribute):
        return _inert(receiver.value)
    return isinstance(receiver, cst.Name)


def _calls(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) for n in walk(node))


def _named(loss: cst.BaseExpression, base: str) -> str:
    """`neg_D_loss` for `-D_loss`, else the update's name with `_loss` (`d_step_loss`)."""
    if isinstance(loss, cst.UnaryOperation) and isinstance(loss.operator, cst.Minus) \
            and isinstance(loss.expression, cst.Name):
        return f"neg_{loss.expression.value}"
    return f"{base}_loss"


def _bare(loss: cst.BaseExpression) -> cst.BaseExpression:
    """`loss` without the parentheses that only grouped it as an argument."""
    return loss.with_changes(lpar=[], rpar=[]) if len(loss.lpar) == 1 else loss
