"""RNN cell combinators: DropoutWrapper, MultiRNNCell, bidirectional_dynamic_rnn.

    d = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=keep)
    m = tf.nn.rnn_cell.MultiRNNCell([d, top])
    outputs, state = tf.nn.dynamic_rnn(m, x, initial_state=s0)
become (in the steps; the wrapper and the stack themselves are written nowhere)
    outputs, *state_layer0 = cell_layer(x, initial_state=[s0[0][1], s0[0][0]])
    state_layer0 = tf.stack(state_layer0[::-1])
    outputs = tf.nn.dropout(outputs, rate=1 - keep)
    outputs, *state_layer1 = top_layer(outputs, initial_state=[s0[1][1], s0[1][0]])
    ...
    state = tf.stack([state_layer0, state_layer1])

A MultiRNNCell in a dynamic_rnn runs its cells one after the other at every
step; its layers run one after the other over the whole sequence compute the
same numbers (a layer reads only the one below), also past a sequence's
length (each layer's mask keeps its state and gives zeros). Its state, a tuple
with one state per layer, is stacked like an LSTM's (c, h): `state[k]` is
layer k's, so TF1's indexing reads the same. DropoutWrapper's output dropout
draws a mask at every step of TF1's loop; the same rate over the whole
sequence gives the same distribution, but the verifier can only compare it
where the rate is 0 (a keep probability fed 1.0), so a literal keep other than
1 is refused. bidirectional_dynamic_rnn runs the backward cell over each
sequence reversed within its length and reverses its outputs back: a Keras
layer with go_backwards=True and the lengths' mask reads the padding first,
which it skips (the state stays, the output is zeros), then the sequence
reversed; its outputs reversed along time are TF1's.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs.losses import ATOMS
from tf1gradfix.cst.syntax import Refusal, bound_args, literal_string, name_nodes
from tf1gradfix.model.nodes import RnnCell, RnnRun, RnnStack, Statement

RNN_CELL = ("tensorflow.nn.rnn_cell.", "tensorflow.contrib.rnn.")
DROPOUT = [p + "DropoutWrapper" for p in RNN_CELL]
DROPOUT_PARAMS = ["cell", "input_keep_prob", "output_keep_prob", "state_keep_prob", "variational_recurrent",
                  "input_size", "dtype", "seed", "dropout_state_filter_visitor"]
MULTI = [p + "MultiRNNCell" for p in RNN_CELL]
BIDIRECTIONAL = "tensorflow.nn.bidirectional_dynamic_rnn"
BIDIRECTIONAL_PARAMS = ["cell_fw", "cell_bw", "inputs", "sequence_length", "initial_state_fw", "initial_state_bw",
                        "dtype", "parallel_iterations", "swap_memory", "time_major", "scope"]
BIDIRECTIONAL_DROPPED = {"parallel_iterations", "swap_memory", "scope"}   # (as dynamic_rnn's: rnn_cells.py)
ONE = ("1.0", "1", "1.")
SUFFIX = "_layer"   # the state of layer k of a stack: `<state>_layer<k>`


def build(builder, s: Statement) -> bool:
    """The node of a wrapper, a stack or a bidirectional run; False if none of them."""
    if s.q in DROPOUT and s.call is not None:
        _dropout(builder, s)
        return True
    if s.q in MULTI and s.call is not None:
        _multi(builder, s)
        return True
    if s.q == BIDIRECTIONAL and s.call is not None:
        _bidirectional(builder, s)
        return True
    return False


def _pair(target: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 \
            and all(isinstance(e.value, cst.Name) for e in target.elements):
        return tuple(cast(cst.Name, e.value).value for e in target.elements)
    return None


def pair_target_names(target: cst.BaseExpression) -> tuple[str, ...] | None:
    """The names bound by `(out_fw, out_bw), (state_fw, state_bw) = bidirectional_dynamic_rnn(...)`
    (either part also one name), or None for another target."""
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
        return None
    parts = [_pair(e.value) for e in target.elements]
    return None if None in parts else tuple(n for part in parts for n in cast(tuple, part))


def _pairs(s: Statement):
    """(outputs name or None, (fw, bw) names or None) for each of the outputs and the states."""
    target = s.small.targets[0].target
    parts = [_pair(e.value) for e in cast(cst.Tuple, target).elements]
    return [(p[0], None) if len(p) == 1 else (None, p) for p in cast(list, parts)]


def cell_of(builder, expr: cst.BaseExpression | None):
    """The RnnCell or RnnStack node `expr` names, or None."""
    node = builder.program.node(expr.value) if isinstance(expr, cst.Name) else None
    return node if isinstance(node, (RnnCell, RnnStack)) else None


def layers_of(program, index: int) -> list[tuple[RnnCell, cst.BaseExpression | None, cst.BaseExpression | None]]:
    """The cells a run of node `index` runs, bottom up, with their input and output keep probabilities."""
    node = program.nodes[index]
    if isinstance(node, RnnCell):
        return [(node, None, None)]
    return [(cast(RnnCell, program.nodes[i]), keep_in, keep_out) for i, keep_in, keep_out in node.layers]


def state_dims(program, index: int, code) -> list[str]:
    """The shape of node `index`'s state without the batch (an LSTM's c and h stacked, a stack's layers)."""
    node, (cell, _, _) = program.nodes[index], layers_of(program, index)[0]
    dims = (["2"] if cell.row["state"] == "lstm" else []) + [code(cell.units)]
    return ([str(len(node.layers))] + dims) if isinstance(node, RnnStack) and node.multi else dims


