"""What the legacy rules read off the program model: the values a statement reads,
the slice a loss is computed from, and which variables each update trains.

Names are followed through the model's dependencies (resolved where each statement
was read), never through the text, so a name bound twice (`a = tf.stop_gradient(a)`)
is the value each reader saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tf1gradfix.constructs import var_lists
from tf1gradfix.cst.syntax import Refusal, loads
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import ComputeGradients, Gradients, Node, OptimizerCall, TrainOp, Variable, VarList
from tf1gradfix.model.slicing import closure


def reads(program: Program, node: Node, expr: cst.CSTNode | None) -> set[int]:
    """The nodes `expr` (a part of `node`'s statement) reads, as `node` saw them."""
    if expr is None:
        return set()
    names = set(loads(expr))
    return {d for d in node.deps if names & set(program.nodes[d].names)}


@dataclass
class Update:
    """One optimizer call that computes gradients for variables (`minimize`,
    `compute_gradients`, or `apply_gradients` of pairs the program computed)."""

    node: OptimizerCall
    loss: set[int]            # the slice of what is differentiated (the pairs' slice for apply_gradients)
    trained: list[int]        # the variables (nodes) it changes, or would give gradients to
    listed: list[int] | None  # an explicit `var_list`'s nodes, in order (None: no var_list, or a collection)
    applies: bool             # it changes variables (minimize, apply_gradients), not only computes gradients


def updates(program: Program, qualified) -> list[Update]:
    """Every optimizer call of the program, with what it differentiates and trains."""
    out = []
    for node in program.nodes:
        if not isinstance(node, OptimizerCall):
            continue
        if node.method == "apply_gradients":
            slice_ = closure(program, reads(program, node, node.bound.get("grads_and_vars")))
            trained = sorted({i for i in slice_ if isinstance(program.nodes[i], Variable)} & _given(program, slice_, qualified))
            out.append(Update(node, slice_, trained, None, True))
            continue
        loss = closure(program, reads(program, node, node.bound.get("loss")))
        listed = explicit_list(program, node, qualified)
        given = node.bound.get("var_list")
        if given is not None:
            members = _members(program, given, node.index, qualified)
            trained = [] if members is None else [i for i in members if i in loss]
        else:   # TF1's default: the trainable variables made before the call
            trained = [n.index for n in program.trainable() if n.index in loss and n.index < node.index]
        out.append(Update(node, loss, trained, listed, isinstance(node, TrainOp)))
    return out


def _given(program: Program, slice_: set[int], qualified) -> set[int]:
    """The variables gradients in `slice_` are taken for (what pairs can update)."""
    out: set[int] = set()
    for i in slice_:
        node = program.nodes[i]
        if isinstance(node, ComputeGradients):
            given = node.bound.get("var_list")
            members = _members(program, given, i, qualified) if given is not None else None
            out |= set(members) if members is not None else {n.index for n in program.trainable() if n.index < i}
        elif isinstance(node, Gradients):
            for d in node.deps:
                xs = program.nodes[d]
                if isinstance(xs, VarList) and node.listed in xs.names:   # `tf.gradients(loss, params)`
                    out |= {e.node for e in xs.members}
                elif set(xs.names) & set(node.xs):
                    out.add(d)
    return out


def explicit_list(program: Program, node: OptimizerCall, qualified) -> list[int] | None:
    """The nodes of a `var_list` the program writes out (`[w, b]`, or a name bound to such a
    list); None for no var_list or a collection (whose members the program did not choose)."""
    given = node.bound.get("var_list")
    written = given
    if isinstance(given, cst.Name):
        bound = [program.nodes[d] for d in reads(program, node, given)]
        written = bound[0].value if len(bound) == 1 else None
    if given is None or not isinstance(written, (cst.List, cst.Tuple)):
        return None
    return _members(program, given, node.index, qualified)


def _members(program: Program, expr: cst.BaseExpression, before: int, qualified) -> list[int] | None:
    try:
        listed = var_lists.members(program, expr, before, qualified)
    except Refusal:   # (a list the rewrite cannot read: nothing is claimed about it)
        return None
    return None if listed is None else list(dict.fromkeys(e.node for e in listed))


def label(program: Program, indices) -> str:
    """Nodes as the program names them: `w`, `b`."""
    return ", ".join(f"`{program.nodes[i].names[0]}`" if program.nodes[i].names else f"#{i}" for i in indices)


def tf1_names(program: Program, indices) -> tuple[str, ...]:
    """The TF1 names (`scope/w`) of variables, where the model knows them."""
    return tuple(n.full_name for n in (program.nodes[i] for i in indices) if isinstance(n, Variable) and n.full_name)
