"""`print(...)` of graph values while the graph is built: `print("logits:", logits)`.

TF1 prints what a graph value is, once, there: `Tensor("dense/BiasAdd:0",
shape=(?, 3), dtype=float32)`, `<tf.Variable 'w:0' shape=(3,) dtype=float32_ref>`,
an op's definition; never a value, and the program computes nothing with it. In
TF2 the value exists only inside a step function, so the statement goes, with a
note saying what it printed and what prints that in TF2 (`x.shape` in the step
function, `tf.print(x)` for its values). The proof leaves such lines of the
original's output out of the comparison (verify/descriptions.py): lines whose
other words hold no number. A print of graph values next to host values (`print("loss
tensor", loss, "value", l)` after a run) keeps the host values: the graph values leave
the line, with the note, and the proof leaves TF1's descriptions out of that line of
the original's output too. A tensor's static shape printed so (`print("conv", conv.shape)`,
`conv.get_shape().as_list()`) is one too: TF1 printed `(?, 14, 14, 32)` there, known in TF2
when the step function is traced; the proof leaves out shapes with an unknown dimension.
Another argument that reads a graph value or calls TensorFlow is refused: it is no host
value TF2 has there.
"""

from __future__ import annotations

from typing import cast

import libcst as cst
from libcst.metadata import PositionProvider

from tf1gradfix.cst.syntax import Refusal, bound_names, literal_string, loads, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import (Computed, Gradients, Init, OptimizerCall, Placeholder, Static, Tensor, Update, Variable,
                                    VariableGroup, VarList)
from tf1gradfix.verify.descriptions import NUMBER

DESCRIBED = (Placeholder, Variable, VariableGroup, Computed, Gradients, OptimizerCall, Init, VarList)   # TF1 prints what they are
SETTINGS = ("sep", "flush")   # keywords that leave each description on its line


def model(builder, item, call: cst.Call) -> bool:
    """Drops `print(<labels and graph values>)` (True); False for a print of no graph
    value given as such (host code, checked there); Refusal for a mix."""
    program = builder.program
    if _rebound(builder):
        return False
    described, kept, mixed = _described(call, lambda name: _is_described(program, builder.qualified, program.node(name)),
                                        lambda node: _text(builder, node), lambda name: _shaped(program, name))
    if not described:
        return False
    if not mixed or all(a.keyword is not None for a in kept):   # (`end=""` alone: the line ends as without it)
        item.drop = True
        _note(builder, call, described, _instead(program, described[0]))
        return True
    for a in kept:   # (what stays must be a host value where the print is)
        if any(program.node(n) is not None and not isinstance(program.node(n), Static) for n in loads(a.value)) \
                or any((builder.qualified(c.func) or "").startswith("tensorflow.") for c in walk(a.value) if type(c) is cst.Call):
            raise Refusal.of(call, "print_of_graph_value_mixed", what=f"`{_text(builder, a.value)}`")
    small = cst.Expr(call.with_changes(args=_separated(kept)))
    new = item.stmt.with_changes(body=[small])
    program.as_written[id(new)] = program.as_written.get(id(item.stmt), item.stmt)
    item.stmt = new
    _note(builder, call, described, "the other values are printed as before; " + _instead(program, described[0]),
          "the graph's {} left out of the `print`")
    return True