def _dropout(builder, s: Statement) -> None:
    call = cast(cst.Call, s.call)
    bound = bound_args(call, DROPOUT_PARAMS, call)
    code = builder.module.code_for_node
    inner = cell_of(builder, bound.get("cell"))
    if s.one is None or inner is None or isinstance(inner, RnnStack) and inner.multi:
        raise Refusal.of(call, "rnn_wrapper_form", api=s.q)
    if isinstance(inner, RnnStack) or any(isinstance(builder.program.nodes[i], RnnStack) for i in s.deps):
        raise Refusal.of(call, "rnn_wrapper_form", api=s.q)
    refused = sorted(p for p in set(bound) - {"cell", "input_keep_prob", "output_keep_prob"}
                     if not (p == "state_keep_prob" and code(bound[p]) in ONE))
    if refused:
        raise Refusal.of(call, "layer_arguments", api=s.q, args=", ".join(refused),
                         detail="the rewrite drops the inputs and outputs of the steps only, with a new mask at every step")
    keeps = []
    for param in ("input_keep_prob", "output_keep_prob"):
        keep = bound.get(param)
        if keep is not None and isinstance(keep, (cst.Float, cst.Integer)) and code(keep) not in ONE:
            raise Refusal.of(keep, "rnn_dropout_literal", param=param)
        keeps.append(None if keep is None or code(keep) in ONE else keep)
    deps = set(s.deps) | (builder.deps_of(bound["input_keep_prob"]) if "input_keep_prob" in bound else set()) \
        | (builder.deps_of(bound["output_keep_prob"]) if "output_keep_prob" in bound else set())
    builder.add(s.item, RnnStack, s.names, call, deps, layers=[(inner.index, keeps[0], keeps[1])], multi=False)
    builder.own(call, but=keeps)   # (its keep probabilities: a dropout where the run is, checked as a tensor's)


def _multi(builder, s: Statement) -> None:
    call = cast(cst.Call, s.call)
    bound = bound_args(call, ["cells", "state_is_tuple"], call)
    code = builder.module.code_for_node
    cells = bound.get("cells")
    if _repeated(builder, cells):   # (`[cell] * n`, `[cell for _ in range(n)]`: one cell object n times)
        raise Refusal.of(call, "rnn_stack_shared_cell", api=s.q)
    if s.one is None or not isinstance(cells, cst.List) or not cells.elements \
            or code(bound.get("state_is_tuple", cst.Name("True"))) != "True":
        raise Refusal.of(call, "rnn_stack_form", api=s.q)
    nodes = [cell_of(builder, e.value) for e in cells.elements]
    if any(n is None or isinstance(n, RnnStack) and n.multi for n in nodes):
        raise Refusal.of(call, "rnn_stack_form", api=s.q)
    layers = [(n.index, None, None) if isinstance(n, RnnCell) else cast(RnnStack, n).layers[0] for n in nodes]
    if len({i for i, _, _ in layers}) != len(layers):   # (TF1 runs the one cell's weights in every layer)
        raise Refusal.of(call, "rnn_stack_shared_cell", api=s.q)
    kinds = {(builder.program.nodes[i].row["state"], code(builder.program.nodes[i].units)) for i, _, _ in layers}
    if len(kinds) != 1:
        raise Refusal.of(call, "rnn_stack_layers_differ", api=s.q)
    builder.add(s.item, RnnStack, s.names, call, set(s.deps), layers=layers, multi=True)
    builder.own(call)


def _repeated(builder, cells) -> bool:
    if isinstance(cells, cst.BinaryOperation) and isinstance(cells.operator, cst.Multiply):
        return any(isinstance(side, cst.List) and len(side.elements) == 1 and cell_of(builder, side.elements[0].value)
                   is not None for side in (cells.left, cells.right))
    return isinstance(cells, cst.ListComp) and cell_of(builder, cells.elt) is not None


