"""The TF2 model class: `__init__` with the names its methods share turned back
into attributes (`w` -> `self.w`), the step functions as methods, and
`tf.Module` as the base (see model_classes for how the class was read).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tf1gradfix.constructs.model_classes import ModelClass
from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import free_names, is_docstring, names_as_attributes, names_renamed
from tf1gradfix.model.checks import ClassNames


@dataclass
class Attributes:
    """Turns `__init__`'s names back into attributes, and step functions into methods,
    under the names model.checks.class_names chose."""

    plan: ModelClass
    init: cst.FunctionDef
    tf_alias: str
    names: ClassNames
    layered: dict = field(default_factory=dict)              # layer method -> its methods in the class

    def init_body(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """`super().__init__()` first (after a docstring), parameters a method reads
        kept as attributes, and every renamed name as `self.<attribute>`."""
        renamed = {k: v for k, v in self.names.renamed.items()
                   if k not in self.names.kept_params and k not in self.names.stored_params}
        out = layout.refit_body(body, [names_as_attributes(stmt, renamed, self.plan.self_name) for stmt in body], 8)
        first = 1 if out and is_docstring(out[0]) else 0
        head = [cst.parse_statement("super().__init__()\n")]
        head += [cst.parse_statement(f"{self.plan.self_name}.{self.names.renamed[p]} = {p}\n") for p in self.names.kept_params]
        if out and first == 0:
            head[0] = head[0].with_changes(leading_lines=out[0].leading_lines)
            out[0] = out[0].with_changes(leading_lines=())
        return out[:first] + head + out[first:]

    def method(self, fn: cst.FunctionDef) -> cst.FunctionDef:
        """A step function as a method: `self` first, shared names read through it.

        Its input signature reads only what the class's definition can
        (TapeEmitter.known). tf.function takes a first parameter named other
        than `self` for one the signature covers, so the step methods name the
        instance `self` whatever `__init__` calls it."""
        if self.plan.self_name != "self":   # (a `self` of its own is refused: model.checks.class_names)
            fn = fn.with_changes(body=names_renamed(fn.body, {self.plan.self_name: "self"}))
        free = free_names(fn) & (set(self.names.renamed) | self.names.method_names)
        body = names_as_attributes(fn.body, {n: self.names.renamed.get(n, n) for n in free}, "self")
        body = body.with_changes(body=layout.refit_body(list(fn.body.body), list(body.body), 8))
        params = fn.params.with_changes(params=[cst.Param(cst.Name("self")), *fn.params.params])
        return fn.with_changes(body=body, params=params)

    def class_def(self, cls: cst.ClassDef, init: cst.FunctionDef, methods: list[cst.FunctionDef]) -> cst.ClassDef:
        """`cls` (as rewritten elsewhere) with its new `__init__`, the methods after it,
        and `tf.Module` as its base (it had none, or `object`: see desugar)."""
        body: list[cst.BaseStatement | cst.BaseSmallStatement] = []
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.plan.inlined + self.plan.expanded:
                continue   # its statements are `__init__`'s and the methods'
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.plan.unbuilt:
                continue   # graph code TF1 never built (unbuilt_methods)
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.layered:   # (layer_methods.methods)
                body += [m.with_changes(leading_lines=stmt.leading_lines if i == 0 else m.leading_lines)
                         for i, m in enumerate(self.layered[stmt.name.value])]
                continue
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                body.append(init)
                body += [m.with_changes(leading_lines=[cst.EmptyLine(indent=False)]) for m in methods]
            else:
                body.append(stmt)
        base = cst.Arg(cst.parse_expression(f"{self.tf_alias}.Module"))
        return cls.with_changes(bases=[base], body=cls.body.with_changes(body=body),
                                lpar=cst.LeftParen(), rpar=cst.RightParen())


def rewritten_class(plan: ModelClass, init: cst.FunctionDef, tf_alias: str, init_body, methods, names: ClassNames,
                    layered=None, params=None):
    """The replacement of the class: a function of the class as rewritten elsewhere
    (its other methods may hold runs). `names`: model.checks.class_names; `layered`: each
    layer method's new methods; `params`: `__init__`'s parameters, rewritten."""
    attributes = Attributes(plan, init, tf_alias, names, layered=layered or {})
    new_init = init.with_changes(body=init.body.with_changes(body=attributes.init_body(init_body)))
    if params is not None:
        new_init = layout.refit_header(init, new_init.with_changes(params=params), 4)
    new_methods = [attributes.method(m) for m in methods]
    return lambda updated: attributes.class_def(updated, new_init, new_methods)
