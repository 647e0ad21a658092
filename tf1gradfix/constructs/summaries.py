"""TensorBoard summaries: `tf.summary.scalar/histogram(tag, value)`, `tf.summary.merge_all()`
or `merge([...])`, `writer = tf.summary.FileWriter(logdir, sess.graph)` and
`writer.add_summary(summary, step)`.

In TF2 a summary or a merge is the list of the values it summarizes, computed in
the run's function like any tensor; `add_summary` becomes a call of one generated
function that writes each value under its tag (`tf.summary.scalar(tag, value,
step=step)` inside `writer.as_default()`), and the writer is
`tf.summary.create_file_writer(logdir)`. The same numbers reach the same tags at
the same steps; the graph itself is not written (TF2 has none to show). The tag is
the one TF1 wrote: the name scope TF1 opened for it, made unique in the graph
(`slope_1` after a variable `slope`), read off a string or a graph value's
`.op.name` where the rewrite knows it; summaries made in a loop: summary_loops.py.
"""

from __future__ import annotations

import json
import re
from typing import cast

import libcst as cst

from tf1gradfix.constructs import made_ops
from tf1gradfix.cst.layout import placed
from tf1gradfix.cst.syntax import Refusal, bound_args, graph_ops, literal_string, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import OPS, BuilderModule, Computed, Statement, Summary, TrainOp, Variable

WRITER_METHODS = ("add_summary", "add_graph", "close", "flush")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")   # (TF1's summary_op_util.clean_tag)


def summary_ops() -> dict:
    return graph_ops()["summary_ops"]


def model(builder, item, names, call: cst.Call | None, q: str | None) -> bool:
    """A summary op or a merge of them: a "tensor" node whose value is the list of
    summarized values (`Summary.summary`: (op, tag, value) per value)."""
    program = builder.program
    ops = summary_ops()
    unmapped = graph_ops()["summary_unmapped"]
    if q is not None and q in unmapped:
        raise Refusal.of(call, "summary_op_unmapped", api=q.replace("tensorflow", "tf", 1), why=unmapped[q])
    if call is None or not (q in ops or matches(q, "summary_merges")):
        return False
    q = cast(str, q)   # (an op of the table or a merge: named)
    if names is not None and len(names) > 1:
        raise Refusal.of(call, "summary_several_names")
    if q in ops:
        target, given, value = arguments(call, q)
        tag = asked_tag(builder, given, {}, Refusal.of(call, "summary_arguments", api=q))
        made_ops.name_ops(builder, value, item.scope)   # (made before the summary: its tag is unique against them)
        layout = [(target, tf1_tag(builder, tag, call, item.scope), value)]
        deps = builder.deps_of(value)
        member = True
    else:
        layout, deps = _merged(builder, call, q)
        member = False
    for i in deps:
        if isinstance(program.nodes[i], OPS):
            raise Refusal.of(call, "summary_of_op", kind=program.nodes[i].kind)
    builder.add(item, Summary, names or (), call, deps, calls=[], summary=layout, member=member)
    builder.own(call, but=[value for _, _, value in layout] if member else [])   # (its value: checked as a tensor's)
    return True


def arguments(call: cst.Call, q: str) -> tuple[str, cst.BaseExpression, cst.BaseExpression]:
    """(the TF2 summary op, the tag given, the value) of a summary op's call; Refusal for
    arguments TF2's op has not (`collections=`, `family=`)."""
    row = summary_ops()[q]
    bound = bound_args(call, row["params"], call)
    extra = {k for k, v in bound.items() if k not in row["params"][:2]
             and not (isinstance(v, cst.Name) and v.value == "None")}
    if extra or row["params"][0] not in bound or row["params"][1] not in bound:
        raise Refusal.of(call, "summary_arguments", api=q)
    return row["target"], bound[row["params"][0]], bound[row["params"][1]]


def asked_tag(builder, given: cst.BaseExpression, held: dict[str, str], other: Refusal) -> str:
    """The tag a summary asks for: a string, or TF1's name of a graph value's op
    (`loss.op.name`) or output (`loss.name`: `loss:0`), where it is known (a variable's,
    or one given by `name=` in a call of rules/op_names.toml: model/tf1_names.py).
    `held`: a loop's name -> the graph value it holds; `other`: the refusal for any other tag."""
    text = literal_string(given)
    if text is not None:
        return text
    path = []
    while isinstance(given, cst.Attribute):
        path.append(given.attr.value)
        given = given.value
    attribute = ".".join(reversed(path))
    if not isinstance(given, cst.Name) or attribute not in ("op.name", "name"):
        raise other
    name = held.get(given.value, given.value)
    node = builder.program.node(name)
    op = node.full_name if isinstance(node, Variable) else node.op_name if isinstance(node, Computed) else None
    if op is None:
        raise Refusal.of(given, "summary_op_name", name=name)
    return op if attribute == "op.name" else f"{op}:0"


