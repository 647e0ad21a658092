"""TF1 RNN cells: a Keras cell in a Keras RNN layer, created once, called in the steps.

    cell = tf.nn.rnn_cell.LSTMCell(n)                        (where the graph was built)
    state0 = cell.zero_state(batch, tf.float32)
    outputs, state = tf.nn.dynamic_rnn(cell, x, initial_state=state0)
become
    cell = tf.keras.layers.RNN(tf.keras.layers.LSTMCell(n), return_sequences=True, return_state=True)
    state0 = tf.zeros([2, batch, n], tf.float32)             (in the step functions)
    outputs, *state = cell(x, initial_state=[state0[1], state0[0]])
    state = tf.stack(state[::-1])

An LSTM's state is TF1's (c, h) stacked into one tensor, so `state[1]` is still
h, a run can fetch it and feed it back as one value, and a function takes it
as one parameter; Keras holds it as [h, c]. The cells and their settings are
the table rules/rnn_cells.toml, whose weight layouts the verifier
reads to start the Keras weights from the original's (verify/cell_weights.py).
"""

from __future__ import annotations

import functools
from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args
from tf1gradfix.cst.walk import replaced, walk
from tf1gradfix.constructs import rnn_stacks
from tf1gradfix.model.nodes import RnnCell, RnnRun, RnnStack, StateTuple, Statement, Static, ZeroState
from tf1gradfix.rules.catalog import _read

DYNAMIC_RNN = "tensorflow.nn.dynamic_rnn"
DYNAMIC_PARAMS = ["cell", "inputs", "sequence_length", "initial_state", "dtype", "parallel_iterations",
                  "swap_memory", "time_major", "scope"]
# dropped: parallel_iterations and swap_memory (speed and memory only), scope (names only: a TF1 cell
# makes its variables once, whatever the scope of a later call; the verifier pairs cells by order)
DYNAMIC_KEEP = {"cell", "inputs", "sequence_length", "initial_state", "dtype", "parallel_iterations", "swap_memory",
                "scope"}
CONTRIB = "tensorflow.contrib.rnn."
STATE_TUPLES = ("tensorflow.nn.rnn_cell.LSTMStateTuple", CONTRIB + "LSTMStateTuple")


@functools.lru_cache(maxsize=None)
def cell_table() -> dict[str, dict]:
    """rnn_cells.toml's rows, also under their tf.contrib.rnn names (the same classes in TF 1.x)."""
    rows = _read("rnn_cells.toml")["cell"]
    return {**rows, **{CONTRIB + symbol.rsplit(".", 1)[1]: row for symbol, row in rows.items()}}


def build(builder, s: Statement) -> bool:
    """The nodes of a cell, its `zero_state` or its `dynamic_rnn`; False if none of them."""
    cells = [i for i in s.deps if isinstance(builder.program.nodes[i], (RnnCell, RnnStack))]
    if s.q in cell_table():
        _cell(builder, s)
        return True
    if s.q == DYNAMIC_RNN and s.call is not None:
        return _run(builder, s)
    if s.q in STATE_TUPLES and s.call is not None:
        bound = bound_args(s.call, ["c", "h"], s.call)
        if s.one is None or set(bound) != {"c", "h"}:
            raise Refusal.of(s.call, "layer_target", api=s.q)
        builder.add(s.item, StateTuple, s.names, s.call, set(s.deps), calls=[], parts=(bound["c"], bound["h"]))
        builder.own(s.call, but=[bound["c"], bound["h"]])
        return True
    if _layer_states(builder, s):
        return True
    if cells and _zero_state(builder, s, cells[0]):
        return True
    if cells:
        node = builder.program.nodes[cells[0]]
        raise Refusal.of(s.value, "rnn_cell_other_use", name=node.names[0])
    return False


def _layer_states(builder, s: Statement) -> bool:
    """`s = tuple([LSTMStateTuple(c, h) for ...])`, a stack's state of its layers' parts:
    `tf.stack([tf.stack([c, h]) for ...])`, the stack's state as the rewrite holds it."""
    call = s.call
    if not (call is not None and isinstance(call.func, cst.Name) and call.func.value == "tuple" and s.q is None
            and len(call.args) == 1 and not call.args[0].keyword
            and isinstance(call.args[0].value, (cst.ListComp, cst.GeneratorExp))):
        return False
    comp = cast(cst.BaseSimpleComp, call.args[0].value)
    part = comp.elt
    if not (isinstance(part, cst.Call) and builder.qualified(part.func) in STATE_TUPLES):
        return False
    bound = bound_args(part, ["c", "h"], part)
    if s.one is None or set(bound) != {"c", "h"}:
        raise Refusal.of(call, "layer_target", api="LSTMStateTuple")
    builder.add(s.item, StateTuple, s.names, call, set(s.deps), calls=[], parts=(bound["c"], bound["h"]), layers=comp)
    builder.own(part, but=[bound["c"], bound["h"]])
    return True


