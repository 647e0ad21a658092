"""What a graph block and its step functions need that the rewrite cannot give,
refused once the block is modeled (check_program) and after the runs are sliced
(check_steps), before any text is written (emit/ only writes text).

The messages and codes are those the emitters raised while writing; the checks
follow the order the emitters met them in one function."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.constructs import optimizers, var_lists
from tf1gradfix.cst.syntax import Refusal, matches
from tf1gradfix.model.graph import Program
from tf1gradfix.model.nodes import Gradients, LayerNode, Optimizer, OptimizerCall, Placeholder, Static
from tf1gradfix.model.slicing import Signature, closure


def check_program(program: Program, owner, sessions: list, section) -> None:
    """What the owner's graph block must be, once modeled: a section (sections.py) builds
    part of the graph, and one session runs it (each holds its own variable values; TF2 has one)."""
    if section is not None and not program.nodes:   # (a part that only runs or closes a session)
        raise Refusal.of(section[0] if section else owner, "section_without_graph")
    if len(sessions) > 1:
        raise Refusal.of(sessions[1], "several_sessions")


def check_steps(program: Program, sigs: list[Signature], qualified) -> None:
    """Refusal for the first run whose function could not be written."""
    for sig in sigs:
        if sig.inline:
            continue
        for i in sig.nodes:
            node = program.nodes[i]
            if isinstance(node, OptimizerCall) and "loss" in node.bound and node.bound.get("var_list") is not None:
                _var_list(program, node, qualified)   # (an explicit var_list also trains trainable=False variables)
            if isinstance(node, Gradients):
                for x in node.xs:
                    if isinstance(program.node(x), Static):
                        raise Refusal.of(node.value, "gradient_of_constant", name=x)
        for p in sig.params:
            placeholder = program.node(p)
            assert isinstance(placeholder, Placeholder)
            if placeholder.dtype is None:
                raise Refusal.of(placeholder.value, "placeholder_without_dtype", name=p)
        for i in sig.nodes:
            node = program.nodes[i]
            if isinstance(node, OptimizerCall):
                _update(program, node, qualified)


def _update(program: Program, node: OptimizerCall, qualified) -> None:
    """An optimizer's update: its optimizer, its loss and its variables."""
    opt = program.nodes[node.optimizer]
    assert isinstance(opt, Optimizer)
    row = optimizers.optimizer_table().get(opt.cls, {})
    if row.get("sparse", True) is False and any(matches(q, "sparse_gradients")
                                                for j in closure(program, [node.index]) for q in program.nodes[j].called()):
        raise Refusal.of(opt.call, "optimizer_sparse_lazy", optimizer=opt.cls)
    if row.get("v1_slots") and any(isinstance(n, LayerNode) and n.weights for n in program.nodes):
        raise Refusal.of(opt.call, "kept_optimizer_with_layers", optimizer=opt.cls)
    if node.differentiates():
        loss = node.bound["loss"]
        if not isinstance(loss, cst.Name):
            raise Refusal.of(loss, "loss_expression")
        if node.bound.get("var_list") is not None:
            _var_list(program, node, qualified)


def _var_list(program: Program, node: OptimizerCall, qualified) -> None:
    given = node.bound["var_list"]
    if var_lists.members(program, given, node.index, qualified) is None:
        raise Refusal.of(given, "var_list_form")