def tf1_tag(builder, tag: str, call: cst.CSTNode, scope: str = "") -> str:
    """The tag TF1 writes a summary under: the name scope it is made in (`scope`, `a/b/`)
    and the tag with the characters a scope cannot hold made `_`, made unique in the
    graph (`w_1` after a variable `w`; model/tf1_names.py). TF2 writes the tag it is given."""
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", tag).lstrip("/")
    if not cleaned:
        raise Refusal.of(call, "summary_tag_empty")
    return builder.unique_name(scope + cleaned)


def _builder_summaries(builder) -> None:
    """A summary made inside a builder function (`tf.summary.histogram("w", w)` in a
    `dense` helper under `tf.variable_scope`): TF1 made one op per call, tagged under that
    call's scopes, and `merge_all` collects them all; the builder's module keeps the call
    in its `__call__`, where TF2 writes nothing without a default writer. Refused at the
    summary, rather than merged without it."""
    ops = summary_ops()
    for node in builder.program.nodes:
        if not isinstance(node, BuilderModule):
            continue
        for stmt in node.inner:
            for c, q in builder.calls(stmt):
                if q in ops:
                    raise Refusal.of(c, "builder_summary_merged", api=q.replace("tensorflow", "tf", 1),
                                     function=node.var)


def _merged(builder, call: cst.Call, q: str):
    program = builder.program
    if q == "tensorflow.summary.merge_all":
        if call.args:
            raise Refusal.of(call, "merge_all_arguments")
        members = [n for n in program.nodes if isinstance(n, Summary) and n.member]
        added = [name for n in program.nodes if isinstance(n, TrainOp) for name in n.summarized]
        if added:   # (optimize_loss's own summaries: constructs/optimize_loss.py)
            raise Refusal.of(call, "merge_all_after_optimize_loss", names=", ".join(dict.fromkeys(added)))
        _builder_summaries(builder)
        if not members:   # (TF1 returns None: nothing to run)
            raise Refusal.of(call, "merge_all_without_summary")
    else:
        inputs = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None else None
        if not isinstance(inputs, (cst.List, cst.Tuple)):
            raise Refusal.of(call, "summary_merge_form")
        members = []
        for element in inputs.elements:
            node = program.node(element.value.value) if isinstance(element.value, cst.Name) else None
            if not isinstance(node, Summary):
                raise Refusal.of(element, "summary_merge_form")
            members.append(node)
    layout = [entry for n in members for entry in n.summary]
    return layout, frozenset().union(*(n.deps for n in members))


def statement(program, node: Summary, code) -> str:
    """The TF2 statement of a summary node inside a function: the list of its values. A
    variable is read there (`tf.identity`), before the run's update, as TF1's summary
    op read it (returned as it is, the function would read it after the update)."""
    values = []
    for _, _, value in node.summary:
        read = isinstance(value, cst.Name) and isinstance(program.node(value.value), Variable)
        values.append(f"{program.tf_alias}.identity({code(value)})" if read else code(value))
    return f"{node.names[0]} = [{', '.join(values)}]"


class Writers:
    """`w = tf.summary.FileWriter(...)` statements of an owner, and what host code does with `w`."""

    def __init__(self, owner: cst.CSTNode, qualified):
        self.statements: dict[cst.SimpleStatementLine, tuple[str, cst.Call]] = {}
        for stmt in walk(owner):
            small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
            if type(small) is cst.Assign and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                    and isinstance(small.value, cst.Call) and matches(qualified(small.value.func), "summary_writers"):
                self.statements[cast(cst.SimpleStatementLine, stmt)] = (small.targets[0].target.value, small.value)
        self.names = {name for name, _ in self.statements.values()}
        self.graph_writes = [cast(cst.SimpleStatementLine, stmt) for stmt in walk(owner) if _graph_write(stmt, self.names)]
        self.owner = owner
        self.written: list[tuple[cst.Call, str]] = []   # `w.add_summary(...)` calls and their writer (check)
        self.layout: Summary | None = None   # the summary they write

    def check(self, program, scan) -> None:
        """Refusal for a writer or an `add_summary` the rewrite cannot write, once the runs
        are known and before any text is written; what `edits` writes is kept."""
        if not self.statements:
            return
        for _, call in self.statements.values():
            _writer_arguments(call)
        fetched = _fetched_summaries(program, scan)
        allowed = {id(cast(cst.Assign, stmt.body[0]).targets[0].target) for stmt in self.statements}
        for node in walk(self.owner):
            call = cast(cst.Call, node)   # (skipped below unless it is one)
            if type(call) is not cst.Call or not isinstance(call.func, cst.Attribute) \
                    or not isinstance(call.func.value, cst.Name) or call.func.value.value not in self.names:
                continue
            method = call.func.attr.value
            if method not in WRITER_METHODS:
                continue
            if method == "add_graph" and not any(cast(cst.Expr, stmt.body[0]).value is call for stmt in self.graph_writes):
                continue   # (its result used, or other arguments: the writer's other use)
            allowed.add(id(call.func.value))
            if method != "add_summary":
                continue
            bound = bound_args(call, ["summary", "global_step"], call)
            summary = bound.get("summary")
            source = fetched.get(summary.value) if isinstance(summary, cst.Name) else fetched.get(summary)
            if source is None:
                raise Refusal.of(call, "add_summary_not_fetched")
            if self.layout is not None and source is not self.layout:
                raise Refusal.of(call, "add_summary_two_summaries")
            self.layout = source
            self.written.append((call, call.func.value.value))
        for n in (n for n in walk(self.owner) if type(n) is cst.Name and n.value in self.names):
            if id(n) not in allowed:
                raise Refusal.of(n, "summary_writer_other_use", name=n.value, methods=', '.join(f'`{m}`' for m in WRITER_METHODS))

    def edits(self, fresh, tf: str, code, note) -> tuple[dict, str | None]:
        """(replacements, the text of the writing function), as `check` found them."""
        if not self.statements:
            return {}, None
        edits: dict = {}
        for stmt, (name, call) in self.statements.items():
            line = cast(cst.SimpleStatementLine, cst.parse_statement(f"{name} = {_writer(call, tf, code, note)}\n"))
            edits[stmt] = stmt.with_changes(body=[line.body[0]])
        for stmt in self.graph_writes:   # (TF2's writer has no graph to write)
            note(stmt.body[0], "`add_graph` dropped: TF2 writes no graph with the summaries (TensorBoard's graph "
                 "tab stays empty; `tf.summary.trace_on` traces a `tf.function`'s graph)")
            edits[stmt] = cst.RemovalSentinel.REMOVE
        helper = fresh("write_summaries")
        for call, writer in self.written:
            edits[call] = _as_call(helper, writer)
        merged = self.layout
        if merged is None:
            return edits, None
        lines = [f"def {helper}(writer, summary, global_step=0):", "    with writer.as_default():"]
        lines += [placed(f"{tf}.summary.{op}({json.dumps(tag)}, summary[{k}], step=global_step)", 8, " " * 8)
                  for k, (op, tag, _) in enumerate(merged.summary)]
        return edits, "\n".join(lines)


