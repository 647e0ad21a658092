"""Compare the traces of an original and a migrated run.

Pure NumPy, no TensorFlow: the parent process stays light and these rules
can be tested with synthetic traces.

Gradient events are matched by (kind, sorted source names) and occurrence
index, so a migration that computes two gradients in the other order still
lines up; what cannot be paired is itself a divergence.  Element-wise test::

    |a - b| <= atol + rtol * max(|a|, |b|)      NaN == NaN, NaN != number

Printed numbers additionally get one unit of their last printed digit,
because two values a few ulps apart can round to neighbouring decimals.
Default tolerances and their justification: see TOLERANCES.md.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np

from tf1gradfix.verify import compare_many, descriptions, volatile

# atol 1e-6 is ~10 float32 epsilons (1.19e-7), TensorFlow's own default for
# tf.debugging.assert_near on float32; it only matters for entries near zero.
# rtol 1e-3 (~8400 ulp) is 10x above the largest float noise measured between
# correct TF1/TF2 pairs (~1e-4 relative after 30 Adam steps: the fused v1
# kernel and Keras' composite ops round differently) and 5x below the first
# visible effect of the deliberately wrong migrations in fixtures/verify.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-6

KINDS = ("initial value", "loss", "gradient", "applied update", "final value", "printed number", "printed text",
         "plotted value")
MAX_LISTED = 20

# Object addresses differ from run to run and say nothing about the numbers.
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = descriptions.NUMBER


@dataclass
class Divergence:
    """One quantity that differs beyond tolerance (or could not be paired)."""
    quantity: str                 # one of KINDS, or "events" / "exit status"
    step: int | None              # 1-based occurrence of the event; None for final values
    name: str | None              # variable name, event key or printed line
    original: object = None       # short summary of the original's value
    migrated: object = None
    abs_err: float | None = None
    rel_err: float | None = None
    index: list | None = None     # the element that fails the tolerance worst
    reason: str = ""
    order: tuple = (0, 0)         # sort key: position in the original's run
    largest: dict | None = None   # the largest difference, when at another element

    def describe(self) -> str:
        where = f"step {self.step}, " if self.step is not None else ""
        what = self.quantity + (f" of {self.name}" if self.name and self.quantity in
                                ("gradient", "applied update", "final value", "step change", "initial value") else
                                (f" ({self.name})" if self.name else ""))
        text = f"{where}{what}"
        if self.reason:
            text += f": {self.reason}"
        if self.abs_err is not None:
            at = f" at {self.index}" if self.index else ""
            text += (f": original {self.original} vs migrated {self.migrated}{at}, "
                     f"abs error {self.abs_err:.3g}, rel error {self.rel_err:.3g}")
        if self.largest:
            at = f" at {self.largest['index']}" if self.largest["index"] else ""
            text += (f" (largest difference{at}: abs error {self.largest['abs_err']:.3g}, "
                     f"rel error {self.largest['rel_err']:.3g}"
                     + (", within tolerance)" if self.largest.get("within_tolerance") else ")"))
        return text


@dataclass
class KindStats:
    compared: int = 0
    elements: int = 0
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    diverged: int = 0
    max_rel_beyond_atol: float = 0.0   # the largest relative error of an element whose absolute error exceeds atol


@dataclass
class Comparison:
    stats: dict = field(default_factory=lambda: {k: KindStats() for k in KINDS})
    divergences: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    steps: int = 0
    gradients: int = 0
    variables: int = 0
    printed_numbers: int = 0
    described: int = 0            # lines of the original's output left out: TF1's descriptions of graph objects
    volatile: list = field(default_factory=list)   # printed values shown, not compared (verify/volatile.py)
    loss_original: list = field(default_factory=list)
    loss_migrated: list = field(default_factory=list)

    @property
    def first(self) -> Divergence | None:
        return min(self.divergences, key=lambda d: d.order) if self.divergences else None

    @property
    def equivalent(self) -> bool:
        return not self.divergences

    def to_json(self) -> dict:
        first = self.first
        listed = sorted(self.divergences, key=lambda d: d.order)[:MAX_LISTED]
        return {
            "steps": self.steps, "gradients": self.gradients, "variables": self.variables,
            "printed_numbers": self.printed_numbers,
            "descriptions_left_out": self.described, "volatile": self.volatile,
            "by_kind": {k: asdict(v) for k, v in self.stats.items()},
            "divergence_count": len(self.divergences),
            "first_divergence": _div_json(first) if first else None,
            "divergences": [_div_json(d) for d in listed],
            "notes": self.notes,
            "loss_curve": {"original": self.loss_original, "migrated": self.loss_migrated},
        }


def _div_json(d: Divergence) -> dict:
    out = asdict(d)
    out.pop("order")
    out["text"] = d.describe()
    return out


# -- element-wise closeness --------------------------------------------------

def _summary(arr: np.ndarray):
    if arr.size == 1:
        return _num(arr.reshape(-1)[0])
    flat = [_num(x) for x in arr.reshape(-1)[:6]]
    return {"shape": list(arr.shape), "first": flat}


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else str(x)


def check(a, b, rtol: float, atol: float, extra_tol=0.0):
    """Return (ok, abs_err, rel_err, index, reason) for two values.

    The element reported is the one that fails the tolerance worst (largest
    |a - b| over what the rule allows), so a DIVERGED message always names an
    element that fails; when all pass, it is the one of largest difference.
    """
    c = closeness(a, b, rtol, atol, extra_tol)
    return c["ok"], c["abs_err"], c["rel_err"], c["index"], c["reason"]


def closeness(a, b, rtol: float, atol: float, extra_tol=0.0) -> dict:
    """:func:`check` plus the largest difference (``max_abs_err`` at ``max_index``), for the statistics."""
    a, b = np.asarray(a), np.asarray(b)
    out = {"ok": False, "abs_err": None, "rel_err": None, "index": None, "reason": "",
           "max_abs_err": None, "max_rel_err": None, "max_index": None, "rel_beyond_atol": None}
    if a.shape != b.shape:
        return {**out, "reason": f"shape {list(a.shape)} vs {list(b.shape)}"}
    if a.dtype.kind not in "fciub" or b.dtype.kind not in "fciub":
        same = bool(np.array_equal(a, b))
        return {**out, "ok": same, "reason": "" if same else "values differ"}
    if a.size == 0:
        return {**out, "ok": True, "abs_err": 0.0, "rel_err": 0.0, "max_abs_err": 0.0, "max_rel_err": 0.0,
                "rel_beyond_atol": 0.0}
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    both_nan = nan_a & nan_b
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a64 - b64)
        same_inf = np.isinf(a64) & (a64 == b64)
        diff = np.where(both_nan | same_inf, 0.0, diff)
        diff = np.where(nan_a ^ nan_b, np.inf, diff)
        scale = np.maximum(np.abs(a64), np.abs(b64))
        scale = np.where(np.isfinite(scale), scale, 0.0)
        allowed = atol + rtol * scale + extra_tol
        bad = diff > allowed
        rel = np.where(diff == 0, 0.0, diff / np.maximum(scale, np.finfo(np.float64).tiny))
        # how far beyond its allowance each element is (inf when nothing is allowed)
        over = np.where(bad, np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1.0), np.inf), -1.0)

    def at(flat_index):
        index = np.unravel_index(flat_index, a.shape) if a.ndim else None
        return (float(diff.reshape(-1)[flat_index]), float(rel.reshape(-1)[flat_index]),
                [int(i) for i in index] if index is not None else None)

    largest = int(np.argmax(diff))
    out["max_abs_err"], out["max_rel_err"], out["max_index"] = at(largest)
    out["rel_beyond_atol"] = float(np.max(np.where(diff > atol, rel, 0.0)))
    out["max_ok"] = not bool(bad.reshape(-1)[largest])
    out["ok"] = not bool(bad.any())
    out["abs_err"], out["rel_err"], out["index"] = at(largest if out["ok"] else int(np.argmax(over)))
    return out


def _record(cmp: Comparison, kind: str, a, b, rtol, atol, *, step, name, order, extra_tol=0.0, c=None):
    """``c``: closeness(a, b, ...) when already known (compare_many)."""
    c = c or closeness(a, b, rtol, atol, extra_tol)
    ok, abs_err, rel_err, index, reason = c["ok"], c["abs_err"], c["rel_err"], c["index"], c["reason"]
    st = cmp.stats[kind]
    st.compared += 1
    st.elements += int(np.asarray(a).size)
    if c["max_abs_err"] is not None and math.isfinite(c["max_abs_err"]):
        st.max_abs_err = max(st.max_abs_err, c["max_abs_err"])
        st.max_rel_err = max(st.max_rel_err, c["max_rel_err"])
        st.max_rel_beyond_atol = max(st.max_rel_beyond_atol, c.get("rel_beyond_atol") or 0.0)
    elif c["max_abs_err"] is not None:
        st.max_abs_err = st.max_rel_err = math.inf
    if not ok:
        st.diverged += 1
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        if index is not None and a_arr.shape == b_arr.shape:
            orig, mig = _num(a_arr[tuple(index)]), _num(b_arr[tuple(index)])
        else:
            orig, mig = _summary(a_arr), _summary(b_arr)
        d = Divergence(kind, step, name, orig, mig, abs_err, rel_err, index, reason, order)
        if c["max_index"] != index and c["max_abs_err"] is not None:
            d.largest = {"abs_err": c["max_abs_err"], "rel_err": c["max_rel_err"], "index": c["max_index"],
                         "within_tolerance": c["max_ok"]}
        cmp.divergences.append(d)
    return ok


# -- gradient events -------------------------------------------------------------

def _key(event) -> tuple:
    return (event["kind"], tuple(sorted(event.get("grads", {}))))


def _label(key) -> str:
    return f"{key[0]} [{', '.join(key[1]) or 'no gradients'}]"


def _same_loss(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b or (a != a and b != b)


def merge_observations(events: list) -> list:
    """Merge back-to-back gradient computations of the same loss value.

    Computing a gradient observes, it does not change anything: a program
    that takes ``d loss/d w`` and ``d loss/d b`` in two calls (or evaluates
    the same gradient twice in one ``Session.run``) is the same as one that
    takes both at once.  Consecutive compute events (no update in between)
    with a bit-identical loss and bit-identical gradients for the sources
    they share are therefore merged, on both sides alike.
    """
    out = []
    for e in events:
        if e["kind"] not in ("compute", "apply"):
            continue
        prev = out[-1] if out else None
        if (e["kind"] == "compute" and prev is not None and prev["kind"] == "compute"
                and _same_loss(prev.get("loss"), e.get("loss"))
                and all(prev["grads"][n] == e["grads"][n] for n in set(prev["grads"]) & set(e["grads"]))):
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
    orig, mig = merge_observations(orig), merge_observations(mig)
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


# -- final values and printed numbers ----------------------------------------------

def compare_finals(cmp: Comparison, orig: dict | None, mig: dict | None, rtol, atol, decode) -> None:
    if orig is None or mig is None:
        side = "original" if orig is None else "migrated"
        cmp.notes.append(f"final variable values were not recorded by the {side} run; not compared")
        return
    common = sorted(set(orig) & set(mig))
    for n in common:
        _record(cmp, "final value", decode(orig[n]["value"]), decode(mig[n]["value"]), rtol, atol,
                step=None, name=n, order=(math.inf, 0))
    cmp.variables = len(common)
    missing = sorted(n for n in set(orig) - set(mig) if orig[n].get("trainable"))
    if missing:
        cmp.notes.append("trainable variables of the original absent from the migrated program: "
                         + ", ".join(missing))


def printed_numbers(text: str) -> list:
    """[(line number, line, [tokens])] for every stdout line holding numbers."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        tokens = _NUMBER.findall(line)
        if tokens:
            out.append((no, line.strip(), tokens))
    return out