def take(builder, cell: RnnCell | RnnStack, where: cst.CSTNode, backward: bool, masked: bool) -> None:
    """Marks the cells a run runs: the direction they run in (one per cell) and its mask."""
    for node, _, _ in layers_of(builder.program, cell.index):
        if node.backward is not None and node.backward != backward:
            raise Refusal.of(where, "rnn_cell_both_directions", name=node.names[0])
        node.backward = backward
        node.masked = node.masked or masked


def free_names(builder, names: list[str], where: cst.CSTNode) -> None:
    """The names the rewrite adds for a run's parts must not be the program's."""
    used = {n.value for n in name_nodes(builder.module)}
    taken = [n for n in names if n in builder.program.final or n in used]
    if taken:
        raise Refusal.of(where, "rnn_part_name_taken", name=taken[0])


def not_read(names, exprs, where: cst.CSTNode) -> None:
    """The parts a run writes first must not be read by what it reads after them (a
    later layer's mask or start, the backward direction's input)."""
    read = {n.value for e in exprs if e is not None for n in name_nodes(e)}
    clash = sorted(set(names) & read - {"_"})
    if clash:
        raise Refusal.of(where, "rnn_part_name_taken", name=clash[0])


def _bidirectional(builder, s: Statement) -> None:
    call = cast(cst.Call, s.call)
    bound = bound_args(call, BIDIRECTIONAL_PARAMS, call)
    refused = sorted(set(bound) - set(BIDIRECTIONAL_PARAMS[:7]) - BIDIRECTIONAL_DROPPED)
    if refused:
        raise Refusal.of(call, "layer_arguments", api=BIDIRECTIONAL, args=", ".join(refused),
                         detail="the rewrite writes Keras RNN layers over batch-major inputs")
    fw, bw = cell_of(builder, bound.get("cell_fw")), cell_of(builder, bound.get("cell_bw"))
    if fw is None or bw is None or pair_target_names(s.small.targets[0].target) is None or "inputs" not in bound:
        raise Refusal.of(call, "layer_target", api=BIDIRECTIONAL)
    for cell, start in ((fw, "initial_state_fw"), (bw, "initial_state_bw")):
        if start not in bound and "dtype" not in bound:
            raise Refusal.of(call, "layer_arguments", api=BIDIRECTIONAL, args=f"{start} or dtype",
                             detail="TF1 needs one of them to make the first state")
    if any(isinstance(c, RnnStack) and c.multi for c in (fw, bw)):
        raise Refusal.of(call, "rnn_bidirectional_stack")
    if fw.index == bw.index or layers_of(builder.program, fw.index)[0][0] is layers_of(builder.program, bw.index)[0][0]:
        raise Refusal.of(call, "rnn_stack_shared_cell", api=BIDIRECTIONAL)
    code = builder.module.code_for_node
    (outputs, output_pair), (states, state_pair) = _pairs(s)
    dims = {tuple(state_dims(builder.program, c.index, code)) for c in (fw, bw)}
    if states not in (None, "_") and len(dims) != 1:
        raise Refusal.of(call, "rnn_bidirectional_states_differ")
    lengths = bound.get("sequence_length")
    if not isinstance(bound["inputs"], cst.Name):
        raise Refusal.of(call, "layer_arguments", api=BIDIRECTIONAL, args="inputs",
                         detail="both directions read an input that has a name")
    free_names(builder, [f"{name}_{d}" for name in (outputs, states) if name not in (None, "_") for d in ("fw", "bw")],
               call)
    first = [(output_pair or (f"{outputs}_fw",))[0], (state_pair or (f"{states}_fw",))[0]]
    not_read(first + ([outputs, states] if output_pair is None else []),
             [bound["inputs"], lengths, bound.get("initial_state_bw")], call)
    take(builder, fw, call, False, lengths is not None)
    take(builder, bw, call, True, lengths is not None)
    made(builder, bound.get("scope"), [(fw.index, "bidirectional_rnn/fw"),
                                                              (bw.index, "bidirectional_rnn/bw")], s.item.prefix)
    deps = set(s.deps)
    builder.add(s.item, RnnRun, s.names, call, deps, calls=[], cell=fw.index, source=bound["inputs"],
                initial=bound.get("initial_state_fw"), lengths=lengths, backward=bw.index,
                initial_backward=bound.get("initial_state_bw"), pairs=(output_pair, state_pair))
    builder.own(call, but=[bound["inputs"], bound.get("initial_state_fw"), bound.get("initial_state_bw"), lengths])


