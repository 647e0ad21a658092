"""The migration's own initial values, compared with the original's.

The verifier starts both programs from the same values (the migrated side
is given the original's), which proves the training but would hide a wrong
initializer: zeros for Glorot, another stddev, one seed shared by every
layer.  So, right before the original's value replaces it, the migrated
side reads what its variable holds by itself and checks it here:

* the original's initial value came from no random op (zeros, ones,
  constants, values computed from data): the same values, within the
  tolerances of every other comparison;
* it came from a random op: the same distribution.  A constant array of
  two or more elements against a draw that is not constant, or two
  variables drawn identically where the original's differ, is a
  divergence (a continuous draw never repeats: no false alarm); otherwise
  a two-sample Kolmogorov-Smirnov test at ``ALPHA`` per variable;
* an initial value read from another variable, or of a kind the original
  could not tell: not checked (counted as such).

No TensorFlow import: the original's runner asks :func:`drawn` (a walk of the
variable's graph), the migrated runner :func:`own_check`, the parent reads the events.
"""

from __future__ import annotations

import math

import numpy as np

from tf1gradfix.verify import random_ops
from tf1gradfix.verify.comparison import DEFAULT_ATOL, DEFAULT_RTOL

ALPHA = 1e-6      # false-alarm rate of the distribution test, per variable (TOLERANCES.md)
KIND = "initial value"
EXACT, DISTRIBUTION, UNCHECKED = "exact", "distribution", "not checked"


def ks_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov p-value (asymptotic, Stephens' small-sample correction)."""
    a, b = np.sort(a.ravel()), np.sort(b.ravel())
    n, m = a.size, b.size
    both = np.concatenate([a, b])
    d = float(np.max(np.abs(np.searchsorted(a, both, side="right") / n
                            - np.searchsorted(b, both, side="right") / m)))
    en = math.sqrt(n * m / (n + m))
    lam = (en + 0.12 + 0.11 / en) * d
    if lam < 0.2:
        return 1.0
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, p))


def same_distribution_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """KS on the values and on their distance to the pooled median (a spread test: far more
    power against another stddev), Bonferroni-combined; both are exact under the null."""
    c = float(np.median(np.concatenate([a.ravel(), b.ravel()])))
    return min(1.0, 2 * min(ks_pvalue(a, b), ks_pvalue(np.abs(a - c), np.abs(b - c))))


def _constant(a: np.ndarray) -> bool:
    return a.size >= 2 and bool(np.all(a == a.ravel()[0]))


def check(own, original, random, rtol: float, atol: float) -> dict:
    """``{"how", "ok", "detail"}`` for one variable (``random``: True, False or None unknown)."""
    own, original = np.asarray(own), np.asarray(original)
    if random is None or own.shape != original.shape:
        return {"how": UNCHECKED, "ok": True, "detail": ""}
    if not random or original.dtype.kind not in "fc":
        if own.dtype.kind in "fc" or original.dtype.kind in "fc":
            a, b = own.astype(np.float64), original.astype(np.float64)
            bad = ~((np.abs(a - b) <= atol + rtol * np.maximum(np.abs(a), np.abs(b))) | (np.isnan(a) & np.isnan(b)))
        else:
            bad = own != original
        if not bad.any():
            return {"how": EXACT, "ok": True, "detail": ""}
        at = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        return {"how": EXACT, "ok": False,
                "detail": f"the original initializes it deterministically to {_short(original)}, the migration "
                          f"to {_short(own)} ({int(bad.sum())} of {bad.size} elements differ; first at "
                          f"{list(int(i) for i in at)}: original {original[at]!r} vs migrated {own[at]!r})"}
    if _constant(own) and not _constant(original):
        return {"how": DISTRIBUTION, "ok": False,
                "detail": f"the original draws it at random ({_moments(original)}), the migration sets every "
                          f"element to {own.ravel()[0]!r}"}
    p = same_distribution_pvalue(own.astype(np.float64), original.astype(np.float64))
    if p < ALPHA:
        return {"how": DISTRIBUTION, "ok": False, "p": p,
                "detail": f"drawn from another distribution: original {_moments(original)}, migrated "
                          f"{_moments(own)} (Kolmogorov-Smirnov on values and spread, p={p:.2g} < {ALPHA:g})"}
    return {"how": DISTRIBUTION, "ok": True, "p": p, "detail": ""}