def skeleton(line: str) -> str:
    """A printed line without its numbers (compared with the tolerances instead),
    object addresses and runs of spaces (NumPy pads columns to the widest number)."""
    return " ".join(_NUMBER.sub("#", _ADDRESS.sub("0x…", line)).split()).replace("[ ", "[").replace(" ]", "]")


def _quantum(token: str) -> float:
    """One unit of the last printed digit (0 for plain integers)."""
    t = token.lower().lstrip("+-")
    if t in ("nan", "inf") or ("." not in t and "e" not in t):
        return 0.0
    mant, _, exp = t.partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    return 10.0 ** (int(exp or 0) - decimals)


def printed_text(text: str) -> list:
    """[(line number, line)] for every non-blank stdout line holding no number.

    A program whose only output is text (a greeting computed by the graph, a
    label) is compared on that text, exactly, addresses aside.
    """
    return [(no, _ADDRESS.sub("0x…", line.strip())) for no, line in enumerate(text.splitlines(), 1)
            if line.strip() and not _NUMBER.search(line)]


def compare_printed(cmp: Comparison, out_o: str, out_m: str, rtol, atol, stopped=()) -> None:
    """The printed numbers line by line, then the lines of text. Lines of the original that
    are TF1's descriptions of graph objects (verify/descriptions.py) are left out: values
    TF1 never computed, printed while the graph was built."""
    described = descriptions.left_out(out_o)
    if described:
        out_o = descriptions.without(out_o, described)
        cmp.described = len(described)
        cmp.notes.append(f"{len(described)} line{'s' if len(described) > 1 else ''} of the original's output "
                         f"{'are' if len(described) > 1 else 'is'} TF1's description of graph objects (a "
                         "`Tensor(...)`, `<tf.Variable ...>` or an op printed while the graph was built), "
                         "not values: left out of the printed-output comparison")
    (out_o, volatile_o), (out_m, volatile_m) = volatile.mask_output(out_o), volatile.mask_output(out_m)
    volatile.record(cmp, volatile_o, volatile_m)
    lines_o, lines_m = printed_numbers(out_o), printed_numbers(out_m)
    for i, ((no_o, text_o, tok_o), (no_m, text_m, tok_m)) in enumerate(zip(lines_o, lines_m)):
        order = (math.inf, 1, i)
        if len(tok_o) != len(tok_m):
            cmp.divergences.append(Divergence(
                "printed number", None, f"line {no_o}", text_o[:120], text_m[:120],
                reason=(f"original line {no_o} prints {len(tok_o)} number{'s' if len(tok_o) != 1 else ''}, "
                        f"migrated line {no_m} prints {len(tok_m)}"),
                order=order))
            continue
        if skeleton(text_o) != skeleton(text_m):   # the words around the numbers are output too
            cmp.divergences.append(Divergence(
                "printed text", None, f"line {no_o}", text_o[:120], text_m[:120],
                reason=f"original line {no_o} reads {text_o[:80]!r}, migrated line {no_m} {text_m[:80]!r}",
                order=order))
            continue
        for a, b in zip(tok_o, tok_m):
            cmp.printed_numbers += 1
            if not _record(cmp, "printed number", float(a), float(b), rtol, atol, step=None,
                           name=f"line {no_o}: {text_o[:80]}", order=order,
                           extra_tol=max(_quantum(a), _quantum(b))):
                cmp.divergences[-1].original, cmp.divergences[-1].migrated = a, b
                break
    _compare_counts(cmp, "printed number", "lines with numbers", len(lines_o), len(lines_m), stopped, 2)
    text_o, text_m = printed_text(out_o), printed_text(out_m)
    for i, ((no_o, a), (no_m, b)) in enumerate(zip(text_o, text_m)):
        st = cmp.stats["printed text"]
        st.compared += 1
        st.elements += 1
        if a != b:
            st.diverged += 1
            cmp.divergences.append(Divergence(
                "printed text", None, f"line {no_o}", a[:120], b[:120],
                reason=f"original line {no_o} reads {a[:80]!r}, migrated line {no_m} {b[:80]!r}",
                order=(math.inf, 3, i)))
    _compare_counts(cmp, "printed text", "lines of text", len(text_o), len(text_m), stopped, 4)


