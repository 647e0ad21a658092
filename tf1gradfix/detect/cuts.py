"""A read's bindings, or a binding's reads, as a cut of one ordered list.

Scope analysis gives each read of a name the bindings of its scope made
before it, and each binding the reads after it. Kept as sets, a name bound
N times and read M times holds N x M entries: a file of a few thousand
`with tf.Session() as sess:` blocks spent most of its rewrite building them.
A Cut holds the same members as a few slices of lists shared by every read
and binding of the name, so it is built in constant time, and a reader
that walked one cut walks only the new members of the next (`extends`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterable, Iterator


class Order:
    """Members in the order they were made; where each stands is computed on the first
    membership test (scope analysis rarely asks)."""

    __slots__ = ("items", "_place")

    def __init__(self, items: list) -> None:
        self.items, self._place = items, None

    def place(self, member: object) -> int | None:
        if self._place is None:
            self._place = {item: index for index, item in enumerate(self.items)}
        return self._place.get(member)


class Cut(Collection):
    """`fixed` (a frozenset) and `order.items[lo:hi]` for each (order, lo, hi) part;
    members are distinct across parts."""

    __slots__ = ("fixed", "parts", "_size")

    def __init__(self, fixed: frozenset = frozenset(), parts: tuple = ()) -> None:
        self.fixed, self.parts = fixed, parts
        self._size = len(fixed) + sum(hi - lo for _, lo, hi in parts)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        yield from self.fixed
        for order, lo, hi in self.parts:
            yield from order.items[lo:hi]

    def __contains__(self, member: object) -> bool:
        if member in self.fixed:
            return True
        for order, lo, hi in self.parts:
            place = order.place(member)
            if place is not None and lo <= place < hi:
                return True
        return False

    def __bool__(self) -> bool:
        return self._size > 0

    def extends(self, other: Cut) -> list | None:
        """The members this cut adds to `other` when both are one prefix of the same list
        (a later read of the same name): else None (the caller walks the whole cut)."""
        if self.fixed is not other.fixed or len(self.parts) != 1 or len(other.parts) != 1:
            return None
        (order, lo, hi), (was, was_lo, was_hi) = self.parts[0], other.parts[0]
        if order is not was or lo != was_lo or hi < was_hi:
            return None
        return order.items[was_hi:hi]


def earlier(bindings: Iterable, scope: object, reads: Iterable, index: Callable, outer: Callable[[], Iterable]) -> Iterator[Cut]:
    """For each read of a name in `scope` (in `reads`' order) the bindings it refers to, as
    both scope analyses read them: those of other scopes and those of `scope` made before
    it (`index`: where a read or binding stands), or when there are none, `outer()` (the
    bindings one scope up; asked once)."""
    bindings = list(bindings)
    own = sorted((b for b in bindings if b.scope is scope), key=index)
    fixed = frozenset(b for b in bindings if b.scope is not scope)
    order, at = Order(own), [index(b) for b in own]
    above = None
    for read in reads:
        count = bisect.bisect_left(at, index(read))
        if fixed or count:
            yield Cut(fixed, ((order, 0, count),))
            continue
        if above is None:
            above = Cut(frozenset(outer()))
        yield above
