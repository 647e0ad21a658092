"""Lockstep: tell rounding drift from a wrong migration when the plain comparison diverges late.

The plain run starts both programs from the same initial values and lets
each follow its own trajectory. Where an optimizer normalizes gradient
entries that are rounding noise (Adam, RMSProp, Adagrad: a bias before a
batch norm, rarely used embedding rows), two right programs drift apart
after a few steps. When every divergence of the plain run is such drift
(losses, gradients and applied updates after step 1, final values: see
`not_eligible`), the pair runs again in lockstep (lockstep_v1.py,
lockstep_v2.py): every step of the migration starts from the original's
state at that step, variables and optimizer slots, and is compared there at
the same tolerances: its loss, its gradients, the update it applied, and the
change it made to every variable and slot (given the original's gradients).
Equal states mapped to equal results at every step is the equivalence the
verifier claims; a mistake still shows at the first step it matters.

A printed or plotted number computed from the drifted state drifts with it,
as a final value does: it is retried when the training drifted too, and the
lockstep run's own printed and plotted numbers must agree (computed from
the original's state, a number the migration computes otherwise still
differs there). Printed text, a number missing or shown in another form, and
shown numbers that differ while the training agreed are never cleared (the
pair stays DIVERGED).
Nothing here imports TensorFlow.
"""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import dataclass, field

from tf1gradfix.verify import budget, graph_calls, stopping, trace_seal
from tf1gradfix.verify import comparison as cmp_mod
from tf1gradfix.verify import compare_events, compare_output, summary_values
from tf1gradfix.verify import lockstep_files as files
from tf1gradfix.verify import runner_common as rc

MODES = ("auto", "off", "always")
DRIFT_KINDS = ("loss", "gradient", "applied update")
SHOWN_NUMBERS = ("printed number", "plotted value", "summary value")   # what the program shows, from its state
STEP_CHANGE = "step change"     # the change a step made to a variable or slot, from the original's state


@dataclass
class LockstepResult:
    status: str                  # agreed | diverged | refused | failed | not tried
    reason: str = ""
    comparison: cmp_mod.Comparison | None = None
    drift: dict = field(default_factory=dict)   # what diverged in the plain run
    elapsed: float = 0.0

    def to_json(self) -> dict:
        return {"status": self.status, "reason": self.reason, "drift": self.drift,
                "elapsed_seconds": round(self.elapsed, 3),
                "comparison": self.comparison.to_json() if self.comparison else None}


def not_eligible(result) -> tuple[str, bool] | None:
    """Why a DIVERGED plain run is not retried in lockstep, and whether that is worth saying
    (the divergence looked late enough to be drift); None: it is retried."""
    c = result.comparison
    if result.verdict != "DIVERGED" or c is None:
        return "the plain run did not diverge", False
    shown, trained = None, False
    for d in sorted(c.divergences, key=lambda d: d.order):
        if d.quantity in SHOWN_NUMBERS and d.abs_err is not None and not d.reason:
            continue   # a shown number off by drift: judged below, and compared again in lockstep
        if d.quantity in SHOWN_NUMBERS + ("printed text",):
            shown = shown or d
        elif d.abs_err is None or d.reason or d.quantity not in DRIFT_KINDS + ("final value",):
            return f"the plain run differs in what it computes, not only in values ({_short(d)})", False
        elif d.quantity in DRIFT_KINDS and (d.step or 0) < 2:
            return "the plain run differs at step 1, before anything could drift", False
        trained = True
    if shown is not None:
        return (f"the plain run differs in {_short(shown)} (text, or a number missing or shown otherwise), "
                "which drift cannot explain", True)
    drifted = any(c.stats[k].max_abs_err > 0 for k in DRIFT_KINDS + ("final value",))   # (within tolerance)
    if not trained and not drifted:
        return ("the plain run differs only in shown numbers while its training agreed bit for bit, which "
                "drift cannot explain", True)
    why = not_runnable(result)
    return (why, True) if why else None


def not_runnable(result) -> str | None:
    """Shapes of program lockstep cannot follow, as the plain run saw them (None: it can try)."""
    c = result.comparison
    if c is None or not c.steps:
        return "no training step was compared"
    if "timeout" in (result.original.status, result.migrated.status):
        return "the plain run timed out (a second run would too)"
    functions = result.functions or {}
    if not functions.get("graph_calls", 0) + functions.get("eager_calls", 0):
        return ("the migration trains outside any tf.function, and lockstep starts each step from the original's "
                "state before the step's function is called")
    if c.stats["applied update"].compared == 0:
        return "no update went through an optimizer on both sides (lockstep hands it the original's gradients)"
    return None


