"""An RNN cell's weights in a variable collection that graph code reads:

    l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])

after `tf.nn.dynamic_rnn(cell, ...)` lists TF1's `rnn/lstm_cell/kernel:0` and `bias:0`:
one kernel over [inputs, state], gates i, j, f, o. The rewrite's Keras cell holds the
same numbers in `kernel`, `recurrent_kernel` and `bias` (gates i, f, c, o; an LSTM's
bias with the forget bias added), so no TF2 variable is TF1's kernel. The Keras weights
stand in the list for the TF1 variables whose blocks they hold (rnn_cells.toml's
layouts), in TF1's place (where the run made them); a name filter is evaluated on TF1's
names and must select all or none of the TF1 variables a Keras weight draws from. What
the statement computes from the list is exact only where it adds up an entry-wise sum
per variable (rules/collection_reductions.toml): then TF1's kernel's term is
the sum of its Keras parts' terms. Any other use of such a list is refused.
"""

from __future__ import annotations

import functools
from typing import NoReturn, cast

import libcst as cst

from tf1gradfix.constructs import rnn_stacks
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import RnnCell, RnnRun
from tf1gradfix.model.parts import CollectionRead, Listed
from tf1gradfix.rules.catalog import _read

LEAVES = ("kernel", "recurrent_kernel", "bias")


@functools.lru_cache(maxsize=None)
def reductions() -> dict:
    return _read("collection_reductions.toml")


@functools.lru_cache(maxsize=None)
def _layouts() -> dict:
    return _read("rnn_cells.toml")["layout"]


def listed(program, cell: RnnCell, prefix: str, where: cst.CSTNode) -> list[Listed]:
    """The Keras weights standing for the cell's TF1 variables under the scope `prefix`, each
    with the TF1 names it draws from (`parts`); Refusal where the cell's TF1 names are not
    known or `prefix` selects part of what one Keras weight holds."""
    if cell.tf1_scope is None:
        raise Refusal.of(where, "collection_cell_scope_unknown", name=cell.names[0])
    layout = _layouts()[cell.row["layout"]]
    shifted = _shifted(cell, layout)
    out = []
    for leaf in LEAVES:
        parts = tuple(dict.fromkeys(f"{cell.tf1_scope}/{name}:0" for name, _, _ in layout[leaf]))
        chosen = {p.startswith(prefix) for p in parts}
        if len(chosen) > 1:
            raise Refusal.of(where, "collection_filter_splits_weight", cell=cell.names[0], leaf=leaf,
                             parts=", ".join(f"`{p}`" for p in parts))
        if chosen == {True}:
            out.append(Listed(cell.index, f"cell.{leaf}", None, None, parts=parts, shifted=leaf == shifted))
    return out


def _shifted(cell: RnnCell, layout: dict) -> str | None:
    """The Keras weight holding a constant more than TF1's (an LSTM's bias: unit_forget_bias)."""
    shift = layout.get("shift")
    forget = cell.bound.get("forget_bias")
    if shift is None or forget is not None and cell.row["forget_bias"].get(_code(forget)) == "False":
        return None
    return shift[0]