def in_host(scan, call: cst.Call, reads: cst.CSTVisitor) -> bool:
    """`print("epoch", epoch, cost, "=", c)` in host code after the graph is built (`scan`:
    sites.HostScan): the graph values leave the line, the rest is scanned as host code
    (`reads`) and printed as before (the call's text: `scan.variable_lists`); False for a
    print of no graph value, or of nothing else (then reading a graph value is refused)."""
    program, qualified = scan.p, scan.meta.names.qualified
    if scan.host is not None or not (isinstance(call.func, cst.Name) and call.func.value == "print") \
            or "print" in program.final or "print" in program.helpers:
        return False
    host = {name for it in program.items if it.node is None for name in bound_names(it.stmt)}   # (`_, value = sess.run(...)`)
    described, kept, _ = _described(call, lambda name: name not in host and _is_described(program, qualified, program.node(name)),
                                    cst.Module([]).code_for_node, lambda name: name not in host and _shaped(program, name))
    if not described or all(a.keyword is not None for a in kept):
        return False
    for a in kept:
        a.visit(reads)
    scan.variable_lists[call] = cst.Module([]).code_for_node(call.with_changes(args=_separated(kept)))
    try:
        at = scan.meta.get_metadata(PositionProvider, call).start
        where = (at.line, at.column + 1)
    except KeyError:   # (a statement the model wrote: where it was is not known)
        where = (1, 1)
    note = (*where, "TFG108", _said(described, "the other values are printed as before; " + _instead(program, described[0]),
                                    "the graph's {} left out of the `print`", ""), "safe")
    if not hasattr(scan.meta, "notes"):
        scan.meta.notes = []
    if note not in scan.meta.notes:   # (a host scan may run twice: sites.HostScan.rescan)
        scan.meta.notes.append(note)
    return True


