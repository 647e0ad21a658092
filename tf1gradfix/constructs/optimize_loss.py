"""`train_op = tf.contrib.layers.optimize_loss(loss, global_step, learning_rate, optimizer, ...)`:
contrib's one-call training step (layers/python/layers/optimizers.py, TF 1.15).

It makes the optimizer (a name of OPTIMIZER_CLS_NAMES with `learning_rate=lr`, a class
made so, an instance, or a function of the rate), takes `compute_gradients` of the loss
over the trainable variables (or `variables=`), clips them by their global norm
(`clip_gradients=` a float) and applies them, counting `global_step` (its
`get_global_step()` when None; not with `increment_global_step=False`). A float rate is
held in a variable `OptimizeLoss/learning_rate` that nothing else writes; a tensor rate (a
schedule of the step, a fed rate) is read as it is. So it is the optimizer statement and
a `minimize` of that optimizer, with the clipping between the gradients and the update:
the model gets those nodes, and the existing constructs decide what each becomes
(optimizers.toml, the schedules, sparse gradients). Its result is the loss, computed in
the run before the update (`with_dependencies([update], loss)` only orders it), so a
fetch of it is the step function's loss. The `UPDATE_OPS` it depends on by default are
what Keras batch normalization updates in the training call; its summaries reach
TensorBoard only through `merge_all`, which is refused after it, else they go with a note.
Settings the rewrite does not reproduce, and values TF1 raises on, are refused.
"""

from __future__ import annotations

from typing import NoReturn, cast

import libcst as cst

from tf1gradfix.constructs import global_step, gradient_calls, host_values, optimizers
from tf1gradfix.cst.syntax import Refusal, bound_args, literal_string, matches
from tf1gradfix.model.nodes import Optimizer, Placeholder, Statement, Static, Tensor, TrainOp, Variable
from tf1gradfix.rules import contrib

SYMBOL = "tensorflow.contrib.layers.optimize_loss"


def spec() -> dict:
    return contrib.table()["optimize_loss"]


def build(builder, s: Statement) -> bool:
    """The optimizer and the train op of an `optimize_loss` statement; False if not one."""
    if s.q != SYMBOL or s.call is None:
        return False
    call = s.call
    if s.one is None:
        raise Refusal.of(call, "layer_target", api=SYMBOL)
    table = spec()
    bound = bound_args(call, table["params"], call)
    for param in sorted(set(bound) - set(table["params"])):
        _refuse(bound[param], param, "not a parameter of optimize_loss (TF1 fails on it)")
    for param in ("loss", "global_step", "learning_rate", "optimizer"):
        if param not in bound:
            _refuse(call, param, "a required argument (TF1 fails without it)")
    for param, why in table["refused"].items():
        if param in bound and not _none(bound[param]):
            _refuse(bound[param], param, why)
    loss = bound["loss"]
    rate = _rate(builder, bound["learning_rate"])
    opt = _optimizer(builder, s, bound["optimizer"], rate)
    step = _step(builder, bound)
    clip = _clip(builder, bound.get("clip_gradients"))
    _settings(builder, bound)
    gradient_calls.note_dropped(builder, call, bound)
    summarized = _summaries(bound.get("summaries"))
    made_rate = rate is not None and not builder.deps_of(rate)   # (a float: TF1 kept it in a variable)
    if summarized or made_rate:
        builder.note(call, "TFG901", _note(summarized, made_rate))
    if opt.index == -1:
        builder.append(opt)
    update = {"loss": loss, **({"var_list": bound["variables"]} if not _none(bound.get("variables")) else {})}
    stats = s.item.stats or _none(bound.get("update_ops"))   # (by default the UPDATE_OPS it depends on)
    # (the rate is the optimizer's: a name of it reaches the update through the optimizer, as minimize's does)
    deps = set().union(*(builder.deps_of(bound[p]) for p in ("loss", "global_step", "variables") if p in bound))
    builder.add(s.item, TrainOp, s.names, call, deps | {opt.index}, method="minimize", optimizer=opt.index,
                bound=update, call=call, step=step, stats=stats, clip=clip,
                result=loss.value if isinstance(loss, cst.Name) else None, summarized=summarized,
                rate_variable=made_rate)
    builder.own(call)   # (each argument checked above: the loss is a name, the rest settings)
    return True


def _refuse(node: cst.CSTNode, param: str, detail: str) -> NoReturn:
    raise Refusal.of(node, "optimize_loss_argument", param=param, detail=detail)


def _none(expr: cst.BaseExpression | None) -> bool:
    return expr is None or isinstance(expr, cst.Name) and expr.value == "None"


