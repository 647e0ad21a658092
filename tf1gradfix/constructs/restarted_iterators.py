"""tf.data iterators a run starts again: initializable and reinitializable ones.

    batches = pairs.make_initializable_iterator()       (dropped)
    xb, yb = batches.get_next()                         (in the step functions, as before)
    for epoch in range(4):
        sess.run(batches.initializer)               ->  batches = iter(pairs)
        while True:
            try: sess.run(train)                    ->  train_step()   (run eagerly)
            except tf.errors.OutOfRangeError: break

    reader = tf.data.Iterator.from_structure(...)       (dropped)
    start_train = reader.make_initializer(pairs)        (dropped)
    sess.run(start_train)                           ->  reader = iter(pairs)

TF1's iterator is state of the graph that a run of its initializer sets to the start
of the pipeline it names; until then it has none. In TF2 `iter(dataset)` is that
state, and the run becomes the statement that makes it, where TF1 ran it: the steps
read the name when they are called, so they see the iterator started last. A traced
`tf.function` would keep the iterator it was traced with: the step functions that
read such an iterator run eagerly (the same values, as for a run made once:
slicing.Signature.one_off), which is why a run among them that feeds a value is refused
(a traced function's signature converts what is fed as TF1's feed did).

Only a pipeline bound to a name is started (the run makes a new iterator of that
object, as TF1's initializer did), and only by a run of the program's own statements
(a function's would bind a local name); a pipeline reading a placeholder (refilled
through a fed initializer run) stays refused in datasets.py.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, bound_names, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Statement
from tf1gradfix.model.pipeline_nodes import DataIterator, Dataset, IteratorStart, PipelineInput

INITIALIZABLE = "make_initializable_iterator"
INITIALIZABLE_FUNCTIONS = ("tensorflow.compat.v1.data.make_initializable_iterator",
                           "tensorflow.data.make_initializable_iterator")
PLACEHOLDER = "tensorflow.placeholder"
FROM_STRUCTURE = ("tensorflow.data.Iterator.from_structure", "tensorflow.compat.v1.data.Iterator.from_structure")


def build(builder, s: Statement) -> bool:
    """A restartable `DataIterator`, an `IteratorStart` or a `PipelineInput`; False for anything else."""
    value = s.value
    program = builder.program
    made: tuple | None = None
    if s.q == PLACEHOLDER and s.one is not None and s.call is not None:
        fed = _fed_at_starts(builder, s)
        if fed is None:
            return False
        dtype = arg(s.call, 0, "dtype")
        text = f"{s.one} = {program.tf_alias}.constant({fed}" + (
            f", dtype={cst.Module([]).code_for_node(dtype)})" if dtype is not None else ")")
        s.item.stmt = cast(cst.SimpleStatementLine, cst.parse_statement(text + "\n")).with_changes(
            leading_lines=s.item.stmt.leading_lines)
        builder.add(s.item, PipelineInput, s.names, value, s.deps, fed=fed)
        builder.own(value)
        return True
    if isinstance(value, cst.Attribute) and value.attr.value == "initializer" and isinstance(value.value, cst.Name):
        node = program.node(value.value.value)
        if not (isinstance(node, DataIterator) and node.restarts and node.source):
            return False
        made = (IteratorStart, {"iterator": node.names[0], "source": node.source})
    elif isinstance(value, cst.Call):
        q = builder.qualified(value.func) or ""
        func = value.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        owner = func.value if isinstance(func, cst.Attribute) else None
        receiver = program.node(owner.value) if isinstance(owner, cst.Name) else None
        if q in INITIALIZABLE_FUNCTIONS:
            made = (DataIterator, {"source": _dataset(program, value, q), "restarts": True})
        elif q in FROM_STRUCTURE:
            made = (DataIterator, {"source": "", "restarts": True})
        elif method == INITIALIZABLE and isinstance(receiver, Dataset) and not value.args:
            made = (DataIterator, {"source": receiver.names[0], "restarts": True})
        elif method == INITIALIZABLE:   # (`tf.data...batch(8).make_initializable_iterator()`, a parameter's)
            what = f"`{owner.value}`, which is not such a pipeline" if isinstance(owner, cst.Name) \
                else "a pipeline written in the call"
            raise Refusal.of(value, "iterator_start_source", form=method, what=what)
        elif method == "make_initializer" and isinstance(receiver, DataIterator) and receiver.restarts:
            made = (IteratorStart, {"iterator": receiver.names[0], "source": _dataset(program, value, method)})
    if made is None:
        return False
    if s.one is None:
        raise Refusal.of(value, "dataset_form")
    kind, fields = made
    builder.add(s.item, kind, s.names, value, s.deps, **fields)
    builder.own(value)
    s.item.drop = True   # (made by the runs that start it)
    return True


def _fed_at_starts(builder, s: Statement) -> str | None:
    """The host name every run of an iterator's initializer feeds the placeholder `s` makes,
    where those runs alone feed it and a tf.data pipeline alone reads it (`tf.data.Dataset.
    from_tensor_slices((x_in, y_in))`), and the name is bound before the placeholder and
    never changed after it (TF1 read it at each start; the constant reads it once, here)."""
    name, items = cast(str, s.one), builder.program.items
    where = items.index(s.item)
    fed: set[str] = set()
    reads = 0
    piped: set[int] = set()   # (ids of its names a pipeline reads: a chain's calls nest)
    for item in items:
        for node in walk(item.stmt):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "run":
                feed = arg(node, 1, "feed_dict")
                keys = {e.key.value: e.value for e in feed.elements if isinstance(e, cst.DictElement)
                        and isinstance(e.key, cst.Name)} if isinstance(feed, cst.Dict) else {}
                if name in keys:
                    fetch = arg(node, 0, "fetches")
                    if fetch is None or not _names_start(builder.program, fetch) or not isinstance(keys[name], cst.Name):
                        return None
                    fed.add(cast(cst.Name, keys[name]).value)
                    reads += 1
            elif isinstance(node, cst.Call) and matches(builder.qualified(node.func), "datasets"):
                piped |= {id(n) for n in walk(node) if isinstance(n, cst.Name) and n.value == name}
    used = sum(1 for item in items for n in walk(item.stmt) if isinstance(n, cst.Name) and n.value == name)
    if len(fed) != 1 or used != reads + len(piped) + 1:   # (its own binding, the feeds' keys and the pipelines' reads)
        return None
    host = next(iter(fed))
    before = any(host in bound_names(item.stmt) for item in items[:where])
    changed = any(host in bound_names(item.stmt) or _stored_into(item.stmt, host) for item in items[where:])
    return host if before and not changed else None


def _names_start(program, fetch: cst.BaseExpression) -> bool:
    """Whether a run of `fetch` starts an iterator: `it.initializer`, or a name the program
    binds to one or to `it.make_initializer(...)` (later in the graph than the placeholder)."""
    if isinstance(fetch, cst.Attribute) and fetch.attr.value == "initializer":
        return True
    if not isinstance(fetch, cst.Name):
        return False
    for item in program.items:
        for small in walk(item.stmt):
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == fetch.value
                                                     for t in small.targets):
                value = small.value
                func = value.func if isinstance(value, cst.Call) else value
                return isinstance(func, cst.Attribute) and func.attr.value in ("make_initializer", "initializer")
    return False


# calls that read an array without changing it (any other call given it may: `np.random.shuffle(x)`)
_READERS = frozenset({"len", "print", "str", "repr", "type", "isinstance", "min", "max", "sum", "range", "enumerate",
                      "zip", "sorted", "list", "tuple"})
_READ_METHODS = frozenset({"astype", "reshape", "copy", "mean", "sum", "std", "min", "max", "any", "all", "tolist",
                           "transpose", "flatten", "ravel", "dot", "argmax", "argmin"})


def _stored_into(stmt: cst.CSTNode, name: str) -> bool:
    """`name[...] = v`, `name.a = v`, `name[...] += v`, a call given it or a method of it that
    may change it (`np.random.shuffle(name)`, `name.sort()`): the array changed in place."""
    def reads(node) -> bool:
        return any(isinstance(r, cst.Name) and r.value == name for r in walk(node))
    targets = [t.target for n in walk(stmt) if isinstance(n, cst.Assign) for t in n.targets] + \
        [n.target for n in walk(stmt) if isinstance(n, cst.AugAssign)]
    if any(isinstance(t, (cst.Subscript, cst.Attribute)) and reads(t) for t in targets):
        return True
    for call in (n for n in walk(stmt) if isinstance(n, cst.Call)):
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name:
            if func.attr.value not in _READ_METHODS:
                return True
        elif any(isinstance(a.value, cst.Name) and a.value.value == name for a in call.args) \
                and not (isinstance(func, cst.Name) and func.value in _READERS) and not _starts(call):
            return True
    return False


def _starts(call: cst.Call) -> bool:
    """A session's run (its feed gives the array to the start, which reads it)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "run"


