"""The gradient events of the two traces paired and compared, and the loss curve they draw.

Gradient events are matched by (kind, sorted source names) and occurrence index,
so a migration that computes two gradients in the other order still lines up; what
cannot be paired is itself a divergence. Back-to-back computations of the same
loss are one observation (merge_observations); a side that stopped early is
compared on the common prefix only.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

import numpy as np

from tf1gradfix.verify import compare_many
from tf1gradfix.verify.comparison import Comparison, Divergence, _num, _record, closeness

def _key(event) -> tuple:
    return (event["kind"], tuple(sorted(event.get("grads", {}))))


def _label(key) -> str:
    return f"{key[0]} [{', '.join(key[1]) or 'no gradients'}]"


def _same_loss(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b or (a != a and b != b)


def merge_observations(events: list, same=None) -> list:
    """Merge back-to-back gradient computations of the same loss value.

    Computing a gradient observes, it does not change anything: a program
    that takes ``d loss/d w`` and ``d loss/d b`` in two calls (or evaluates
    the same gradient twice in one ``Session.run``) is the same as one that
    takes both at once.  Consecutive compute events (no update in between)
    with the same loss and the same gradients for the sources they share are
    therefore merged, on both sides alike. Same is bit-identical, or what
    ``same(a, b)`` says of two encoded values: the caller's tolerance, since
    one graph run three times is bit-identical where three TF2 functions
    computing the same gradients may differ in the last bits.
    """
    same = same or (lambda a, b: a == b)
    out = []
    for e in events:
        if e["kind"] not in ("compute", "apply"):
            continue
        prev = out[-1] if out else None
        if (e["kind"] == "compute" and prev is not None and prev["kind"] == "compute"
                and (_same_loss(prev.get("loss"), e.get("loss")) or prev.get("loss") is not None
                     and e.get("loss") is not None and same(prev["loss"], e["loss"]))
                and all(same(prev["grads"][n], e["grads"][n]) for n in set(prev["grads"]) & set(e["grads"]))):
            grads = {**prev["grads"], **e["grads"]}
            none = sorted((set(prev.get("none", [])) | set(e.get("none", []))) - set(grads))
            out[-1] = {**prev, "grads": grads, "none": none, "merged": prev.get("merged", 1) + 1}
        else:
            out.append(e)
    return out


def compare_events(cmp: Comparison, orig: list, mig: list, rtol: float, atol: float, decode,
                   stopped=()) -> None:
    """Pair gradient events by key and occurrence; compare loss and grads.

    ``stopped``: sides stopped before their program's end (a --steps cut, a
    timeout); the other side's events past their last are not differences.
    """
    def same(a, b) -> bool:   # (two observations within the tolerance are one: merge_observations)
        value = (lambda v: decode(v) if isinstance(v, dict) else v)   # (a loss is a number)
        return a == b or bool(closeness(value(a), value(b), rtol, atol)["ok"])

    orig, mig = merge_observations(orig, same), merge_observations(mig, same)
    pairs, leftovers = [], []
    for kind, qty in (("compute", "gradient"), ("apply", "applied update")):
        o_events = [e for e in orig if e["kind"] == kind]
        m_events = [e for e in mig if e["kind"] == kind]
        if kind == "apply" and bool(o_events) != bool(m_events):
            # One side updates through an optimizer, the other with plain
            # assign ops the tracer cannot see; losses, gradients and final
            # values still check every step.
            side = "original" if o_events else "migrated"
            other = "migrated" if o_events else "original"
            cmp.notes.append(f"only the {side} program applies updates through an optimizer "
                             f"({len(o_events) or len(m_events)} times); the {other} updates its "
                             f"variables directly, so applied updates were not compared")
            continue
        o_by, m_by = defaultdict(list), defaultdict(list)
        for e in o_events:
            o_by[_key(e)].append(e)
        for e in m_events:
            m_by[_key(e)].append(e)
        left_o, left_m = [], []
        for key in list(o_by) + [k for k in m_by if k not in o_by]:
            os_, ms = o_by.get(key, []), m_by.get(key, [])
            pairs += [(kind, qty, i + 1, key, len(o_by) > 1, eo, em)
                      for i, (eo, em) in enumerate(zip(os_, ms))]
            left_o += [(i + 1, key, e) for i, e in enumerate(os_[len(ms):], start=len(ms))]
            left_m += [(i + 1, key, e) for i, e in enumerate(ms[len(os_):], start=len(os_))]
        if o_events or m_events:
            cmp.steps = min(len(o_events), len(m_events))   # apply (second) wins when present
        leftovers.append((kind, qty, left_o, left_m, len(o_events), len(m_events)))
    batch, size = [], 0      # tested together (compare_many), recorded in this order

    def record_batch():
        tested = compare_many.closeness_many([(a, b) for _, a, b, _ in batch], rtol, atol)
        for (what, a, b, where), c in zip(batch, tested):
            _record(cmp, what, a, b, rtol, atol, c=c, **where)
        batch.clear()

    for kind, qty, step, key, many, eo, em in pairs:
        order = (eo["seq"], 0)
        if kind == "compute":
            if eo.get("loss") is not None and em.get("loss") is not None:
                batch.append(("loss", eo["loss"], em["loss"],
                              dict(step=step, name=_label(key) if many else None, order=order)))
            cmp.gradients += len(eo["grads"])
        for n in sorted(eo["grads"]):
            a, b = decode(eo["grads"][n]), decode(em["grads"][n])
            batch.append((qty, a, b, dict(step=step, name=n, order=(eo["seq"], 1))))
            size += np.size(a)
        if size >= compare_many.BATCH_ELEMENTS:
            record_batch()
            size = 0
    record_batch()
    # A migrated-only event is placed on the original's timeline right after
    # the last paired event that preceded it, so "first divergence" is honest.
    timeline = sorted((em["seq"], eo["seq"]) for *_, eo, em in pairs)

    def on_original_timeline(mig_seq):
        i = bisect.bisect_left(timeline, (mig_seq, -1))
        return timeline[i - 1][1] + 0.5 if i else -0.5

    for kind, qty, left_o, left_m, n_o, n_m in leftovers:
        left_o.sort(key=lambda t: t[2]["seq"])   # pair what is left in program order
        left_m.sort(key=lambda t: t[2]["seq"])
        _unpaired(cmp, kind, qty, left_o, left_m, n_o, n_m, rtol, atol, decode, on_original_timeline, stopped)


def _unpaired(cmp, kind, qty, left_o, left_m, n_o, n_m, rtol, atol, decode, mig_order, stopped=()) -> None:
    """Events whose source sets differ: compare what they share, then report the difference once."""
    verb = "computed gradients" if kind == "compute" else "applied updates"
    groups = {}
    for (step_o, key_o, eo), (_, key_m, em) in zip(left_o, left_m):
        if kind == "compute" and eo.get("loss") is not None and em.get("loss") is not None:
            _record(cmp, "loss", eo["loss"], em["loss"], rtol, atol, step=step_o, name=None,
                    order=(eo["seq"], 0))
        for n in sorted(set(eo["grads"]) & set(em["grads"])):
            cmp.gradients += kind == "compute"
            _record(cmp, qty, decode(eo["grads"][n]), decode(em["grads"][n]), rtol, atol,
                    step=step_o, name=n, order=(eo["seq"], 1))
        groups.setdefault((key_o, key_m), [0, step_o, eo])[0] += 1
    for (key_o, key_m), (count, step_o, eo) in groups.items():
        only_o = sorted(set(key_o[1]) - set(key_m[1]))
        only_m = sorted(set(key_m[1]) - set(key_o[1]))
        parts = []
        if only_m:
            parts.append(f"migrated also has {qty}s for {', '.join(only_m)}")
        if only_o:
            parts.append(f"original also has {qty}s for {', '.join(only_o)}")
        cmp.divergences.append(Divergence(
            qty, step_o, None, sorted(key_o[1]), sorted(key_m[1]),
            reason=f"sources differ in {count} of {max(n_o, n_m)} events: " + "; ".join(parts),
            order=(eo["seq"], -1)))
    rest_o, rest_m = left_o[len(left_m):], left_m[len(left_o):]
    if (rest_o and "migrated" in stopped) or (rest_m and "original" in stopped):
        cmp.notes.append(f"the {'original' if rest_o else 'migrated'} {verb} {len(rest_o) + len(rest_m)} more "
                         f"times after the other side stopped; not compared")
    elif rest_o or rest_m:
        seq = rest_o[0][2]["seq"] if rest_o else mig_order(rest_m[0][2]["seq"])
        sample = rest_o[0] if rest_o else rest_m[0]
        cmp.divergences.append(Divergence(
            "events", sample[0], _label(sample[1]),
            reason=f"original {verb} {n_o} times, migrated {n_m} times "
                   f"({len(rest_o) + len(rest_m)} without counterpart, first: {_label(sample[1])})",
            order=(seq, 2)))


def loss_curve(events: list) -> list:
    """Loss per step of the most frequent gradient computation (for the plot)."""
    by = defaultdict(list)
    for e in events:
        if e["kind"] == "compute" and e.get("loss") is not None:
            by[_key(e)].append(e["loss"])
    if not by:
        return []
    return [_num(x) for x in max(by.values(), key=len)]
