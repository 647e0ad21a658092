"""When a v1 learning-rate schedule can be handed to the Keras optimizer itself.

TF1: `lr = tf.train.exponential_decay(..., global_step, ...)` is computed from the
global step in the same run as the update, before `minimize(global_step=...)`
adds one to it (the increment waits for the update, which reads `lr`). Keras: an
optimizer built with `learning_rate=<schedule>` computes `schedule(iterations)`
at every `apply_gradients`, and adds one to `iterations` after the update. So at
every update the two rates are the same function of the same count when:

- the optimizer is a Keras one (a kept v1 optimizer has no iterations of its own);
- it makes exactly one update per run of its train op (one `minimize` /
  `apply_gradients` of this optimizer in the program);
- that update counts the very variable the schedule reads (`global_step=` of
  that call), starting at 0 like `iterations`;
- nothing else changes the variable: no other update counts it, no assignment
  writes it.

Otherwise the schedule stays a value computed from the step in the step
function and set on the optimizer before each update (schedules.toml). The
staircase and the schedule's parameters do not matter: both sides evaluate the
same Keras schedule, only its argument differs.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import global_step
from tf1gradfix.model.nodes import Optimizer, OptimizerCall, Update, Variable


def follows_iterations(program, opt: Optimizer, step: cst.BaseExpression, keras: bool) -> bool:
    """Whether the schedule of `step` equals the same schedule of `opt.iterations` at every update."""
    if not keras or not isinstance(step, cst.Name):
        return False
    counted = _variable(program, step.value)
    if counted is None or not _starts_at_zero(counted):
        return False
    calls = [n for n in program.nodes if isinstance(n, OptimizerCall) and n.optimizer == opt.index]
    if len(calls) != 1 or calls[0].step is None or _variable(program, calls[0].step) is not counted:
        return False
    others = [n for n in program.nodes if isinstance(n, OptimizerCall) and n is not calls[0]
              and n.step is not None and _variable(program, n.step) is counted]
    writes = [n for n in program.nodes if isinstance(n, Update)
              and any(global_step.resolve(program, program.nodes[d]) is counted for d in n.deps)]
    return not others and not writes


def _variable(program, name: str) -> Variable | None:
    node = global_step.resolve(program, program.node(name))
    return node if isinstance(node, Variable) else None


def _starts_at_zero(variable: Variable) -> bool:
    value = variable.bound.get("initial_value")
    return isinstance(value, cst.Integer) and value.evaluated_value == 0