def made(builder, scope: cst.BaseExpression | None, cells: list[tuple[int, str]], prefix: str) -> None:
    """Where a run makes its cells' weights in TF1: `{prefix}{scope or default}/...` (`cells`:
    (cell or stack node, the run's own scope part: "rnn", "bidirectional_rnn/fw")). The
    next node is the run's; a cell run before keeps the weights of its first run."""
    default = scope is None or isinstance(scope, cst.Name) and scope.value == "None"
    given = None if default else literal_string(scope)
    for order, (index, own) in enumerate(cells):
        node = builder.program.nodes[index]
        multi = not isinstance(node, RnnCell) and node.multi
        for k, (cell, _, _) in enumerate(layers_of(builder.program, index)):
            if cell.made is not None:
                continue
            name = literal_string(cell.bound["name"]) if "name" in cell.bound else cell.row["auto_name"]
            root = own if given is None else given + own[len(own.split("/")[0]):]   # (`scope=` replaces "rnn")
            cell.made = (len(builder.program.nodes), 100 * order + k)
            known = (default or given is not None) and name is not None
            cell.tf1_scope = f"{prefix}{root}/{f'multi_rnn_cell/cell_{k}/' if multi else ''}{name}" if known else None


# -- text ------------------------------------------------------------------

def _rate(keep: cst.BaseExpression, code) -> str:
    return f"1 - {code(keep)}" if isinstance(keep, ATOMS) else f"1 - ({code(keep)})"


def direction_lines(program, index: int, source: str, mask: str, initial, outputs: str, state: str,
                    layer_names: dict, tf: str, code) -> list[str]:
    """The statements of one direction of a run of node `index`: its layers in order
    (the outputs of one the input of the next), the state stacked per layer."""
    node = program.nodes[index]
    multi = isinstance(node, RnnStack) and node.multi
    init = None if initial is None else code(initial)
    if init is not None and not isinstance(initial, cst.Name):
        init = f"({init})"
    lines, parts = [], []
    for k, (cell, keep_in, keep_out) in enumerate(layers_of(program, index)):
        x = source if k == 0 else outputs
        if keep_in is not None:
            x = f"{tf}.nn.dropout({x}, rate={_rate(keep_in, code)})"
        part = state if not multi or state == "_" else f"{state}{SUFFIX}{k}"
        start = None if init is None else (f"{init}[{k}]" if multi else init)
        lstm = cell.row["state"] == "lstm"
        args = x + mask
        if start is not None:
            args += f", initial_state=[{start}[1], {start}[0]]" if lstm else f", initial_state=[{start}]"
        layer = layer_names[cell]
        if lstm:
            lines.append(f"{outputs}, *{part} = {layer}({args})")
            if part != "_":
                lines.append(f"{part} = {tf}.stack({part}[::-1])")
        else:
            lines.append(f"{outputs}, {part} = {layer}({args})")
        if cell.backward:
            lines.append(f"{outputs} = {tf}.reverse({outputs}, [1])")
        if keep_out is not None:
            lines.append(f"{outputs} = {tf}.nn.dropout({outputs}, rate={_rate(keep_out, code)})")
        parts.append(part)
    if multi and state != "_":
        lines.append(f"{state} = {tf}.stack([{', '.join(parts)}])")
    return lines


def run_lines(node: RnnRun, program, layer_names: dict, tf: str, code) -> list[str]:
    """The statements of a dynamic_rnn or bidirectional_dynamic_rnn call."""
    outputs, state = node.names[0], node.names[-1]
    source = code(node.source)
    mask = "" if node.lengths is None else f", mask={tf}.sequence_mask({code(node.lengths)}, {tf}.shape({source})[1])"
    if node.backward is None:
        return direction_lines(program, node.cell, source, mask, node.initial, outputs, state, layer_names, tf, code)
    output_pair, state_pair = node.pairs
    outs = output_pair or (f"{outputs}_fw", f"{outputs}_bw")
    states = state_pair or (("_", "_") if state == "_" else (f"{state}_fw", f"{state}_bw"))
    lines = direction_lines(program, node.cell, source, mask, node.initial, outs[0], states[0], layer_names, tf, code)
    lines += direction_lines(program, node.backward, source, mask, node.initial_backward, outs[1], states[1],
                             layer_names, tf, code)
    if output_pair is None:
        lines.append(f"{outputs} = ({outs[0]}, {outs[1]})")
    if state_pair is None and state != "_":
        lines.append(f"{state} = {tf}.stack([{states[0]}, {states[1]}])")
    return lines
