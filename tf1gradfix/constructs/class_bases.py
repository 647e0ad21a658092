"""A model class deriving from a plain class of the same file, read with its base folded in.

`class Model(Base)` where `Base` (deriving from nothing but `object`) is a class of
this file named nowhere but as this one base: Python finds on `Model` what `Model`
defines, then what `Base` defines. Copying into `Model` the statements of `Base`
whose names `Model` does not define, and dropping the base, gives the same
attributes, when neither class calls `super()` (nor reads `__class__`, `__mro__`,
`__bases__`). `folded` gives the module read so, or None; the rewrite keeps the
module as written when that reading is refused (host_builds follows it).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import bound_names
from tf1gradfix.cst.walk import walk

_INTROSPECTION = frozenset({"super", "__class__", "__mro__", "__bases__", "__subclasses__", "__init_subclass__"})


def folded(module: cst.Module) -> cst.Module | None:
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    body, changed = list(module.body), False
    for index, cls in enumerate(body):
        base = _plain_base(cls, classes, module) if isinstance(cls, cst.ClassDef) else None
        if base is None or not isinstance(cls, cst.ClassDef) or not isinstance(cls.body, cst.IndentedBlock) \
                or not isinstance(base.body, cst.IndentedBlock):
            continue   # (a class of one line: nothing to fold)
        own = set().union(*(bound_names(s) for s in cls.body.body))
        if any(bound_names(s) & own and not bound_names(s) <= own for s in base.body.body):
            continue   # (a statement binding names the class redefines and others)
        inherited = [s for s in base.body.body if not (bound_names(s) & own) and not _docstring(s)]
        body[index] = cls.with_changes(bases=(), lpar=cst.MaybeSentinel.DEFAULT, rpar=cst.MaybeSentinel.DEFAULT,
                                       body=cls.body.with_changes(body=(*cls.body.body, *inherited)))
        changed = True
    return module.with_changes(body=body) if changed else None


def _plain_base(cls: cst.ClassDef, classes: dict, module: cst.Module) -> cst.ClassDef | None:
    if len(cls.bases) != 1 or cls.keywords or not isinstance(cls.bases[0].value, cst.Name):
        return None
    base = classes.get(cls.bases[0].value.value)
    if base is None or base is cls or base.keywords or base.decorators or cls.decorators or \
            any(not (isinstance(b.value, cst.Name) and b.value.value == "object") for b in base.bases):
        return None
    if sum(isinstance(n, cst.Name) and n.value == base.name.value for n in walk(module)) != 2:
        return None   # (its definition and this base only)
    if any(isinstance(n, cst.Name) and n.value in _INTROSPECTION for c in (cls, base) for n in walk(c)):
        return None
    return base


def _docstring(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