def _compare_counts(cmp: Comparison, kind: str, what: str, n_o: int, n_m: int, stopped, rank: int,
                    verb: str = "printed") -> None:
    """A side that printed fewer lines diverges, unless a side was stopped early (by the
    step budget or a timeout): then only the lines both printed are compared."""
    if n_o != n_m and not stopped:
        cmp.divergences.append(Divergence(
            kind, None, None, reason=f"original {verb} {n_o} {what}, migrated {n_m}",
            order=(math.inf, rank)))


def compare_plots(cmp: Comparison, plots_o: list | None, plots_m: list | None, rtol, atol, decode,
                  stopped=()) -> None:
    """Compare what both programs drew (verify/plot_backend.py), snapshot by snapshot.

    Each snapshot is the data of every artist of every open figure at a
    `show()`, a `savefig()` or the program's end, in drawing order.
    """
    if plots_o is None and plots_m is None:
        return
    plots_o, plots_m = plots_o or [], plots_m or []
    for i, (snap_o, snap_m) in enumerate(zip(plots_o, plots_m)):
        labels_o = [(a["figure"], a["axes"], a["artist"]) for a in snap_o]
        labels_m = [(a["figure"], a["axes"], a["artist"]) for a in snap_m]
        if labels_o != labels_m:
            cmp.divergences.append(Divergence(
                "plotted value", None, f"drawing {i + 1}",
                reason=f"drawing {i + 1}: the original drew {_artists(labels_o)}, the migrated program "
                       f"{_artists(labels_m)}", order=(math.inf, 5, i)))
            continue
        for a, b in zip(snap_o, snap_m):
            _record(cmp, "plotted value", decode(a["data"]), decode(b["data"]), rtol, atol, step=None,
                    name=f"drawing {i + 1}, figure {a['figure']}, axes {a['axes']}, {a['artist']}",
                    order=(math.inf, 5, i))
    _compare_counts(cmp, "plotted value", "drawings", len(plots_o), len(plots_m), stopped, 6, "made")


