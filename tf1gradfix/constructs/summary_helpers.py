"""A function of the module called for the summaries it makes:

    def variable_summaries(var):
        with tf.name_scope("summaries"):
            mean = tf.reduce_mean(var)
            tf.summary.scalar("mean", mean)
            tf.summary.histogram("histogram", var)

    with tf.name_scope("weights"):
        w = tf.Variable(tf.zeros([4, 8]))
        variable_summaries(w)

TF1 ran the function once, while the graph was built: it added its summary ops to
the graph, each under the name scopes open at the call and inside the function, for
`merge_all` to collect. That is a list of (tag, value) like the summaries written
one by one (summaries.py): each value is the function's expression with its
parameters replaced by the call's arguments and its locals by what they hold, and
the tag is the one TF1 made (`weights/summaries/mean`, numbered where the graph
held the name). In TF2 the values are computed in the step that fetches the merge;
the function itself goes where every call of it is such a statement.

Only functions made of name scopes with a string, assignments of one name, and
summary calls; the arguments are names (a value is then computed once per summary,
as TF1 computed it once per op that read it, with the same numbers).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import made_ops, nested_calls, summaries
from tf1gradfix.cst.syntax import Refusal, bound_args, is_docstring, literal_string, name_nodes
from tf1gradfix.cst.walk import replaced, walk
from tf1gradfix.model.nodes import OPS, Summary


def model(builder, item, call: cst.Call) -> bool:
    """A `Summary` member for `helper(args)` at `item`; False where `helper` is not a
    function of the module made of summaries only."""
    func = call.func
    helper = builder.program.helpers.get(func.value) if isinstance(func, cst.Name) else None
    if not isinstance(helper, cst.FunctionDef) or helper.decorators or helper.asynchronous is not None:
        return False
    params = helper.params
    if not _plain_parameters(params):
        return False
    given = bound_args(call, [p.name.value for p in params.params], call)
    if set(given) != {p.name.value for p in params.params} \
            or not all(isinstance(v, cst.Name) and builder.program.node(v.value) is not None for v in given.values()):
        return False
    layout: list = []
    if not _walk(builder, helper.body.body, item.scope, dict(given), layout, top=True):
        return False
    deps = set()
    for _, _, value in layout:
        deps |= builder.deps_of(value)
    for i in deps:
        if isinstance(builder.program.nodes[i], OPS):
            raise Refusal.of(call, "summary_of_op", kind=builder.program.nodes[i].kind)
    node = builder.add(item, Summary, (), call, deps, calls=[], summary=layout, member=True)
    builder.own(call)   # (the values written in the steps are checked below)
    for _, _, value in layout:
        nested_calls.check(builder, node, value)
    _drop_definition(builder, helper)
    return True


def model_calls(builder, item, value: cst.CSTNode, name: str) -> bool:
    """The summaries a model function makes at each of its calls in `value` (`fake =
    generator(z)`, the function computing `out` and making `tf.summary.histogram("out",
    out)`): a `Summary` member per call, in the order Python makes the calls, each value
    the function's expression for it with the call's arguments in place of the parameters,
    and tagged under the name scopes open at the call. The summary statements leave the
    function: the run of the merge computes those values, as TF1's merge ran those ops.
    False where the function is other than name scopes, assignments of one name,
    summaries and a last `return`, or is not defined beside the graph code, or a call
    passes other than names of graph values."""
    program = builder.program
    helper = program.helpers[name]
    if helper.decorators or helper.asynchronous is not None or builder.is_builder(name) \
            or not _walk(builder, helper.body.body, "", {}, [], top=True, dry=True) \
            or not any(it.stmt is helper for it in program.items):
        return False
    if not _plain_parameters(helper.params):
        return False
    wanted = [p.name.value for p in helper.params.params]
    calls = [c for c in walk(value) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name) and c.func.value == name]
    given = [bound_args(call, wanted, call) for call in calls]
    if not calls or any(set(g) != set(wanted) or not all(isinstance(v, cst.Name) and program.node(v.value) is not None
                                                          for v in g.values()) for g in given):
        return False
    for call, bound in zip(calls, given):
        layout: list = []
        _walk(builder, helper.body.body, item.scope, dict(bound), layout, top=True)   # (plain: checked above)
        deps = set().union(*(builder.deps_of(v) for _, _, v in layout))
        for i in deps:
            if isinstance(program.nodes[i], OPS):
                raise Refusal.of(call, "summary_of_op", kind=program.nodes[i].kind)
        node = builder.append(Summary(index=0, names=(), stmt=item.stmt, value=call, deps=frozenset(deps), calls=[],
                                      summary=layout, member=True))
        for _, _, value in layout:   # (the values written in the merge's step)
            nested_calls.check(builder, node, value)
    program.edits.update({stmt: cst.RemovalSentinel.REMOVE for stmt in walk(helper.body)
                          if isinstance(stmt, cst.SimpleStatementLine) and _summary_call(builder, stmt) is not None})
    return True


def _plain_parameters(params: cst.Parameters) -> bool:
    """Positional-or-keyword parameters without defaults only: each call binds every one."""
    return not (isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None or params.posonly_params
                or params.kwonly_params or any(p.default is not None for p in params.params))


def _summary_call(builder, stmt) -> cst.Call | None:
    """The summary op a statement line makes by itself (`tf.summary.scalar("a", a)`), or None."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
    return call if call is not None and builder.qualified(call.func) in summaries.summary_ops() else None


