"""A divergence told apart from the original's own variation: the original, run once more.

TF1 leaves some ops of one run unordered (TOLERANCES.md, "Values fetched with an
update: TF1's order, measured"): a gradient reading a weight another update of the run writes in place,
two applies of one Adam sharing its beta powers, a clip assigned in the run
that updates. Such an original gives other numbers on each run, and no
migration can be proven against it at a tolerance its own runs exceed. So after
a DIVERGED verdict the original runs once more, alone, with the same seeds,
inputs, arguments and step budget, and the two runs of the original are
compared with each other at the same tolerances:

- they differ: NOT_COMPARABLE. The reason says where and by how much the
  original's two runs part, beside the migration's first difference: the
  file is not proven, and the user learns that the original is the cause;
- they agree: DIVERGED stands, and says that the difference is the migration's.

Mode "auto" does this after every DIVERGED verdict; "off" never does.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass

from tf1gradfix.verify import budget
from tf1gradfix.verify import compare as cmp_mod
from tf1gradfix.verify import descriptions, side_runs, stopping, summary_values, trace_seal
from tf1gradfix.verify import runner_common as rc

MODES = ("auto", "off")


@dataclass
class Rerun:
    status: str            # "agreed" | "differs" | "inconclusive" | "failed"
    reason: str = ""       # the original's own first difference, or why the run failed
    compared: int = 0      # quantities compared between the original's two runs
    elapsed: float = 0.0
    unsteady: frozenset[str] | None = None   # the summary values its runs wrote otherwise, when only those differ

    def to_json(self) -> dict:
        return {"status": self.status, "reason": self.reason, "compared": self.compared,
                "elapsed_seconds": round(self.elapsed, 3)}


def after_divergence(result, mode: str, trace_dir: str, events: list, again) -> None:
    """`again(trace_dir)`: the original run once more into that folder, (side, events)
    (side_runs.original_again). `trace_dir`, `events`: the plain run's folder and the
    original's events there."""
    if mode == "off" or result.verdict != "DIVERGED":
        return
    t0 = time.monotonic()
    rerun = _compare(result, trace_dir, events, again)
    rerun.elapsed = time.monotonic() - t0
    result.original_rerun = rerun
    if rerun.status == "differs" and _only_unsteady_summaries(result, rerun):
        return
    if rerun.status == "differs":
        result.verdict = "NOT_COMPARABLE"
        result.reason = (f"the original is not deterministic: run again with the same seeds and inputs, it "
                         f"differs from its first run ({rerun.reason}), so no migration can be proven at "
                         f"rtol={result.rtol:g}, atol={result.atol:g}; TF1 leaves some ops of a run unordered "
                         f"(see TOLERANCES.md). The migration's first difference: {result.reason}")
    elif rerun.status == "agreed":
        result.reason += (f"; the original run again agrees with its first run ({rerun.compared} quantities): "
                          "the difference is the migration's")


def _only_unsteady_summaries(result, rerun: Rerun) -> bool:
    """Where the original differs from itself only in summary values (TF1 reads a variable its
    train op updates in the same run in no set order: a histogram of the weights), and the
    migration only in those: EQUIVALENT on everything else, those values not compared."""
    c = result.comparison
    if rerun.unsteady is None or c is None or not all(
            d.quantity == summary_values.KIND and d.name in rerun.unsteady for d in c.divergences):
        return False
    stats = c.stats[summary_values.KIND]
    stats.compared -= len(c.divergences)
    stats.diverged -= len(c.divergences)
    c.divergences = []
    names = sorted(rerun.unsteady)
    c.notes.append(f"summary values the original writes otherwise on each run, not compared ({len(names)}: "
                   + ", ".join(names[:4]) + (", ..." if len(names) > 4 else "") + ")")
    compared = sum(s.compared for s in c.stats.values())
    result.verdict = "EQUIVALENT"
    result.reason = (f"{compared} quantities agree within rtol={result.rtol:g}, atol={result.atol:g}; "
                     f"{len(names)} summary value(s) the original itself writes otherwise on each run not compared")
    return True


def _compare(result, trace_dir: str, events: list, again) -> Rerun:
    second = stopping.temp_dir("tf1gradfix-rerun-")
    try:
        side, second_events = again(second)
        sealed = _sealed(second)
        forged = trace_seal.tampered({"original": second_events}, {"original": sealed})
        if forged:
            return Rerun("failed", forged)
        if side.failed:
            return Rerun("failed", f"the original {side.reason}")
        if _initial_values(trace_dir) != _initial_values(second):   # (the migration is given the first run's)
            return Rerun("inconclusive", "its variables start from other values on each run (a random initializer "
                                         "that no seed of the verifier fixes, as in a graph of its own)")
        first = side_runs.trace_of(trace_dir, "original", events, _sealed(trace_dir))
        rerun = side_runs.trace_of(second, "original", second_events, sealed)
        # (compare_printed leaves TF1's descriptions of graph objects out of the first side only)
        rerun["stdout"] = descriptions.without(rerun["stdout"], descriptions.left_out(rerun["stdout"]))
        stopped = {role for role, ev in (("original", events), ("migrated", second_events))
                   if budget.ended_at_cut(ev)}
        cmp = cmp_mod.compare_traces(first, rerun, result.rtol, result.atol, stopped=stopped)
        compared = sum(s.compared for s in cmp.stats.values())
        if cmp.divergences and cmp.first is not None:
            unsteady = frozenset(d.name for d in cmp.divergences if d.quantity == summary_values.KIND and d.name) \
                if all(d.quantity == summary_values.KIND and d.name for d in cmp.divergences) else None
            return Rerun("differs", cmp.first.describe(("first run", "run again")), compared, unsteady=unsteady)
        return Rerun("agreed", "", compared)
    finally:
        trace_seal.hide(second, False)
        shutil.rmtree(second, ignore_errors=True)
        stopping.forget(second)


def _initial_values(trace_dir: str) -> dict | None:
    try:
        with open(os.path.join(trace_dir, rc.INIT_FILE), encoding="utf-8") as fh:
            return json.load(fh).get("variables")
    except (OSError, ValueError):
        return None


def _sealed(trace_dir: str) -> dict:
    return {name: trace_seal.load_json(trace_dir, "original", name) for name in ("final.json", "plots.json")}
