"""What a graph block and its step functions need that the rewrite cannot give,
refused once the block is modeled (check_program) and after the runs are sliced
(check_steps), before any text is written (emit/ only writes text).

The messages and codes are those the emitters raised while writing; the checks
follow the order the emitters met them in one function. Given a `found` list, the
checks after slicing collect their refusals in it and go on wherever what follows
does not read the refused piece (each run, optimizer, variable, moved statement is
checked on its own), so one run lists every blocker; without one the first is raised.
check_program still stops: with two sessions or a section that builds no graph, the
runs are not one program's, so the checks of them would judge the wrong thing."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import cast

import libcst as cst
from libcst.metadata import ScopeProvider

from tf1gradfix.constructs import (builder_layers, builder_loops, builders, graph_collections, layer_methods, layers, optimizers,
                                   train_together, updates, var_lists, variables)
from tf1gradfix.cst.syntax import Refusal, bound_names, free_names, literal_index, loads, matches, outer_reads
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import (BuilderModule, ComputeGradients, Gradients, Layer, LayerLoop, LayerNode, Optimizer, OptimizerCall,
                                    Placeholder, RnnCell, RnnRun, Static, Tensor, TrainGroup, TrainOp, Update,
                                    Variable)
from tf1gradfix.model.slicing import Signature, closure, gradient_dependent, reached_variables, signatures


def refuse(found: list | None, refusal: Refusal) -> None:
    """Raise `refusal`, or keep it in `found` (once: two runs may meet one statement)."""
    if found is None:
        raise refusal
    if not any(r.node is refusal.node and r.message == refusal.message for r in found):
        found.append(refusal)


def kept(found: list | None, check, *args):
    """`check(*args)`, its refusal kept in `found` (None then) instead of raised."""
    try:
        return check(*args)
    except Refusal as refusal:
        refuse(found, refusal)
        return None


def sliced(program: Program, sites: list, found: list | None = None) -> tuple[list[Signature], list]:
    """The signatures of the runs that can be sliced, and those runs: a run refused (what
    it fetches cannot be computed in TF2) is left out, the others are sliced still."""
    try:
        return signatures(program, sites), sites
    except Refusal:
        if found is None:
            raise
    fine = [site for site in sites if kept(found, signatures, program, [site]) is not None]   # (run by run)
    return signatures(program, fine), fine


def check_program(program: Program, owner, sessions: list, section, in_sequence: bool = False) -> None:
    """What the owner's graph block must be, once modeled: a section (sections.py) builds
    part of the graph, and one session runs it (each holds its own variable values; TF2 has one),
    or sessions one after another (`in_sequence`: constructs/later_sessions.py checks them once
    the runs are known)."""
    if section is not None and not program.nodes and not program.refused:   # (a part that only runs or closes a session)
        raise Refusal.of(section[0] if section else owner, "section_without_graph")
    if len(sessions) > 1 and not in_sequence:
        raise Refusal.of(sessions[1], "several_sessions")


def check_steps(program: Program, sigs: list[Signature], qualified, found: list | None = None) -> None:
    """Refusal for each run whose function could not be written."""
    for sig in sigs:
        if sig.inline:
            continue
        for i in sig.nodes:
            node = program.nodes[i]
            if isinstance(node, OptimizerCall) and "loss" in node.bound and node.bound.get("var_list") is not None:
                kept(found, _var_list, program, node, qualified)   # (an explicit var_list also trains trainable=False variables)
            if isinstance(node, RnnRun) and node.pairs[0] is None and node.backward is not None \
                    and node.names[0] in sig.returns:
                refuse(found, Refusal.of(node.value, "rnn_outputs_pair_fetched", name=node.names[0]))
            if isinstance(node, Gradients):
                for x in node.xs:
                    if isinstance(program.node(x), Static):
                        refuse(found, Refusal.of(node.value, "gradient_of_constant", name=x))
        for p in sig.params:
            if p in sig.fed_values:   # (a computed value fed: its dtype is read where it is fed)
                continue
            placeholder = program.node(p)
            assert isinstance(placeholder, Placeholder)
            if placeholder.dtype is None:
                refuse(found, Refusal.of(placeholder.value, "placeholder_without_dtype", name=p))
        for i in sig.nodes:
            node = program.nodes[i]
            if isinstance(node, OptimizerCall):
                _update(program, node, qualified, found)
        kept(found, _applied_twice, program, sig)
        kept(found, graph_collections.check_run, program, sig.nodes, qualified)
        if len(sig.trains) > 1:
            kept(found, train_together.check, program, sig.sites[0].call, sig.trains, qualified, closure)


def _update(program: Program, node: OptimizerCall, qualified, found: list | None) -> None:
    """An optimizer's update: its optimizer, then its loss and its variables."""
    kept(found, _optimizer, program, node, qualified)
    kept(found, _loss, program, node, qualified)