def _code(expr: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(expr)


def verdict(program, entry: Listed, decide, where: cst.CSTNode) -> bool | None:
    """A filter's verdict on a Keras weight: the same on every TF1 variable it draws from
    (`decide(name)`: the verdict on one TF1 name, None where not evaluated)."""
    verdicts = {decide(p) for p in entry.parts}
    if None in verdicts:
        return None
    if len(verdicts) > 1:
        raise Refusal.of(where, "collection_filter_splits_weight", cell=program.nodes[entry.node].names[0],
                         leaf=cast(str, entry.weight).split(".")[-1], parts=", ".join(f"`{p}`" for p in entry.parts))
    return verdicts.pop()


def run_makes(program, run: RnnRun) -> set[int]:
    """The cells a run calls (their Keras layers' weights exist after it)."""
    cells = [run.cell] + ([run.backward] if run.backward is not None else [])
    return {c.index for i in cells for c, _, _ in rnn_stacks.layers_of(program, i)}


def check_use(builder, value: cst.BaseExpression, read: CollectionRead, chosen: list[Listed]) -> None:
    """Refusal unless the statement adds up an entry-wise sum per variable of the list."""
    split = [e for e in chosen if e.parts]
    if not split:
        return
    cell = cast(RnnCell, builder.program.nodes[split[0].node])
    api = "tf.trainable_variables()" if isinstance(read.source, cst.Call) else _code(read.source)

    def refuse(detail: str) -> NoReturn:
        raise Refusal.of(read.source, "collection_cell_weights_use", api=api, cell=cell.names[0], detail=detail)

    comp = next((c for c in walk(value) if type(c) in (cst.ListComp, cst.GeneratorExp)
                 and cast(cst.BaseSimpleComp, c).for_in.iter is read.source), None)
    if comp is None:
        refuse("the list itself is used, not added up over its variables")
    comp = cast(cst.BaseSimpleComp, comp)
    loop = comp.for_in
    table = reductions()
    adder = next((c for c in walk(value) if type(c) is cst.Call and len(c.args) == 1 and c.args[0].value is comp
                  and c.args[0].keyword is None and not c.args[0].star), None)
    q = None if adder is None else builder.qualified(adder.func) or (
        adder.func.value if isinstance(adder.func, cst.Name) and adder.func.value not in builder.program.final else None)
    if loop.inner_for_in is not None or not isinstance(loop.target, cst.Name) or q not in table["aggregates"]:
        refuse("its per-variable numbers are not added up (`tf.add_n`, `tf.reduce_sum` or `sum` of the comprehension)")
    if any(e.shifted for e in split):
        refuse("it lists the LSTM's bias, which Keras holds with the forget bias 1.0 added (unit_forget_bias)")
    why = _additive(builder, comp.elt, loop.target.value)
    if why is not None:
        refuse(why)


def _additive(builder, expr: cst.BaseExpression, var: str) -> str | None:
    """None where `expr` is an entry-wise sum of `var` (times what does not read it), else why not."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        if not _reads(expr.right, var):
            return _additive(builder, expr.left, var)
        if isinstance(expr.operator, cst.Multiply) and not _reads(expr.left, var):
            return _additive(builder, expr.right, var)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _additive(builder, expr.expression, var)
    row = _reduction(builder, expr)
    if row is not None and row["kind"] == "sum" and _one_argument(expr) and _entrywise(builder, cast(cst.Call, expr).args[0].value, var):
        return None
    if row is not None and row["kind"] == "refused":
        return f"`{_code(cast(cst.Call, expr).func)}` is {row['why']}"
    return f"`{_code(expr)}` is not an entry-wise sum of each variable ({', '.join(_sums())} of entry-wise ops)"


def _entrywise(builder, expr: cst.BaseExpression, var: str) -> bool:
    """One function of each entry of `var`: the variable, entry-wise ops of it, numbers."""
    if isinstance(expr, cst.Name) and expr.value == var:
        return True
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _entrywise(builder, expr.expression, var)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply,
                                                                             cst.Divide, cst.Power)):
        sides = (expr.left, expr.right)
        return any(_reads(s, var) for s in sides) and all(
            _entrywise(builder, s, var) if _reads(s, var) else isinstance(s, (cst.Integer, cst.Float)) for s in sides)
    row = _reduction(builder, expr)
    return row is not None and row["kind"] == "elementwise" and _one_argument(expr) \
        and _entrywise(builder, cast(cst.Call, expr).args[0].value, var)


def _reduction(builder, expr: cst.BaseExpression) -> dict | None:
    return reductions()["reduction"].get(builder.qualified(expr.func) or "") if isinstance(expr, cst.Call) else None


def _one_argument(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star


def _reads(expr: cst.BaseExpression, var: str) -> bool:
    return any(type(n) is cst.Name and n.value == var for n in walk(expr))


def _sums() -> list[str]:
    return [f"`{q.replace('tensorflow.', 'tf.')}`" for q, row in reductions()["reduction"].items()
            if row["kind"] == "sum" and ".math." not in q]
