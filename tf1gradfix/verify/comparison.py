"""The comparison's records and the element-wise test every compared quantity passes.

Pure NumPy, no TensorFlow: the parent process stays light and these rules
can be tested with synthetic values. Element-wise test::

    |a - b| <= atol + rtol * max(|a|, |b|)      NaN == NaN, NaN != number

Default tolerances and their justification: see TOLERANCES.md. What is compared,
and how the two traces are paired: compare.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

# atol 1e-6 is ~10 float32 epsilons (1.19e-7), TensorFlow's own default for
# tf.debugging.assert_near on float32; it only matters for entries near zero.
# rtol 1e-3 (~8400 ulp) is 10x above the largest float noise measured between
# correct TF1/TF2 pairs (~1e-4 relative after 30 Adam steps: the fused v1
# kernel and Keras' composite ops round differently) and 5x below the first
# visible effect of the deliberately wrong migrations in fixtures/verify.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-6

KINDS = ("initial value", "loss", "gradient", "applied update", "final value", "printed number", "printed text",
         "plotted value", "summary value")
MAX_LISTED = 20


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

    def describe(self, sides: tuple[str, str] = ("original", "migrated")) -> str:
        """`sides`: what the two compared values are called (the original's two runs: "first run", "run again")."""
        where = f"step {self.step}, " if self.step is not None else ""
        what = self.quantity + (f" of {self.name}" if self.name and self.quantity in
                                ("gradient", "applied update", "final value", "step change", "initial value") else
                                (f" ({self.name})" if self.name else ""))
        text = f"{where}{what}"
        if self.reason:
            text += f": {self.reason}"
        if self.abs_err is not None:
            at = f" at {self.index}" if self.index else ""
            text += (f": {sides[0]} {self.original} vs {sides[1]} {self.migrated}{at}, "
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