def _separated(args: list[cst.Arg]) -> list[cst.Arg]:
    """The arguments kept, each but the last followed by a comma."""
    return [a.with_changes(comma=cst.MaybeSentinel.DEFAULT if k == len(args) - 1 else
                           (a.comma if isinstance(a.comma, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
            for k, a in enumerate(args)]


def in_builder(builder, stmt: cst.BaseStatement, graph: set[str]) -> bool:
    """A print of a builder function's graph values (`graph`: its locals computed by
    TensorFlow): dropped from the module's `__call__` like one of the graph block (True)."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    described, kept, mixed = _described(small.value, lambda name: name in graph, lambda node: _text(builder, node)) \
        if not _rebound(builder) else ([], [], False)
    if described and mixed:
        raise Refusal.of(small.value, "print_of_graph_value_mixed", what=f"`{_text(builder, kept[0].value)}`")
    if described:
        _note(builder, small.value, described, f"in TF2 print `{described[0]}.shape` in `__call__`, or "
              f"`{builder.program.tf_alias}.print({described[0]})` for its values")
    return bool(described)


def _described(call: cst.Call, graph, text, shaped=lambda name: False) -> tuple[list[str], list[cst.Arg], bool]:
    """(the graph values (`graph(name)`) a `print` call prints as such, and `NAME.shape` of
    those whose static shape it prints (`shaped(name)`: `conv.shape`, `conv.get_shape()
    .as_list()`), the arguments it prints besides them, whether one of those is more than a
    word); ([], ...) for a print of no graph value. `text`: a node's source."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "print"):
        return [], [], False
    described: list[str] = []
    kept: list[cst.Arg] = []
    mixed = False
    for a in call.args:
        value = a.value
        names: list[str] = []
        if a.keyword is None and not a.star:
            shape = _shape_of(value)
            names = [f"{shape.value}.shape"] if shape is not None and shaped(shape.value) else _references(value, graph)
        if names:
            described += names
            continue
        kept.append(a)
        if a.keyword is not None and a.keyword.value in SETTINGS and not loads(value) and "\n" not in text(value):
            continue
        if a.keyword is None and not a.star and isinstance(literal_string(value), str):
            mixed = mixed or bool(NUMBER.search(literal_string(value) or ""))
        else:
            mixed = True
    return described, kept, bool(described) and mixed


def _note(builder, call: cst.Call, described: list[str], instead: str, what: str = "`print` of the graph's {} dropped") -> None:
    builder.note(call, "TFG108", _said(described, instead, what))


def _said(described: list[str], instead: str, what: str, when: str = " while building the graph") -> str:
    shown = ", ".join(f"`{n}`" for n in dict.fromkeys(described))
    if described and described[0].endswith(".shape"):   # (_described: a shape's print)
        return (what.format(shown) + f": TF1 printed {'its static shape' if len(set(described)) == 1 else 'their static shapes'}"
                f"{when} (`(?, 8)`: a dimension `?` it did not know), never a value; " + instead)
    return (what.format(shown) + f": TF1 printed what {'it is' if len(set(described)) == 1 else 'they are'}{when} (a tensor's "
            "`Tensor(...)`, a variable's `<tf.Variable ...>`, an op's definition), never a value; " + instead)


def _instead(program, name: str) -> str:
    """What prints the same information in TF2."""
    if name.endswith(".shape"):
        return f"in TF2 print `{name}` in the step function, where it is known once the function is traced"
    node = program.node(name)
    if isinstance(node, (Variable, VariableGroup, VarList)):
        return f"a TF2 variable holds its value: print `{name}.shape`, or its value where the program needs it"
    if isinstance(node, (OptimizerCall, Init, Update)):
        return "TF2 has no op to print: the step function does what it did"
    return f"in TF2 print `{name}.shape` in the step function, or `{program.tf_alias}.print({name})` for its values"


def _shape_of(value: cst.BaseExpression) -> cst.Name | None:
    """The name whose static shape `value` reads: `t.shape`, `t.get_shape()`, either's
    `.as_list()`; None for anything else."""
    if _called(value, "as_list"):
        value = cast(cst.Attribute, cast(cst.Call, value).func).value
    if _called(value, "get_shape"):
        value = cast(cst.Attribute, cast(cst.Call, value).func).value
    elif isinstance(value, cst.Attribute) and value.attr.value == "shape":
        value = value.value
    else:
        return None
    return value if isinstance(value, cst.Name) else None


def _called(value: cst.BaseExpression, method: str) -> bool:
    return isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value == method


def _shaped(program, name: str) -> bool:
    """A tensor whose static shape TF1 printed with its unknown dimensions as `?` (what
    the proof leaves out of the original's output, verify/descriptions.py): a placeholder
    or a value computed from graph values; a variable's shape, known in full, is printed
    in TF2 as it was (the variable exists where the print is), and a constant's too."""
    return isinstance(program.node(name), (Placeholder, Tensor, Gradients))   # (a Static is no Tensor)


def _is_described(program, qualified, node) -> bool:
    """Does TF1 print `node`'s value as a graph value's description? A statement the model
    reads as a plain tensor may make something else (a dataset, an initializer, a shape)."""
    if not isinstance(node, DESCRIBED):
        return False
    return type(node) not in (Tensor, Static) or _tensor_valued(program, qualified, node.value)


def _tensor_valued(program, qualified, expr) -> bool:
    """A TensorFlow op's result, an operator or a subscript over graph values."""
    if isinstance(expr, cst.Call):
        q = qualified(expr.func)
        return (q or "").startswith("tensorflow.") and not matches(q, "not_tensors")
    if isinstance(expr, cst.Subscript):
        base = expr.value
        return _is_described(program, qualified, program.node(base.value)) if isinstance(base, cst.Name) \
            else _tensor_valued(program, qualified, base)
    if isinstance(expr, cst.UnaryOperation):
        return not isinstance(expr.operator, cst.Not)
    return isinstance(expr, cst.BinaryOperation)


def _references(value: cst.BaseExpression, graph) -> list[str]:
    """The graph values (`graph(name)`) `value` names as such: a name, or a tuple or list
    of them (TF1 prints their descriptions); [] for anything else."""
    if isinstance(value, cst.Name):
        return [value.value] if graph(value.value) else []
    if isinstance(value, (cst.Tuple, cst.List)) and value.elements:
        inner = [_references(e.value, graph) if not isinstance(e, cst.StarredElement) else [] for e in value.elements]
        return [n for names in inner for n in names] if all(inner) else []
    return []


def _text(builder, node: cst.CSTNode) -> str:
    return builder.module.code_for_node(node)


_LAST_MODULE: list = [None, False]   # (the module last asked about, and its answer)


def _rebound(builder) -> bool:
    """Does the module bind `print` itself (not the builtin)? Asked by the builder of every
    session block of the module: answered once per module (a file of N blocks would
    otherwise walk its N blocks N times)."""
    if _LAST_MODULE[0] is not builder.module:
        _LAST_MODULE[:] = [builder.module, any("print" in bound_names(s) for s in builder.module.body)]
    return _LAST_MODULE[1]
