"""What `apply_gradients` is given: (gradient, variable) pairs, or a legacy bug.

TF1 fails on `(variable, gradient)` pairs (`zip(vars, grads)`, `[(v, g)]`)
and on a gradient applied to a tensor ("Trying to update a Tensor"). The
rewrite never guesses the intended order: it refuses with TFG907.

The check follows names through the model: each expression gets an
abstract value, built from what the program's nodes are —
`("item", kind)`, `("seq", kind)` (a list of one kind), `("pairs", a, b)`,
`("pair", a, b)`, `("tuple", [values])`, or None (unknown) — with kind
"var" (a variable), "grad" (a gradient, or computed from one), "tensor"
(another computed value) or "unknown".
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, loads
from tf1gradfix.model.nodes import ComputeGradients, Gradients, Placeholder, Static, Tensor, Variable, VarList

_KINDS = {Variable: "var", Placeholder: "tensor", Static: "tensor"}


def check(builder, pairs: cst.BaseExpression) -> None:
    """Refuses `pairs` (the apply_gradients argument) when it is certainly wrong."""
    _Checker(builder).value(pairs, {}, dict(builder.program.final))


class _Checker:
    def __init__(self, builder):
        self.b, self.p = builder, builder.program

    def value(self, expr, env, scope):
        if isinstance(expr, cst.Name):
            return env[expr.value] if expr.value in env else self._name(expr.value, scope)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return self._literal(expr, env, scope)
        if isinstance(expr, cst.Subscript):
            return self._index(expr, env, scope)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._comprehension(expr, env, scope)
        if isinstance(expr, cst.IfExp):
            return _join(self.value(expr.body, env, scope), self.value(expr.orelse, env, scope))
        if isinstance(expr, cst.Call):
            return self._call(expr, env, scope)
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
            return ("item", self._computed(expr, env, scope))
        return None

    def _name(self, name: str, scope):
        """`name` as bound where it is read (`scope`: name -> node index at that point)."""
        node = self.p.nodes[scope[name]] if name in scope else None
        if node is None:
            return None
        if isinstance(node, Variable):
            return ("item", "var")
        if isinstance(node, VarList):
            return ("seq", "var")
        if isinstance(node, Gradients):
            return ("item", "grad") if node.single else ("seq", "grad")
        if isinstance(node, (ComputeGradients, Tensor)):
            bound = self.value(node.value, {}, {n: i for i in node.deps for n in self.p.nodes[i].names})
            if len(node.names) == 1:
                return bound
            if bound and bound[0] == "tuple" and len(bound[1]) == len(node.names):
                return bound[1][node.names.index(name)]
            return None
        return ("item", _KINDS[type(node)]) if type(node) in _KINDS else None

    def _literal(self, expr, env, scope):
        values = [self.value(e.value, env, scope) for e in expr.elements if not isinstance(e, cst.StarredElement)]
        if len(values) != len(expr.elements):
            return None
        if isinstance(expr, cst.Tuple) and len(values) == 2 and all(v and v[0] == "item" for v in values):
            return ("pair", values[0][1], values[1][1])   # checked where it is used as a pair
        if values and all(v and v[0] == "pair" for v in values):
            for v, e in zip(values, expr.elements):
                self._pair(v, e.value)
            return ("pairs", _kind(v[1] for v in values), _kind(v[2] for v in values))
        if values and all(v and v[0] == "item" for v in values):
            return ("seq", _kind(v[1] for v in values))
        return ("tuple", values) if isinstance(expr, cst.Tuple) else None

    def _index(self, expr, env, scope):
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index) \
                or not isinstance(expr.slice[0].slice.value, cst.Integer):
            return None
        index = int(expr.slice[0].slice.value.value)
        base = self.value(expr.value, env, scope)
        if base is None:
            return None
        if base[0] == "seq":
            return ("item", base[1])
        if base[0] == "pairs":
            return ("pair", base[1], base[2])
        if base[0] == "pair" and index in (0, 1):
            return ("item", base[1 + index])
        if base[0] == "tuple" and 0 <= index < len(base[1]):
            return base[1][index]
        return None

    def _comprehension(self, expr, env, scope):
        loop = expr.for_in
        if loop.inner_for_in is not None:
            return None
        source = self.value(loop.iter, env, scope)
        inner = dict(env)
        target = loop.target
        if isinstance(target, cst.Name):
            inner[target.value] = _element(source)
        elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 \
                and all(isinstance(e.value, cst.Name) for e in target.elements):
            first, second = (("item", source[1]), ("item", source[2])) if source and source[0] == "pairs" else (None, None)
            inner[target.elements[0].value.value] = first
            inner[target.elements[1].value.value] = second
        else:
            return None
        element = self.value(expr.elt, inner, scope)
        if element and element[0] == "pair":
            self._pair(element, expr.elt)
            return ("pairs", element[1], element[2])
        if element and element[0] == "item":
            return ("seq", element[1])
        return None

    def _call(self, call, env, scope):
        func = call.func
        args = list(call.args)
        if isinstance(func, cst.Attribute) and func.attr.value == "compute_gradients":
            return ("pairs", "grad", "var")
        if isinstance(func, cst.Name) and func.value in ("list", "tuple") and func.value not in self.p.final:
            return self.value(args[0].value, env, scope) if len(args) == 1 and not args[0].star else None
        if isinstance(func, cst.Name) and func.value == "zip" and "zip" not in self.p.final:
            if len(args) == 1 and args[0].star == "*":
                source = self.value(args[0].value, env, scope)
                if source and source[0] == "pairs":
                    return ("tuple", [("seq", source[1]), ("seq", source[2])])
                return None
            if len(args) == 2 and not any(a.star for a in args):
                first, second = (_element(self.value(a.value, env, scope)) for a in args)
                if first and second and first[0] == second[0] == "item":
                    pair = ("pair", first[1], second[1])
                    self._pair(pair, call)
                    return ("pairs", pair[1], pair[2])
            return None
        q = self.b.qualified(func) or ""
        if q == "tensorflow.clip_by_global_norm" and args:
            listed = self.value(args[0].value, env, scope)
            return ("tuple", [("seq", listed[1]) if listed and listed[0] == "seq" else None, ("item", "tensor")])
        if q.startswith("tensorflow."):
            return ("item", self._computed(call, env, scope))
        return None

    def _computed(self, expr, env, scope) -> str:
        """A value computed by an op: a gradient if computed from one, else a tensor."""
        kinds = set()

        class V(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if node.value in env and env[node.value] and env[node.value][0] == "item":
                    kinds.add(env[node.value][1])

        expr.visit(V())
        for name in loads(expr):
            if name not in env and name in scope and isinstance(self.p.nodes[scope[name]], Gradients):
                kinds.add("grad")
        return "grad" if "grad" in kinds else "tensor"

    def _pair(self, pair, node) -> None:
        _, first, second = pair
        if first == "var" and second in ("grad", "tensor"):
            raise Refusal.of(node, "grad_pairs_reversed")
        if second in ("grad", "tensor"):
            raise Refusal.of(node, "grad_pair_not_variable")


def _element(value):
    if value is None:
        return None
    if value[0] == "seq":
        return ("item", value[1])
    if value[0] == "pairs":
        return ("pair", value[1], value[2])
    if value[0] == "pair":   # a 2-tuple read as a sequence
        return ("item", _kind(value[1:]))
    return None


def _join(a, b):
    if a == b:
        return a
    if a and b and a[0] == b[0] == "item":
        return ("item", _kind([a[1], b[1]]))
    return None


def _kind(kinds) -> str:
    kinds = set(kinds)
    return kinds.pop() if len(kinds) == 1 else "unknown"

