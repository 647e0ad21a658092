"""A train op's update in its step function: the gradients the tape takes, then
`apply_gradients` with None gradients filtered out (a fed learning rate set first,
an optimizer over several variable lists built with all of them, sparse gradients
made dense where TF1's update equals its dense one).

Part of the tape emitter (tape.py's TapeEmitter); the fields and methods of it that
the updates read are declared here.
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.constructs import gradient_calls, graph_collections, optimizers, placeholders, var_lists
from tf1gradfix.constructs.optimizers import optimizer_table
from tf1gradfix.cst.syntax import loads, matches
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import (ComputeGradients, Gradients, Node, Optimizer, OptimizerCall, Placeholder, Tensor,
                                    TrainOp)
from tf1gradfix.model.slicing import closure, reached_variables, variable_text


class Updates:
    """The gradient and update statements of the step functions (a base of TapeEmitter)."""

    p: Program
    tf: str
    state: Any
    qualified: Any
    optimizer_names: dict[int, str]
    built_here: set[int]
    fed_lr: set[int]
    fed_values: dict[str, object]
    known: placeholders.Known

    def code(self, node: cst.CSTNode) -> str:
        raise NotImplementedError   # (TapeEmitter.code)

    def stmt_text(self, node: Node, depth: int | None = None) -> str:
        raise NotImplementedError   # (TapeEmitter.stmt_text)

    def local(self, base: str) -> str:
        raise NotImplementedError   # (TapeEmitter.local)

    @property
    def tape(self) -> str:
        raise NotImplementedError   # (TapeEmitter.tape)

    def _gradient_lines(self, node: Node, together: list[TrainOp] | None = None,
                        updates: list[str] | None = None) -> list[str]:
        """`together`: the train ops of a run of several; a train op's update then goes to
        `updates`, written after every gradient, and its locals are numbered."""
        name = node.names[0] if node.names else None
        rank = next((k for k, t in enumerate(sorted(together or [], key=lambda t: t.index)) if t is node), None)
        suffix = f"_{rank + 1}" if rank else ""
        if isinstance(node, Gradients):
            return [gradient_calls.gradient_text(self, node)]
        if isinstance(node, Tensor):
            return [self.stmt_text(node, 1)]
        assert isinstance(node, OptimizerCall)
        bound = node.bound
        opt = self.p.nodes[node.optimizer]
        assert isinstance(opt, Optimizer)
        opt_name = self.optimizer_names[opt.index]
        dense = self._sparse_form(node, opt)
        if node.differentiates():
            loss = bound["loss"]
            assert isinstance(loss, cst.Name)   # (model.checks)
            variables = self._var_list(node, loss)   # (one list per optimizer: model.checks.check_var_lists)
            vname = self.local("variables" + suffix)
            lines = [f"{vname} = {graph_collections.list_expression(variables)}"]   # (one list of one loop's: its comprehension)
            if isinstance(node, ComputeGradients):
                pairs = f"list(zip({self.tape}.gradient({loss.value}, {vname}), {vname}))"
                if node.call is node.value:
                    return lines + [f"{name} = {pairs}"]
                # `g, v = zip(*opt.compute_gradients(loss))`: the pairs take the call's place
                stmt = node.stmt.deep_replace(node.call, cst.parse_expression(pairs))
                return lines + [self.code(stmt.with_changes(leading_lines=())).strip()]
            gname = self.local("grads" + suffix)
            lines.append(f"{gname} = {self.tape}.gradient({loss.value}, {vname})")
            if isinstance(node, TrainOp) and node.clip is not None:   # (optimize_loss: clipped by the global norm)
                lines.append(f"{gname}, _ = {self.tf}.clip_by_global_norm({gname}, {self.code(node.clip)})")
            pairs = f"zip({gname}, {vname})"
        else:
            lines = []
            pairs = self.code(bound["grads_and_vars"])
        applied = self._learning_rate(opt, opt_name) + self._build_shared(opt, opt_name)
        kept = "  # tf1gradfix: ignore[TFG204] a v1 optimizer, updating when called" if self.state.kept(opt) else ""
        # (only a gradient that is sparse: a dense one is already the tensor Keras applies)
        grad = f"{self.tf}.convert_to_tensor(g) if isinstance(g, {self.tf}.IndexedSlices) else g" if dense else "g"
        # (a kept v1 optimizer's slots are made from the tf.Variable under a Keras weight: constructs/optimizers.py)
        weight = f"v.value if isinstance(v, {self.tf}.keras.Variable) else v" \
            if optimizers.slots_of_keras_weights(self.p, opt) else "v"
        applied.append(f"{opt_name}.apply_gradients([({grad}, {weight}) for g, v in {pairs} if g is not None]){kept}")
        if node.step is not None:   # v1 counts an update after applying it
            applied.append(f"{node.step}.assign_add(1)")
        if rank is not None and updates is not None:
            updates += applied
            return lines
        return lines + applied

    def _sparse_form(self, node: OptimizerCall, opt: Optimizer) -> bool:
        """Whether the update's gradients are densified before `apply_gradients`.

        A gather-like op (`graph_ops.toml` sparse_gradients) makes its table's
        gradient an `IndexedSlices`, often with repeated rows. TF1's sparse
        kernels sum repeated rows first; Keras 3 applies such a gradient with
        other arithmetic, so the first update already differs. Where TF1's
        sparse update equals its dense one (`sparse = "densify"`), the
        gradient is made dense; where TF1 updates only the looked-up rows
        (`sparse = false`: lazy), no Keras update is the same and the file is
        refused (model.checks). A kept v1 optimizer applies the slices as TF1 did.
        """
        row = optimizer_table().get(opt.cls, {})
        mode = row.get("sparse", True)
        if mode is True:
            return False
        return any(matches(q, "sparse_gradients") for i in closure(self.p, [node.index]) for q in self.p.nodes[i].called())

    def _build_shared(self, opt: Optimizer, opt_name: str) -> list[str]:
        """One optimizer over several variable lists: a Keras optimizer rejects variables it
        was not built with, so it is built with all of them at its first update (slots are per variable, so
        their order does not matter; model.checks.check_var_lists admits only made variables)."""
        lists = [self._var_list(n, cast(cst.Name, n.bound["loss"])) for n in self.p.nodes
                 if isinstance(n, OptimizerCall) and n.optimizer == opt.index and n.differentiates()]
        if len({frozenset(texts) for texts in lists}) < 2 or opt.index in self.built_here:
            return []
        self.built_here.add(opt.index)
        union = list(dict.fromkeys(t for texts in lists for t in texts))
        return [f"if not {opt_name}.built:\n    {opt_name}.build({graph_collections.list_expression(union)})"]

    def _learning_rate(self, opt: Optimizer, opt_name: str) -> list[str]:
        """`optimizer.learning_rate = lr` before a fed rate's update. TF1's update kernels take
        a scalar rate; Keras assigns its rate variable only from a value of known rank, so a
        rate read from a placeholder of any shape (`tf.placeholder(tf.float32)`) is given its
        rank as TF1 checks it (`tf.ensure_shape(lr, [])`: a traced function fails without)."""
        if opt.index not in self.fed_lr:
            return []
        rate = self.state.learning_rate(opt)
        text = self.code(rate)
        if rate is not None and self._any_rank(rate):
            text = f"{self.tf}.ensure_shape({text}, [])"
        return [f"{opt_name}.learning_rate = {text}"]

    def _any_rank(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` reads a placeholder the signature gives no shape (itself, or through
        the graph values it is computed from)."""
        roots = [node.index for node in map(self.p.node, loads(expr)) if node is not None]
        return any(isinstance(node, Placeholder) and node.names[0] not in self.fed_values
                   and placeholders.signature_shape(node, self.known)[0] is None
                   for node in map(self.p.nodes.__getitem__, closure(self.p, roots)))

    def _var_list(self, node: OptimizerCall, loss: cst.Name) -> list[str]:
        given = node.bound.get("var_list")
        naming = self.state.naming
        if given is None:
            if isinstance(node, ComputeGradients):
                return [variable_text(v, naming) for v in self.p.trainable()]
            return [variable_text(v, naming) for v in reached_variables(self.p, self.p.final[loss.value])]
        listed = var_lists.members(self.p, given, node.index, self.qualified, layers=True)
        assert listed is not None   # (model.checks)
        return graph_collections.list_text(self.p, naming, listed)