def _dataset(program, call: cst.Call, form: str) -> str:
    """The name of the pipeline the call's one argument names; Refusal otherwise (a pipeline
    written in the call would be made again at each start)."""
    given = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None else None
    if isinstance(given, cst.Name) and isinstance(program.node(given.value), Dataset):
        return given.value
    what = f"`{given.value}`, which is not such a pipeline" if isinstance(given, cst.Name) else "a pipeline written in the call"
    raise Refusal.of(call, "iterator_start_source", form=form.rsplit(".", 1)[-1], what=what)


def started(program, fetch: cst.BaseExpression) -> tuple[str, str] | None:
    """(iterator, pipeline) a run of `fetch` starts: `batches.initializer`, or a name bound to
    an `IteratorStart`; None for any other fetch."""
    if isinstance(fetch, cst.Attribute) and fetch.attr.value == "initializer" and isinstance(fetch.value, cst.Name):
        node = program.node(fetch.value.value)
        if isinstance(node, DataIterator) and node.restarts and node.source:
            return node.names[0], node.source
        return None
    node = program.node(fetch.value) if isinstance(fetch, cst.Name) else None
    if isinstance(node, IteratorStart):
        return node.iterator, node.source
    return None


def run_text(scan, call: cst.Call, fetch: cst.BaseExpression, feed, parent, nested: bool) -> str | None:
    """`batches = iter(pairs)` for a run starting an iterator (None: not such a run); Refusal
    where it cannot be that statement: fed, its result read, inside a function (`nested`)."""
    found = started(scan.p, fetch)
    if found is None:
        return None
    iterator, source = found
    if feed is not None and not (isinstance(feed, cst.Name) and feed.value == "None") and not _fed_inputs(scan.p, feed):
        raise Refusal.of(call, "iterator_start_fed", name=iterator)
    if not isinstance(parent, cst.Expr) or nested:
        raise Refusal.of(call, "iterator_start_form", name=iterator)
    return f"{iterator} = iter({source})"


def _fed_inputs(program, feed) -> bool:
    """A feed of pipeline inputs only, each with the host name its constant was made of."""
    if not isinstance(feed, cst.Dict) or not feed.elements:
        return False
    for e in feed.elements:
        node = program.node(e.key.value) if isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name) else None
        if not (isinstance(node, PipelineInput) and isinstance(e.value, cst.Name) and e.value.value == node.fed):
            return False
    return True


def restarted(program, nodes: list[int]) -> bool:
    """Whether a slice reads an iterator that runs start again (its steps run eagerly)."""
    return any(isinstance(program.nodes[d], DataIterator) and cast(DataIterator, program.nodes[d]).restarts
               for i in nodes for d in program.nodes[i].deps)
