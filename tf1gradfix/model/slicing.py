"""Signatures of execution sites (host_scan), and the backward slice each needs.

A site's signature is what it fetches and which placeholders it feeds; sites
with the same signature share one TF2 function, whose body is the backward
slice of the fetches over the graph statements, in source order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import libcst as cst
from tf1gradfix.constructs import builders, layer_statistics, restarted_iterators, updates, variable_loops
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import (GRADIENT_NODES, BuilderModule, ComputeGradients, Gradients, Layer, LayerLoop,
                                    Node, Optimizer, Placeholder, Static, TrainGroup, TrainOp, Update, Variable,
                                    VariableGroup)
from tf1gradfix.model.sites import Site
from tf1gradfix.cst.syntax import Refusal, graph_ops



@dataclass
class Signature:
    fetches: tuple[str, ...]
    fed: frozenset[str]
    sites: list[Site] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)      # slice, source order
    params: list[str] = field(default_factory=list)     # placeholders, call order
    train: TrainOp | None = None
    trains: list[TrainOp] = field(default_factory=list)   # all fetched (several: constructs/train_together.py)
    returns: list[str] = field(default_factory=list)    # fetched values that reach Python
    inline: bool = False       # only variables/static values: no function needed
    flags: dict[str, str] = field(default_factory=dict)   # mode flag -> "True"/"False" in this function
    fed_values: dict[str, Any] = field(default_factory=dict)   # fed computed value -> dtype (fed_tensors.py)
    name: str = ""
    restarted: bool = False   # reads an iterator that runs start again (constructs/restarted_iterators.py)

    @property
    def one_off(self) -> bool:
        """Run once with nothing fed: a plain function, run eagerly (`tf.function` would
        trace a graph for a single call; the values are the same); so is one reading an
        iterator started again (a traced function would keep the first)."""
        return not self.params and (self.restarted or len(self.sites) == 1 and self.sites[0].once)


def signatures(program: Program, sites: list[Site]) -> list[Signature]:
    """Groups sites by (fetches, fed placeholders) and slices each group."""
    groups: dict[tuple, Signature] = {}
    flags = {n.names[0] for n in program.nodes if isinstance(n, Placeholder) and n.mode_flag}
    for site in sites:
        values = _flag_values(program, site, flags)
        fed = site.fed - flags
        key = (tuple(site.fetches), fed, tuple(sorted(values.items())))
        sig = groups.get(key)
        if sig is None:
            sig = groups[key] = Signature(tuple(site.fetches), fed, flags=values)
            _slice(program, sig, site)
            sig.restarted = restarted_iterators.restarted(program, sig.nodes)
            if sig.restarted and sig.params:
                raise Refusal.of(site.call, "iterator_start_fed_steps", name=sig.params[0])
            layer_statistics.check(program, sig, site)
        sig.sites.append(site)
        site.signature = sig
    return list(groups.values())


def _flag_values(program: Program, site: Site, flags: set[str]) -> dict[str, str]:
    """The literal each mode flag of the run's slice has: fed True/False, or its default.
    Runs with other values of a flag become another function."""
    members = closure(program, [program.final[f] for f in site.fetches])
    out = {}
    for name in sorted(flags):
        if program.final[name] not in members:
            continue
        value = (site.feed or {}).get(name)
        if value is None and site.feed_name is not None:
            raise Refusal.of(site.call, "mode_flag_feed_elsewhere", name=name)
        value = value if value is not None else _placeholder(program, name).default
        if value is None:   # (neither fed nor defaulted: TF1 fails on the run)
            raise Refusal.of(site.call, "placeholder_not_fed", name=name)
        if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
            raise Refusal.of(value if value is not None else site.call, "mode_flag_value", name=name)
        out[name] = value.value
    return out


def _from_variables(program: Program, name: str) -> bool:
    """Is a fed value computed from a trained variable or layer? TF1's gradients reach them
    through its computation; a value computed from constants (a zero state) gives them nothing."""
    return any(program.nodes[i].trained() for i in closure(program, [program.final[name]]))


def _placeholder(program: Program, name: str) -> Placeholder:
    node = program.node(name)
    assert isinstance(node, Placeholder)
    return node


def closure(program: Program, roots, cut: frozenset[int] = frozenset()) -> set[int]:
    """The nodes `roots` are computed from; a fed value (`cut`) is not computed, nor what
    only it needs."""
    seen: set[int] = set()
    stack = [i for i in roots if i not in cut]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(d for d in program.nodes[i].deps if d not in cut)
    return seen


def _slice(program: Program, sig: Signature, site: Site) -> None:
    fetched = [cast(Node, program.node(n)) for n in sig.fetches]
    sig.fed_values = dict(site.fed_dtypes)
    members = closure(program, [n.index for n in fetched], frozenset(program.final[n] for n in sig.fed_values))
    for i in members:
        node = program.nodes[i]
        unsupported = node.refusal_if_run()
        if unsupported is not None:
            raise unsupported
        inner = [j for j in closure(program, node.deps) if isinstance(program.nodes[j], GRADIENT_NODES)] \
            if node.differentiates() else []
        # (an update through a gradient is written with an inner tape, emit.tape.inner_gradients; a tf.gradients
        # of a gradient, which the verifier does not follow, or one more order is not)
        if inner and isinstance(node, Gradients) or \
                any(isinstance(program.nodes[k], GRADIENT_NODES) for j in inner for k in closure(program, program.nodes[j].deps)):
            raise Refusal.of(node.value, "gradient_of_gradient")
    sig.nodes = sorted(members)
    if any(_from_variables(program, n) for n in sig.fed_values) and \
            any(program.nodes[i].differentiates() for i in members):
        # TF1's gradient ops were built through the fed value's computation and still run it
        raise Refusal.of(site.call, "fed_tensor_with_gradients", name=sorted(sig.fed_values)[0])
    updates.check_run(program, site.call, fetched)
    trains = [n for n in fetched if isinstance(n, TrainOp)] + \
        [cast(TrainOp, program.nodes[i]) for n in fetched if isinstance(n, TrainGroup) for i in n.members]
    sig.train = trains[0] if trains else None
    sig.trains = trains   # (several: checked by model.checks, constructs/train_together.py)
    # A TF1 (reference) variable fetched with its own update shares the variable's buffer, so the
    # run returns the value after the update: always for the step counter the train op increments
    # (`_, step = sess.run([train, global_step])`), and for the optimizers measured to show the value
    # after their update in every run (rules/graph_ops.toml fetched_after_update): the function returns
    # it after the update. Others stay refused: TF1 does not order the fetch against their update
    # (verify/TOLERANCES.md: with a momentum update the fetch showed the value before it in 96 runs of 500).
    step = sig.train.step if sig.train is not None else None
    after = graph_ops()["fetched_after_update"]
    measured = all(cast(Optimizer, program.nodes[t.optimizer]).cls in after for t in trains)
    if sig.train is not None and any(isinstance(n, Variable) and n.names[0] != step and (n.resource or not measured)
                                     or isinstance(n, ComputeGradients) for n in fetched):   # (pairs: the values)
        raise Refusal.of(site.call, "variable_fetched_with_update")
    # (an optimize_loss train op gives its loss: the function returns it, emit.tape)
    sig.returns = [name for name, n in zip(sig.fetches, fetched)
                   if not isinstance(n, (TrainOp, TrainGroup, Update)) or isinstance(n, TrainOp) and n.result is not None]
    sig.inline = all(isinstance(n, (Variable, Static)) for n in fetched) and not sig.fed
    placeholders = [n for n in (program.nodes[i] for i in sig.nodes)
                    if isinstance(n, Placeholder) and not n.mode_flag]   # (a flag is a literal in each function)
    for ph in placeholders:
        if ph.names[0] not in sig.fed and ph.default is None:
            raise Refusal.of(site.call, "placeholder_not_fed", name=ph.names[0])
    order = [n.names[0] for n in program.nodes if isinstance(n, Placeholder) and not n.mode_flag]
    plain = [p for p in order if p in sig.fed and _placeholder(program, p).default is None]
    defaults = [p for p in order if _placeholder(program, p).default is not None
                and (p in sig.fed or any(ph.names[0] == p for ph in placeholders))]
    sig.params = plain + [n for n in sig.fed_values] + defaults


def inner_gradients(program: Program, members: list[int]) -> list[int]:
    """`tf.gradients` nodes of a slice that another differentiation of it is taken through
    (a gradient penalty): the outer tape must record them, taken on a tape of their own."""
    outer = [i for i in members if program.nodes[i].differentiates()]
    return [i for i in members if isinstance(program.nodes[i], Gradients)
            and any(i in closure(program, program.nodes[j].deps) for j in outer if j != i)]


def empty_start(program: Program, i: int, own: list[int]) -> bool:
    """`edited = []`: a statement of a step reading nothing, which the tape need not record, is
    written before the tape's block (its one name bound by no statement before it there; a
    loop after it filling the list, `bands.append(...)`, binds it after)."""
    node = program.nodes[i]
    empty = isinstance(node.value, (cst.List, cst.Tuple, cst.Set, cst.Dict)) and not node.value.elements
    earlier = own[:own.index(i)] if i in own else own
    return empty and not node.deps and len(node.names) == 1 and \
        not any(node.names[0] in program.nodes[j].names for j in earlier if j != i)


def gradient_dependent(program: Program, members: list[int]) -> set[int]:
    """Nodes of a slice computed from gradients (they run after the tape)."""
    out: set[int] = set()
    for i in members:
        node = program.nodes[i]
        if isinstance(node, GRADIENT_NODES) or any(d in out for d in node.deps):
            out.add(i)
    return out


def reached_variables(program: Program, root: int) -> list[Node]:
    """Trainable variables (and layers with trainable weights) a loss reads through
    the forward statements, creation order."""
    members = closure(program, [root])
    return [n for n in program.trainable() if n.index in members]


def variable_text(node: Node, naming) -> str:
    """How a trained variable is listed: its name, or a layer's weights unpacked
    (`naming`: the names the emitter gave the layers, emit.naming.Naming)."""
    if isinstance(node, LayerLoop) and node.variables:   # the variables (and layers) a loop created
        return variable_loops.variables_text(node, naming.lists)
    if isinstance(node, LayerLoop):   # the layers a loop created
        return ", ".join(f"*[w for layer in {naming.lists[site]} for w in layer.trainable_variables]"
                         for site in node.sites if site.row["weights"])
    if isinstance(node, BuilderModule):
        return builders.variables_text(node)
    if isinstance(node, VariableGroup):
        return ", ".join(node.subscripts())
    if isinstance(node, Layer):
        return f"*{naming.layers[node]}.trainable_variables"
    return node.names[0]
