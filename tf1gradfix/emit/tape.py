"""Emit one TF2 function per execution signature, and the calls that replace
`sess.run` / `.eval()` / `.run()`.

A train op makes the body a `tf.GradientTape` block (the forward slice),
then the gradient statements in source order, then `apply_gradients` with
None gradients filtered out (tape_updates.py). Forward code used by several
functions goes into one helper. The calls replacing the runs are tape_calls.py's;
values that reach Python are converted with `.numpy()`.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import (dropout, gradient_calls, graph_collections, losses, placeholders, rnn_cells, rnn_stacks,
                                   summaries, updates, var_lists)
from tf1gradfix.model.program import Program
from tf1gradfix.constructs.variable_loops import loop_statement
from tf1gradfix.model.nodes import (Computed, Gradients, Layer, LayerCall, LayerLoop, LayerLoopCall, Node, Optimizer,
                                    OptimizerCall, Placeholder, RnnRun, StateTuple, Summary, Tensor, TrainGroup, TrainOp,
                                    Update, Variable, VarList, ZeroState)
from tf1gradfix.model.parts import LayerSite, VariableSite
from tf1gradfix.cst import layout
from tf1gradfix.emit import name_scopes, variable_lists
from tf1gradfix.cst.syntax import loads
from tf1gradfix.cst.walk import walk
from tf1gradfix.emit.tape_calls import RunCalls
from tf1gradfix.emit.tape_updates import Updates
from tf1gradfix.model.slicing import (Signature, closure, empty_start, gradient_dependent, inner_gradients,
                                      reached_variables)

IND = "    "


class TapeEmitter(Updates, RunCalls):
    def __init__(self, program: Program, code, fresh, state, meta):
        self.p, self.raw_code, self.fresh, self.state, self.meta = program, code, fresh, state, meta
        self.qualified = meta.names.qualified
        self.tf = program.tf_alias
        self.optimizer_names: dict[int, str] = {}
        self.built_here: set[int] = set()   # optimizers a step function already builds (_build_shared)
        self.fed_lr: set[int] = set()   # optimizers whose learning rate is fed
        self.scheduled: dict[int, str] = {}   # optimizers built with a schedule -> the Keras schedule
        self.scheduled_rates: set[int] = set()   # their v1 schedule tensors (`rate = optimizer.learning_rate`)
        self.locals: dict[str, str] = {}
        self.attributes: dict[str, str] = {}   # a model class: graph name -> the attribute holding it
        self.fed_values: dict[str, object] = {}   # computed values some run feeds -> their dtype
        self.known: placeholders.Known = lambda node: True   # (a model class: what its definition can read)
        self.indent = 0   # the column the functions are defined at (layout.py)
        self.block_indent = 0   # the column of the graph statements in the source

    # -- planning ----------------------------------------------------------
    def name_functions(self, sigs: list[Signature]) -> None:
        self.fed_values = {n: d for sig in sigs for n, d in sig.fed_values.items()}
        trains = [s for s in sigs if s.train is not None]
        used: set[str] = set()
        for sig in sigs:
            if sig.inline:
                continue
            if sig.train is not None and len(trains) > 1:
                op = sig.train.names[0]   # its statement and runs disappear: the name is free
                base = op if "step" in op or "train" in op else f"{op}_step"
                if base == op and op not in used:
                    sig.name = op
                    used.add(op)
                    continue
            elif sig.train is not None:
                base = "train_step"
            elif not sig.returns and len(sig.fetches) == 1 and sig.fetches[0] not in used:
                sig.name = sig.fetches[0]   # an update op: its statement and runs disappear, the name is free
                used.add(sig.name)
                continue
            else:
                base = "compute_" + "_".join(sig.fetches)
            sig.name = self.fresh(base)
            used.add(sig.name)

    def helper(self, sigs: list[Signature]) -> tuple[str | None, list[int], list[str], list[str]]:
        """Forward statements shared by several functions: (name, nodes, params, returns)."""
        forwards = [set(self._forward(sig)) for sig in sigs if not sig.inline]
        shared = sorted(i for i in set().union(*forwards) if sum(i in f for f in forwards) > 1) if forwards else []
        if not shared or not self._can_share(sigs, set(shared)) or self.fed_values:
            # (a helper computes all it needs; a run feeding a computed value must not)
            return None, [], [], []
        members = closure(self.p, shared)
        params = [n.names[0] for n in self.p.nodes if isinstance(n, Placeholder) and n.index in members]
        if any(set(f) & set(shared) and not set(params) <= set(sig.params) | set(sig.flags)
               for f, sig in zip(forwards, [s for s in sigs if not s.inline])):
            return None, [], [], []   # (a run not given what the helper reads: TF1 computed only what it fetched)
        params = [p for p in params if self._placeholder(p).default is None] + \
                 [p for p in params if self._placeholder(p).default is not None]
        returns: list[str] = []
        shared_set = set(shared)
        for sig in sigs:
            if sig.inline:
                continue
            for i in sig.nodes:
                if i in shared_set:
                    continue
                for d in self.p.nodes[i].deps:
                    if d in shared_set and isinstance(self.p.nodes[d], LayerLoopCall):   # (of a loop's names, those read)
                        returns += [n for n in self.p.nodes[d].names if n in loads(self.p.nodes[i].stmt)]
                    elif d in shared_set:
                        returns += list(self.p.nodes[d].names)
            returns += [f for f in sig.fetches if self.p.final[f] in shared_set]
        ordered = []
        for i in shared:
            for n in self.p.nodes[i].names:
                if n in returns and n not in ordered:
                    ordered.append(n)
        return self.fresh("forward"), shared, params, ordered

    def _can_share(self, sigs: list[Signature], shared: set[int]) -> bool:
        """A helper keeps source order only if no function rebinds a name it binds, and
        no gradient is taken with respect to a value it computes that a tape must watch."""
        shared_names = {n for i in shared for n in self.p.nodes[i].names}
        for sig in sigs:
            if sig.inline:
                continue
            own = [i for i in self._forward(sig) if i not in shared]
            if any(set(self.p.nodes[i].names) & shared_names for i in own):
                return False
            if set(self._watches(sig, own, shared)[1]) & shared:
                return False
        return True

    def _forward(self, sig: Signature) -> list[int]:
        post = gradient_dependent(self.p, sig.nodes)
        return [i for i in sig.nodes if isinstance(self.p.nodes[i], Tensor) and i not in post
                and not self._unread_rate(sig, i)]

    def _unread_rate(self, sig: Signature, i: int) -> bool:
        """A schedule the optimizer now holds, read by nothing else the function computes or returns."""
        if i not in self.scheduled_rates:
            return False
        names = set(self.p.nodes[i].names)
        return not names & set(sig.returns) and not any(
            i in self.p.nodes[j].deps for j in sig.nodes if not isinstance(self.p.nodes[j], (Optimizer, OptimizerCall)))

    # -- text --------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        """The text of user code the steps compute (a statement, a layer's or an RNN's input,
        what gradients are taken of): each of its calls the model checked as a tensor's
        (constructs/nested_calls.py) written as in a statement of its own, a dropout with
        `rate=`, a v1 loss as the mean it computes, an LSTM state's field as its index."""
        if self.p.state_fields:   # (`state.h` of a state the rewrite stacks: `state[1]`)
            node = rnn_cells.fields_indexed(node, self.p.state_fields)
        calls = [q for c in walk(node) if type(c) is cst.Call and (q := self.qualified(c.func)) is not None]
        if calls:
            node = losses.rewritten_statement(node, calls, self.qualified, self.raw_code, self.tf)
            node = dropout.rewritten_statement(node, calls, self.qualified, self.raw_code)
        return self.raw_code(node)

    def stmt_text(self, node: Node, depth: int | None = None) -> str:
        """`depth`: the blocks the statement lands in, to lay out a statement the rewrite changed."""
        if isinstance(node, Summary):   # `merged = tf.summary.merge_all()` -> the list of the values it summarizes
            text = summaries.statement(self.p, node, self.code)
            return text if depth is None else self.fit([text], depth)[0]
        if isinstance(node, LayerCall):   # `h = tf.layers.dense(x, ...)` -> `h = <layer>(x)`
            layer = self.state.naming.layers[self.p.nodes[node.layer]]
            source = self.code(node.source)
            args = [source] + [f"{k}={self.code(v)}" for k, v in node.call_args]
            text = f"{', '.join(node.names)} = {layer}({', '.join(args)})"
            scope = self.state.scoped(cast(Layer, self.p.nodes[node.layer]))
            if depth is not None and source != self.raw_code(node.source):   # (a dropout the rewrite wrote)
                text = self.fit([text], depth + (scope is not None))[0].replace("\n", "\n    " if scope else "\n")
            return text if scope is None else f'with {self.tf}.keras.name_scope("{scope}"):\n    {text}'

        if isinstance(node, StateTuple):   # an LSTM state of its parts, stacked (constructs.rnn_cells)
            return rnn_cells.state_tuple_text(node, self.tf, self.code)
        if isinstance(node, (ZeroState, RnnRun)):   # a cell's zero state, its dynamic_rnn (constructs.rnn_cells, rnn_stacks)
            if isinstance(node, ZeroState):
                return rnn_cells.zero_state_text(node, self.p, self.tf, self.code)
            lines = rnn_stacks.run_lines(node, self.p, self.state.naming.layers, self.tf, self.code)
            return "\n".join(lines if depth is None else self.fit(lines, depth))
        if isinstance(node, LayerLoopCall):
            loop = self.p.nodes[node.layer_loop]
            assert isinstance(loop, LayerLoop)
            return self._layer_loop(loop, node.called(), self.indent + 4 * (depth or 1))
        stmt = losses.rewritten_statement(node.stmt, node.called(), self.qualified, self.code, self.tf)
        stmt = dropout.rewritten_statement(stmt, node.called(), self.qualified, self.code)
        if isinstance(node, Computed):   # a variable collection read: the list TF1 held there
            stmt = graph_collections.rewritten(stmt, node, lambda es: graph_collections.list_text(self.p, self.state.naming, es))
        if isinstance(node, Update):   # `tf.assign_add(v, x)` -> `v.assign_add(x)`
            stmt = updates.method_form(stmt, self.qualified)
        if depth is not None and isinstance(stmt, cst.For) and stmt is not node.stmt:   # (a loop over a collection, written)
            stmt = layout.refit(node.stmt, stmt, self.indent + 4 * depth, tuple(self.block_indent + 4 * k for k in range(4)))
        text = self.code(stmt)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if depth is not None and stmt is not node.stmt and len(lines) == 1:   # (a loss or dropout the rewrite wrote)
            return self.fit(lines, depth)[0]
        if depth is not None and isinstance(stmt, cst.SimpleStatementLine):   # (moved: laid out again if it was black's)
            # (`before`: the user's line (`tf.gradients` read apart, `self.x`), else the model's: a list may be too long)
            after = cst.parse_statement("\n".join(lines) + "\n")
            model_line = node.stmt if isinstance(node.stmt, cst.SimpleStatementLine) else stmt
            befores = [b for b in (self.p.as_written.get(id(node.stmt)), model_line) if isinstance(b, cst.SimpleStatementLine)]
            columns = tuple(self.block_indent + 4 * k for k in range(4))   # (also from under a scope)
            moved = next((m for b in befores if (m := layout.refit(b, after, self.indent + 4 * depth, columns)) is not after),
                         after)
            lines = [ln for ln in cst.Module([]).code_for_node(moved.with_changes(leading_lines=())).splitlines() if ln.strip()]
        return "\n".join(lines)

    def _layer_loop(self, layers: LayerLoop, calls, indent: int) -> str:
        """The loop again, zipped with the lists of layers and variables it created: each
        call site calls its layer of this iteration, each variable statement's name is its
        variable of this iteration (`indent`: the loop's column)."""
        naming = self.state.naming
        loop, sites = layers.loop, layers.made()
        target = self.code(loop.target)
        if isinstance(loop.target, cst.Tuple) and not loop.target.lpar:
            target = f"({target})"
        header = ", ".join([target] + [s.local if isinstance(s, VariableSite) else naming.layers[s] for s in sites])
        zipped = f"zip({self.code(loop.iter)}, {', '.join(naming.lists[s] for s in sites)})"
        lines = [layout.fit_header(f"for {header} in ", zipped, ":", indent)]
        scoped: tuple[list[str], int] = ([], 0)   # (the Keras name scopes of the last line, if a layer's call)
        for st in layers.statements:
            if isinstance(st.site, LayerSite):
                scopes = self._loop_layer_scopes(st.site)
                if scopes and scopes == scoped[0] and scoped[1] == len(lines) - 1:   # (one block for calls under the same scopes)
                    call = self._loop_layer_call(st.site, cast(str, st.name), [], indent + 4 * (len(scopes) + 1))
                    lines[-1] += "\n" + "\n".join(IND * (len(scopes) + 1) + ln for ln in call.splitlines())
                else:
                    lines.append(layout.indented(self._loop_layer_call(st.site, cast(str, st.name), scopes, indent + 4)))
                scoped = (scopes, len(lines) - 1)
            elif st.site is None and st.steps:   # (a loss or dropout written as in a statement of its own)
                small = losses.rewritten_statement(st.stmt, calls, self.qualified, self.code, self.tf)
                small = dropout.rewritten_statement(small, calls, self.qualified, self.code)
                text = loop_statement(st, self.code, cast(cst.BaseSmallStatement, small))
                if small is not st.stmt or "\n" not in text and st.column + len(loop_statement(st, self.code)) <= layout.WIDTH:
                    text = layout.fit(text, indent + 4)   # (written by the rewrite, or laid out as black would)
                lines.append(layout.indented(text))
        if len(lines) == 1:
            lines.append(f"{IND}pass")
        return "\n".join(lines)

    def _loop_layer_scopes(self, site: LayerSite) -> list[str]:
        """The Keras name scopes a loop's layer is called under: the variable scopes TF1 named its
        weights in (constructs/loop_layers.py); none for a layer without weights."""
        return [f'"{s}"' if isinstance(s, str) else self.code(s) for s in site.scopes] if site.row["weights"] else []

    def _loop_layer_call(self, site: LayerSite, name: str, scopes: list[str], indent: int) -> str:
        """`h = dense(h, training=flag)`: a loop's layer called with its mode, under `scopes`."""
        args = [self.code(site.source)] + [f"{k}={self.code(v)}" for k, v in site.call_args]
        text = layout.fit(f"{name} = {self.state.naming.layers[site]}({', '.join(args)})", indent + 4 * len(scopes))
        for depth, scope in reversed(list(enumerate(scopes))):
            text = layout.fit(f"with {self.tf}.keras.name_scope({scope}):", indent + 4 * depth) + "\n" + layout.indented(text)
        return text

    def params_text(self, params: list[str]) -> str:
        out = []
        for p in params:
            default = self._default(p)
            out.append(p if default is None else f"{p}={self.code(default)}")
        return ", ".join(out)

    def spec(self, params: list[str]) -> str:
        specs = []
        for p in params:
            shape_expr = None if p in self.fed_values else placeholders.signature_shape(self._placeholder(p), self.known)[0]
            dtype = self._dtype(p)
            shape = self.code(shape_expr) if shape_expr is not None else "None"
            if isinstance(self.p.node(p), ZeroState):   # (a Keras RNN layer needs the state's rank)
                shape = rnn_cells.state_shape(cast(ZeroState, self.p.node(p)), self.p, self.code)
            specs.append(f"{self.tf}.TensorSpec(shape={shape}, dtype={dtype})")
        return layout.fit(f"@{self.tf}.function(input_signature=[{', '.join(specs)}])", self.indent)

    def _restored_shapes(self, sig: Signature) -> list[str]:
        """`x = tf.ensure_shape(x, shape)` for each placeholder whose shape the signature
        could not give in full, where what is computed from it may read the static shape
        (constructs.placeholders)."""
        lines = []
        for p in sig.params:
            node = None if p in self.fed_values else self._placeholder(p)
            if node is not None and placeholders.signature_shape(node, self.known)[1] \
                    and placeholders.reads_static_shape(self.p, node, set(sig.nodes), self.qualified):
                lines.append(f"{p} = {self.tf}.ensure_shape({p}, {self.code(cast(cst.BaseExpression, node.shape))})")
        return lines

    def fit(self, lines: list[str], depth: int = 1) -> list[str]:
        """Generated statements of a function body (`depth` blocks in) laid out as black would."""
        return [layout.fit(line, self.indent + 4 * depth) for line in lines]

    def _dtype(self, p: str) -> str:
        if p in self.fed_values:   # (fed_tensors.dtype_of: its source, or a name read off literals)
            dtype = self.fed_values[p]
            return f"{self.tf}.{dtype[0]}" if isinstance(dtype, tuple) else cast(str, dtype)
        given = self._placeholder(p).dtype   # (not None: model.checks)
        return f"{self.tf}.{given}" if isinstance(given, str) else self.code(given)

    def _default(self, p: str) -> cst.BaseExpression | None:
        return None if p in self.fed_values else self._placeholder(p).default

    def _placeholder(self, name: str) -> Placeholder:
        node = self.p.node(name)
        assert isinstance(node, Placeholder)
        return node

    def helper_text(self, name, nodes, params, returns) -> str:
        body = name_scopes.joined([self.stmt_text(self.p.nodes[i], 1) for i in nodes if isinstance(self.p.nodes[i], Tensor)],
                                  self.tf)
        body.append(f"return {', '.join(returns)}")
        return f"def {name}({self.params_text(params)}):\n" + layout.indented("\n".join(body))

    def function_text(self, sig: Signature, helper) -> str:
        hname, hnodes, hparams, hreturns = helper
        self.built_here = set()
        post = gradient_dependent(self.p, sig.nodes)
        forward = self._forward(sig)
        own = [i for i in forward if i not in set(hnodes)]
        watch_top, watch_after = self._watches(sig, own, set(hnodes))
        forward_lines = [f"{self.tape}.watch({w})" for w in watch_top]   # before any use
        if hname is not None and set(forward) & set(hnodes):
            needed = self._needed(sig, set(hnodes))
            targets = [r if r in needed else "_" for r in hreturns]
            forward_lines.append(f"{', '.join(targets)} = {hname}({', '.join(hparams)})")
        inner = inner_gradients(self.p, sig.nodes)   # (a gradient penalty: taken on a tape inside the tape)
        depth = 2 if any(i in post for i in sig.nodes) else 1   # (in the tape's block, or the function's)
        hoisted = [i for i in own if depth == 2 and empty_start(self.p, i, own)]
        own = [i for i in own if i not in hoisted]
        top_lists, late_lists = variable_lists.placed(self.p, self.state.naming, sig, own, set(hnodes))
        for i in own:
            forward_lines += self.fit(late_lists.get(i, []), depth + bool(inner))
            forward_lines.append(self.stmt_text(self.p.nodes[i], depth + bool(inner)))
            forward_lines += watch_after.get(i, [])
        # (an assignment reading a gradient, `tf.assign(w, w - lr * g)`, goes with the other assignments below)
        grads = [i for i in sig.nodes if i in post and not isinstance(self.p.nodes[i], Update)]
        if inner:
            forward_lines, grads = self._inner_block(sig, forward_lines, grads, inner)
        # (no `x = tf.cast(x, dtype)`: the input_signature converts a fed array to the
        # placeholder's dtype, as TF1's feed did, and refuses a tensor of another dtype)
        lines: list[str] = self.fit(self._restored_shapes(sig) + [f"{k} = {v}" for k, v in sig.flags.items()]
                                    + top_lists)
        lines += [self.stmt_text(self.p.nodes[i], 1) for i in hoisted]
        if grads:
            count = sum(1 for i in grads if self.p.nodes[i].differentiates() and i not in inner)
            persistent = "persistent=True" if count > 1 else ""
            lines.append(f"with {self.tf}.GradientTape({persistent}) as {self.tape}:")
            lines.append(layout.indented("\n".join(name_scopes.joined(forward_lines, self.tf)) or "pass"))
            lines += self.fit(late_lists.get(variable_lists.AFTER_TAPE, []))
            updates: list[str] = []   # (several train ops: applied after every gradient, constructs/train_together.py)
            for i in grads:
                node = self.p.nodes[i]
                if isinstance(node, TrainGroup):   # (its train ops are among the nodes: written there)
                    continue
                generated = self._gradient_lines(node, sig.trains if len(sig.trains) > 1 else [], updates)
                lines += generated if type(node) is Tensor else self.fit(generated)   # (a user statement as written)
            lines += self.fit(updates)
        else:
            lines += name_scopes.joined(forward_lines, self.tf) + self.fit(late_lists.get(variable_lists.AFTER_TAPE, []))
        # assignments (a target network's sync): the statements as written, in source order
        lines += [self.stmt_text(self.p.nodes[i]) for i in sig.nodes if isinstance(self.p.nodes[i], Update)]
        if sig.returns:
            lines += self.fit([f"return {', '.join(self._returned(r) for r in sig.returns)}"])
        if not lines:
            lines.append("pass")
        decorator = "" if sig.one_off else f"{self.spec(sig.params)}\n"
        header = f"{decorator}def {sig.name}({self.params_text(sig.params)}):\n"
        return header + layout.indented("\n".join(lines))

    def _inner_block(self, sig: Signature, forward: list[str], grads: list[int], inner: list[int]):
        """(the outer tape's lines, the gradient nodes after it) for a slice with second-order
        gradients: the forward code on an inner tape (watching what the outer watches), the
        inner gradients taken on it and what the outer differentiations read of them, all
        recorded by the outer tape, as TF1's gradient of a gradient."""
        tape = self.local("inner_tape")
        outer = [i for i in grads if self.p.nodes[i].differentiates() and i not in inner]
        read = closure(self.p, [d for i in outer for d in self.p.nodes[i].deps])
        inside = [i for i in grads if i not in inner and i in read and type(self.p.nodes[i]) is Tensor
                  and not closure(self.p, list(self.p.nodes[i].deps)) & set(outer)]
        watched = [w for line in forward for w in [line] + (
            [tape + line[len(self.tape):]] if line.startswith(f"{self.tape}.watch(") else [])]
        targets: dict[int, str | None] = {}   # (targets computed in the call: bound in the inner block, recorded)
        for k, i in enumerate(inner):
            ys = cast(Gradients, self.p.nodes[i]).ys
            targets[i] = None if isinstance(ys, cst.Name) else self.local(f"inner_target{'_' + str(k + 1) if k else ''}")
            if targets[i] is not None:
                watched.append(layout.fit(f"{targets[i]} = {self.code(ys)}", self.indent + 12))
        persistent = "persistent=True" if len(inner) > 1 else ""
        lines = [f"with {self.tf}.GradientTape({persistent}) as {tape}:",
                 layout.indented("\n".join(name_scopes.joined(watched, self.tf)) or "pass")]
        lines += self.fit([gradient_calls.gradient_text(self, cast(Gradients, self.p.nodes[i]), tape, targets[i])
                           for i in inner], 2)
        lines += [self.stmt_text(self.p.nodes[i], 2) for i in inside]
        return lines, [i for i in grads if i not in inner and i not in inside]

    def _returned(self, name: str) -> str:
        """What a function returns for a fetch: the name, or the loss an optimize_loss train op gives."""
        node = self.p.node(name)
        return node.result if isinstance(node, TrainOp) and node.result is not None else name

    def _needed(self, sig: Signature, shared: set[int]) -> set[str]:
        names: set[str] = set()
        for i in sig.nodes:
            if i in shared:
                continue
            for d in self.p.nodes[i].deps:
                if d in shared:
                    names.update(self.p.nodes[d].names)
        names.update(f for f in sig.fetches if self.p.final[f] in shared)
        return names

    def _watches(self, sig, own, shared):
        """Lines the forward code needs: watches of values TF1 differentiates with respect to
        that a tape would not watch by itself, and `stop_gradients=` cuts."""
        top, after = [], {}
        for i in sig.nodes:
            node = self.p.nodes[i]
            if isinstance(node, OptimizerCall) and "loss" in node.bound and node.bound.get("var_list") is not None:
                # an explicit var_list trains trainable=False variables too
                listed = var_lists.members(self.p, node.bound["var_list"], node.index, self.qualified, layers=True)
                top += [graph_collections.entry_text(self.p, self.state.naming, e)
                        for e in graph_collections.untrained(self.p, listed or [])]
            if not isinstance(node, Gradients):
                continue
            group = self.p.node(node.listed) if node.listed is not None else None
            if isinstance(group, VarList):   # (a loop's variables in it: not among the names of `xs`)
                top += [graph_collections.entry_text(self.p, self.state.naming, e)
                        for e in graph_collections.untrained(self.p, var_lists.loop_entries(group.members))]
            for x in node.xs:
                xn = self.p.node(x)
                if isinstance(xn, Placeholder) or isinstance(xn, Variable) and not xn.trainable:
                    top.append(x)
                elif isinstance(xn, Tensor):
                    recorded = bool(reached_variables(self.p, xn.index))   # computed from watched variables
                    if "stop_gradient" in self.code(xn.value) or not recorded:
                        after.setdefault(xn.index, []).append(f"{self.tape}.watch({x})")   # (never in a helper: see _can_share)
        for i, lines in gradient_calls.stop_lines(self.p, sig.nodes, closure, self.tf).items():
            after[i] = lines + after.get(i, [])
        return list(dict.fromkeys(top)), after

    @property
    def tape(self) -> str:
        return self.local("tape")

    def local(self, base: str) -> str:
        """A name for the emitted functions' own locals, the same in every function."""
        if base not in self.locals:
            self.locals[base] = self.fresh(base)
        return self.locals[base]