def _graph_write(stmt: cst.CSTNode, writers: set[str]) -> bool:
    """`writer.add_graph(sess.graph)` (a graph, by one argument) as a statement of its own."""
    small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
    call = small.value if type(small) is cst.Expr else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_graph" \
        and isinstance(call.func.value, cst.Name) and call.func.value.value in writers \
        and len(call.args) == 1 and call.args[0].keyword is None


def _fetched_summaries(program, scan) -> dict:
    """Host names (and run calls) holding a fetched summary's values -> its node."""
    out: dict = {}
    for site in scan.sites:
        for position, fetch in enumerate(site.fetches):
            node = program.node(fetch)
            if not isinstance(node, Summary):
                continue
            if len(site.fetches) == 1 and site.structure == "single":
                out[site.call] = node
            parent = site.parent
            if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
                target = parent.targets[0].target
                if site.structure == "single" and isinstance(target, cst.Name):
                    out[target.value] = node
                elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(site.fetches) \
                        and isinstance(target.elements[position].value, cst.Name):
                    out[cast(cst.Name, target.elements[position].value).value] = node
    return out


def _writer(call: cst.Call, tf: str, code, note) -> str:
    """`tf.summary.FileWriter(logdir, graph, max_queue, flush_secs, graph_def, filename_suffix)`
    as `tf.summary.create_file_writer(...)`."""
    bound = _writer_arguments(call)
    args = [code(bound["logdir"])]
    if "max_queue" in bound:
        args.append(f"max_queue={code(bound['max_queue'])}")
    if "flush_secs" in bound:
        args.append(f"flush_millis=({code(bound['flush_secs'])}) * 1000")
    if "filename_suffix" in bound:
        args.append(f"filename_suffix={code(bound['filename_suffix'])}")
    dropped = [f"`{k}=`" for k in ("graph", "graph_def") if k in bound]
    note(call, "the summary writer becomes `tf.summary.create_file_writer` (TF2's summary ops need the "
         "`tensorboard` package)" + (f"; {' and '.join(dropped)} dropped: TF2 writes no graph with the summaries"
                                     if dropped else ""))
    return f"{tf}.summary.create_file_writer({', '.join(args)})"


def _writer_arguments(call: cst.Call) -> dict:
    """The arguments of `tf.summary.FileWriter(...)` by name; Refusal for a form TF2's writer has not."""
    bound = bound_args(call, ["logdir", "graph", "max_queue", "flush_secs", "graph_def", "filename_suffix", "session"], call)
    if "session" in bound or "logdir" not in bound:
        raise Refusal.of(call, "summary_writer_arguments")
    return bound


def _as_call(helper: str, writer: str):
    """`w.add_summary(s, step)` -> `helper(w, s, step)` (an edit of the rewritten call)."""
    def edit(updated: cst.Call) -> cst.Call:
        first = cst.Arg(cst.Name(writer), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(func=cst.Name(helper), args=[first, *updated.args])
    return edit


def build(builder, s: Statement) -> bool:
    """A `Summary` for `s = tf.summary.scalar(...)` or a merge; False if not one."""
    return model(builder, s.item, s.names, s.call, s.q)