def _optimizer(program: Program, node: OptimizerCall, qualified) -> None:
    opt = program.nodes[node.optimizer]
    assert isinstance(opt, Optimizer)
    row = optimizers.optimizer_table().get(opt.cls, {})
    if row.get("sparse", True) is False and any(matches(q, "sparse_gradients")
                                                for j in closure(program, [node.index]) for q in program.nodes[j].called()):
        # (lazy only for a table the update gets slices of: one it does not update is no matter)
        tables = optimizers.sparse_tables(program, node, qualified, closure)
        listed = train_together.updated(program, node, qualified, closure) if tables else set()
        if tables is None or listed is None or tables & {key[0] for key in listed}:
            raise Refusal.of(opt.call, "optimizer_sparse_lazy", optimizer=opt.cls)


def _applied_twice(program: Program, sig: Signature) -> None:
    """One optimizer with state each apply advances (v1 Adam's beta powers) applied twice in
    one run: TF1 does not order the two applies' reads of that state against its updates
    (measured in benchmarks/train_op_order.py: both read it before either advances it, and
    it advances by two steps in a run, or after a hundred runs by one), so no TF2 step
    gives its numbers."""
    seen: dict[int, TrainOp] = {}
    for node in (program.nodes[i] for i in sorted(sig.nodes)):
        if not isinstance(node, TrainOp):
            continue
        opt = program.nodes[node.optimizer]
        state = optimizers.optimizer_table().get(getattr(opt, "cls", ""), {}).get("per_apply_state")
        if state and node.optimizer in seen:
            raise Refusal.of(node.call, "optimizer_applied_twice_in_run", optimizer=opt.names[0] if opt.names else "?",
                             state=state)
        seen[node.optimizer] = node


def _loss(program: Program, node: OptimizerCall, qualified) -> None:
    if node.differentiates():
        loss = node.bound["loss"]
        if not isinstance(loss, cst.Name):
            raise Refusal.of(loss, "loss_expression")
        if loss.value not in program.final:   # (computed by host code, or before the graph was built)
            raise Refusal.of(loss, "loss_not_graph_value", name=loss.value)
        if node.bound.get("var_list") is not None:
            _var_list(program, node, qualified)


def _var_list(program: Program, node: OptimizerCall, qualified) -> None:
    given = node.bound["var_list"]
    if var_lists.members(program, given, node.index, qualified, layers=True) is None:
        raise Refusal.of(given, "var_list_form")


def check_var_lists(program: Program, sigs: list[Signature], qualified, found: list | None = None) -> None:
    """A Keras optimizer is built for the variables of its first update and rejects
    others later; a v1 optimizer trains any list it is given. One optimizer over several
    lists of variables the program makes itself is built for all of them before its first
    update (emit/tape.py), so it keeps one step count as TF1's kept one set of beta powers;
    a layer's weights exist only once the layer is called, so lists of layers stay refused.
    (An update whose loss or var_list check_steps refused trains no list here.)"""
    trained_by: dict[int, set] = {}
    plain: dict[int, bool] = {}
    for sig in sigs:
        if sig.inline:
            continue
        post = gradient_dependent(program, sig.nodes)
        for i in sig.nodes:
            node = program.nodes[i]
            if i not in post or not isinstance(node, OptimizerCall) or not node.differentiates():
                continue
            opt = program.nodes[node.optimizer]
            assert isinstance(opt, Optimizer)
            if not optimizers.optimizer_table().get(opt.cls, {}).get("target", "").startswith("keras."):
                continue
            trained = _trained(program, node, qualified)
            if trained is None:
                continue
            plain[opt.index] = plain.get(opt.index, True) and _made_variables(program, node, qualified)
            if trained_by.setdefault(opt.index, trained) != trained and not plain[opt.index]:
                refuse(found, Refusal.of(opt.call, "optimizer_var_lists_differ"))


def _made_variables(program: Program, node: OptimizerCall, qualified) -> bool:
    """Whether everything an update trains is a variable the program makes itself (no
    layer's weights, no builder's, no loop's), so it exists before any update runs."""
    given = node.bound.get("var_list")
    if given is not None:
        members = var_lists.members(program, given, node.index, qualified, layers=True) or []
        return all(isinstance(program.nodes[e.node], Variable) and e.weight is None and e.site is None
                   for e in members)
    loss = node.bound["loss"]
    listed = program.trainable() if isinstance(node, ComputeGradients) else \
        reached_variables(program, program.final[cast(cst.Name, loss).value])
    return all(isinstance(n, Variable) for n in listed)