def record_fields(builder, s: Statement) -> None:
    """`state.c` / `state.h` of an LSTM state the rewrite holds stacked, as TF1's
    `LSTMStateTuple` also reads them: `state[0]` / `state[1]` (fields_indexed writes them)."""
    states = {name for i in s.deps for name in _lstm_states(builder.program, builder.program.nodes[i])}
    for node in _attributes(s.value):
        base = node.value
        while isinstance(base, cst.Subscript):   # (`state[-1].h` of a stack's state)
            base = base.value
        if isinstance(base, cst.Name) and base.value in states and node.attr.value in ("c", "h"):
            builder.program.state_fields[id(node)] = 0 if node.attr.value == "c" else 1


def fields_indexed(node: cst.CSTNode, fields: dict[int, int]) -> cst.CSTNode:
    """`node` with the fields record_fields found written as indices of the stacked state."""
    return replaced(node, {n: cst.Subscript(value=n.value, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(fields[id(n)]))))])
                           for n in walk(node) if type(n) is cst.Attribute and id(n) in fields})


def _lstm_states(program, node) -> list[str]:
    """The names holding states the rewrite stacks (an LSTM's, a stack's, a bidirectional run's)."""
    stacked = isinstance(node, (RnnRun, ZeroState)) and len(rnn_stacks.state_dims(program, node.cell, str)) > 1
    if isinstance(node, RnnRun) and node.backward is not None:   # (bidirectional_rnn: the pair, or each)
        return list(node.pairs[1] or node.names[-1:])
    if isinstance(node, RnnRun) and stacked:
        return [node.names[1]]
    if isinstance(node, ZeroState) and stacked or isinstance(node, StateTuple):
        return list(node.names)
    return []


