"""Update ops: graph statements that assign to variables, such as a target
network's sync `[t.assign(o) for t, o in zip(target_vars, online_vars)]`,
`target.assign(online)` or `tf.group(*those)`.

A run of such an op becomes a function that does the assignments (the
statement as written: in a `tf.function` every assignment runs), called where
the run was. The fetch of one assignment (`n = sess.run(bump)`) gave the variable's
value after it, which TF2's method returns too: the function returns it where the
program reads it (`valued`); a group's (None) or a list's is not a value the rewrite keeps.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args, graph_ops, loads
from tf1gradfix.cst.walk import replaced, walk
from tf1gradfix.model.nodes import Computed, Gradients, Statement, Static, TrainOp, Update, Variable

ASSIGNS = ("assign", "assign_add", "assign_sub")
ASSIGN_PARAMS = ["ref", "value", "validate_shape", "use_locking", "name"]   # (TF1's `tf.assign(ref, value, ...)`)


def functions() -> dict[str, str]:
    """`tf.assign(ref, value)` and its kin -> the variable method that does the same."""
    return graph_ops()["assign_functions"]


def is_update(builder, value: cst.BaseExpression, deps) -> bool:
    """Whether `value` assigns to variables (checked: only to variables)."""
    program = builder.program
    functional = [c for c, q in builder.calls(value) if q in functions()]
    targets = _comprehension_targets(value)
    for call in functional:   # `tf.assign_add(v, x)`: `v.assign_add(x)`
        bound = bound_args(call, ASSIGN_PARAMS, call)
        ref = bound.get("ref")
        node = program.node(ref.value) if isinstance(ref, cst.Name) else None
        listed = isinstance(ref, cst.Name) and ref.value in targets   # (`[tf.assign(t, o) for t, o in zip(...)]`)
        if not (isinstance(node, Variable) or listed) or set(bound) - {"name"} != {"ref", "value"}:   # (`name=` names a graph op only)
            raise Refusal.of(call, "assign_op_form", api=builder.qualified(call.func))
    assigns = [c for c, _ in builder.calls(value)
               if isinstance(c.func, cst.Attribute) and c.func.attr.value in ASSIGNS and c not in functional]
    if functional:
        return True
    if assigns:
        for call in assigns:
            receiver = call.func.value
            node = program.node(receiver.value) if isinstance(receiver, cst.Name) else None
            if not (isinstance(node, Variable) or isinstance(receiver, cst.Name) and receiver.value in targets):
                raise Refusal.of(call, "assign_method_not_variable", method=call.func.attr.value)
        return True
    if isinstance(value, cst.Call) and builder.qualified(value.func) == "tensorflow.group" and deps:
        return all(isinstance(program.nodes[i], Update) for i in deps) and all(a.keyword is None for a in value.args)
    return False


def valued(node) -> bool:
    """An update whose fetch TF1 gave as a value: one assignment (`tf.assign_add(v, x)`,
    `v.assign_add(x)`), the variable's value after it."""
    value = node.value if isinstance(node, Update) else None
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ASSIGNS \
        and not any(a.keyword is not None and a.keyword.value == "read_value" for a in value.args)   # (False: the op)