def _trained(program: Program, node: OptimizerCall, qualified) -> set | None:
    """What an update trains, one entry per variable or layer as the tape lists them
    (None for a loss that names no graph value: refused where the loss is read)."""
    given = node.bound.get("var_list")
    if given is not None:
        members = var_lists.members(program, given, node.index, qualified, layers=True)
        return None if members is None else {e.key() for e in members}
    loss = node.bound["loss"]
    if not isinstance(node, ComputeGradients) and not (isinstance(loss, cst.Name) and loss.value in program.final):
        return None
    listed = program.trainable() if isinstance(node, ComputeGradients) else \
        reached_variables(program, program.final[cast(cst.Name, loss).value])
    return {n.names[0] if isinstance(n, Variable) else builders.variables_text(n) if isinstance(n, BuilderModule)
            else ("layers", n.index) for n in listed}


def check_results(program: Program, sites, meta, found: list | None = None) -> None:
    """A run of a train op becomes a call whose result is the fetched values only:
    the train op's own result may not be read (`meta`: the module's scope metadata)."""
    for site in sites:
        kept(found, _check_result, program, site, meta)


def _check_result(program: Program, site, meta) -> None:
    sig = cast(Signature, site.signature)
    parent = site.parent
    if len(sig.returns) == len(site.fetches) or isinstance(parent, cst.Expr):
        return
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name) \
            and unread(meta, parent.targets[0].target):
        return   # (`_ = sess.run([train], feed)`: nothing reads what the run gave)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and site.structure != "single":
        target = parent.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(site.fetches):
            for element, fetch in zip(target.elements, site.fetches):
                if isinstance(program.node(fetch), (TrainOp, TrainGroup, Update)) \
                        and not (isinstance(element.value, cst.Name) and discarded(meta, element.value)):
                    if not updates.valued(program.node(fetch)):
                        raise Refusal.of(element.value, "train_result_used")
                    _returns_value(sig, fetch)
            return
    if isinstance(parent, cst.Assign) and site.structure == "single" and updates.valued(program.node(site.fetches[0])):
        _returns_value(sig, site.fetches[0])   # (`n = sess.run(bump)`)
        return
    if isinstance(parent, cst.Subscript) and parent.value is site.call and site.structure != "single":
        index = literal_index(parent)
        if index is not None and -len(site.fetches) <= index < len(site.fetches) \
                and not isinstance(program.node(site.fetches[index]), (TrainOp, TrainGroup, Update)):
            return
    raise Refusal.of(site.call, "train_fetch_result_used")


def _returns_value(sig: Signature, fetch: str) -> None:
    """The step function returns the value of an assignment the program reads (every
    call of it: the call sites keep the names of the values it returns)."""
    if fetch not in sig.returns:
        sig.returns = [f for f in sig.fetches if f in sig.returns or f == fetch]


def discarded(meta, name: cst.Name) -> bool:
    """A train op's result bound to `_`-something or to a name nothing reads."""
    return name.value.startswith("_") or unread(meta, name)


def unread(meta, name: cst.Name) -> bool:
    """Whether nothing reads what this assignment binds to `name` (`_` too: it may be read)."""
    scope = meta.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return False
    for assignment in scope.assignments[name.value]:
        if getattr(assignment, "node", None) is name:
            return not assignment.references
    return False


def check_moved(program: Program, sigs: list[Signature], found: list | None = None) -> None:
    """The statements that move into the step functions (put after the last graph
    statement) read host names when called: those must not change later."""
    positions = [pos for pos, it in enumerate(program.items) if it.node is not None]
    if not positions:
        return
    moved = {i for s in sigs for i in s.nodes if isinstance(program.nodes[i], Tensor)}
    rebound = set()
    for item in program.items[max(positions) + 1:]:
        rebound |= bound_names(item.stmt)
    known = set(program.final) | set(program.helpers) | set(dir(builtins))
    for i in moved:
        node = program.nodes[i]
        if any(isinstance(s, cst.SimpleString) and "\n" in s.value for s in walk(node.stmt) if type(s) is cst.SimpleString):
            refuse(found, Refusal.of(node.stmt, "multiline_string"))
            continue
        late = (outer_reads(node.value) - known) & rebound   # (`[g for g, v in pairs]` reads no host `g`)
        if late:
            refuse(found, Refusal.of(node.stmt, "graph_reads_late_value", name=sorted(late)[0]))


