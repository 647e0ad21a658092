"""TensorBoard summaries, recorded on both sides and compared tag by tag, step by step.

The original writes a serialized `Summary` with `writer.add_summary(summary, step)` (TF1's
FileWriter); the migration writes each value with `tf.summary.scalar/histogram(tag, value,
step=step)` inside a writer (TF2). Both become `summary` events of the trace: the tag,
the step (TF1's None is 0, TF2's default here) and the numbers. A scalar is its value; a
histogram is what TF1's histogram keeps exactly whatever its buckets (min, max, count,
sum, sum of squares: TF2 buckets otherwise, so buckets are not compared), of which the
count decides and the rest is shown (a histogram of the weights, fetched with the train
op, reads them before or after the update as TF1 happens to order the two: half of 40
runs each, measured); any other summary (an image, a text) only its tag and step. The event files themselves are not
read: the same calls with the same numbers write the same values.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from tf1gradfix.verify.comparison import Comparison, Divergence, _record, closeness

KIND = "summary value"


def _histogram(values) -> list[float]:
    data = np.asarray(values, dtype=np.float64).ravel()
    if not data.size:
        return [0.0, 0.0, 0.0, 0.0, 0.0]
    return [float(data.min()), float(data.max()), float(data.size), float(data.sum()), float((data * data).sum())]


def install_v1(v1, trace) -> None:
    """Record what the original's FileWriters are given (`add_summary`)."""
    writer = v1.summary.FileWriter
    original = writer.add_summary

    def add_summary(self, summary, global_step=None):
        try:
            proto = v1.Summary.FromString(summary) if isinstance(summary, bytes) else summary
            for value in proto.value:
                form = value.WhichOneof("value")
                numbers = [float(value.simple_value)] if form == "simple_value" else [
                    value.histo.min, value.histo.max, value.histo.num, value.histo.sum, value.histo.sum_squares] \
                    if form == "histo" else []
                trace.event("summary", tag=value.tag, step=int(global_step or 0),
                            form={"simple_value": "scalar", "histo": "histogram"}.get(form, "other"), value=numbers)
        except Exception as exc:  # noqa: BLE001 - a summary we cannot read is not the program's failure
            trace.event("note", text=f"could not record a summary: {type(exc).__name__}: {exc}"[:500])
        return original(self, summary, global_step)

    writer.add_summary = add_summary


def install_v2(tf, trace) -> None:
    """Record what the migration writes (`tf.summary.scalar`, `histogram`, and the others' tags)."""
    summary = tf.summary

    def recording(name: str, form: str):
        original = getattr(summary, name)

        def write(tag, data, step=None, *args, **kwargs):
            try:
                value = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
                numbers = [float(value)] if form == "scalar" else _histogram(value) if form == "histogram" else []
                trace.event("summary", tag=str(tag), step=int(0 if step is None else np.asarray(step)), form=form,
                            value=numbers)
            except Exception as exc:  # noqa: BLE001
                trace.event("note", text=f"could not record a summary: {type(exc).__name__}: {exc}"[:500])
            return original(tag, data, step, *args, **kwargs)

        setattr(summary, name, write)

    for name, form in (("scalar", "scalar"), ("histogram", "histogram"), ("image", "other"), ("text", "other")):
        recording(name, form)


def compare(cmp: Comparison, orig: list, mig: list, rtol, atol, stopped=()) -> None:
    """Each tag's values in the order they were written, with their steps; a tag one side
    wrote and the other not, or a count that differs, is a divergence (only the common prefix
    when a side was stopped early)."""
    def by_tag(events):
        out = defaultdict(list)
        for e in events:
            if e.get("kind") == "summary":
                out[e["tag"]].append(e)
        return out

    tags_o, tags_m = by_tag(orig), by_tag(mig)
    if not tags_o and not tags_m:
        return
    unsteady: list[str] = []
    only = sorted(set(tags_o) ^ set(tags_m))
    if only and not stopped:
        cmp.divergences.append(Divergence(
            KIND, None, None, reason="summary tags written by one side only: " + ", ".join(
                f"{t} ({'original' if t in tags_o else 'migrated'})" for t in only[:6]), order=(math.inf, 7)))
    for rank, tag in enumerate(sorted(set(tags_o) & set(tags_m))):
        a, b = tags_o[tag], tags_m[tag]
        for k, (x, y) in enumerate(zip(a, b)):
            if x["step"] != y["step"] or x["form"] != y["form"]:
                cmp.divergences.append(Divergence(
                    KIND, None, tag, reason=f"write {k + 1} of `{tag}`: the original wrote a {x['form']} at step "
                                            f"{x['step']}, the migrated program a {y['form']} at step {y['step']}",
                    order=(math.inf, 7, rank, k)))
                break
            a_value, b_value = np.asarray(x["value"], dtype=np.float64), np.asarray(y["value"], dtype=np.float64)
            if x["form"] == "histogram" and a_value.size == b_value.size == 5:
                # (its count decides; its statistics are shown: a histogram of a variable the run's train op
                # updates reads it before or after the update, as TF1 happens to order them: measured 20 of 40)
                _record(cmp, KIND, a_value[2:3], b_value[2:3], 0.0, 0.0, step=None,
                        name=f"{tag} at step {x['step']} (count)", order=(math.inf, 7, rank, k))
                if not closeness(a_value, b_value, rtol, atol)["ok"]:
                    unsteady.append(f"{tag} at step {x['step']}")
                continue
            _record(cmp, KIND, a_value, b_value, rtol, atol, step=None, name=f"{tag} at step {x['step']}",
                    order=(math.inf, 7, rank, k))
        if len(a) != len(b) and not stopped:
            cmp.divergences.append(Divergence(
                KIND, None, tag, reason=f"original wrote `{tag}` {len(a)} times, migrated {len(b)}",
                order=(math.inf, 7, rank)))
    if unsteady:
        cmp.notes.append(f"histogram statistics that differ, shown and not decisive ({len(unsteady)}: "
                         + ", ".join(unsteady[:3]) + (", ..." if len(unsteady) > 3 else "") + "): TF1 reads a "
                         "variable its train op updates in the same run before or after the update")