def _short(d) -> str:
    where = f"step {d.step}, " if d.step is not None else ""
    what = d.quantity + (f" of {d.name}" if d.name and d.quantity in ("gradient", "applied update", "final value",
                                                                       STEP_CHANGE) else "")
    return where + what + (f", rel error {d.rel_err:.3g}" if d.rel_err is not None else "")


def drift(comparison) -> dict:
    """What diverged in the plain run: steps past tolerance, largest error, first divergence."""
    steps = sorted({d.step for d in comparison.divergences if d.quantity in DRIFT_KINDS and d.step})
    finals = sorted({d.name for d in comparison.divergences if d.quantity == "final value"})
    shown = [d for d in comparison.divergences if d.quantity in SHOWN_NUMBERS]
    worst = max((d.rel_err for d in comparison.divergences if d.rel_err is not None and math.isfinite(d.rel_err)),
                default=0.0)
    first = comparison.first
    return {"steps_drifted": len(steps), "steps": comparison.steps, "final_values_drifted": len(finals),
            "shown_numbers_drifted": len(shown),
            "largest_rel_error": worst, "first": _short(first) if first else ""}


def record_changes(cmp: cmp_mod.Comparison, events: list) -> None:
    """The migrated side's `step_change` events: each variable's and slot's change per step."""
    st = cmp.stats.setdefault(STEP_CHANGE, cmp_mod.KindStats())
    for e in events:
        if e["kind"] != "step_change":
            continue
        if e.get("left"):
            cmp.notes.append("lockstep: state of the original without a counterpart in the migration, not "
                             "compared: " + ", ".join(e["left"]))
        for name, c in e["results"].items():
            st.compared += 1
            st.elements += int(c.get("elements", 0))
            if c.get("max_abs_err") is not None and math.isfinite(c["max_abs_err"]):
                st.max_abs_err = max(st.max_abs_err, c["max_abs_err"])
                st.max_rel_err = max(st.max_rel_err, c["max_rel_err"])
                st.max_rel_beyond_atol = max(st.max_rel_beyond_atol, c.get("rel_beyond_atol") or 0.0)
            if c["ok"]:
                continue
            st.diverged += 1
            d = cmp_mod.Divergence(STEP_CHANGE, e["step"], name, c.get("original"), c.get("migrated"),
                                   c.get("abs_err"), c.get("rel_err"), c.get("index"), c.get("reason", ""),
                                   (e["seq"], 1))
            if c.get("max_index") != c.get("index") and c.get("max_abs_err") is not None:
                d.largest = {"abs_err": c["max_abs_err"], "rel_err": c["max_rel_err"], "index": c["max_index"],
                             "within_tolerance": c.get("max_ok", False)}
            cmp.divergences.append(d)


def agreement(cmp: cmp_mod.Comparison) -> tuple[float, float]:
    """The largest relative error beyond atol, and the largest absolute error, of a lockstep comparison."""
    stats = [s for s in cmp.stats.values() if s.compared]
    return (max((s.max_rel_beyond_atol for s in stats), default=0.0),
            max((s.max_abs_err for s in stats), default=0.0))


# -- the second run --------------------------------------------------------------------

def after_plain_run(result, mode: str, sides_again) -> None:
    """Run the pair again in lockstep when the plain run diverged only by drift ("auto"), or
    whenever lockstep can follow the program ("always"; a plain divergence it cannot clear
    stays DIVERGED); "off": never. `sides_again(trace_dir, more_env)`: both programs run once
    more (side_runs.sides_again), their (sides, events, stdout heads, plot snapshots) by role."""
    if mode == "off" or result.verdict not in ("EQUIVALENT", "DIVERGED"):
        return
    why = not_eligible(result) if result.verdict == "DIVERGED" else None
    if mode == "auto" and (why is not None or result.verdict == "EQUIVALENT"):
        if why is not None:
            result.lockstep = LockstepResult("not tried", why[0])
            if why[1]:
                result.reason += f"; not retried in lockstep: {why[0]}"
        return
    runnable = not_runnable(result)
    if runnable is not None:   # ("always": a program lockstep cannot follow)
        if result.verdict == "DIVERGED":
            result.lockstep = LockstepResult("not tried", runnable)
        return
    t0 = time.monotonic()
    outcome = run(result, sides_again)
    outcome.drift = drift(result.comparison)
    outcome.elapsed = time.monotonic() - t0
    if why is not None:   # a plain divergence lockstep cannot clear: recorded, the verdict stays
        result.lockstep = outcome
        return
    conclude(result, outcome)


