"""Layer functions called for each layer, read as a copy of their statements at each call.

    def full_layer(x, size):                    W = tf.Variable(..., name="fc1_W")
        W = tf.Variable(..., name=name + "_W")  h = tf.nn.relu(tf.matmul(x, W))
        return tf.nn.relu(tf.matmul(x, W))   -> W_2 = tf.Variable(..., name="fc2_W")
    h = full_layer(x, "fc1")                    out = tf.nn.relu(tf.matmul(h, W_2))
    out = full_layer(h, "fc2")

TF1 made new variables at every call of such a function (with `tf.Variable`, itself
or through a factory of the module, `weight_variable(shape)`), and its operations
where it was called: a copy of the statements at each call builds the same graph.
inlined_calls.py makes the copies (in a reading of their own, tried last), each with
its locals named apart; this module says which functions are read so and lifts a
call nested in an expression (`h = tf.nn.relu(full_layer(x, 8))`) onto a line of its
own, where it is the first call Python makes in the statement (so no op moves). It may
open scopes its caller names (`with tf.name_scope(layer_name):`, the `return` inside):
each copy opens its call's scope and binds the result inside it. A function calling
`tf.get_variable` (a second call would ask for the same variable), called in a loop,
or read otherwise than called is not read so.
"""

from __future__ import annotations

from collections import Counter
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper

from tf1gradfix.constructs import variable_factories
from tf1gradfix.cst.metadata import starts
from tf1gradfix.cst.syntax import alias_qualified, fresh_name
from tf1gradfix.cst.walk import post_order, walk

# (expressions whose parts Python may evaluate out of source order, or not at all)
_UNORDERED = (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def copied(functions: dict, module: cst.Module, aliases: set[str], calls: Counter, named: Counter,
           placed: Counter, anywhere: Counter) -> dict[str, cst.FunctionDef]:
    """The functions of `functions` (plain ones, ending in a `return`) to copy at each call:
    called more than once or in a loop, named by their calls only, each call a statement or
    lifted from one (`placed`; `anywhere`: loops' statements too), and making variables."""
    makers = _makers(module, aliases)
    qualified = alias_qualified(aliases)
    scoped = {c.func.value for w in walk(module) if isinstance(w, cst.With)   # (called under a scope: the name
              for c in walk(w.body) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name)}   # TF1 gave it)
    return {name: f for name, f in functions.items()
            if (calls[name] > 1 or anywhere[name] > placed[name]) and named[name] == calls[name] + 1
            and anywhere[name] == calls[name] and name in makers
            and (name in scoped or variable_factories.factory_call(f, qualified) is None)}   # (else: variable_factories)


def _makers(module: cst.Module, aliases: set[str]) -> set[str]:
    """Module functions making a `tf.Variable` at each call, themselves or through another
    such function, and calling no `tf.get_variable`."""
    qualified = alias_qualified(aliases)
    calls = {s.name.value: {qualified(c.func) or (c.func.value if isinstance(c.func, cst.Name) else None)
                            for c in walk(s.body) if isinstance(c, cst.Call)}
             for s in module.body if isinstance(s, cst.FunctionDef)}
    found = {name for name, made in calls.items() if "tensorflow.Variable" in made}
    while True:
        more = {name for name, made in calls.items() if made & found} - found
        if not more:
            break
        found |= more
    return {name for name in found if "tensorflow.get_variable" not in calls[name]}


def first_nested(stmt: cst.CSTNode) -> cst.Call | None:
    """The call of a module function nested in a statement's value that Python makes first,
    where it is nested (not the value itself) and its arguments call nothing."""
    small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
    value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
    if value is None or any(isinstance(n, _UNORDERED) for n in walk(value)):
        return None
    first = next((n for n in post_order(value) if isinstance(n, cst.Call)), None)
    return first if first is not None and first is not value and isinstance(first.func, cst.Name) else None


def hoisted(stmt: cst.CSTNode, functions: frozenset[str] | set[str], taken: set[str]) -> list[cst.SimpleStatementLine] | None:
    """`h = tf.nn.relu(full_layer(x, 8))` as `h_full_layer = full_layer(x, 8)` then
    `h = tf.nn.relu(h_full_layer)`, for a call of one of `functions` Python makes first."""
    call = first_nested(stmt)
    if call is None or cast(cst.Name, call.func).value not in functions:
        return None
    line = cast(cst.SimpleStatementLine, stmt)
    small = line.body[0]
    target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    base = f"{target.value}_{cast(cst.Name, call.func).value}" if isinstance(target, cst.Name) \
        else cast(cst.Name, call.func).value + "_out"
    name = fresh_name(base, taken)
    lifted = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=call)],
                                     leading_lines=line.leading_lines)

    class Put(cst.CSTTransformer):
        def leave_Call(self, original, updated):
            return cst.Name(name) if original is call else updated

    return [lifted, cast(cst.SimpleStatementLine, line.with_changes(leading_lines=()).visit(Put()))]


def final_return(stmt: cst.CSTNode) -> cst.Return | None:
    """The `return` ending a layer function's scope (`with tf.name_scope(layer_name): ...
    return activations`, scopes nested), or None."""
    while isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body:
        stmt = stmt.body.body[-1]
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return small if isinstance(small, cst.Return) and small.value is not None else None


def returned_into(stmt: cst.With, assigned: list[cst.SimpleStatementLine]) -> cst.With:
    """The scope with its final `return` replaced by the call's assignments, still inside it
    (TF1 named the ops of the returned expression under the scope)."""
    block = cast(cst.IndentedBlock, stmt.body)
    last = block.body[-1]
    inner = returned_into(last, assigned) if isinstance(last, cst.With) else assigned
    return stmt.with_changes(body=block.with_changes(body=[*block.body[:-1], *([inner] if isinstance(inner, cst.With)
                                                                               else inner)]))


def notes(module: cst.Module, copies) -> list[tuple[int, int, str, str, str]]:
    """The info diagnostic (TFG211) at each function read at several calls, in `module`'s lines."""
    copied = {name for name, _ in copies}
    defined = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value in copied]
    lines = {cast(cst.FunctionDef, f).name.value: line
             for f, (line, _) in starts(MetadataWrapper(module, unsafe_skip_copy=True), defined).items()}
    where = {1: "where it is called (in a loop: each pass makes its own)"}
    return [(lines.get(name, 1), 1, "TFG211",
             f"`{name}` makes new variables at each call, as TF1 did: its statements are written "
             f"{where.get(count, f'where each of its {count} calls was')}, each copy with variables of its own", "safe")
            for name, count in copies]
