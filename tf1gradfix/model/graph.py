"""A model of a TF1 graph program: what each statement of the graph-building
block defines (placeholder, variable, tensor, optimizer, train op, gradient,
session), which graph values it reads, in source order.

Names are resolved with LibCST metadata (through ``names.NameResolver``), so
aliases, statement order and a graph built inside a function do not matter.
Anything the model does not understand raises ``Refusal``: the caller then
leaves the file intact and reports a manual diagnostic.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar, cast

import libcst as cst
from libcst.metadata import PositionProvider

from tf1gradfix.constructs import (builder_loops, builder_statistics, builders, captured_values, carried_values,
                                   gradient_calls, graph_contexts, graph_loops, graph_prints, guarded_graph, initializers,
                                   input_methods, loop_layers, nested_calls, outer_scopes, retired_names, rnn_cells, rnn_stacks,
                                   scoped_calls, statement_forms, summaries, summary_helpers, summary_loops, unrun_ops,
                                   variable_factories, variable_loops)
from tf1gradfix.constructs.tensors import queue_refusal
from tf1gradfix.model import registry
from tf1gradfix.constructs.optimizers import is_optimizer
from tf1gradfix.cst.syntax import Refusal, bound_names, free_names, fresh_name, loads, matches, name_nodes, target_names
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.blocks import BlockReader
from tf1gradfix.model.program import Item, Program, ScopeEntry
from tf1gradfix.rules.catalog import host_value
from tf1gradfix.model.tf1_names import GraphNames, VariableScopes
from tf1gradfix.model.nodes import BuilderModule, Computed, Node, Placeholder, Saver, Statement, Static, Variable, VariableGroup

N = TypeVar("N", bound=Node)


class ModelBuilder(BlockReader):
    """Classifies the statements of the graph block into a ``Program``."""

    def __init__(self, visitor, names, module: cst.Module):
        self.v, self.names, self.module = visitor, names, module
        self.update_ops_names: set[str] = set()   # `update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)`
        self.makes_variables: dict[str, bool] = {}        # helper name -> makes variables (see _builder)
        self.call_ranks: dict[int, float] | None = None   # id of a call -> where Python makes it (builder_loops)
        self.outer_scopes: dict[str, str | None] = {}   # helper -> the variable scope it opens ("LABEL/", "": none)
        # (per module, not per builder: every block's builder asks about the module's calls)
        self._calls: dict[cst.CSTNode, list] = visitor.__dict__.setdefault("model_calls", {})
        self.module_facts: dict[str, Any] = visitor.__dict__.setdefault("model_facts", {})   # (variables.resource)
        self._module_names: set[str] | None = None   # (invent)
        self.options: Any = None   # session_options.SessionOptions of the owner, when a session takes arguments
        self.writers: Any = None   # summaries.Writers of the owner, when it makes a summary writer
        self.class_layers: Any = None   # layer_methods.ClassLayers of a model class with layer methods
        self.graph_names = GraphNames()   # the names TF1's graph has given so far (model/tf1_names.py)
        self.variable_scopes = VariableScopes()   # the variable scopes TF1 has opened so far
        self.entered: tuple[ScopeEntry, ...] = ()   # the scope `with`s the statement read last runs under
        self.tf2_variable_names: set[str] = set()   # the names of the TF2 program's variables so far (variables.counted)
        self.decided: dict[int, Any] = {}   # id of an `if` a model class's construction decides -> class_settings.Decision
        self.class_attributes: dict[str, str] | None = None   # a model class's name -> attribute (ModelClass.attributes)
        self.class_initializers: Any = None   # class_initializers.ClassInitializers of a model class
        self.graphs: dict[str, cst.CSTNode] = {}   # the graph the block makes and enters (graph_contexts.owned)
        self.host_settings: dict[str, object] = {}   # a model class's name -> the setting's value (host_values)
        self.loader_calls: frozenset[int] = frozenset()   # ids of the MNIST loader's calls (mnist_loader.py)
        self.scope_objects: dict[str, str] = {}   # `with tf.variable_scope("a") as s`: "s" -> "a/" (scope_reuse.py)

    def note(self, node: cst.CSTNode, code: str, message: str) -> None:
        """An info diagnostic of a successful rewrite (kept on the visitor, which
        outlives this builder): (line, col, code, message, "safe")."""
        if not hasattr(self.v, "notes"):
            self.v.notes = []
        self.v.notes.append((*self.position(node), code, message, "safe"))

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        try:
            p = self.v.get_metadata(PositionProvider, node).start
        except KeyError:   # (an input method's statement, read at a call: constructs/input_methods.py)
            old = input_methods.origin(getattr(self.v, "origins", {}), node)
            if old is None:
                raise
            p = self.v.get_metadata(PositionProvider, old).start
        return p.line, p.column + 1

    def qualified(self, expr: cst.BaseExpression) -> str | None:
        return self.names.qualified(expr)

    def calls(self, node: cst.CSTNode) -> list[tuple[cst.Call, str | None]]:
        """The calls in `node`, each with its function's TensorFlow name, None for a call of
        NumPy or of TensorFlow's host functions (kinds.toml `host`); not to be modified:
        kept per node, since the model asks about a statement several times."""
        found = self._calls.get(node)
        if found is None:
            # (a walk: a visitor class made on every call would cost more than the walk itself)
            found = self._calls[node] = [(call, None if host_value(q := self.qualified(call.func)) else q)
                                         for call in walk(node) if type(call) is cst.Call]
        return found

    # -- the block ---------------------------------------------------------
    def build(self, owner, body: list[cst.BaseStatement], helpers, tf_alias: str, collect: bool = False) -> Program:
        """`collect`: a statement's refusal is kept in `program.refused` and the next
        statements are read on, except those reading a name a refused statement binds
        (`program.poisoned`), so one run names every independent blocker; the caller
        raises them. Otherwise the first refusal is raised."""
        self.program = Program(owner, [], [], {}, set(), helpers, tf_alias)
        self.program.as_written.update(getattr(self.v, "as_written", {}))   # (a model class's lines, as the user's)
        self.graphs = graph_contexts.owned(self, body, self.module, self.class_attributes)
        self.graph_names, self.variable_scopes, self.entered = GraphNames(), VariableScopes(), ()   # (a new graph)
        self.tf2_variable_names = set()
        self._flatten(body, "", ())
        refused: list[Refusal] = []
        poisoned: set[str] = set()
        for position, item in enumerate(self.program.items):
            self._enter(item)
            if poisoned and not poisoned.isdisjoint(loads(item.stmt)):
                poisoned |= bound_names(item.stmt)   # (what it would read is not in the model)
                item.drop = True
                continue
            try:
                start = len(self.program.nodes)
                self._item(item, position)
                if item.node is None:   # (`w = sess.run(w)` in it: a host name after it)
                    retired_names.note_fetched(self.program, item, position)
                nested_calls.check_item(self, start)   # (what the constructs did not claim, as a tensor's)
            except Refusal as refusal:
                if not collect:
                    raise
                refused.append(refusal)
                poisoned |= bound_names(item.stmt)
                item.drop = True   # (not host code either: the host scan passes it by)
        if not refused:   # (host data the graph captured, bound anew after it: its value then)
            captured_values.snapshot(self)
            retired_names.check_graph(self.program)
        if collect:
            self.program.refused, self.program.poisoned = refused, poisoned
            guarded_graph.check(self.program, getattr(self.v, "guarded", frozenset()),   # (moved out of host `if`s)
                                lambda node: self.v.get_metadata(PositionProvider, node).start.line)
        return self.program

    def _item(self, item: Item, position: int) -> None:
        if item.collects:
            self.program.collected.append(len(self.program.nodes))
        if isinstance(item.stmt, cst.SimpleStatementLine) and not item.drop:
            self._classify(item)
        elif not isinstance(item.stmt, cst.SimpleStatementLine) and not summary_loops.model(self, item) \
                and not graph_loops.model(self, item, position) \
                and not variable_loops.model(self, item, position) and not loop_layers.loop_model(self, item) \
                and not isinstance(item.stmt, cst.FunctionDef):
            self._check_compound(item.stmt)   # (a function is checked where graph code calls it)


    def unique_name(self, name: str) -> str:
        """The name TF1's graph gives what asks for `name` (a full name), in the order the
        statements run: `name`, or `name_1`, `name_2`... (model/tf1_names.py)."""
        return self.graph_names.unique(name)


    def _check_compound(self, stmt: cst.BaseStatement) -> None:
        """Host compound statements may run the graph, never build it."""
        decision = self.decided.get(id(stmt)) if type(stmt) is cst.If else None
        if decision is not None and decision.taken is None and self._touches_graph(stmt):   # (on a setting the file does not fix)
            raise decision.refusal(stmt)
        factory = variable_factories.reached(self, stmt)
        if factory is not None:
            raise Refusal.of(stmt, "graph_in_compound", api=factory)
        for call, _ in self.calls(stmt):   # (a builder function or method: it makes variables)
            if isinstance(call.func, cst.Name) and call.func.value in self.program.helpers and self._builder(call.func.value):
                raise Refusal.of(call, "graph_in_compound", api=call.func.value)
        for call, q in self.calls(stmt):
            if q is None:
                continue
            if q in ("tensorflow.placeholder", "tensorflow.placeholder_with_default",
                                               "tensorflow.Variable", "tensorflow.get_variable") \
                    or is_optimizer(q) or q == "tensorflow.gradients" \
                    or q in summaries.summary_ops():   # (`merge_all` would not see it)
                raise Refusal.of(call, "graph_in_compound", api=q)

    def _touches_graph(self, stmt: cst.BaseStatement) -> bool:
        """Does `stmt` read or bind a graph value, call TensorFlow or a function of the graph?"""
        names = set(loads(stmt)) | bound_names(stmt)
        return bool(names & (set(self.program.final) | set(self.program.helpers))) or any(
            (q or "").startswith("tensorflow") for _, q in self.calls(stmt))

    # -- one statement -----------------------------------------------------
    def add(self, item: Item, node_type: type[N], names, value, deps=(), /, **fields: Any) -> N:
        """A node of class `node_type` for the statement of `item`, binding `names`."""
        node = node_type(index=len(self.program.nodes), names=tuple(names), stmt=item.stmt, value=value,
                   deps=frozenset(deps), **fields)
        self.program.nodes.append(node)
        for name in names:
            self.program.final[name] = node.index
        item.node = node
        return node

    def own(self, node: cst.CSTNode | None, but: Iterable[cst.CSTNode | None] = ()) -> None:
        """Claims the calls under `node` but those under `but`: the construct translates them,
        or checks them itself (settings of what is made once); the rest of a statement that
        the steps compute is checked as a tensor's (constructs/nested_calls.py)."""
        if node is not None:
            kept = {id(n) for b in but if b is not None for n in walk(b)}
            self.program.owned.update(id(n) for n in walk(node) if id(n) not in kept)

    def append(self, node: N) -> N:
        """A node that no statement of the block binds (a builder's module, an optimizer made in place)."""
        node.index = len(self.program.nodes)
        self.program.nodes.append(node)
        return node

    def deps_of(self, expr: cst.CSTNode) -> set[int]:
        out = set()
        names = loads(expr)
        if any(self._builder(name) for name in names):   # their variables are made in Python's call order
            for name in builders.called_first(expr, self.program.helpers):
                if self._builder(name):
                    made = builders.node(self, self.program.helpers[name])
                    for call in walk(expr):   # (each call: the same layers, builder_loops)
                        if type(call) is cst.Call and isinstance(call.func, cst.Name) and call.func.value == name:
                            builder_loops.check_call(self, made, call)
                            builder_statistics.mode_flags(self, made, call)
            if self.class_layers is not None:   # (a model class's layer method: each call's scope)
                self.class_layers.record(self, expr)
        for name in names:
            if name in self.update_ops_names:
                raise Refusal.of(expr, "update_ops_other_use", name=name)
            if name in self.program.final and name not in self.program.retired:   # (retired: a host name now)
                out.add(self.program.final[name])
            helper = self.program.helpers.get(name)
            if helper is not None:
                out |= self._helper_deps(helper)
                if self._builder(name):   # its weights, made once
                    out.add(builders.node(self, helper).index)
        return out

    def summaries_at_calls(self, item: Item, value: cst.CSTNode, name: str) -> bool:
        """The summaries the model function `name` makes at its calls in `value` (summary_helpers)."""
        return summary_helpers.model_calls(self, item, value, name)

    def is_builder(self, name: str) -> bool:
        """Is `name` a builder function (its weights are made once, in its module)?"""
        return self._builder(name)

    def _builder(self, name: str) -> bool:
        """Is `name` a helper function that makes variables (a builder)? Asked once per helper."""
        if name not in self.makes_variables:
            helper = self.program.helpers.get(name)
            self.makes_variables[name] = helper is not None and builders.creates_variables(helper, self.calls)
        return self.makes_variables[name]

    def _helper_deps(self, helper: cst.FunctionDef) -> set[int]:
        out = self._inner_builders(helper)
        followed = {n.builder.name.value for n in (self.program.nodes[i] for i in out) if isinstance(n, BuilderModule)}
        for name in sorted(free_names(helper)):   # (sorted: the reason names the same value every run)
            if name in followed:
                continue
            if name in self.program.helpers and name != helper.name.value and self._builder(name):
                where = next((n for n in walk(helper.body) if type(n) is cst.Name and n.value == name), helper)
                raise Refusal.of(where, "builder_called_inside", function=helper.name.value, builder=name)
            i = self.program.final.get(name)
            if i is not None and isinstance(self.program.nodes[i], (Variable, VariableGroup, Static)):
                out.add(i)
            elif i is not None:
                if self.class_layers is not None:   # (a model class's method: `self.<attr>`, a graph value)
                    self.class_layers.reads_graph(helper, name)
                raise Refusal.of(helper, "function_reads_graph_global", function=helper.name.value, name=name)
        return out

    def _inner_builders(self, helper: cst.FunctionDef) -> set[int]:
        """The builders a function that makes no variables of its own calls (`autoencoder`
        calling `encoder` and `decoder`), in Python's call order, as if called where it is:
        their weights, made once under each call's scope. Only builders of one scope each
        call names, whose weights do not depend on the call's values (else refused as before)."""
        if self._builder(helper.name.value):
            return set()
        if helper.name.value not in self.outer_scopes:   # (its own variable scope: outer_scopes.py)
            self.outer_scopes[helper.name.value] = outer_scopes.prefix(self, helper)
        prefix = self.outer_scopes[helper.name.value]
        if prefix is None:
            raise Refusal.of(helper, "outer_scope_form", function=helper.name.value)
        if self.class_layers is not None and not prefix:   # (a model class's other methods: refused)
            return set()
        out: set[int] = set()
        for name in builders.called_first(helper.body, self.program.helpers):
            if name == helper.name.value or not self._builder(name):
                continue
            made = builders.node(self, self.program.helpers[name])
            if made.made_on_call or made.scope is None and made.scope_parameter is None:
                continue   # (refused by _helper_deps: builder_called_inside)
            for call in walk(helper.body):
                if type(call) is cst.Call and isinstance(call.func, cst.Name) and call.func.value == name:
                    builder_loops.check_call(self, made, call, prefix)
            out |= {made.index} | self._helper_deps(self.program.helpers[name])
        return out

    def _classify(self, item: Item) -> None:
        stmt = cast(cst.SimpleStatementLine, item.stmt)
        if self.writers is not None and stmt in self.writers.statements:
            return   # (host code: rewritten with the summaries it writes)
        if graph_contexts.is_binding(self, stmt):
            item.drop = True   # `g = tf.Graph()` of the graph entered: it goes with its `with`s
            return
        # (lines of several statements were split before the program was read: statement_forms)
        assert len(stmt.body) == 1, "a line of several statements reached the model"
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "run" and isinstance(func.value, (cst.Call, cst.Attribute)) \
                    and (kind := initializers.kind_of(self.program, func.value, self.qualified)) is not None:
                item.drop = True   # `tf.global_variables_initializer().run()` (a local one's initializes nothing here)
                item.initializer = kind == "global"
                return
            q = self.qualified(small.value.func)
            if host_value(q):   # (`tf.logging.info(...)`, `tf.flags.DEFINE_string(...)`: host code)
                return
            if matches(q, "queues"):
                raise queue_refusal(small, cast(str, q))
            if matches(q, "graph_resets") and self.program.nodes:
                raise Refusal.of(small, "second_graph", function=cast(str, q).rsplit('.', 1)[1])
            if matches(q, "drop") or matches(q, "graph_resets"):   # (a reset before any graph code: nothing to reset)
                item.drop = True
            elif summaries.model(self, item, None, small.value, q):
                pass
            elif q is not None and unrun_ops.model(self, item, small.value, q):
                pass   # `tf.assign(w, 0.0)` kept by no name: TF1 built it and never ran it
            elif q is not None and not matches(q, "keep"):
                raise Refusal.of(small, "graph_statement_no_result", api=q)
            elif q is None and graph_prints.model(self, item, small.value):
                pass   # `print("logits:", logits)`: TF1 printed a description, dropped with a note
            elif summary_helpers.model(self, item, small.value):
                pass   # `variable_summaries(w)`: the summaries a function of the module makes
            elif isinstance(func, cst.Name) and func.value in self.program.helpers and any(
                    (called or "").startswith("tensorflow.") for _, called in self.calls(self.program.helpers[func.value])):
                # a helper run for what it adds to the graph (summaries, gradients): not followed
                raise Refusal.of(small, "graph_statement_no_result", api=func.value)
            return
        if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            touched = self.deps_of(small)
            if touched:
                raise Refusal.of(small, "augmented_assignment")
            return
        if not isinstance(small, cst.Assign):
            return
        if len(small.targets) != 1:
            if self.deps_of(small.value):
                raise Refusal.of(small, "chained_assignment")
            return
        names = target_names(small.targets[0].target)
        if names is None and isinstance(small.value, cst.Call) \
                and self.qualified(small.value.func) == rnn_stacks.BIDIRECTIONAL:   # `(out_fw, out_bw), states = ...`
            names = rnn_stacks.pair_target_names(small.targets[0].target)
        value = small.value
        if self.runs_graph(value) or self._feed_dict(value):
            return
        deps = self.deps_of(value)
        tf_calls = [(c, q) for c, q in self.calls(value) if q is not None]
        if not deps and not tf_calls and not variable_factories.called(self, value):
            position = next(k for k, i in enumerate(self.program.items) if i is item)
            retired_names.retire(self.program, small, names or [], position)   # (checked once the runs are known)
            return
        if names is None:
            raise Refusal.of(small, "graph_value_target")
        if statement_forms.paired(small):   # `d_real, d_fake = D(x), D(g)`: each its own statement
            raise Refusal.of(small, "tuple_assignment")
        # (`reg = 0.0` ... `reg = reg + tf.nn.l2_loss(w)`: a name kept where it was, rebound in a function)
        kept_before = [n for n in sorted(set(names) & set(loads(value)))
                       if (i := self.program.final.get(n)) is None or isinstance(self.program.nodes[i], Static)]
        if self.loader_calls and any(id(call) in self.loader_calls for call, _ in self.calls(value)):
            raise Refusal.of(small, "mnist_loader_in_graph")   # (host code only is kept where it is)
        graph = any(not isinstance(self.program.nodes[d], Static) for d in deps) \
            or any(not matches(q, "pure") for _, q in tf_calls)
        position = next(k for k, i in enumerate(self.program.items) if i is item)
        kept_before = [n for n in kept_before   # (its start moves into the functions with it: carried_values)
                       if not ((graph or self.program.final.get(n) is not None) and carried_values.carry(self, n, position))]
        deps = self.deps_of(value)   # (a start carried in is read now)
        self._graph_statement(item, small, names, value, deps, tf_calls)
        for name in kept_before:
            if (i := self.program.final.get(name)) is not None and isinstance(self.program.nodes[i], Computed) \
                    and not isinstance(self.program.nodes[i], Static):   # (computed in a function now)
                raise Refusal.of(small, "host_name_rebound_to_graph", name=name)

    def _feed_dict(self, value: cst.BaseExpression) -> bool:
        """`{x: batch, keep: 0.5}`: a dict of placeholders to host values, a feed (host code: sites.py)."""
        return isinstance(value, cst.Dict) and bool(value.elements) and all(
            isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name)
            and isinstance(self.program.node(e.key.value), Placeholder) and not self.deps_of(e.value)
            for e in value.elements)

    def runs_graph(self, value: cst.BaseExpression) -> bool:
        """`sess.run(...)`, `t.eval()`, `op.run()`: host code executing the graph."""
        for call, _ in self.calls(value):
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                receiver = func.value.value
                if receiver in self.program.sessions or (
                        func.attr.value in ("eval", "run") and receiver in self.program.final) \
                        or isinstance(self.program.node(receiver), Saver):   # (`saver.save(sess, path)`)
                    return True
        return False

    def _graph_statement(self, item, small, names, value, deps, tf_calls) -> None:
        if item.prefix and any(isinstance(self.program.nodes[d], BuilderModule) for d in deps):
            scoped_calls.prefix_calls(self, item.prefix, small, deps)
        # (a nested `tf.gradients`: a node of its own, the statement reading its name is `stmt`)
        stmt, small, value, deps, tf_calls = gradient_calls.lifted(self, item, small, value, deps, tf_calls)
        lifted = len(self.program.nodes)
        call = value if isinstance(value, cst.Call) else None
        q = self.qualified(call.func) if call is not None else None
        statement = Statement(item, small, names, value, deps, tf_calls, call, q)
        rnn_cells.record_fields(self, statement)   # (`state.h` of a state the rewrite stacks: `state[1]`)
        for construct in registry.REGISTRY:
            if construct.build(self, statement):
                break
        for node in self.program.nodes[lifted:]:
            if node.stmt is item.stmt:
                node.stmt = stmt

    def invent(self, base: str) -> str:
        """A name for a value the program does not name, free in the module and the program."""
        if self._module_names is None:
            self._module_names = {n.value for n in name_nodes(self.module)}
        name = fresh_name(base, self._module_names | set(self.program.final) | self.program.invented)
        self.program.invented.add(name)
        return name

