"""A constructor parameter holding an initializer:

    def __init__(self, n_words, initializer=tf.random_normal_initializer(stddev=0.1)):
        self.initializer = initializer
        self.embedding = tf.get_variable("embedding", [n_words, 8], initializer=self.initializer)

`tf.get_variable` gets whatever the instantiation passed. Where the file fixes it
(every `Model(...)` leaves the default, or passes the same initializer call of
literals: class_arguments), that call is the variable's initializer, written as if
given in place (emit.state maps it to its Keras initializer); `None` leaves
get_variable its default one. A literal that is no initializer (`True`, passed by
position to the wrong parameter) is refused with the argument and its line: TF1's
get_variable fails on a constant with a shape too. A call the rewrite does not map,
different calls, or a value known only when the program runs are refused as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from tf1gradfix.constructs import contrib
from tf1gradfix.constructs.class_arguments import NotFixed, Unknown, binds, param_values
from tf1gradfix.constructs.class_settings import literal_default
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.cst.walk import walk


CALL, DEFAULT, CONSTANT = "call", "default", "constant"   # an initializer call; None (get_variable's own); a literal


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _shown(value: tuple) -> str:
    """The argument as written, and what a name passed there holds."""
    held, given = _code(value[1]), _code(value[2])
    return given if held == given else f"{given}`, which holds `{held}"


@dataclass
class ClassInitializers:
    """Reads `initializer=<name>` of a model class's `tf.get_variable` calls (ModelBuilder.class_initializers)."""

    module: cst.Module
    cls: cst.ClassDef
    init: cst.FunctionDef
    statements: list[cst.BaseStatement]   # `__init__` as read (model_classes.init_statements)
    qualified: Callable
    line_of: Callable
    rows: dict                            # qualified name -> its initializers.toml row (variables.initializer_rows)
    _values: dict = field(default_factory=dict)
    calls: dict[int, cst.Call] = field(default_factory=dict)   # the parameters' initializer calls written in place

    def edits(self, write: Callable[[cst.Call], str]) -> dict[cst.CSTNode, cst.BaseExpression]:
        """Each initializer call a parameter read here takes (as its default, or as the
        argument of an instantiation) -> its Keras initializer (`write`: emit.state's text),
        so that the TF2 program passes what its variables are made with."""
        return {call: cst.parse_expression(write(call)) for call in self.calls.values()}

    def resolved(self, bound: dict) -> dict:
        """`bound` (a get_variable's arguments) with a name holding a constructor
        parameter's initializer read as the initializer call the file fixes."""
        given = bound.get("initializer")
        if not isinstance(given, cst.Name):
            return bound
        param = self._parameter(given.value)
        if param is None:
            return bound
        kind, expr, _ = self._value(param, given)
        out = dict(bound)
        if kind == DEFAULT:
            del out["initializer"]
        else:
            out["initializer"] = expr
        return out

    def _parameter(self, name: str, depth: int = 0) -> str | None:
        """The parameter of `__init__` the name holds (`x = param`, once), or None."""
        binding = [n for s in self.statements for n in walk(s) if type(n) is cst.SimpleStatementLine and name in binds(n)]
        params = {p.name.value for p in [*self.init.params.params[1:], *self.init.params.kwonly_params]}
        if not binding:
            return name if name in params else None
        small = binding[0].body[0] if len(binding) == 1 and len(binding[0].body) == 1 else None
        if depth > 8 or not isinstance(small, cst.Assign) or len(small.targets) != 1 \
                or not isinstance(small.value, cst.Name) or name in params:
            return None
        return self._parameter(small.value.value, depth + 1)

    def _value(self, param: str, where: cst.CSTNode):
        if param not in self._values:
            default = next((p.default for p in [*self.init.params.params, *self.init.params.kwonly_params]
                            if p.name.value == param), None)
            if isinstance(default, cst.Call):
                try:
                    self._read(default, default)   # (evaluated where the class is defined, taken or not)
                except NotFixed:
                    pass
            self._values[param] = param_values(self.module, self.cls, self.init, [param], self.line_of, self._read,
                                               key=lambda v: (v[0], _code(v[1])), shown=lambda v: _shown(v))[param]
        value = self._values[param]
        cls = self.cls.name.value
        if isinstance(value, Unknown) and value.why == "varies":
            f = value.fields
            raise Refusal.of(where, "class_initializer_varies", cls=cls, param=param, first=f["first"], line=f["line"],
                             other=f["other"], other_line=f["other_line"])
        if isinstance(value, Unknown) and value.why == "runtime":
            raise Refusal.of(where, "class_initializer_unknown", cls=cls, param=param, value=value.fields["value"],
                             line=value.fields["line"])
        if isinstance(value, Unknown):   # (no instantiation, or the class passed around)
            raise Refusal.of(where, "get_variable_initializer_form")
        if value[0] == CONSTANT:
            raise Refusal.of(where, "class_initializer_not_initializer", cls=cls, param=param, value=_shown(value),
                             line=self.line_of(value[2]))
        return value

    def _read(self, expr: cst.BaseExpression, given: cst.BaseExpression):
        """(kind, the expression, the argument as written): an initializer call of literals
        (or TensorFlow names: `dtype=tf.float32`), None, or a literal that is none;
        NotFixed otherwise."""
        if isinstance(expr, cst.Name) and expr.value == "None":
            return DEFAULT, expr, given
        if not isinstance(expr, cst.Call):
            if literal_default(expr):
                return CONSTANT, expr, given
            raise NotFixed
        q = self.qualified(expr.func)
        if q not in self.rows and contrib.initializer_row(q) is None:
            raise NotFixed
        for arg in expr.args:
            value = arg.value
            if arg.star or not literal_default(value) and not (self.qualified(value) or "").startswith("tensorflow."):
                raise NotFixed
        if expr is given:
            self.calls[id(expr)] = expr
        return CALL, expr, given
