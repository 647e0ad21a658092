"""Variable factories: a function that makes one `tf.Variable` from its arguments and
returns it, called where the graph is built (`W1 = weight_variable([784, 10])`).

    def weight_variable(shape, name=None):
        initial = tf.truncated_normal(shape, stddev=0.1)
        return tf.Variable(initial, name=name)

Each call at graph level made one variable, once; it still does in TF2, so the
function and its calls stay as written (with TF2 spellings) and the model reads
each call as the variable statement it stands for (`W1 = tf.Variable(...)`),
under the name TF1 gave it. A factory called from inside another function would
make new weights on every call in the step functions: refused there
(`function_creates_weights`), as before.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import variables
from tf1gradfix.cst.syntax import Refusal, bound_args, is_docstring, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import Statement, Variable

_VARIABLE = "tensorflow.Variable"


def factory_call(fn: cst.FunctionDef, qualified) -> cst.Call | None:
    """The one `tf.Variable(...)` a factory returns, or None if `fn` is not a factory:
    plain parameters, then assignments of names, then `return tf.Variable(...)` (or
    the name bound to it); its other calls may only be ones a variable statement's
    initial value may make (no graph-wide state, no summaries, no session)."""
    params = fn.params
    if fn.decorators or fn.asynchronous or params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) \
            or params.star_kwarg is not None or params.kwonly_params or params.posonly_params:
        return None
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    if body and is_docstring(body[0]):
        body = body[1:]
    if not body or not all(isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 for s in body):
        return None
    smalls = [cast(cst.SimpleStatementLine, s).body[0] for s in body]
    *assigns, last = smalls
    if not isinstance(last, cst.Return) or last.value is None:
        return None
    bound: dict[str, cst.BaseExpression] = {}
    for a in assigns:
        if not (isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)):
            return None
        bound[a.targets[0].target.value] = a.value
    returned = bound.get(last.value.value) if isinstance(last.value, cst.Name) else last.value
    calls = [c for s in smalls for c in walk(s) if type(c) is cst.Call]
    made = [c for c in calls if qualified(c.func) == _VARIABLE]
    if len(made) != 1 or made[0] is not returned:
        return None
    for c in calls:
        q = qualified(c.func)
        if q is None or c is made[0]:
            continue
        if matches(q, "graph_wide") or matches(q, "sessions") or q == "tensorflow.get_variable" \
                or q.startswith("tensorflow.placeholder") \
                or (matches(q, "refuse") and not matches(q, "aligned_random")):
            return None
    return made[0]


def called(builder, value: cst.BaseExpression) -> bool:
    """Is `value` a call of a factory of the module (a graph statement, though it names
    no TensorFlow function)?"""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
        and value.func.value in builder.program.helpers \
        and factory_call(builder.program.helpers[value.func.value], builder.qualified) is not None


def reached(builder, node: cst.CSTNode) -> str | None:
    """The first factory that `node`'s calls of the module's functions reach, directly
    or through other functions: such a call makes a variable each time it runs."""
    helpers, seen = builder.program.helpers, set()
    stack = [node]
    while stack:
        for call in (c for c in walk(stack.pop()) if type(c) is cst.Call):
            name = call.func.value if isinstance(call.func, cst.Name) else None
            if name not in helpers or name in seen:
                continue
            seen.add(name)
            if factory_call(helpers[name], builder.qualified) is not None:
                return name
            stack.append(helpers[name])
    return None


def build(builder, s: Statement) -> bool:
    """A `Variable` for `v = factory(...)`; False if the value is no factory call."""
    call = s.call
    if s.one is None or call is None or not isinstance(call.func, cst.Name):
        return False
    fn = builder.program.helpers.get(call.func.value)
    inner = factory_call(fn, builder.qualified) if fn is not None else None
    if inner is None:
        return False
    variables.check_name(builder, s.one, call)
    names = [p.name.value for p in fn.params.params]
    given = bound_args(call, names, call)
    defaults = {p.name.value: p.default for p in fn.params.params if p.default is not None}
    if set(given) - set(names) or set(names) - set(given) - set(defaults):
        raise Refusal.of(call, "factory_arguments", function=fn.name.value)
    args = {**defaults, **given}
    # the variable statement the call stands for: the inner call, its parameters read as passed
    read = inner.with_changes(args=[a.with_changes(value=_at_call(a.value, args)) for a in inner.args])
    try:
        bound, trainable, full, _ = variables.checked(builder, s.item, s.one, read, _VARIABLE, s.deps, writes=False)
    except Refusal as refusal:   # (shown at the call, which the module holds)
        refusal.node = call
        raise
    builder.add(s.item, Variable, (s.one,), call, s.deps, source=_VARIABLE, bound={}, full_name=full,
                unnamed="name" not in bound,
                trainable=trainable, factory=fn.name.value)
    return True


def _at_call(expr: cst.BaseExpression | None, args: dict) -> cst.BaseExpression | None:
    """An argument of the inner `tf.Variable`, read at the factory's call: a parameter
    becomes what the call passed for it."""
    if isinstance(expr, cst.Name) and expr.value in args:
        return args[expr.value]
    return expr
