"""TensorFlow calls nested in what a construct translates: checked as a tensor statement's.

A construct translates its own call and checks its settings: `tf.layers.dense(x, 4,
activation=tf.nn.relu)` becomes a Keras layer made once, `tf.nn.dynamic_rnn(cell, x)`
a Keras RNN's call, `tf.gradients(ys, xs)` `tape.gradient`. What the call reads from the
graph (the layer's input, the RNN's inputs and initial state, the gradient's ys, the pairs
`apply_gradients` is given) is user code that the step functions compute as written, so
its calls must be checked as those of any tensor statement: `tf.nn.dropout(x, keep_prob)`
there takes `rate=` in TF2, an embedding lookup makes the gradient sparse, a seeded random
op draws other numbers, a queue or a removed API is refused.

So a construct claims what it translates (`ModelBuilder.own`), and once a statement of
the graph block is modeled, each TensorFlow call of a node computed in the steps
(`Node.steps`) that no construct claimed and that was not checked yet is checked here as a
tensor statement's are (tensors.checked_calls, and the helper functions it reads:
tensors.helper_calls): its name joins the node's `calls` (what `called()` gives the
sparse-gradient and dropout checks), and the refusal of a call refused only if some run
needs it is kept on the node. A construct cannot forget an expression it keeps: what it
does not claim is checked. The step functions write every such expression with the same
per-statement rewrites (emit/tape.py `TapeEmitter.code`).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from tf1gradfix.constructs import tensors
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Node


def check_item(builder, start: int) -> None:
    """The unclaimed, unchecked calls of the nodes computed in the steps that the statement
    just modeled added (from index `start`), each small statement of a loop on its own."""
    for node in builder.program.nodes[start:]:
        if node.steps and isinstance(node.value, cst.CSTNode):
            for part in _statements(node.value):
                check(builder, node, part)


def check(builder, node: Node, expr: cst.CSTNode) -> None:
    """Checks the unclaimed, unchecked calls of `expr` (what `node` computes in the steps) and
    those of the helper functions it reads; Refusal for a call no run can make."""
    program = builder.program
    tf_calls = [(c, q) for c, q in builder.calls(expr)
                if q is not None and id(c) not in program.owned and id(c) not in program.checked]
    unsupported = tensors.checked_calls(builder, tf_calls)
    inner, helper_unsupported = tensors.helper_calls(builder, node.stmt, expr)
    node.calls += [q for _, q in tf_calls] + inner
    node.unsupported = node.unsupported or unsupported or helper_unsupported


def _statements(value: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """What is checked as one statement: a loop's small statements (a dropout and a loss in
    two statements of it are not one statement's), then the rest of it (its headers)."""
    if not isinstance(value, cst.BaseCompoundStatement):
        return [value]
    return [n for n in walk(value) if isinstance(n, cst.BaseSmallStatement)] + [value]
