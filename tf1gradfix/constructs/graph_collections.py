"""Variable collections read by graph code that runs: the L2 term over the weights,

    l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])

When the statement runs in TF1, the collection holds exactly the variables made
before it, in creation order (a `tf.layers` layer's `dense/kernel`, `dense/bias`
included; optimizer slots are not trainable). In TF2 the call becomes that list,
written where the statement is, in the step function, and the comprehension stays
over it. Its filter on `v.name` is evaluated on TF1's names; it is kept where it
selects the same variables on the names TF2 gives them (a Keras layer's weights are
`kernel`, `bias`), otherwise the comprehension iterates over what it selected in
TF1 and the filter goes, with a note. The statement reads the selected variables,
so a loss through it trains each, as TF1's `minimize` did. A layer's weights exist
once Keras called it: each run must call the layer before the statement. After a loop
that made variables, the list holds them iteration by iteration under each iteration's
TF1 name, written from the loop's lists (loop_lists.listed_text).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import cell_collections, loop_lists, var_lists, variable_factories
from tf1gradfix.cst.syntax import Refusal, loads
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import (BuilderModule, Computed, Layer, LayerCall, LayerLoop, LayerLoopCall, OptimizerCall,
                                    RnnRun, Variable, VarList)
from tf1gradfix.model.parts import CollectionRead, LayerSite, Listed, VariableSite

NAME_READS = ("name", "op")   # what a filter reads of a listed variable


def model(builder, value: cst.BaseExpression, tf_calls) -> tuple[list[CollectionRead], set[cst.Call], set[int]]:
    """(the collections `value` reads, their calls, the variables they make it read); Refusal
    where the list or its filter cannot be written exactly."""
    program = builder.program
    comps = {id(f.iter): f for f in walk(value) if type(f) is cst.CompFor}
    reads: list[CollectionRead] = []
    calls: set[cst.Call] = set()
    for call, _ in tf_calls:
        if not var_lists.is_collection(call, builder.qualified):
            continue
        written = var_lists.entries(program, call, len(program.nodes), builder.qualified, layers=True)
        if written is None:
            continue
        calls.add(call)
        reads.append(CollectionRead(call, written))
    for name in (n for n in walk(value) if type(n) is cst.Name and id(n) in comps):   # `for v in tvars` of a list
        listed = program.node(name.value)
        if isinstance(listed, VarList) and _reads_names(comps[id(name)]):
            reads.append(CollectionRead(name, _entries(program, listed, name)))
    if not reads:
        return [], set(), set()
    makers = sorted(n for n in set(loads(value)) if builder.is_builder(n)) + \
        ([cast(str, variable_factories.called(builder, value))] if variable_factories.called(builder, value) else [])
    if makers:
        raise Refusal.of(value, "collection_read_with_builder", function=makers[0])
    evaluated: set[int] = set()
    read: set[int] = set()
    for r in reads:
        comp = comps.get(id(r.source))
        chosen = r.written if comp is None else _filtered(builder, comp, r, evaluated)
        module = next((program.nodes[e.node] for e in chosen if isinstance(program.nodes[e.node], BuilderModule)), None)
        if module is not None:   # (a statement reaches a builder's module by calling it: builder_statistics)
            raise Refusal.of(r.source, "collection_builder_variables", function=cast(BuilderModule, module).var)
        cell_collections.check_use(builder, value, r, chosen)
        read |= {e.node for e in chosen}
    check_names(value, evaluated)
    return [r for r in reads if isinstance(r.source, cst.Call) or r.comp is not None], calls, read


def _entries(program, listed: VarList, where: cst.CSTNode) -> list[Listed]:
    """The variables of a list bound to a name, for its filter (named variables, a loop's)."""
    if any(e.tf1 is None or isinstance(program.nodes[e.node], BuilderModule) for e in listed.members):
        raise Refusal.of(where, "collection_filter_builder")
    return list(listed.members)


def _reads_names(loop: cst.CompFor) -> bool:
    return any(type(a) is cst.Attribute and a.attr.value in NAME_READS for i in loop.ifs for a in walk(i))


def _filtered(builder, loop: cst.CompFor, read: CollectionRead, evaluated: set[int]) -> list[Listed]:
    """What `[... for v in COLLECTION if FILTER(v.name)]` selects, on TF1's names; the filter
    stays where TF2's names select the same (else `read.comp`, `read.chosen`: written out)."""
    if not loop.ifs:
        return read.written
    if not isinstance(loop.target, cst.Name) or len(loop.ifs) > 1:
        raise Refusal.of(loop, "collection_filter_unevaluated")
    var, test = loop.target.value, loop.ifs[0].test
    chosen, same = [], True
    for entry in read.written:
        if entry.parts:   # an RNN cell's Keras weight: decided on the TF1 variables it holds (cell_collections)
            verdict = cell_collections.verdict(builder.program, entry, lambda name: var_lists.predicate(
                test, var, name, name[:-2]), loop.ifs[0])
            if verdict is None:
                raise Refusal.of(loop.ifs[0], "collection_filter_unevaluated")
            chosen += [entry] if verdict else []
            same = False
            continue
        if entry.tf1 is None:   # (a builder's module; every variable has TF1's name: variables.checked)
            raise Refusal.of(loop, "collection_filter_builder")
        verdict = var_lists.predicate(test, var, entry.tf1, entry.tf1[:-2])
        if verdict is None:
            raise Refusal.of(loop.ifs[0], "collection_filter_unevaluated")
        if verdict:
            chosen.append(entry)
        same = same and entry.tf2 is not None and var_lists.predicate(test, var, entry.tf2, None) == verdict
    evaluated |= {id(a) for a in walk(loop.ifs[0]) if type(a) is cst.Attribute}
    if not same:   # (TF2 names a Keras layer's weights `kernel`, and a variable has no `op`)
        read.comp, read.chosen = loop, chosen
        builder.note(loop.ifs[0], "TFG304", "the filter was evaluated on TF1's variable names (TF2 names them "
                     "otherwise, a Keras layer's weights `kernel`, `bias`): the comprehension iterates over the "
                     "variables it selected")
    return chosen


def check_names(value: cst.CSTNode, evaluated: set[int] | frozenset[int] = frozenset()) -> None:
    """No other code of the statement may read a variable's name: TF2's names differ."""
    for a in walk(value):
        if type(a) is cst.Attribute and a.attr.value in NAME_READS and id(a) not in evaluated:
            raise Refusal.of(a, "collection_names_read", attr=a.attr.value)


def check_run(program, nodes: list[int], qualified) -> None:
    """A Keras layer makes its weights at its first call: a run listing them must call the
    layer before (in TF1 the collection listed the layers made, that is, called, before)."""
    members = set(nodes)
    for i in nodes:
        node = program.nodes[i]
        if isinstance(node, Computed):
            for read in node.collections:
                check_called(program, read.chosen if read.comp is not None else read.written, members, i, node.value)
        elif isinstance(node, OptimizerCall) and node.bound.get("var_list") is not None:   # (a var_list with layers)
            listed = var_lists.members(program, node.bound["var_list"], node.index, qualified, layers=True)
            check_called(program, listed or [], members, i, node.bound["var_list"])


def check_called(program, entries: list[Listed], members: set[int], i: int, where: cst.CSTNode) -> None:
    """Refusal unless the run's nodes `members` call, before node `i`, each layer (or RNN) whose
    weights `entries` lists."""
    for entry in entries:
        if entry.parts and not any(isinstance(program.nodes[j], RnnRun) and entry.node in
                                   cell_collections.run_makes(program, cast(RnnRun, program.nodes[j]))
                                   for j in members if j < i):
            raise Refusal.of(where, "collection_layer_not_called", layer=program.nodes[entry.node].names[0])
        if entry.parts or entry.weight is None:
            continue
        if not any(isinstance(program.nodes[j], LayerCall) and cast(LayerCall, program.nodes[j]).layer == entry.node
                   or isinstance(program.nodes[j], LayerLoopCall)
                   and cast(LayerLoopCall, program.nodes[j]).layer_loop == entry.node for j in members if j < i):
            raise Refusal.of(where, "collection_layer_not_called", layer=_layer_name(program, entry))


def _layer_name(program, entry: Listed) -> str:
    """TF1's name of the layer a listed weight is of (a loop's: in its iteration)."""
    if isinstance(entry.site, LayerSite):
        return entry.site.tf1_names[entry.iteration]
    return cast(Layer, program.nodes[entry.node]).full_name


def list_text(program, naming, entries: list[Listed]) -> list[str]:
    """How the step function writes listed variables (`w1`, `dense.kernel`; a loop's from the
    lists the emitter named, loop_lists.listed_text), in their order (`naming`: emit.naming)."""
    out: list[str] = []
    k = 0
    while k < len(entries):
        entry = entries[k]
        if entry.site is not None:   # (a loop's entries come together: it is one node)
            end = next((j for j in range(k, len(entries)) if entries[j].node != entry.node), len(entries))
            out += loop_lists.listed_text(cast(LayerLoop, program.nodes[entry.node]), entries[k:end], naming.lists)
            k = end
            continue
        out.append(entry_text(program, naming, entry))
        k += 1
    return out


def list_expression(texts: list[str]) -> str:
    """A list of the texts list_text wrote (a loop's comprehension alone is the list)."""
    return texts[0][1:] if len(texts) == 1 and texts[0].startswith("*[") else f"[{', '.join(texts)}]"


def entry_text(program, naming, entry: Listed) -> str:
    """How the step function names one listed variable (`w1`, `dense.kernel`, `W_variables[1]`)."""
    if entry.site is not None:
        return loop_lists.entry_text(entry, naming.lists)
    if entry.text is not None:
        return entry.text
    return f"{naming.layers[program.nodes[entry.node]]}.{entry.weight}"


def untrained(program, entries: list[Listed]) -> list[Listed]:
    """The variables of a list that a tape does not watch by itself (`trainable=False`)."""
    return [e for e in entries if e.site is None and isinstance(program.nodes[e.node], Variable)
            and not cast(Variable, program.nodes[e.node]).trainable
            or isinstance(e.site, VariableSite) and not e.site.trainable]


def rewritten(stmt: cst.CSTNode, node: Computed, text) -> cst.CSTNode:
    """`stmt` with each collection call written as its list (`text(entries)`: their texts,
    list_text), and a filter TF2 could not keep replaced by what it selected."""
    if not node.collections:
        return stmt
    done: list[CollectionRead] = []

    def listing(entries: list[Listed]) -> cst.BaseExpression:
        return cst.parse_expression(list_expression(text(entries)))

    class Lists(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            for read in node.collections:
                if read.comp is None and original.deep_equals(read.source):
                    done.append(read)
                    return listing(read.written)
            return updated

        def leave_CompFor(self, original: cst.CompFor, updated: cst.CompFor) -> cst.CompFor:
            for read in node.collections:
                if read.comp is not None and original.deep_equals(read.comp):
                    done.append(read)
                    return updated.with_changes(iter=listing(read.chosen), ifs=[])
            return updated

    out = cast(cst.CSTNode, stmt.visit(Lists()))
    assert all(any(r.source.deep_equals(d.source) for d in done) for r in node.collections), "a collection not rewritten"
    return out
