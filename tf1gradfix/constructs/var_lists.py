"""Which variables a TF1 variable list names, read statically.

`var_list=` and the lists handed to optimizers come from collections
(`tf.trainable_variables(scope)`, `tf.get_collection(KEY, scope)`,
`tf.global_variables()`), from explicit lists, from sums of lists and from
comprehensions that filter a collection by variable name. TF1 lists a
collection in creation order and selects a scope by `re.match` on the
variable's name; `v.name` carries the output suffix `:0`. The collections
and keys are tables in `tf1gradfix/rules/graph_ops.toml`.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builders, layer_methods
from tf1gradfix.cst.syntax import Refusal, arg, graph_ops, literal_string, matches
from tf1gradfix.model.nodes import (BuilderModule, Layer, LayerLoop, OptimizerCall, Optimizer, Statement, Variable,
                                    VariableGroup, VarList)

_REGEX = set(".^$*+?{}[]\\|()")


def members(program, expr: cst.BaseExpression, before: int, qualified) -> list[str] | None:
    """Names of the variables `expr` lists at node index `before`, or None when
    `expr` is not a variable list; Refusal when it is one that cannot be read."""
    if isinstance(expr, cst.Name):
        node = program.node(expr.value)
        if isinstance(node, VarList):
            return list(node.members)
        return None
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for e in expr.elements:
            if isinstance(e, cst.StarredElement):
                inner = members(program, e.value, before, qualified)
                if inner is None:
                    return None
                out += inner
                continue
            node = program.node(e.value.value) if isinstance(e.value, cst.Name) else None
            if not isinstance(node, Variable):
                return None
            out.append(cast(cst.Name, e.value).value)
        return out if out else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = members(program, expr.left, before, qualified)
        right = members(program, expr.right, before, qualified)
        return None if left is None or right is None else left + right
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in ("list", "tuple") and expr.func.value not in program.final \
                and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star:
            return members(program, expr.args[0].value, before, qualified)
        return _collection(program, expr, qualified(expr.func), before, qualified)
    if isinstance(expr, cst.ListComp):
        return _filtered(program, expr, before, qualified)
    return None


def _collection(program, call: cst.Call, q, before: int, qualified) -> list[str] | None:
    table = graph_ops()["variable_collections"]
    if matches(q, "collection_getters"):
        key = arg(call, 0, "key")
        which = None if key is None else table.get(literal_string(key) or qualified(key) or "")
        if which is None:
            return None
        scope = arg(call, 1, "scope")
        extra = [a for a in call.args if a.keyword is not None and a.keyword.value not in ("key", "scope")]
    else:
        which = table.get(q or "")
        if which is None:
            return None
        scope = arg(call, 0, "scope")
        extra = [a for a in call.args if a.keyword is not None and a.keyword.value != "scope"]
    if extra or len(call.args) > 2:
        raise Refusal.of(call, "collection_arguments")
    if any(isinstance(n, LayerLoop) and n.variables for n in program.nodes[:before]):
        raise Refusal.of(call, "collection_with_variable_loop")
    if any(isinstance(n, (Layer, LayerLoop)) for n in program.nodes[:before]):
        raise Refusal.of(call, "collection_with_layers")
    groups = [n for n in program.nodes[:before] if isinstance(n, VariableGroup)]
    if groups:   # (its members are read by subscript, not by name: not followed through a list of names)
        raise Refusal.of(call, "collection_with_variable_group", name=groups[0].names[0])
    prefix = "" if scope is None or isinstance(scope, cst.Name) and scope.value == "None" else literal_string(scope)
    if prefix is None or _REGEX & set(prefix):
        raise Refusal.of(call, "collection_scope_not_string")
    slotless = graph_ops()["slotless_optimizers"]
    if which == "global" and any(isinstance(n, OptimizerCall) and _optimizer(program, n).cls not in slotless
                                 for n in program.nodes[:before]):
        # a train op made before it has added the optimizer's slot variables
        raise Refusal.of(call, "global_variables_after_slots")
    chosen = []
    scoped: list[tuple[int, str]] = []   # a model class's layer methods: (when made, variable), merged in
    variables = [n for n in program.nodes[:before] if isinstance(n, Variable) and n.alias_of is None
                 or isinstance(n, BuilderModule)]
    labels = [n.full_name for n in variables if isinstance(n, Variable) and n.full_name is not None]
    if len(set(labels)) != len(labels):   # TF1 would have renamed the second one `name_1`
        raise Refusal.of(call, "collection_same_names")
    for node in variables:
        if isinstance(node, BuilderModule) and node.method_of is not None:   # (each scope it was called with)
            scoped += layer_methods.listed(node, prefix, before)
            continue
        if isinstance(node, BuilderModule) and node.scope is None and node.scope_parameter is None:
            if prefix:   # (no scope of its own: its layers are named dense, dense_1, ... at the top)
                raise Refusal.of(call, "collection_part_of_builder", function=node.var)
            chosen.append(builders.variables_text(node))
            scoped.append((node.index, chosen[-1]))
            continue
        if isinstance(node, BuilderModule) and node.scope is None:
            raise Refusal.of(call, "collection_of_builder_scopes", function=node.var)
        if isinstance(node, BuilderModule):   # a builder function's module: all its variables are `SCOPE/...`
            module_scope = cast(str, node.scope) + "/"
            if module_scope.startswith(prefix):
                chosen.append(builders.variables_text(node))
                scoped.append((node.index, chosen[-1]))
            elif prefix.startswith(module_scope):
                raise Refusal.of(call, "collection_part_of_builder", function=node.var)
            continue
        assert isinstance(node, Variable)
        if which == "trainable" and not node.trainable:
            continue
        name = node.full_name
        if name is None and prefix:
            raise Refusal.of(call, "collection_variable_unnamed", name=node.names[0])
        if (name or "").startswith(prefix):
            chosen.append(node.names[0])
            scoped.append((node.index, node.names[0]))
    if any(text not in chosen for _, text in scoped):   # (in the order TF1 made them)
        return [text for _, text in sorted(scoped, key=lambda pair: pair[0])]
    return chosen


def _filtered(program, comp: cst.ListComp, before: int, qualified) -> list[str] | None:
    """`[v for v in COLLECTION if PREDICATE(v.name)]`."""
    loop = comp.for_in
    if not isinstance(loop.target, cst.Name) or not isinstance(comp.elt, cst.Name) \
            or comp.elt.value != loop.target.value or loop.inner_for_in is not None or len(loop.ifs) > 1:
        return None
    source = members(program, loop.iter, before, qualified)
    if source is None:
        return None
    if not all(isinstance(program.node(name), Variable) for name in source):   # (a builder's `enc.w`, `*enc.made...`)
        raise Refusal.of(comp, "collection_filter_builder")
    if not loop.ifs:
        return source
    var = loop.target.value
    chosen = []
    for name in source:
        full = program.node(name).full_name
        if full is None:
            raise Refusal.of(comp, "collection_variable_unnamed", name=name)
        verdict = _predicate(loop.ifs[0].test, var, full)
        if verdict is None:
            raise Refusal.of(loop.ifs[0], "collection_filter_unevaluated")
        if verdict:
            chosen.append(name)
    return chosen


def _optimizer(program, node: OptimizerCall) -> Optimizer:
    opt = program.nodes[node.optimizer]
    assert isinstance(opt, Optimizer)
    return opt


def _predicate(test: cst.BaseExpression, var: str, full: str) -> bool | None:
    """Evaluates a filter on `v.name` (`"head/w:0"`) or `v.op.name` (`"head/w"`)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _predicate(test.expression, var, full)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = _predicate(test.left, var, full), _predicate(test.right, var, full)
        if left is None or right is None:
            return None
        return (left and right) if isinstance(test.operator, cst.And) else (left or right)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and len(test.args) == 1 \
            and not test.args[0].keyword and test.func.attr.value in ("startswith", "endswith"):
        name, text = _name_of(test.func.value, var, full), literal_string(test.args[0].value)
        if name is None or text is None:
            return None
        return name.startswith(text) if test.func.attr.value == "startswith" else name.endswith(text)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0]
        lhs, rhs = test.left, op.comparator
        if isinstance(op.operator, (cst.In, cst.NotIn)):
            text, name = literal_string(lhs), _name_of(rhs, var, full)
            if text is None or name is None:
                return None
            return (text in name) == isinstance(op.operator, cst.In)
        if isinstance(op.operator, (cst.Equal, cst.NotEqual)):
            name, text = _name_of(lhs, var, full), literal_string(rhs)
            if name is None or text is None:
                return None
            return (name == text) == isinstance(op.operator, cst.Equal)
    return None


def _name_of(expr, var: str, full: str) -> str | None:
    if isinstance(expr, cst.Attribute) and expr.attr.value == "name":
        owner = expr.value
        if isinstance(owner, cst.Name) and owner.value == var:
            return full + ":0"
        if isinstance(owner, cst.Attribute) and owner.attr.value == "op" \
                and isinstance(owner.value, cst.Name) and owner.value.value == var:
            return full
    return None


def build(builder, s: Statement) -> bool:
    """A `VarList` for `vs = tf.trainable_variables(...)` (and lists of variables); False if not one."""
    if not s.one:
        return False
    listed = members(builder.program, s.value, len(builder.program.nodes), builder.qualified)
    if listed is None:
        return False
    builder.add(s.item, VarList, s.names, s.value, s.deps, members=listed)
    return True