def _attributes(expr: cst.CSTNode):
    found: list[cst.Attribute] = []

    class Visit(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.append(node)

    expr.visit(Visit())
    return found


def _cell(builder, s: Statement) -> None:
    call, q = cast(cst.Call, s.call), cast(str, s.q)
    row = cell_table()[q]
    if s.one is None:
        raise Refusal.of(call, "layer_target", api=q)
    bound = bound_args(call, row["params"], call)
    refused = sorted(set(bound) - set(row["keep"]) - set(row["accepted"]))
    if refused or "num_units" not in bound:
        raise Refusal.of(call, "layer_arguments", api=q, args=", ".join(refused or ["num_units"]), detail=row["refused"])
    code = builder.module.code_for_node
    for param, values in row["accepted"].items():
        if param in bound and code(bound[param]) not in values:
            raise Refusal.of(bound[param], "layer_setting_value", api=q, param=param, values=" or ".join(values))
    if any(not isinstance(builder.program.nodes[i], Static) for i in builder.deps_of(call)):
        raise Refusal.of(call, "layer_setting_from_graph", api=q)
    builder.add(s.item, RnnCell, s.names, call, (), row=row, symbol=q, bound=bound, base=s.names[0],
                weights=True, trainable=True, full_name=s.item.prefix + "rnn/" + row["auto_name"],
                units=bound["num_units"])


def _zero_state(builder, s: Statement, cell: int) -> bool:
    call = s.call
    if not (call is not None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "zero_state"
            and isinstance(call.func.value, cst.Name) and builder.program.final.get(call.func.value.value) == cell):
        return False
    bound = bound_args(call, ["batch_size", "dtype"], call)
    if s.one is None or set(bound) != {"batch_size", "dtype"}:
        raise Refusal.of(call, "rnn_cell_other_use", name=call.func.value.value)
    deps = builder.deps_of(bound["batch_size"]) | builder.deps_of(bound["dtype"])
    builder.add(s.item, ZeroState, s.names, call, deps, calls=[], cell=cell, batch=bound["batch_size"],
                dtype=bound["dtype"])
    return True


def _run(builder, s: Statement) -> bool:
    call = cast(cst.Call, s.call)
    bound = bound_args(call, DYNAMIC_PARAMS, call)
    cell = rnn_stacks.cell_of(builder, bound.get("cell"))
    if cell is None:
        return False   # (another cell: refused with the call's name as an op the rewrite does not trust)
    refused = sorted(set(bound) - DYNAMIC_KEEP)
    if refused:
        raise Refusal.of(call, "layer_arguments", api=DYNAMIC_RNN, args=", ".join(refused),
                         detail="the rewrite writes a Keras RNN layer over batch-major inputs")
    if len(s.names) != 2 or "inputs" not in bound:
        raise Refusal.of(call, "layer_target", api=DYNAMIC_RNN)
    if "initial_state" not in bound and "dtype" not in bound:
        raise Refusal.of(call, "layer_arguments", api=DYNAMIC_RNN, args="initial_state or dtype",
                         detail="TF1 needs one of them to make the first state")
    lengths = bound.get("sequence_length")
    if lengths is not None and not isinstance(bound["inputs"], cst.Name):
        raise Refusal.of(call, "layer_arguments", api=DYNAMIC_RNN, args="sequence_length",
                         detail="the mask of the lengths is written over the time axis of an input that has a name")
    # (TF1 gives zeros past a sequence's length: the layer's zero_output_for_mask)
    rnn_stacks.take(builder, cell, call, False, lengths is not None)
    rnn_stacks.made(builder, bound.get("scope"), [(cell.index, "rnn")], s.item.prefix)
    if isinstance(cell, RnnStack) and cell.multi:   # (layer by layer: the outputs are the next layer's input)
        rnn_stacks.not_read([s.names[0]], [lengths, bound.get("initial_state")], call)
        if s.names[1] != "_":
            rnn_stacks.free_names(builder, [f"{s.names[1]}{rnn_stacks.SUFFIX}{k}" for k in range(len(cell.layers))],
                                  call)
    builder.add(s.item, RnnRun, s.names, call, set(s.deps), calls=[], cell=cell.index, source=bound["inputs"],
                initial=bound.get("initial_state"), lengths=lengths)
    builder.own(call, but=[bound["inputs"], bound.get("initial_state"), lengths])   # (checked as a tensor's)
    return True


# -- text ------------------------------------------------------------------

def layer_text(node: RnnCell, name: str, tf: str, code) -> str:
    """`<name> = tf.keras.layers.RNN(<the Keras cell>, return_sequences=True, return_state=True)`."""
    row = node.row
    args = [code(node.units)]
    for param, keyword in row["keep"].items():
        if param != "num_units" and param in node.bound:
            args.append(f"{keyword}={code(node.bound[param])}")
    forget = node.bound.get("forget_bias")
    if forget is not None and row["forget_bias"][code(forget)] == "False":
        args.append("unit_forget_bias=False")
    args += [f"{k}={v.format(tf=tf, units=code(node.units))}" for k, v in row["settings"].items()]
    masked = ", zero_output_for_mask=True" if node.masked else ""
    backward = ", go_backwards=True" if node.backward else ""
    return (f"{name} = {tf}.keras.layers.RNN({tf}.{row['target']}({', '.join(args)}), return_sequences=True, "
            f"return_state=True{masked}{backward})")


def state_tuple_text(node: StateTuple, tf: str, code) -> str:
    pair = f"{tf}.stack([{code(node.parts[0])}, {code(node.parts[1])}])"
    if node.layers is None:
        return f"{node.names[0]} = {pair}"
    loops = " ".join(code(f).strip() for f in _fors(node.layers.for_in))
    return f"{node.names[0]} = {tf}.stack([{pair} {loops}])"


def _fors(comp_for: cst.CompFor) -> list[cst.CompFor]:
    """The `for ... in ... if ...` clauses of a comprehension, each alone."""
    out = []
    current: cst.CompFor | None = comp_for
    while current is not None:
        out.append(current.with_changes(inner_for_in=None))
        current = current.inner_for_in
    return out


def zero_state_text(node: ZeroState, program, tf: str, code) -> str:
    shape = rnn_stacks.state_dims(program, node.cell, code)
    shape.insert(len(shape) - 1, code(node.batch))
    return f"{node.names[0]} = {tf}.zeros([{', '.join(shape)}], {code(node.dtype)})"


def state_shape(node: ZeroState, program, code) -> str:
    """The TensorSpec shape of a fed zero state: any batch, the cell's units."""
    shape = rnn_stacks.state_dims(program, node.cell, code)
    shape.insert(len(shape) - 1, "None")
    return f"[{', '.join(shape)}]"
