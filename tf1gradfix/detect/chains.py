"""Reading attribute chains the same way on Python's tree and on LibCST's.

Both trees name the chain nodes alike (Name, Attribute, Call, Subscript) with
the same fields (`value`, `func`), so one walk serves both detection engines;
this module imports neither library (`check` must not load LibCST).
"""

from __future__ import annotations

from tf1gradfix.detect.cuts import Cut
from tf1gradfix.rules.catalog import normalize

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


def referents_answer(accesses, contribution, full: str, rest: str, star_modules, memo: dict | None = None,
                     key=None, kept=None) -> tuple[str | None, bool]:
    """(the qualified name a read of `full` answers to, whether it may be something else): what
    its referents contribute (`contribution(referent, full, rest)`), else the star imports'
    when no statement binds it; a compat.v1 reading first (it never takes a rename plan).
    `memo[key]` keeps what the referents of the last read of the same name contributed: the
    next read (N bindings later) adds only its new ones, so N reads cost N, not N squared;
    kept only where every contribution was (`kept(referent)`: not one made during a cycle)."""
    found: set[str] = set()
    foreign = False
    known = memo.get(key) if memo is not None else None
    only = next(iter(accesses)).referents if len(accesses) == 1 else None
    added = only.extends(known[0]) if isinstance(only, Cut) and known and isinstance(known[0], Cut) else None
    if added is not None:   # (the same name's earlier referents, and some more: walk only those)
        referents, todo = only, added
        found, foreign = set(known[1]), known[2]
    else:
        referents = todo = set().union(*(access.referents for access in accesses))
        if known is not None and isinstance(known[0], frozenset) and known[0] <= referents:
            todo = referents - known[0]
            found, foreign = set(known[1]), known[2]
    for referent in todo:
        names, other = contribution(referent, full, rest)
        found.update(names)
        foreign = foreign or other
    if memo is not None and (kept is None or all(kept(referent) for referent in todo)):
        memo[key] = (only if isinstance(only, Cut) else frozenset(referents), frozenset(found), foreign)
    if not referents and star_modules:
        found.update(f"{module}{'.' if full else ''}{full}" for module in star_modules if normalize(module) is not None)
    if not found:
        return None, False
    names = sorted(found, key=lambda raw: (not raw.startswith("tensorflow.compat."), raw))
    return names[0], foreign or len(names) > 1