def _walk(builder, body, scope: str, env: dict, layout: list, top: bool = False, dry: bool = False) -> bool:
    """Appends the (op, tag, value) of the summaries `body` makes under the name scope
    `scope` to `layout`, `env` holding what each name stands for; False for anything but
    name scopes of a string, assignments of one name (not of a summary: what it is in TF2
    differs), summaries with a string tag and, at the top, a last `return`. `dry`: only
    whether it reads `body` whole (no name is made unique, nothing appended)."""
    for k, stmt in enumerate(body):
        if top and k == 0 and is_docstring(stmt):
            continue
        if isinstance(stmt, cst.With):
            inner = stmt.items[0].item if len(stmt.items) == 1 and stmt.items[0].asname is None else None
            label = literal_string(inner.args[0].value) if isinstance(inner, cst.Call) and len(inner.args) == 1 else None
            if not isinstance(inner, cst.Call) or builder.qualified(inner.func) != "tensorflow.name_scope" or not label:
                return False
            entered = scope + label + "/" if dry else builder.unique_name(scope + label) + "/"   # (TF1's, made unique)
            if not _walk(builder, stmt.body.body, entered, env, layout, dry=dry):
                return False
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        assigned = isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
        if assigned or isinstance(small, cst.Return) and top and k == len(body) - 1:   # (a model function's value)
            if any(isinstance(n, cst.Call) and builder.qualified(n.func) in summaries.summary_ops() for n in walk(cast(cst.CSTNode, small))):
                return False
            if not dry:   # (its ops are made: later summaries' tags are unique against them)
                made_ops.name_ops(builder, cast(cst.BaseSmallStatement, small), scope)
            if assigned:
                assign = cast(cst.Assign, small)
                env[cast(cst.Name, assign.targets[0].target).value] = _substituted(assign.value, env)
            continue
        call = _summary_call(builder, stmt)
        if call is None:
            return False
        target, asked, computed = summaries.arguments(call, cast(str, builder.qualified(call.func)))
        tag = literal_string(asked)
        if tag is None:
            return False
        if not dry:
            made_ops.name_ops(builder, computed, scope)
            layout.append((target, summaries.tf1_tag(builder, tag, call, scope), _substituted(computed, env)))
    return True


def _substituted(expr: cst.BaseExpression, env: dict) -> cst.BaseExpression:
    """`expr` with each name of `env` replaced by what it stands for (in parentheses
    where it is not one atom); other names must be the module's (checked by the caller's deps)."""
    targets = {n: _atom(env[n.value]) for n in name_nodes(expr) if n.value in env}
    if isinstance(expr, cst.Name) and expr in targets:
        return targets[expr]
    return cast(cst.BaseExpression, replaced(expr, targets))


def _atom(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _drop_definition(builder, helper: cst.FunctionDef) -> None:
    """The function's definition goes where every use of its name is a statement calling it
    (each one is modeled here, or the file is refused)."""
    name = helper.name.value
    calls = {id(stmt.body[0].value.func) for item in builder.program.items
             for stmt in [item.stmt] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
             and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)}
    uses = [n for n in walk(builder.module) if type(n) is cst.Name and n.value == name and n is not helper.name]
    if all(id(n) in calls for n in uses):
        for item in builder.program.items:
            if item.stmt is helper:
                item.drop = True