def _artists(labels: list) -> str:
    return ", ".join(f"{art} (figure {fig}, axes {ax})" for fig, ax, art in labels[:4]) or "nothing"


def loss_curve(events: list) -> list:
    """Loss per step of the most frequent gradient computation (for the plot)."""
    by = defaultdict(list)
    for e in events:
        if e["kind"] == "compute" and e.get("loss") is not None:
            by[_key(e)].append(e["loss"])
    if not by:
        return []
    return [_num(x) for x in max(by.values(), key=len)]


def compare_traces(orig: dict, mig: dict, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
                   decode=None, stopped=()) -> Comparison:
    """Compare two loaded traces: ``{"events", "final", "stdout", "plots"}`` each.

    ``stopped``: the sides that stopped early (see compare_events); only the
    common prefix is compared, and the caller decides whether finals are.
    """
    if decode is None:
        from tf1gradfix.verify.runner_common import decode_array as decode
    cmp = Comparison()
    compare_events(cmp, orig["events"], mig["events"], rtol, atol, decode, stopped)
    if not stopped or (orig.get("final") is not None and mig.get("final") is not None):
        compare_finals(cmp, orig.get("final"), mig.get("final"), rtol, atol, decode)
    compare_printed(cmp, orig.get("stdout", ""), mig.get("stdout", ""), rtol, atol, stopped)
    compare_plots(cmp, orig.get("plots"), mig.get("plots"), rtol, atol, decode, stopped)
    cmp.loss_original, cmp.loss_migrated = loss_curve(orig["events"]), loss_curve(mig["events"])
    return cmp
