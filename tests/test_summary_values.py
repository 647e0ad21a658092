"""TensorBoard summaries compared tag by tag and step by step (tf1gradfix/verify/summary_values.py);
the runners' recording is proven by fixtures/verify/scoped_model_function_called_once (a
histogram of another tensor, a loss under another tag: both DIVERGED)."""

from __future__ import annotations

import numpy as np

from tf1gradfix.verify import summary_values
from tf1gradfix.verify.comparison import Comparison


def _event(tag, step, value, form="scalar"):
    return {"kind": "summary", "tag": tag, "step": step, "form": form, "value": list(value)}


ORIGINAL = [_event("loss", 0, [1.5]), _event("loss", 10, [0.75]), {"kind": "compute"},
            _event("w", 10, [-1.0, 2.0, 6.0, 3.0, 9.0], "histogram")]


def _compare(orig, mig, stopped=()):
    cmp = Comparison()
    summary_values.compare(cmp, orig, mig, 1e-3, 1e-6, stopped)
    return cmp


def test_the_same_values_at_the_same_steps_agree():
    cmp = _compare(ORIGINAL, [e for e in ORIGINAL if e["kind"] == "summary"])
    assert cmp.divergences == [] and cmp.stats["summary value"].compared == 3


def test_a_value_past_tolerance_diverges_with_its_tag_and_step():
    changed = [dict(e, value=[0.8]) if e.get("step") == 10 and e.get("tag") == "loss" else e for e in ORIGINAL]
    (d,) = _compare(ORIGINAL, changed).divergences
    assert d.quantity == "summary value" and d.name == "loss at step 10"


def test_tags_steps_and_counts_must_match_unless_a_side_stopped():
    renamed = [dict(e, tag="cost") if e.get("tag") == "loss" else e for e in ORIGINAL]
    assert _compare(ORIGINAL, renamed).divergences[0].reason == \
        "summary tags written by one side only: cost (migrated), loss (original)"
    moved = [dict(e, step=11) if e.get("step") == 10 and e.get("tag") == "loss" else e for e in ORIGINAL]
    assert "at step 10, the migrated program a scalar at step 11" in _compare(ORIGINAL, moved).divergences[0].reason
    fewer = ORIGINAL[:1] + ORIGINAL[2:]
    assert "original wrote `loss` 2 times, migrated 1" in _compare(ORIGINAL, fewer).divergences[0].reason
    assert _compare(ORIGINAL, fewer, stopped={"migrated"}).divergences == []


def test_a_histogram_is_what_tf1_keeps_whatever_its_buckets():
    assert summary_values._histogram(np.array([[2.0, -1.0], [0.5, 1.5]], np.float32)) == [-1.0, 2.0, 4.0, 3.0, 7.5]
    assert _compare([], []).stats["summary value"].compared == 0


def test_a_histograms_count_decides_and_its_statistics_are_shown():
    other = [dict(e, value=[-1.0, 2.5, 6.0, 3.5, 9.5]) if e.get("form") == "histogram" else e for e in ORIGINAL]
    cmp = _compare(ORIGINAL, other)
    assert cmp.divergences == [] and "histogram statistics that differ" in cmp.notes[0] and "w at step 10" in cmp.notes[0]
    fewer = [dict(e, value=[-1.0, 2.0, 5.0, 3.0, 9.0]) if e.get("form") == "histogram" else e for e in ORIGINAL]
    (d,) = _compare(ORIGINAL, fewer).divergences
    assert d.name == "w at step 10 (count)"