def own_check(name: str, own, original, random, draws: list) -> dict:
    """The event fields of one variable's check; ``draws`` collects the random ones for :func:`same_draws`."""
    if own is None:
        return {"how": UNCHECKED, "ok": True, "detail": "no value of its own"}
    try:
        result = check(own, original, random, DEFAULT_RTOL, DEFAULT_ATOL)
        if random and result["ok"]:
            draws.insert(0, (name, own, original, random))
            twin = next((b for a, b in same_draws(draws) if a == name), None)
            if twin is not None:
                result = {"how": DISTRIBUTION, "ok": False,
                          "detail": f"the migration draws it identically to {twin}, where the original's two "
                                    f"draws differ (one seed for both)"}
    except (ValueError, TypeError) as exc:
        result = {"how": UNCHECKED, "ok": True, "detail": f"{type(exc).__name__}: {exc}"[:200]}
    return {k: result[k] for k in ("how", "ok", "detail", "p") if k in result}


def same_draws(checked: list) -> list:
    """Pairs of random variables the migration drew identically while the original's differ.

    ``checked``: (name, own, original, random) of the variables checked so far.
    """
    found, seen = [], {}
    for name, own, original, random in checked:
        if not random or np.asarray(own).size < 2:
            continue
        key = (np.asarray(own).shape, np.asarray(own).tobytes())
        if key in seen:
            other, other_original = seen[key]
            if not np.array_equal(other_original, original):
                found.append((other, name))
        else:
            seen[key] = (name, np.asarray(original))
    return found


def _short(a: np.ndarray) -> str:
    if a.size and _constant(a) or a.size == 1:
        return f"{a.ravel()[0]!r} everywhere" if a.size > 1 else repr(a.ravel()[0])
    return _moments(a)


def _moments(a: np.ndarray) -> str:
    a = a.astype(np.float64)
    return f"mean {a.mean():.3g}, std {a.std():.3g}, range [{a.min():.3g}, {a.max():.3g}] over {a.size} values"


# -- original side: what made the initial value --------------------------------------

_READS_VARIABLE = {"VariableV2", "VarHandleOp", "ReadVariableOp", "Variable"}
# Numbers drawn: random ops, stateless ones too (a seeded initializer; the migration's seed
# gives other numbers), and the host-side draws aligned_random put in place of random ops.
_DRAWS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def drawn(var) -> bool | None:
    """Does ``var``'s initial value come from a random op (True), from none (False), or from
    another variable (None: its value is that variable's, not checked)?"""
    try:
        todo, seen = [var.initial_value.op], set()
    except Exception:  # noqa: BLE001 - a variable without an initial value op
        return None
    random = False
    while todo and len(seen) < 5000:
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _READS_VARIABLE:
            return None
        random = random or random_ops.is_random_op(op.type) or op.type in _DRAWS or op.type.startswith(
            ("StatelessRandom", "StatelessTruncated", "StatelessParameterized"))
        todo.extend(t.op for t in op.inputs)
    return random


# -- parent side -------------------------------------------------------------------

def into(cmp, events: list) -> None:
    """Count the migration's init checks in ``cmp`` and add a divergence per variable that failed."""
    from tf1gradfix.verify.comparison import Divergence, KindStats

    stats = cmp.stats.setdefault(KIND, KindStats())
    checks = [e for e in events if e["kind"] == "init_check"]
    unchecked = [e["original"] for e in checks if e["how"] == UNCHECKED]
    for i, e in enumerate(c for c in checks if c["how"] != UNCHECKED):
        stats.compared += 1
        if not e["ok"]:
            stats.diverged += 1
            cmp.divergences.append(Divergence(KIND, None, e["original"], reason=e["detail"], order=(-1, i)))
    if unchecked:
        cmp.notes.append(f"initial values not checked (read from another variable): {', '.join(unchecked[:10])}")