def _fixed(builder, expr: cst.BaseExpression):
    """A host value the file fixes (a literal, a constant, a construction's setting), else NotFixed."""
    return host_values.value(builder, expr, {})


def _rate(builder, lr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The rate the optimizer is made with (None: none given); Refusal for what TF1 raises on:
    a rate that is neither a float nor a tensor of rank 0 (an int, a variable, a placeholder
    of another or unknown rank)."""
    if _none(lr):
        return None
    node = builder.program.node(lr.value) if isinstance(lr, cst.Name) else None
    if isinstance(node, Variable):
        _refuse(lr, "learning_rate", "a variable, which TF1 takes neither as a float nor as a tensor (it fails)")
    if isinstance(node, Placeholder):
        shape = node.shape
        if not (isinstance(shape, (cst.List, cst.Tuple)) and not shape.elements):
            _refuse(lr, "learning_rate", "a placeholder not of shape `[]`: TF1 takes a tensor rate of rank 0 only")
        return lr
    if isinstance(node, (Tensor, Static)):
        return lr   # (a schedule of the step, or refused with the optimizer's settings: optimizers.check_settings)
    if builder.deps_of(lr):
        _refuse(lr, "learning_rate", "an expression of graph values: name the rate (a schedule of the step) first")
    try:
        value = _fixed(builder, lr)
    except host_values.NotFixed:
        _refuse(lr, "learning_rate", "a value the file does not fix: TF1 takes a float (kept in a variable) or a "
                "tensor of rank 0, and fails on an int")
    if not isinstance(value, float) or value < 0.0:
        _refuse(lr, "learning_rate", f"{value!r}: TF1 takes a float of at least 0 or a tensor of rank 0 (it fails here)")
    return lr


def _optimizer(builder, s: Statement, given: cst.BaseExpression, rate) -> Optimizer:
    """The optimizer `optimizer=` makes: a node the program has, or one made in place."""
    table, program, tf = spec(), builder.program, builder.program.tf_alias
    name = literal_string(given)
    q = None if isinstance(given, (cst.Call, cst.Lambda)) else builder.qualified(given)
    if name is not None or optimizers.is_optimizer(q):
        if name is not None and name not in table["names"]:
            _refuse(given, "optimizer", f"{name!r} is none of {', '.join(table['names'])} (TF1 fails on it)")
        if rate is None:
            _refuse(given, "optimizer", "a name or class with no learning rate (TF1 fails on it)")
        cls = table["names"][name] if name is not None else cast(str, q).rsplit(".", 1)[1]
        extra = table["name_arguments"].get(name or "", "")
        made = cast(cst.Call, cst.parse_expression(f"{tf}.train.{cls}(learning_rate=RATE{', ' if extra else ''}{extra})"))
        made = made.with_changes(args=[made.args[0].with_changes(value=rate), *made.args[1:]])
        return _made(builder, s, made, cls, given)
    if isinstance(given, cst.Name) and isinstance(program.node(given.value), Optimizer):
        return cast(Optimizer, program.node(given.value))
    if isinstance(given, cst.Call) and optimizers.is_optimizer(builder.qualified(given.func)):
        return _made(builder, s, given, cast(str, builder.qualified(given.func)).rsplit(".", 1)[1], given)
    body = given.body if isinstance(given, cst.Lambda) else None
    params = given.params.params if isinstance(given, cst.Lambda) else ()
    if isinstance(body, cst.Call) and optimizers.is_optimizer(builder.qualified(body.func)) \
            and len(params) == (0 if rate is None else 1) and _plain(cast(cst.Lambda, given)):
        if params:   # TF1 calls it with the rate
            made = cast(cst.Call, body.visit(_Substitute(params[0].name.value, cast(cst.BaseExpression, rate))))
        else:
            made = body
        return _made(builder, s, made, cast(str, builder.qualified(body.func)).rsplit(".", 1)[1], given)
    _refuse(given, "optimizer", "the rewrite follows a name of OPTIMIZER_CLS_NAMES, a v1 optimizer class, an "
            "optimizer, or a lambda making one from the rate")


def _made(builder, s: Statement, call: cst.Call, cls: str, where: cst.CSTNode) -> Optimizer:
    """An optimizer made by optimize_loss: written where its statement was (it gets a name)."""
    origins = getattr(builder.v, "origins", None)
    if origins is None:
        origins = builder.v.origins = {}
    origins[id(call)] = (call, where)   # (its refusals and notes point at the argument)
    deps = set().union(*(builder.deps_of(a.value) for a in call.args)) if call.args else set()
    return Optimizer(index=-1, names=(), stmt=s.item.stmt, value=call, deps=frozenset(deps), cls=cls, call=call,
                     inline=True)


def _plain(function: cst.Lambda) -> bool:
    """A lambda of positional parameters only, without defaults."""
    p = function.params
    return not (p.kwonly_params or p.posonly_params or isinstance(p.star_arg, (cst.Param, cst.ParamStar))
                or p.star_kwarg is not None or any(param.default is not None for param in p.params))


class _Substitute(cst.CSTTransformer):
    """The lambda's parameter replaced by the rate TF1 calls it with."""

    def __init__(self, name: str, value: cst.BaseExpression):
        super().__init__()
        self.name, self.value = name, value

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.value if original.value == self.name else updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False   # (an inner lambda binds its own names)


def _step(builder, bound) -> str | None:
    """The step variable the update counts (None: none), as optimize_loss finds it."""
    given, program = bound["global_step"], builder.program
    if _none(given) or isinstance(given, cst.Call) and not given.args \
            and matches(builder.qualified(given.func), "global_step_getters"):
        node = global_step.find(program)   # (TF1: `tf.train.get_global_step()`, None when there is none)
        name = None if node is None else node.names[0]
    else:
        node = global_step.resolve(program, program.node(given.value)) if isinstance(given, cst.Name) else None
        name = given.value if isinstance(given, cst.Name) else None
        if not isinstance(node, Variable) or node.trainable:
            raise Refusal.of(given, "global_step_form")
    if node is not None and not _integer(node):
        _refuse(given, "global_step", "TF1 asserts an integer step variable (it fails on another)")
    increment = bound.get("increment_global_step")
    if increment is not None and not (isinstance(increment, cst.Name) and increment.value in ("True", "False")):
        _refuse(increment, "increment_global_step", "a value the rewrite does not read: write True or False")
    counted = increment is None or increment.value == "True"
    return name if counted else None


def _integer(node: Variable) -> bool:
    dtype = node.bound.get("dtype")
    if node.global_step:
        return True
    if dtype is not None:
        return isinstance(dtype, cst.Attribute) and dtype.attr.value in ("int32", "int64")
    return isinstance(node.bound.get("initial_value"), cst.Integer)


def _clip(builder, clip: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The global norm the gradients are clipped to (None: none): a float; TF1 fails on an
    int, and a callable rewrites the pairs in its own way."""
    if _none(clip):
        return None
    clip = cast(cst.BaseExpression, clip)
    if builder.deps_of(clip):
        _refuse(clip, "clip_gradients", "a graph value, which TF1 takes neither as a float nor as a callable (it fails)")
    try:
        value = _fixed(builder, clip)
    except host_values.NotFixed:
        _refuse(clip, "clip_gradients", "a function of the pairs, or a value the file does not fix: the rewrite "
                "writes the clipping of a float, `tf.clip_by_global_norm`")
    if not isinstance(value, float):
        _refuse(clip, "clip_gradients", f"{value!r}: TF1 clips by a float only, and fails on an int")
    return clip


def _settings(builder, bound) -> None:
    """`update_ops` (None: the UPDATE_OPS collection; `[]`: none) and `name` (a scope)."""
    update_ops = bound.get("update_ops")
    if update_ops is not None and not _none(update_ops) and not (isinstance(update_ops, cst.List)
                                                                 and not update_ops.elements):
        _refuse(update_ops, "update_ops", "a list of its own: the rewrite follows the default (the UPDATE_OPS "
                "collection, which Keras layers update in the training call) or `[]`")
    name = bound.get("name")
    if name is not None and not _none(name) and literal_string(name) is None:
        _refuse(name, "name", "a scope name that is not a string literal")


def _summaries(given: cst.BaseExpression | None) -> tuple[str, ...]:
    """The summaries it adds to the SUMMARIES collection (the default, or a literal list)."""
    table = spec()
    if _none(given):
        return tuple(table["default_summaries"])
    given = cast(cst.BaseExpression, given)
    names = [literal_string(e.value) for e in given.elements] if isinstance(given, (cst.List, cst.Tuple)) else [None]
    for name in names:
        if name not in table["summaries"]:
            _refuse(given, "summaries", f"a list of names of {', '.join(table['summaries'])}, as literals")
    return tuple(n for n in cast(list[str], names) if n != "learning_rate")   # (made with learning_rate_decay_fn only)


def _note(summarized: tuple[str, ...], made_rate: bool) -> str:
    parts = []
    if summarized:
        parts.append(f"its summaries ({', '.join(summarized)}) reached TensorBoard only through "
                     "`tf.summary.merge_all()`, which the program does not call: dropped")
    if made_rate:
        parts.append("its float rate was a variable `OptimizeLoss/learning_rate` nothing writes: the optimizer holds it")
    return "`tf.contrib.layers.optimize_loss`: " + "; ".join(parts)