def check_state(program: Program, qualified, code, found: list | None = None) -> None:
    """The variables, layers and builder functions' variables, in the order they are
    written: Refusal for an initial value or layer setting the rewrite cannot write.
    `code`: a node's text, as the rewrite spells it."""
    builder_layers.check_listed(program)
    builder_loops.check_unscoped(program)
    for module in program.nodes:   # (a builder's module class is written first)
        if isinstance(module, BuilderModule):
            for _, _, call, bound, _ in module.variables:
                kept(found, variables.check_initial_value, program, qualified, code, call, bound)
    for item in program.items:
        node = item.node
        if item.drop or node is None or isinstance(node, Static):
            continue
        if isinstance(node, Variable) and node.source != "tensorflow.Variable":
            kept(found, variables.check_initial_value, program, qualified, code, node.value, node.bound)
        elif isinstance(node, LayerLoop):
            for site in node.sites:
                kept(found, layers.check_layer_arguments, site.row, site.call, site.bound, qualified, code)
            for variable in node.variables:
                if variable.source != "tensorflow.Variable":
                    kept(found, variables.check_initial_value, program, qualified, code, variable.call, variable.bound)
        elif isinstance(node, Layer) and not isinstance(node, RnnCell):   # (a cell: constructs.rnn_cells)
            kept(found, layers.check_layer_arguments, node.row, node.value, node.bound, qualified, code)


@dataclass
class ClassNames:
    """The names of a rewritten model class (emit/model_class.py writes it with them)."""

    renamed: dict[str, str] = field(default_factory=dict)    # name -> attribute
    kept_params: list[str] = field(default_factory=list)     # `__init__` parameters a method reads
    stored_params: list[str] = field(default_factory=list)   # ... that an attribute `__init__` sets holds already
    method_names: frozenset[str] = frozenset()


def class_names(plan, init: cst.FunctionDef, init_body: list[cst.BaseStatement],
                methods: list[cst.FunctionDef], layered: bool = False, set_later: frozenset[str] = frozenset()) -> ClassNames:
    """Which names become attributes: every desugared one (`plan`: constructs.model_classes),
    and each name of `__init__` (local or parameter) that a method reads; Refusal where a
    name cannot be one, before the class is written. `init_body`, `methods`: the statements
    `__init__` keeps and the step functions that become methods; `layered`: the class has
    layer methods, whose variables are kept in one attribute (constructs/layer_methods.py);
    `set_later`: attributes other methods set (model_classes.set_after_init)."""
    names = ClassNames(dict(plan.attributes))
    if layered:
        names.renamed[layer_methods.MADE] = layer_methods.MADE
    bound = set().union(*(bound_names(s) for s in init_body)) if init_body else set()
    params = {p.name.value for p in init.params.params[1:]} | {p.name.value for p in init.params.kwonly_params}
    read = set().union(*(free_names(m) for m in methods)) if methods else set()
    if plan.self_name != "self" and "self" in read:   # (the step methods name the instance `self`: emit/model_class.py)
        raise Refusal.of(init, "class_instance_self_taken", instance=plan.self_name)
    method_names = names.method_names = frozenset(m.name.value for m in methods)
    taken = set(plan.members) | method_names
    stored = _stored(plan, init_body, params, set_later)
    for name in sorted(read & (bound | params)):
        if name in names.renamed:
            continue
        if name in params and name in bound:
            raise Refusal.of(init, "class_init_param_rebound", name=name)
        if name in stored:   # (`self.n_in = n_in`: the method reads `self.n_in`)
            names.renamed[name] = stored[name]
            names.stored_params.append(name)
            continue
        attr, k = name, 1
        while attr in taken:
            k += 1
            attr = f"{name}_{k}"
        taken.add(attr)
        names.renamed[name] = attr
        if name in params:
            names.kept_params.append(name)
    kept = {attr for name, attr in names.renamed.items()   # (the rest are gone)
            if (name in bound or name in params) and name not in names.stored_params}
    clash = kept & (method_names | builders.MODULE_ATTRIBUTES)
    if clash:
        raise Refusal.of(init, "class_attribute_clash", attr=sorted(clash)[0])
    return names


def _stored(plan, init_body: list[cst.BaseStatement], params: set[str], set_later: frozenset[str]) -> dict[str, str]:
    """Parameters `__init__` stores as they are (`self.n_in = n_in`, the only binding of
    the attribute, which no other method sets) -> that attribute."""
    out: dict[str, str] = {}
    for stmt in init_body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Name) and small.value.value in params):
            continue
        name = small.targets[0].target.value
        attr = plan.attributes.get(name)
        if attr is not None and attr not in set_later and sum(name in bound_names(s) for s in init_body) == 1:
            out.setdefault(small.value.value, attr)
    return out