def _comprehension_targets(value) -> set[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_CompFor(self, node: cst.CompFor) -> None:
            for n in _names(node.target):
                names.add(n)

    value.visit(V())
    return names


def _names(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names(e.value)]
    return []


def check_run(program, site_call, fetched) -> None:
    """An update fetched with other values: each must be computed before the assignment, which
    TF1 ensures for what the assigned value is computed from (`[loss, tf.assign(w, w - lr * g)]`
    with `g` the gradient of `loss`); the function computes them in that order. A value, or a
    train op, sharing no variable with the assignments (`[train, count_step, loss]` with
    `count_step = tf.assign_add(steps, 1)`) is the same in either order. A reference
    variable fetched with its one assignment (`sess.run([update_k, k])`) gave the value
    after it in every run measured: the function returns it after the assignment. Any
    other value, a variable above all, may be read before or after it (measured:
    verify/TOLERANCES.md)."""
    done = [n for n in fetched if isinstance(n, Update)]
    if not done or len(done) == len(fetched):
        return
    before = computed_before(program, done)
    written = [_written(program, n) for n in done]
    touched: set[int] | None = set()
    for node, assigned in zip(done, written):
        touched = None if touched is None or assigned is None else touched | assigned | _variables(program, node.deps)
    assigned_once = {next(iter(a)) for n, a in zip(done, written) if valued(n) and a is not None and len(a) == 1}
    for node in fetched:
        if isinstance(node, (Update, Static)):
            continue
        if isinstance(node, (Computed, Gradients)) and node.index in before and not aliases_variable(program, node):
            continue
        if isinstance(node, Variable) and node.index in assigned_once and not node.resource:
            continue   # (a reference variable's fetch shares its buffer: the value after the assignment, measured)
        if touched is not None and isinstance(node, (Computed, Gradients, TrainOp)) \
                and not touched & _variables(program, [node.index], node.step if isinstance(node, TrainOp) else None):
            continue   # (no variable in common: either order gives the same values)
        raise Refusal.of(site_call, "assign_fetched_with_others")


def _written(program, node: Update) -> set[int] | None:
    """The variables an update assigns (None: one it assigns is named otherwise, as in
    a comprehension over variable lists)."""
    out = set()
    for call in _calls(node.value):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ASSIGNS):
            continue
        receiver: cst.BaseExpression | None = func.value
        if not (isinstance(receiver, cst.Name) and isinstance(program.node(receiver.value), Variable)):   # (`tf.assign(v, x)`)
            receiver = bound_args(call, ASSIGN_PARAMS, call).get("ref")
        target = program.node(receiver.value) if isinstance(receiver, cst.Name) else None
        if not isinstance(target, Variable):
            return None
        out.add(target.index)
    return out


def _variables(program, roots, step: str | None = None) -> set[int]:
    """The variables what `roots` compute reads (and a train op's global step, which it counts)."""
    seen: set[int] = set()   # (slicing.closure's walk: slicing imports this module, not the other way)
    stack = list(roots) + ([program.final[step]] if step in program.final else [])
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(program.nodes[i].deps)
    return {i for i in seen if isinstance(program.nodes[i], Variable)}


def computed_before(program, done: list[Update]) -> set[int]:
    """The nodes TF1 must compute before the assignments `done` run: what their values are
    computed from. A gradient needs its ys (TF1 takes their shape), not its xs' values."""
    seen: set[int] = set()
    stack = [d for n in done for d in n.deps]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        node = program.nodes[i]
        if isinstance(node, Gradients):
            read = set(loads(node.ys)) | set(loads(node.grad_ys) if node.grad_ys is not None else ())
            stack.extend(d for d in node.deps if set(program.nodes[d].names) & read)
        else:
            stack.extend(node.deps)
    return seen


def aliases_variable(program, node) -> bool:
    """Whether `node`'s value may be a variable's own buffer, which TF1's in-place assignment
    changes after it is computed: a variable indexed (`w[0]`), or an op that may hand its
    input's buffer on (rules/graph_ops.toml buffer_aliases) called in a statement reading one."""
    value = node.value
    while isinstance(value, cst.Subscript):
        value = value.value
    if isinstance(value, cst.Name) and isinstance(program.node(value.value), Variable):
        return True
    reads = any(isinstance(program.nodes[d], Variable) for d in node.deps)
    return reads and any(q in graph_ops()["buffer_aliases"]["ops"] for q in node.called())


def method_form(stmt: cst.CSTNode, qualified) -> cst.CSTNode:
    """`stmt` with `tf.assign_add(v, x)` written `v.assign_add(x)` (TF2 has only the method)."""
    calls = {}
    for node in _calls(stmt):
        method = functions().get(qualified(node.func) or "")
        if method is not None:
            bound = bound_args(node, ASSIGN_PARAMS, node)
            ref, value = bound["ref"], bound["value"]   # (`name=` dropped: it named a graph op; is_update)
            calls[node] = cst.Call(cst.Attribute(ref, cst.Name(method)), [cst.Arg(value)])
    return replaced(stmt, calls)


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in walk(node) if type(n) is cst.Call]


def build(builder, s: Statement) -> bool:
    """An `Update` for `op = tf.assign(v, x)` (and its kin, a group of them); False if not one."""
    if not s.one or not is_update(builder, s.value, s.deps):
        return False
    builder.add(s.item, Update, s.names, s.value, s.deps, calls=[q for _, q in s.tf_calls])
    for call, q in s.tf_calls:   # (the assignments and their group; the values assigned: checked as a tensor's)
        if q in functions():
            builder.own(call, but=[bound_args(call, ["ref", "value"], call).get("value")])
        elif q == "tensorflow.group":   # (of updates only: is_update; written as it is)
            builder.program.checked.add(id(call))
    return True


