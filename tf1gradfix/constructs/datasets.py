"""tf.data input pipelines read by one-shot iterators.

    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100).batch(32)
    batches = dataset.make_one_shot_iterator()
    xb, yb = batches.get_next()
becomes
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100).batch(32)   (as written)
    batches = iter(dataset)
    xb, yb = batches.get_next()          (in the step functions that read them)

A pipeline built from host values is an object in TF2 as in TF1, made where the graph
was built. TF1's iterator is state of the graph: each run of an op that reads
`get_next()` takes the next element, and the run after the last one fails with
OutOfRangeError. `iter(dataset)` is that state in TF2; a step function calling its
`get_next()` takes one element per call and raises the same error at the end, so the
`try`/`except tf.errors.OutOfRangeError` loops of TF1 programs stay as they are.

Initializable and reinitializable iterators, started again by runs of their
initializers, are restarted_iterators.py's. A pipeline reading a placeholder (fed
through an initializable iterator's initializer), a feedable iterator (a string
handle fed to each run) and an iterator made in a loop are refused: their state is
set by feeds the rewrite does not translate.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import Refusal, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Statement, Static, Tensor
from tf1gradfix.model.pipeline_nodes import DataIterator, Dataset

ONE_SHOT = "make_one_shot_iterator"
ONE_SHOT_FUNCTIONS = ("tensorflow.data.make_one_shot_iterator", "tensorflow.compat.v1.data.make_one_shot_iterator")
OTHER_ITERATORS = ("make_initializable_iterator", "make_initializer", "from_structure", "from_string_handle",
                   "string_handle")


def build(builder, s: Statement) -> bool:
    """A `Dataset`, `DataIterator` or the `Tensor` of a `get_next()`; False for anything else."""
    value = s.value
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    receiver, method = _receiver_of(builder, value)
    if isinstance(receiver, Dataset) and method in OTHER_ITERATORS or _other_iterator(builder, value):
        raise Refusal.of(value, "dataset_iterator_form", form=method or builder.qualified(func))
    for inner in walk(value):   # (`T = ds.make_one_shot_iterator().get_next()` is split in two: statement_forms)
        if inner is not value and type(inner) is cst.Call and _one_shot_source(
                builder, inner, *_receiver_of(builder, inner)) is not None:
            raise Refusal.of(value, "iterator_in_expression")
    source = _one_shot_source(builder, value, receiver, method)
    if source is not None:
        if s.one is None:
            raise Refusal.of(value, "dataset_form")
        _inputs(builder, s)   # (a pipeline written in the statement: host values only)
        text = layout.fit(f"{s.one} = iter({source})", 0) + "\n"   # (a pipeline written in it: laid out as black would)
        stmt = cast(cst.SimpleStatementLine, cst.parse_statement(text)).with_changes(leading_lines=s.item.stmt.leading_lines)
        s.item.stmt = stmt
        builder.add(s.item, DataIterator, s.names, value, s.deps)
        builder.own(value)
        return True
    if _pipeline(builder, value):
        _inputs(builder, s)
        if s.one is None:
            raise Refusal.of(value, "dataset_form")
        builder.add(s.item, Dataset, s.names, value, s.deps)
        builder.own(value)
        return True
    if isinstance(receiver, DataIterator) and method == "get_next" and not value.args:
        builder.add(s.item, Tensor, s.names, value, s.deps, calls=[])
        builder.own(value)
        return True
    if isinstance(receiver, (Dataset, DataIterator)):
        raise Refusal.of(value, "dataset_form")
    return False


def drawn(program, expr: cst.BaseExpression) -> bool:
    """Whether `expr` is `it.get_next()` of an iterator of the program: an element of its
    pipeline, a tuple or dict of tensors when the pipeline's elements are."""
    func = expr.func if isinstance(expr, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value == "get_next" and isinstance(func.value, cst.Name) \
        and isinstance(program.node(func.value.value), DataIterator) and not cast(cst.Call, expr).args


def _pipeline(builder, call: cst.Call) -> bool:
    """Is `call` a chain of dataset methods rooted at a `tf.data` constructor or a pipeline?"""
    expr: cst.BaseExpression = call
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and builder.qualified(expr.func) is None:
        if expr.func.attr.value in (ONE_SHOT, *OTHER_ITERATORS, "get_next"):
            return False
        expr = expr.func.value
    if isinstance(expr, cst.Name):
        return isinstance(builder.program.node(expr.value), Dataset) and expr is not call
    return isinstance(expr, cst.Call) and matches(builder.qualified(expr.func), "datasets")


def _one_shot_source(builder, call: cst.Call, receiver, method) -> str | None:
    """The dataset a one-shot iterator reads, as code: a pipeline's name, or the pipeline
    itself where it is written in the iterator's statement (`tf.data...batch(8).make_one_shot_iterator()`)."""
    if isinstance(receiver, Dataset) and method == ONE_SHOT and not call.args:
        return receiver.names[0]
    given = cast(cst.Attribute, call.func).value if method == ONE_SHOT and not call.args else \
        call.args[0].value if builder.qualified(call.func) in ONE_SHOT_FUNCTIONS and len(call.args) == 1 else None
    node = builder.program.node(given.value) if isinstance(given, cst.Name) else None
    if isinstance(node, Dataset):
        return node.names[0]
    if isinstance(given, cst.Call) and _pipeline(builder, given):
        return builder.module.code_for_node(given)
    return None


def _receiver_of(builder, call: cst.Call) -> tuple:
    """(the node a method call is made on, the method's name), each None where not a name's."""
    func = call.func
    method = func.attr.value if isinstance(func, cst.Attribute) else None
    return (builder.program.node(func.value.value) if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
            else None), method


def _other_iterator(builder, call: cst.Call) -> bool:
    q = builder.qualified(call.func) or ""
    return q.startswith("tensorflow.data.") and q.rsplit(".", 1)[-1] in OTHER_ITERATORS


def _inputs(builder, s: Statement) -> None:
    """A pipeline reads host values only (a placeholder needs an initializable iterator)."""
    for i in s.deps:
        node = builder.program.nodes[i]
        if not isinstance(node, Static):
            raise Refusal.of(s.value, "dataset_from_graph_values", name=node.names[0] if node.names else "")