def run(result, sides_again) -> LockstepResult:
    """Both programs again, in lockstep, with the plain run's step budget and timeout."""
    rtol, atol = result.rtol, result.atol
    trace_dir = stopping.temp_dir("tf1gradfix-lockstep-")
    files.folder(trace_dir)
    both = {files.ENV: "1"}
    more_env = {"original": both,
                "migrated": {**both, files.TOLERANCES_ENV: f"{rtol!r} {atol!r}", graph_calls.EAGER_ENV: "1"}}
    try:
        sides, ev, out, plots = sides_again(trace_dir, more_env)
        forged = trace_seal.tampered(ev, {})
        if forged:
            return LockstepResult("failed", forged)
        refused = [e for r in ("original", "migrated") for e in ev[r] if e["kind"] == "lockstep"]
        if refused:
            return LockstepResult("refused", f"{refused[0]['reason']} ({refused[0]['side']})")
        failed = [s for s in sides.values() if s.failed]
        if failed:
            return LockstepResult("failed", f"the {failed[0].role} {failed[0].reason}")
        stopped = {r for r in sides if budget.ended_at_cut(ev[r])}
        cmp = cmp_mod.Comparison()
        compare_events.compare_events(cmp, ev["original"], ev["migrated"], rtol, atol, rc.decode_array, stopped)
        record_changes(cmp, ev["migrated"])
        compare_output.compare_printed(cmp, out["original"], out["migrated"], rtol, atol, stopped)
        compare_output.compare_plots(cmp, plots["original"], plots["migrated"], rtol, atol, rc.decode_array, stopped)
        summary_values.compare(cmp, ev["original"], ev["migrated"], rtol, atol, stopped)
        if not cmp.stats[STEP_CHANGE].compared:
            return LockstepResult("failed", "no step's change was compared", cmp)
        return LockstepResult("diverged" if cmp.divergences else "agreed", "", cmp)
    finally:
        trace_seal.hide(trace_dir, False)
        shutil.rmtree(trace_dir, ignore_errors=True)
        stopping.forget(trace_dir)


def conclude(result, outcome: LockstepResult) -> None:
    """The verdict given the lockstep run: its divergence is DIVERGED; its agreement clears a
    plain run that drifted; a refused or failed lockstep run leaves the plain verdict."""
    result.lockstep = outcome
    plain, cmp = outcome.drift, outcome.comparison
    if outcome.status == "diverged" and cmp is not None and cmp.first is not None:
        result.verdict = "DIVERGED"
        result.reason = (f"lockstep: {cmp.first.describe()}, from the original's state at that "
                         "step" + (f"; the plain run first diverged at {plain['first']}" if plain["first"] else
                                   "; the plain run agreed"))
    elif outcome.status == "agreed" and cmp is not None:
        rel, abs_ = agreement(cmp)
        compared = sum(s.compared for s in cmp.stats.values())
        closest = f"{rel:.2g} relative beyond atol, " if rel else ""
        agrees = (f"every step agrees from the same state (largest error {closest}{abs_:.2g} absolute; {compared} "
                  f"quantities within rtol={result.rtol:g}, atol={result.atol:g})")
        if result.verdict == "EQUIVALENT":
            result.reason += f"; lockstep: {agrees}"
            return
        drifted = _drifted(plain)
        result.verdict = "EQUIVALENT"
        result.reason = (f"lockstep: {drifted} drifted past tolerance in the plain run, largest drift "
                         f"{plain['largest_rel_error']:.2g} relative (first: {plain['first']}); {agrees}")
    elif result.verdict == "DIVERGED":
        result.reason += f"; lockstep {'not possible' if outcome.status == 'refused' else 'run failed'}: {outcome.reason}"


def _drifted(plain: dict) -> str:
    """What drifted in the plain run, in words: "4 of 100 steps and 1 final value"."""
    counts = [(plain["steps_drifted"], f" of {plain['steps']} steps"),
              (plain["final_values_drifted"], " final value"),
              (plain.get("shown_numbers_drifted", 0), " printed or plotted number")]
    parts = [f"{n}{what}" + ("s" if n > 1 and not what.endswith("steps") else "") for n, what in counts if n]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


def proved_by(result) -> str:
    """Which comparison decided the verdict: "lockstep" or "plain"."""
    outcome = getattr(result, "lockstep", None)
    return "lockstep" if outcome is not None and outcome.status in ("agreed", "diverged") else "plain"