def in_place(program, fetch: cst.BaseExpression, feed) -> str | None:
    """`sess.run([t.assign(o), ...])` in a model class's `__init__` (a target network
    copied once, before any step): the assignments themselves, run eagerly where TF1
    ran them (None if the run is not one of assignments between variables). Each
    element assigns its own variable from variables and constants, and none may read a
    variable another one writes: TF1 leaves their order open (refused where it matters)."""
    elements = [e.value for e in fetch.elements] if isinstance(fetch, (cst.List, cst.Tuple)) else [fetch]
    if feed is not None or not elements:
        return None
    pairs: list[tuple[str, set[str]]] = []   # (the variable written, the graph names read)
    for e in elements:
        func = e.func if isinstance(e, cst.Call) else None
        if not isinstance(func, cst.Attribute) or func.attr.value not in ASSIGNS or not isinstance(func.value, cst.Name) \
                or len(cast(cst.Call, e).args) != 1 or cast(cst.Call, e).args[0].keyword is not None \
                or not isinstance(program.node(func.value.value), Variable):
            return None
        value = cast(cst.Call, e).args[0].value
        read = {n for n in loads(value) if n in program.final or n in program.sessions}
        if any(type(n) is cst.Call for n in walk(value)) or any(not isinstance(program.node(n), Variable) for n in read):
            return None
        pairs.append((func.value.value, read))
    written = [w for w, _ in pairs]
    if len(set(written)) != len(written) or any(read & (set(written) - {w}) for w, read in pairs):
        raise Refusal.of(fetch, "init_assignments_order")
    code = cst.Module([]).code_for_node
    text = ", ".join(code(e) for e in elements)   # (laid out anew: the fetch's own layout fitted a deeper block)
    return text if not isinstance(fetch, (cst.List, cst.Tuple)) else f"({text},)" if isinstance(fetch, cst.Tuple) else f"[{text}]"


def host_assign(program, fetch: cst.BaseExpression, feed, qualified, attributes=None) -> str | None:
    """`sess.run(tf.assign(lr, base * decay ** epoch))` or `sess.run(lr.assign(...))` in host
    code: an assignment built in the run itself, of a value computed by the host (and from
    variables), which the run computes and assigns at once. In TF2 it is the assignment,
    run eagerly where TF1 ran it (None where the run is not one such assignment).
    `attributes`: a model class's attribute -> graph name, where the variable is one
    (`tf.assign(model.lr, ...)`: `model.lr.assign(...)`)."""
    if feed is not None or not isinstance(fetch, cst.Call):
        return None
    method = functions().get(qualified(fetch.func) or "")
    if method is not None:
        bound = bound_args(fetch, ASSIGN_PARAMS, fetch)
        if set(bound) - {"name"} != {"ref", "value"}:
            return None
        ref, value = bound["ref"], bound["value"]
    elif isinstance(fetch.func, cst.Attribute) and fetch.func.attr.value in ASSIGNS and len(fetch.args) == 1 \
            and fetch.args[0].keyword is None:
        method, ref, value = fetch.func.attr.value, fetch.func.value, fetch.args[0].value
    else:
        return None
    held = {a.attr.value: program.node(attributes[a.attr.value]) for a in walk(value)
            if type(a) is cst.Attribute and a.attr.value in (attributes or {})}
    if attributes is not None:   # (a model class's: its attribute, as the script names it)
        if not (isinstance(ref, cst.Attribute) and isinstance(ref.value, cst.Name)
                and isinstance(program.node(attributes.get(ref.attr.value, "")), Variable)):
            return None
    elif not (isinstance(ref, cst.Name) and isinstance(program.node(ref.value), Variable)):
        return None
    read = {n for n in loads(value) if n in program.final or n in program.sessions or n in program.helpers}
    tf_calls = [c for c in walk(value) if type(c) is cst.Call and (qualified(c.func) or "").startswith("tensorflow")]
    if tf_calls or any(not isinstance(program.node(n), Variable) for n in read) \
            or any(not isinstance(node, Variable) for node in held.values()):
        return None
    code = cst.Module([]).code_for_node
    return f"{code(ref)}.{method}({code(value)})"

