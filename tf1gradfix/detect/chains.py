"""Reading attribute chains the same way on Python's tree and on LibCST's.

Both trees name the chain nodes alike (Name, Attribute, Call, Subscript) with
the same fields (`value`, `func`), so one walk serves both detection engines;
this module imports neither library (`check` must not load LibCST).
"""

from __future__ import annotations

_INNER = {"Attribute": "value", "Call": "func", "Subscript": "value"}


def chain_base(node, tree):
    """`tf` of `tf.a.b` and of `tf.Session().run`: the Name a chain starts from, or None.
    `tree`: the module whose node classes `node` is of (`ast` or `libcst`)."""
    while not isinstance(node, tree.Name):
        field = _INNER.get(type(node).__name__)
        if field is None or not isinstance(node, getattr(tree, type(node).__name__)):
            return None
        node = getattr(node, field)
    return node


def reads_a_name(value, tree) -> bool:
    """Whether `value` is a name or an attribute of one (`tf`, `tf.compat.v1`): what it
    evaluates to is another read's answer (the resolvers' `_module_of`)."""
    while isinstance(value, tree.Attribute):
        value = value.value
    return isinstance(value, tree.Name)


def referents_shape(accesses) -> tuple:
    """What tells the referents of a read apart without walking them: a read refers to the
    bindings of its scope made before it (a prefix of them: told by their number), or when
    there are none to those of an enclosing scope (told by the scope of one of them)."""
    return tuple((len(a.referents), next((r.scope is a.scope for r in a.referents), False)) for a in accesses)
