"""One TF1 program rewritten into TF2 (restructure.py is the entry point that calls it).

Stages: where the graph is built and run (owners) -> model (graph) -> execution
sites (sites) and slices (slicing) -> variables and optimizers (state) ->
functions and call sites (tape) -> assembly (assemble). Each owner of a graph
(the module, a function, a model class) is rewritten on its own; whatever the
rewrite cannot translate raises a Refusal, which the entry point reports.
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix import legacy
from tf1gradfix.constructs import (abandoned_sessions, builders, class_initializers, class_settings, contrib, dropout,
                                   graph_extensions, later_sessions, layer_methods, mnist_loader, model_classes,
                                   optimizers, placeholders, sections, session_functions, session_options,
                                   session_params, summaries, unbuilt_methods, variable_factories, variables)
from tf1gradfix.model import owners as owners_model
from tf1gradfix.model.checks import (check_moved, check_program, check_results, check_state, check_steps, check_var_lists,
                                     class_names, kept, sliced)
from tf1gradfix.emit import helpers as helper_classes, model_class
from tf1gradfix.emit.assemble import FLATTEN, Assembler, Replace
from tf1gradfix.emit.state import StateEmitter
from tf1gradfix.emit.tape import TapeEmitter
from tf1gradfix.emit.renames import renamed_code
from tf1gradfix.model.graph import ModelBuilder
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import BuilderModule, Layer, LayerLoop, Optimizer, Tensor
from tf1gradfix.model.parts import LayerSite
from tf1gradfix.model.sites import HostScan
from tf1gradfix.model.owners import GraphCallScan, nested_sessions
from tf1gradfix.cst.printing import code_for_node
from tf1gradfix.cst.syntax import Refusal, TakenNames, fresh_name, loads
from tf1gradfix.model.refusals import Refusals
from tf1gradfix.cst.walk import walk
from tf1gradfix.emit.module_edits import ModuleEdits
from tf1gradfix.emit.optimizer_setup import OptimizerSetup
from tf1gradfix.emit.positions import position, span


class ProgramRewrite(ModuleEdits, OptimizerSetup):
    """One program rewritten: where its graphs are built and run, each owner's model, its
    runs and slices, and the new module assembled from what the emitters write."""

    def __init__(self, module: cst.Module, meta, plan=None, renames=None):
        self.module, self.meta, self.plan, self.renames = module, meta, plan, renames
        # names a new binding could shadow (attribute names and keywords cannot be shadowed)
        self.module_names = frozenset(loads(module))
        self.compat_import: cst.SimpleStatementLine | None = None
        self.module_edits: dict = {}
        self.module_helpers: dict | None = None
        self.builder_edits: dict = {}   # builder function -> its tf.Module class and instance
        self.labels: dict = {}   # the programs' scope strings written anew (Program.labels)
        self.helper_names: dict[str, str] = {}   # a class of rules/helpers.toml the output uses -> its name
        self.helper_fields: dict[str, dict[str, str]] = {}   # its other names and module aliases
        self.helper_imports: list[str] = []   # imports its text needs that the module lacks
        self.loader: mnist_loader.Loader | None = None   # TF1's MNIST tutorial loader, if called
        self.loader_edits: dict = {}
        self.taken = TakenNames(self.module_names)
        self.decided: dict = {}   # id of an `if` a model class's construction decides -> its Decision
        self.class_decisions: dict = {}   # class name -> its ClassDecisions (class_settings)
        self.unbuilt: dict = {}   # class name -> its methods TF1 never builds (unbuilt_methods)

    def code(self, node: cst.CSTNode) -> str:
        if self.renames or self.labels:
            return renamed_code(self.module, node, self.renames or {}, self.labels)
        return code_for_node(self.module, node)

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken)

    def run(self) -> cst.Module | None:
        """The new module; None when the module opens no session (Restructured.no_session)."""
        creations, sessions = self._graph_calls()
        if not sessions:
            return None
        # A graph of constants and ops only is refused like any other: renamed
        # alone, a file that still opens a session does not run on TF2.
        self.loader = mnist_loader.plan(self.module, self.scan.loaders, self.scan.graph_seeds, self.meta.names.qualified)
        if self.loader is not None:
            self._name_helper(mnist_loader.HELPER, self.loader.kept_name)
            self.loader_edits = self.loader.edits(self.helper_names[mnist_loader.HELPER])
        refused = self.loader.refused if self.loader is not None else []
        try:
            new = self._run(creations, sessions)
        except Refusal as refusal:
            raise Refusals.joined(refused, refusal) from None
        if refused:
            raise Refusals.joined(refused)
        if new is not None and self.loader is not None:
            mnist_loader.check_replaced(new, self.loader, self.loader_edits)
        if new is not None:   # (`from tensorflow.contrib import rnn` once its cells are Keras ones)
            new = contrib.without_unread_imports(new)
        if new is None or not self.helper_names:
            return new
        return helper_classes.defined(new, self.helper_names, self.alias, self.helper_fields, self.helper_imports)

    def _name_helper(self, key: str, name: str | None = None) -> None:
        """Names for a helper of rules/helpers.toml the module-level code calls (`name`: one
        the module binds already, to an import that goes), kept from the owners' new names."""
        self.helper_names[key] = name or self.fresh(helper_classes.table()[key]["name"])
        self.helper_fields[key], imports = helper_classes.names_for(key, self.module, self.fresh)
        self.helper_imports += imports
        self.module_names = self.module_names | {self.helper_names[key], *self.helper_fields[key].values()}

    def _run(self, creations, sessions) -> cst.Module | None:
        self._decide()
        unbuilt = unbuilt_methods.found(self.module, self.decided, self.meta.names.qualified, self.plan)
        if unbuilt:   # (graph code TF1 never runs: no owner of a graph)
            inside = {id(n) for methods in unbuilt.values() for m in methods for n in walk(m)}
            creations = [c for c in creations if id(c) not in inside]
            sessions = [c for c in sessions if id(c) not in inside]
        self.unbuilt = unbuilt
        owners: dict[int, cst.CSTNode] = {}     # id -> the function (or module) building a graph
        groups: dict[int, list] = {}            # id -> its graph calls
        opened: dict[int, list] = {}            # id -> its session calls
        for call, session in [(c, False) for c in creations] + [(c, True) for c in sessions]:
            owner = self._owner(call, session)
            owners[id(owner)] = owner
            groups.setdefault(id(owner), []).append(call)
            opened.setdefault(id(owner), [])
            if session:
                opened[id(owner)].append(call)
        for key in [k for k, owner in owners.items() if self._is_builder(owner, groups[k], opened[k])
                    or self._is_factory(owner, opened[k])]:
            del owners[key]   # a builder function or a factory: its variables are made once, where graph code calls it
        top = {id(s) for s in self.module.body}   # (a module-level function is no method: not looked up per owner)
        classes = {k: c for k, o in owners.items()
                   if id(o) not in top and (c := model_classes.model_class(self.module, o, self.decided, self.plan)) is not None}
        if classes and self.plan is None:
            found = next(iter(classes.values()))
            raise model_classes.ClassFound(found, self.class_decisions.get(found.name.value),
                                           tuple(m.name.value for m in self.unbuilt.get(found.name.value, ())))
        self.alias = self._tf_alias()
        self.module_edits = self._module_edits()
        if classes:   # a model class's `__init__` builds the graph; any other owner only runs it
            cls = next(iter(classes.values()))
            owners_model.check_class_owners(cls, owners, classes, groups, opened)
            return cast(cst.Module, self._rewrite_owner(
                model_classes.init_of(cls), (), [c for calls in opened.values() for c in calls], cls))
        if len(owners) == 1:
            key, owner = next(iter(owners.items()))
            parts = sections.split(owner, self.meta.names.qualified) if isinstance(owner, cst.Module) else [()]
            if len(parts) > 1:
                return self._rewrite_sections(cast(cst.Module, owner), parts, opened[key])
            new_owner = self._rewrite_owner(owner, (), opened[key])
            if isinstance(owner, cst.Module):
                return cast(cst.Module, new_owner)
            return self.module.visit(Replace({**self.module_edits, **self.builder_edits, owner: new_owner}))
        # Several functions, each building and running a graph of its own:
        # each is rewritten on its own, all in one pass over the module.
        for key, owner in owners.items():
            owners_model.check_independent(self.scan, owner, groups[key], opened[key])
        others = tuple(owners.values())
        replaced = {owner: self._rewrite_owner(owner, others, opened[key]) for key, owner in owners.items()}
        return self.module.visit(Replace({**self.module_edits, **self.builder_edits, **replaced}))

    def _rewrite_sections(self, module: cst.Module, parts, sessions: list) -> cst.Module:
        """A script in sections (sections.py): each rewritten on its own, in order; new
        names are kept apart across them."""
        body: list[cst.BaseStatement] = []
        earlier: set[str] = set()
        variables = None   # TF1 names of the earlier sections' variables
        self.taken = TakenNames(self.module_names)
        for part in parts:
            sections.check_reads(part, earlier)
            inside = {id(n) for stmt in part for n in walk(stmt)}
            new_body, program = cast("tuple[list[cst.BaseStatement], Program]", self._rewrite_owner(
                module, (), [c for c in sessions if id(c) in inside], section=part))
            variables = sections.check_shared_graph(part, inside, program, variables, self.scan.graph_wide,
                                                    self.meta.names.qualified)
            body += new_body
            earlier |= set(program.final) | program.sessions
        return module.with_changes(body=body)

    def _decide(self) -> None:
        """The `if`s model classes' constructions decide: taken on the module as written,
        then kept in the plan for the desugared one (whose `self.<attr>` are names)."""
        if self.plan is not None:
            cls = next((s for s in self.module.body if isinstance(s, cst.ClassDef) and s.name.value == self.plan.name), None)
            self.decided = self.plan.decisions.nodes(cls) if cls is not None else {}
            return
        self.class_decisions = class_settings.decide_module(self.module, self.meta.names.qualified,
                                                            lambda node: position(self.meta, node)[0])
        for stmt in self.module.body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value in self.class_decisions:
                self.decided.update(self.class_decisions[stmt.name.value].nodes(stmt))

    def _is_builder(self, owner, calls, sessions) -> bool:
        """A function that only makes variables with `tf.get_variable` (under a variable
        scope, for every caller to share), while another function runs the graph."""
        return isinstance(owner, cst.FunctionDef) and not sessions and all(
            self.meta.names.qualified(c.func) == "tensorflow.get_variable" for c in calls)

    def _is_factory(self, owner, sessions) -> bool:
        """A module-level function returning the one `tf.Variable` it makes (variable_factories.py),
        or such a method of a module-level class."""
        return isinstance(owner, cst.FunctionDef) and not sessions and variable_factories.factory_call(
            owner, self.meta.names.qualified) is not None and (owner in self.module.body or any(
                isinstance(c, cst.ClassDef) and owner in c.body.body for c in self.module.body))


    def _host_scan(self, program, nested, host, builder, blocks, received) -> HostScan:
        """A scan of the host code, told what other constructs rewrite (writers, later sessions' inits;
        `received`: the script's functions given the session, when there is no model class)."""
        scan = HostScan(program, self.meta, nested, host, received if host is None else None)
        scan.skip = set(builder.writers.statements) | set(builder.writers.graph_writes) if builder.writers is not None \
            else set()
        if blocks is not None:
            scan.overwritten = later_sessions.overwritten(program, blocks, builder.qualified)
        return scan

    def _rewrite_owner(self, owner, other_owners, sessions: list, cls=None,
                       section=None) -> cst.CSTNode | tuple[list[cst.BaseStatement], Program]:
        """`cls`: the model class whose `__init__` is `owner`; the whole new module is returned.
        `section`: the statements of the module `owner` to rewrite (sections.py); the new
        statements and the program are returned."""
        if section is None:
            self.taken = TakenNames(self.module_names)   # new names are local to the owner
        alias = self.alias
        if self.module_helpers is None:   # once: the module's functions that build no graph
            skip = {id(o) for o in other_owners} | {id(owner)}
            self.module_helpers = {s.name.value: s for s in self.module.body
                                   if isinstance(s, cst.FunctionDef) and id(s) not in skip}
        helpers = dict(self.module_helpers)
        body = cast("list[cst.BaseStatement]",
                    list(owner.body.body) if isinstance(owner, cst.FunctionDef) else list(section or owner.body))
        scope = owner if section is None else cst.Module(body=section)   # (where session options and writers are)
        if cls is not None:   # (with the statements of the methods `__init__` builds the graph with)
            body = model_classes.init_statements(cls, self.plan, self.module)
            self.meta.origins, self.meta.as_written = self.plan.origins, self.plan.as_written   # (model.graph)
            helpers.update(self.plan.helpers(cls))   # (methods that never read `self`, called as functions)
        helpers.update({s.name.value: s for s in body if isinstance(s, cst.FunctionDef)})
        for name in session_functions.running(helpers, body, self.meta.names.qualified):
            del helpers[name]   # (host code of the block's session: sites.HostScan)
        builder = ModelBuilder(self.meta, self.meta.names, self.module)
        if self.scan.session_arguments:   # (`tf.Session(config=...)`: its options go with it)
            builder.options = _own_first(session_options.SessionOptions, scope, cls, self.module, self.meta.names.qualified)
        if self.scan.writers:   # (TensorBoard summaries: the writers' statements are host code)
            builder.writers = _own_first(summaries.Writers, scope, cls, self.module, self.meta.names.qualified)
        if cls is not None:   # (methods `__init__` calls with arguments, or that never read `self`)
            builder.class_attributes = self.plan.attributes
            builder.class_layers = layer_methods.ClassLayers.of(self.plan, helpers, cls)
            builder.decided = self.decided
            for method in self.unbuilt.get(cls.name.value, ()):
                unbuilt_methods.note(builder, method)
            builder.class_initializers = class_initializers.ClassInitializers(
                self.module, cls, owner, body, self.meta.names.qualified,
                lambda node: position(self.meta, node)[0], variables.initializer_rows())
            builder.host_settings = self.plan.decisions.named(self.plan.attributes, model_classes.init_of(cls))
        builder.loader_calls = frozenset(id(c) for c in self.loader.calls) if self.loader is not None else frozenset()
        program = builder.build(owner, body, helpers, alias, collect=True)
        self.meta.legacy = [*getattr(self.meta, "legacy", ()),   # (reported whether the rewrite is made or not)
                            *legacy.graph_findings(program, self.meta.names.qualified, lambda n: position(self.meta, n))]
        self.taken |= program.invented   # (names the model gave values: not the emitter's to give again)
        try:   # (every blocker of the graph statements and the host code in one run: ModelBuilder.build)
            if cls is None:   # (a session that only initializes, left for another: it goes)
                sessions = abandoned_sessions.dropped(program, sessions, self.module, builder)
            blocks = later_sessions.in_sequence(program, sessions, builder.qualified) if cls is None else None
            check_program(program, owner, sessions, section, blocks is not None)
            host = None
            if cls is None:
                nested = nested_sessions([it.stmt for it in program.items if it.node is None and not it.drop
                                           and not isinstance(it.stmt, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef))],
                                          program, self.meta, builder)
                received = session_params.session_parameters(   # (`def evaluate(sess, data)`: the module's helpers)
                    self.module, None, [it.stmt for it in program.items if it.node is None], set(program.sessions))
            else:
                init_sessions = set(program.sessions)   # (`self.sess = tf.Session()` in `__init__`)
                statements = model_classes.host_statements(self.module, cls, self.plan)
                layer_made = layer_methods.prepared(program, builder.class_layers, statements)
                nested = nested_sessions(statements, program, self.meta, builder)
                received = session_params.session_parameters(self.module, cls, statements, program.sessions)
                keeping = session_params.kept_sessions(program, received.removed_params.get(
                    cast(cst.FunctionDef, model_classes.init_of(cls))))
                host = model_classes.ClassHost(   # (`__init__` keeping a session it is given: `self.sess = sess`)
                    statements, [it.stmt for it in program.items if it.node is None and not it.drop], init_sessions,
                    self.plan.graph_attributes(program.final), self.plan.session_attributes(init_sessions | keeping),
                    received)
                # (methods and attributes; `tf.Module`'s own are checked where they are named)
                self.taken |= self.plan.members - model_classes.vanishing(self.plan, program) - builders.MODULE_ATTRIBUTES
            scan = self._host_scan(program, nested, host, builder, blocks, received)
            scan.run()
            unrun = scan.unrun
            if scan.rescan:   # (graph code after the last run rebound a name the runs fetched)
                scan = self._host_scan(program, nested, host, builder, blocks, received)
                scan.unrun_done = set(unrun)
                scan.run()
            if blocks is not None:
                later_sessions.check(program, blocks, scan.sites, builder.qualified)
            graph_extensions.note_unrun(builder, unrun)
            self.meta.legacy += legacy.run_findings(program, scan.sites, self.meta.names.qualified,
                                                    lambda n: position(self.meta, n), lambda n: span(self.meta, n))
        except Refusal as refusal:
            raise Refusals.joined(cast(list, program.refused), refusal) from None
        if program.refused:
            raise Refusals.joined(program.refused)
        found: list = []   # (the whole-program checks' blockers, all of them: model/checks.py)
        sigs, sites = sliced(program, scan.sites, found)
        check_steps(program, sigs, self.meta.names.qualified, found)
        self.labels.update(program.labels)
        state = StateEmitter(program, self.code, self.meta.names.qualified)
        tape = TapeEmitter(program, self.code, self.fresh, state, self.meta)
        tape.indent = 0 if isinstance(owner, cst.Module) and cls is None else 4   # (a model class's methods too)
        indent = 8 if cls is not None else tape.indent   # (the statements of `__init__`)
        tape.block_indent = indent
        if cls is not None:
            tape.attributes = dict(self.plan.attributes)
            tape.known = model_classes.definition_names(self.module, cls, self.plan)
        for name in dict.fromkeys(p for s in sigs if not s.inline for p in s.params if p not in s.fed_values):
            kept(found, placeholders.check_dtype, program.node(name), tape.known)   # (what the signatures cannot read)
        fed = self._check_writing(program, sigs, sites, scan, state, found, builder.writers)
        if found:
            raise Refusals.joined(found)
        self._optimizers(program, tape, fed)
        naming = state.naming
        for key in helper_classes.used(program):   # (one class per module, whichever owner uses it)
            if key not in self.helper_names:
                self.helper_names[key] = self.fresh(helper_classes.table()[key]["name"])
        naming.helpers = self.helper_names
        for node in program.nodes:   # a builder function: a tf.Module class, its instance the function's name
            if isinstance(node, BuilderModule) and node.method_of is None:
                helper = node.builder
                naming.classes[node] = self.fresh("".join(p.capitalize() for p in helper.name.value.split("_")) or "Builder")
                gap = 2 if any(helper is stmt for stmt in self.module.body) else 1
                self.builder_edits[helper] = cst.FlattenSentinel(builders.class_statements(
                    node, naming.classes[node], alias, state.builder_variable, gap, state.layer_constructor,
                    dropout.writer(builder, self.code)))
        self.builder_edits.update(program.edits)   # (what constructs changed inside the functions the graph calls)
        for node in program.nodes:   # a layer's variable: its TF1 name where that is free
            if not isinstance(node, (Layer, LayerLoop)):
                continue
            for layer in node.sites if isinstance(node, LayerLoop) else [node]:   # a loop's layers: a list per call site
                base = layer.base
                naming.layers[layer] = self.fresh(base if base not in self.taken else f"{base}_layer")
                if isinstance(node, LayerLoop):
                    naming.lists[cast(LayerSite, layer)] = self.fresh(f"{base}_layers")
            for site in node.variables if isinstance(node, LayerLoop) else []:   # a loop's variables: a list per statement
                naming.lists[site] = self.fresh(f"{site.local}_variables")
        tape.name_functions(sigs)
        shared = tape.helper(sigs)
        texts = []
        if shared[0] is not None:
            texts.append(tape.helper_text(*shared))
        texts += [tape.function_text(s, shared) for s in sigs if not s.inline]
        if builder.writers is not None:   # `writer.add_summary(s, step)` -> a function writing each value
            edits, writing = builder.writers.edits(self.fresh, alias, self.code,
                                                   lambda node, message: builder.note(node, "TFG103", message))
            if writing and cls is not None:   # (the script's writers: the function goes before the first one)
                first = next(iter(builder.writers.statements))
                edits[first] = cst.FlattenSentinel([cst.parse_statement(writing + "\n"), edits[first]])
            else:
                texts += [writing] if writing else []
        moved = {i for s in sigs for i in s.nodes if isinstance(program.nodes[i], Tensor)}
        # node -> its replacement: a node, a sentinel, or a function of the updated node
        replacements: dict[cst.CSTNode, Any] = dict(tape.call_site(site) for site in scan.sites)
        if builder.writers is not None:
            replacements.update(edits)
        replacements.update(self.builder_edits)
        replacements.update(self.loader_edits)
        if isinstance(owner, cst.Module):
            replacements.update(self.module_edits)
        if cls is None:   # (the session its helpers were given goes: session_params)
            replacements.update(received.edits())
        for call, text in scan.variable_lists.items():   # (a list of layers' weights: written once they are named)
            replacements[call] = cst.parse_expression(text(naming) if callable(text) else text)
        for run, text in scan.starts.items():   # (an iterator started again: the statement making it)
            replacements[run] = cast(cst.SimpleStatementLine, cst.parse_statement(text + "\n")).body[0]
        for removed in scan.removed | (builder.options.statements if builder.options else set()):
            replacements[removed] = cst.RemovalSentinel.REMOVE
        for block in nested:   # a session `with` in host code: its body, dedented; `sess = tf.Session()`: gone
            replacements[block] = FLATTEN if isinstance(block, cst.With) else cst.RemovalSentinel.REMOVE
        replacements.update(scan.feed_replacements())   # `{x: v}` -> `{"x": v}`, passed as `f(**feed)`
        if cls is not None:   # the functions become methods, the runs calls of them on the instance
            assembler = Assembler(program, state, tape, replacements, indent=indent)
            assembler.before = {k: [cst.parse_statement(line + "\n") for line in lines] for k, lines in layer_made.before.items()}
            init_body = assembler.body([], moved, owner)
            methods = [s for text in texts for s in cst.parse_module(text + "\n").body]
            layered = {s.name.value: layer_methods.methods(layer_made.nodes[s.name.value], s, self.plan.attributes, alias,
                                                           state.builder_variable, state.layer_constructor)
                       if s.name.value in layer_made.nodes else [layer_methods.reattributed(
                           cast(cst.FunctionDef, s.visit(Replace(program.edits))), self.plan.attributes, self.plan.self_name)]
                       for s in cls.body.body if isinstance(s, cst.FunctionDef)
                       and (s.name.value in self.plan.layered or s.name.value in layer_made.nodes)}
            edits = cast(model_classes.ClassHost, host).session_params.edits()
            replacements.update(edits)
            replacements.update(self.module_edits)
            # (a constructor parameter's initializers: the Keras ones its variables are made with;
            # the session it was given goes: session_params)
            initializers = builder.class_initializers.edits(lambda call: state.initializer(call)[0])
            replacements.update(initializers)
            given = cast(cst.Parameters, edits.get(owner.params, owner.params))
            params = cast("cst.Parameters | None", given.visit(Replace(initializers)) if initializers
                          else given if given is not owner.params else None)
            # (its attribute names, refused before the class is written)
            chosen = class_names(self.plan, owner, init_body, cast("list[cst.FunctionDef]", methods), bool(layered),
                                 frozenset(model_classes.set_after_init(cls, self.plan)))
            replacements[cls] = model_class.rewritten_class(self.plan, owner, alias, init_body, methods, chosen, layered,
                                                            params)
            return self.module.visit(Replace(replacements, layout_blocks=True))
        assembler = Assembler(program, state, tape, replacements, self.module, indent)
        assembler.first_run = scan.first_site_item if scan.first_step_item is None else scan.first_step_item
        new_body = assembler.body(texts, moved, owner)
        if section is not None:
            return new_body, program
        if isinstance(owner, cst.Module):
            return owner.with_changes(body=new_body)
        return owner.with_changes(body=owner.body.with_changes(body=new_body))

    def _graph_calls(self):
        self.scan = GraphCallScan(self.meta.names)
        self.module.visit(self.scan)
        return self.scan.creations, self.scan.sessions

    def _owner(self, call: cst.Call, session: bool = False):
        return owners_model.owner_of(self.scan, call, self.module, session, self.decided)

    def _tf_alias(self) -> str:
        alias, self.compat_import = owners_model.tf_alias(self.module, self.code)
        return alias

    def _check_writing(self, program, sigs, sites, scan: HostScan, state: StateEmitter, found: list, writers) -> set[int]:
        """Every refusal left once the runs are sliced, in the order the text would meet
        them, kept in `found` before any is written; the optimizers whose learning rate is
        fed or scheduled."""
        qualified = self.meta.names.qualified
        fed = {node.index for node in program.nodes if isinstance(node, Optimizer) and kept(found, optimizers.check_settings,
               program, node, state.scheduled_rate(node), state.learning_rate(node), qualified)}
        check_var_lists(program, sigs, qualified, found)
        check_results(program, sites, self.meta, found)
        check_moved(program, sigs, found)
        check_state(program, qualified, self.code, found)
        if writers is not None:   # (the summary writers' statements and `add_summary` calls)
            kept(found, writers.check, program, scan)
        return fed


def _own_first(kind, scope, cls, module, qualified):
    """Session options or summary writers of the block (`kind` over it); for a model class, the
    class's own, else the module's (the script around it makes them: script_builds.py)."""
    if cls is None:
        return kind(scope, qualified)
    own = kind(cls, qualified)
    return own if own.statements else kind(module, qualified)
