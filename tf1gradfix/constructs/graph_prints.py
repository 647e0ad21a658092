"""`print(...)` of graph values while the graph is built: `print("logits:", logits)`.

TF1 prints what a graph value is, once, there: `Tensor("dense/BiasAdd:0",
shape=(?, 3), dtype=float32)`, `<tf.Variable 'w:0' shape=(3,) dtype=float32_ref>`,
an op's definition; never a value, and the program computes nothing with it. In
TF2 the value exists only inside a step function, so the statement goes, with a
note saying what it printed and what prints that in TF2 (`x.shape` in the step
function, `tf.print(x)` for its values). The proof leaves such lines of the
original's output out of the comparison (verify/descriptions.py): lines whose
other words hold no number. A print of a graph value with anything but such
labels (a host value, a call, a run's result, a label holding a number) is
refused: what else it prints may be a number the program needs.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_names, literal_string, loads, matches
from tf1gradfix.model.nodes import (Computed, Gradients, Init, OptimizerCall, Placeholder, Static, Tensor, Update, Variable,
                                    VariableGroup, VarList)
from tf1gradfix.verify.descriptions import NUMBER

DESCRIBED = (Placeholder, Variable, VariableGroup, Computed, Gradients, OptimizerCall, Init, VarList)   # TF1 prints what they are
SETTINGS = ("sep", "flush")   # keywords that leave each description on its line


def model(builder, item, call: cst.Call) -> bool:
    """Drops `print(<labels and graph values>)` (True); False for a print of no graph
    value given as such (host code, checked there); Refusal for a mix."""
    program = builder.program
    described = _described(builder, call, lambda name: _is_described(builder, program.node(name)))
    if not described:
        return False
    item.drop = True
    _note(builder, call, described, _instead(program, described[0]))
    return True


def in_builder(builder, stmt: cst.BaseStatement, graph: set[str]) -> bool:
    """A print of a builder function's graph values (`graph`: its locals computed by
    TensorFlow): dropped from the module's `__call__` like one of the graph block (True)."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    described = _described(builder, small.value, lambda name: name in graph)
    if described:
        _note(builder, small.value, described, f"in TF2 print `{described[0]}.shape` in `__call__`, or "
              f"`{builder.program.tf_alias}.print({described[0]})` for its values")
    return bool(described)


def _described(builder, call: cst.Call, graph) -> list[str]:
    """The graph values (`graph(name)`) a `print` call prints as such, with words only
    besides; [] when it prints none; Refusal for a print of them with anything else."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "print") or _rebound(builder):
        return []
    described: list[str] = []
    others: list[str] = []
    for a in call.args:
        value = a.value
        names = _references(value, graph)
        if a.keyword is None and not a.star and names:
            described += names
        elif a.keyword is not None and a.keyword.value in SETTINGS and not loads(value) and "\n" not in _text(builder, value):
            continue
        elif a.keyword is None and not a.star and isinstance(literal_string(value), str):
            if NUMBER.search(literal_string(value) or ""):
                others.append(f"a label holding a number ({_text(builder, value)})")
        else:
            others.append(f"`{a.keyword.value}=`" if a.keyword is not None else f"`{_text(builder, value)}`")
    if described and others:
        raise Refusal.of(call, "print_of_graph_value_mixed", what=others[0])
    return described


def _note(builder, call: cst.Call, described: list[str], instead: str) -> None:
    shown = ", ".join(f"`{n}`" for n in dict.fromkeys(described))
    builder.note(call, "TFG108", f"`print` of the graph's {shown} dropped: TF1 printed what "
                 f"{'it is' if len(set(described)) == 1 else 'they are'} while building the graph (a tensor's "
                 f"`Tensor(...)`, a variable's `<tf.Variable ...>`, an op's definition), never a value; " + instead)


def _instead(program, name: str) -> str:
    """What prints the same information in TF2."""
    node = program.node(name)
    if isinstance(node, (Variable, VariableGroup, VarList)):
        return f"a TF2 variable holds its value: print `{name}.shape`, or its value where the program needs it"
    if isinstance(node, (OptimizerCall, Init, Update)):
        return "TF2 has no op to print: the step function does what it did"
    return f"in TF2 print `{name}.shape` in the step function, or `{program.tf_alias}.print({name})` for its values"


def _is_described(builder, node) -> bool:
    """Does TF1 print `node`'s value as a graph value's description? A statement the model
    reads as a plain tensor may make something else (a dataset, an initializer, a shape)."""
    if not isinstance(node, DESCRIBED):
        return False
    return type(node) not in (Tensor, Static) or _tensor_valued(builder, node.value)


def _tensor_valued(builder, expr) -> bool:
    """A TensorFlow op's result, an operator or a subscript over graph values."""
    if isinstance(expr, cst.Call):
        q = builder.qualified(expr.func)
        return (q or "").startswith("tensorflow.") and not matches(q, "not_tensors")
    if isinstance(expr, cst.Subscript):
        base = expr.value
        return _is_described(builder, builder.program.node(base.value)) if isinstance(base, cst.Name) \
            else _tensor_valued(builder, base)
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
