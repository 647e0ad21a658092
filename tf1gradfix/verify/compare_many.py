"""The element-wise test of comparison.closeness for many small pairs at once.

A 20,000-step trace holds some 100,000 loss, gradient and update pairs of a
few elements each, and testing them one by one costs about 25 NumPy calls
per pair: most of a long verification's comparison. Here a batch of pairs is
tested as one concatenated float64 array, with the same operations element
by element, so the results are those of closeness(). A pair with an element
out of tolerance, or that this does not handle (shapes that differ, no
elements, complex or non-numeric values), gets None: the caller tests it
with closeness() for the full report.
"""

from __future__ import annotations

import numpy as np

BATCH_ELEMENTS = 1 << 20     # elements tested at once (memory stays bounded)
_KINDS = "fiub"


def simple(a, b) -> bool:
    """Can this pair be tested in a batch?"""
    return (a.shape == b.shape and a.size > 0 and a.dtype.kind in _KINDS and b.dtype.kind in _KINDS)


def closeness_many(pairs: list, rtol: float, atol: float) -> list:
    """closeness(a, b, rtol, atol) of every pair that passes, None for the others."""
    out: list = [None] * len(pairs)
    batch, size = [], 0
    for i, (a, b) in enumerate(pairs):
        a, b = np.asarray(a), np.asarray(b)
        if not simple(a, b):
            continue
        batch.append((i, a, b))
        size += a.size
        if size >= BATCH_ELEMENTS:
            _test(batch, rtol, atol, out)
            batch, size = [], 0
    if batch:
        _test(batch, rtol, atol, out)
    return out


def _test(batch: list, rtol: float, atol: float, out: list) -> None:
    a64 = np.concatenate([a.astype(np.float64).reshape(-1) for _, a, _ in batch])
    b64 = np.concatenate([b.astype(np.float64).reshape(-1) for _, _, b in batch])
    sizes = np.array([a.size for _, a, _ in batch])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):   # as in closeness()
        diff = np.abs(a64 - b64)
        same_inf = np.isinf(a64) & (a64 == b64)
        diff = np.where((nan_a & nan_b) | same_inf, 0.0, diff)
        diff = np.where(nan_a ^ nan_b, np.inf, diff)
        scale = np.maximum(np.abs(a64), np.abs(b64))
        scale = np.where(np.isfinite(scale), scale, 0.0)
        bad = diff > atol + rtol * scale + 0.0
        rel = np.where(diff == 0, 0.0, diff / np.maximum(scale, np.finfo(np.float64).tiny))
    failed = np.logical_or.reduceat(bad, starts)
    largest = np.maximum.reduceat(diff, starts)
    beyond = np.maximum.reduceat(np.where(diff > atol, rel, 0.0), starts)
    hits = np.flatnonzero(diff == np.repeat(largest, sizes))
    first = hits[np.searchsorted(hits, starts)]      # np.argmax: the first largest element
    for j, (i, a, _) in enumerate(batch):
        if failed[j]:
            continue
        k = int(first[j])
        index = [int(x) for x in np.unravel_index(k - int(starts[j]), a.shape)] if a.ndim else None
        abs_err, rel_err = float(diff[k]), float(rel[k])
        out[i] = {"ok": True, "abs_err": abs_err, "rel_err": rel_err, "index": index, "reason": "",
                  "max_abs_err": abs_err, "max_rel_err": rel_err, "max_index": index, "max_ok": True,
                  "rel_beyond_atol": float(beyond[j])}
