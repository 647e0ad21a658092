"""Run the original and the migrated program side by side and decide.

User code never runs in this process: each side is a process of its own
(old side with TF1 semantics, new side plain TF2; the Keras flavour is chosen
by an environment variable read at TensorFlow import, so they cannot share
one interpreter), started and watched by side_runs.py. Here: the pair's
result, and the verdict drawn from what both sides left (a lockstep run,
lockstep.py, when the plain run diverged only by drift).
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from tf1gradfix.verify import budget
from tf1gradfix.verify import compare as cmp_mod
from tf1gradfix.verify import lockstep, lockstep_files, original_runs, output_cap, side_runs, trace_cap, trace_seal
from tf1gradfix.verify import aligned_random, initial_values, random_ops, stopping, usage_errors
from tf1gradfix.verify.comparison import DEFAULT_ATOL, DEFAULT_RTOL, Comparison
from tf1gradfix.verify.side_runs import SideResult

EQUIVALENT, DIVERGED = "EQUIVALENT", "DIVERGED"
ORIGINAL_FAILED, MIGRATED_FAILED, NOT_COMPARABLE = "ORIGINAL_FAILED", "MIGRATED_FAILED", "NOT_COMPARABLE"
EXIT_CODES = {EQUIVALENT: 0, DIVERGED: 1, ORIGINAL_FAILED: 2, MIGRATED_FAILED: 2, NOT_COMPARABLE: 2}
DEFAULT_TIMEOUT = 300.0
@dataclass
class VerifyResult:
    verdict: str
    reason: str
    original: SideResult
    migrated: SideResult
    comparison: Comparison | None = None
    mapping: list = field(default_factory=list)       # {original, migrated, shape, trainable, matched_by}
    unmatched: list = field(default_factory=list)     # migrated variables without an original
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    timeout: float = DEFAULT_TIMEOUT
    elapsed: float = 0.0
    random_numbers: dict = field(default_factory=dict)   # role -> {"ops", "draws"} drawn aligned
    functions: dict = field(default_factory=dict)   # the migration's tf.function calls run as graphs / eagerly
    legacy: list = field(default_factory=list)   # the original's legacy training bugs, with what its run showed
    lockstep: lockstep.LockstepResult | None = None  # the second, lockstep run (lockstep.py), when one was made
    budget: dict | None = None      # the --steps cut (budget.of_run); None when the programs ran whole
    trace_cap: dict | None = None   # role -> {steps, cap, why} of a side whose recording stopped (trace_cap.py)
    original_rerun: original_runs.Rerun | None = None   # the original run again after a divergence

    @property
    def headline(self) -> str:
        return budget.headline(self.verdict, self.budget)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def first_divergence(self):
        return self.comparison.first if self.comparison else None

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict, "reason": self.reason, "exit_code": self.exit_code,
            "tolerances": {"rtol": self.rtol, "atol": self.atol}, "timeout": self.timeout,
            "elapsed_seconds": round(self.elapsed, 3),
            "original": asdict(self.original), "migrated": asdict(self.migrated),
            "variable_mapping": self.mapping, "unmatched_variables": self.unmatched,
            "comparison": self.comparison.to_json() if self.comparison else None,
            "random_numbers": self.random_numbers, "functions": self.functions,
            "proved_by": lockstep.proved_by(self),
            "lockstep": self.lockstep.to_json() if self.lockstep else None,
            "budget": self.budget, "headline": self.headline, "trace_cap": self.trace_cap,
            "legacy_training_bugs": self.legacy,
            "original_rerun": self.original_rerun.to_json() if self.original_rerun else None,
        }


# -- verdict ------------------------------------------------------------------------

@stopping.guarded
def verify_pair(original: Path, migrated: Path, *, rtol: float = DEFAULT_RTOL,
                atol: float = DEFAULT_ATOL, timeout: float = DEFAULT_TIMEOUT,
                keep_trace: Path | None = None, steps: int | None = None, program_args=(),
                swap: dict | None = None, lockstep_mode: str = "auto",
                original_swap: dict | None = None, rerun_original: str = "auto") -> VerifyResult:
    """Run both programs concurrently, compare their traces, return the verdict.

    ``steps``: stop both after that many training steps (budget.py);
    ``program_args``: the sys.argv[1:] both programs get;
    ``swap``: a project's migrated modules (file name -> bytes), which the migrated
    program imports in place of those of its folder;
    ``original_swap``: the same for the original program (its modules at a base commit);
    ``lockstep_mode``: "auto" runs the pair again in lockstep when the plain run
    diverged only by drift (lockstep.py), "off" never, "always" whenever it can;
    ``rerun_original``: "auto" runs the original again after a divergence, to tell its own
    run-to-run differences from the migration's (original_runs.py), "off" never.
    """
    check_limits(rtol, atol, timeout)
    if lockstep_mode not in lockstep.MODES:
        raise ValueError(f"lockstep must be one of {', '.join(lockstep.MODES)}, not {lockstep_mode!r}")
    if rerun_original not in original_runs.MODES:
        raise ValueError(f"rerun_original must be one of {', '.join(original_runs.MODES)}, not {rerun_original!r}")
    original, migrated = Path(original).resolve(), Path(migrated).resolve()
    t0 = time.monotonic()
    common = dict(rtol=rtol, atol=atol, timeout=timeout)
    for role, path in (("original", original), ("migrated", migrated)):
        if not path.is_file():
            o, m = SideResult("original", str(original)), SideResult("migrated", str(migrated))
            verdict = ORIGINAL_FAILED if role == "original" else MIGRATED_FAILED
            return VerifyResult(verdict, f"{role} program not found: {path}", o, m, **common)
    if budget.tensorflow_missing():   # an environment error, not a failure of either program
        o, m = SideResult("original", str(original)), SideResult("migrated", str(migrated))
        return VerifyResult(NOT_COMPARABLE, budget.missing_reason(), o, m, **common)
    trace_dir = stopping.temp_dir("tf1gradfix-verify-")
    try:
        sides, timed_out, killed = side_runs.run_both(original, migrated, trace_dir, timeout, steps, program_args, swap,
                                             original_swap=original_swap)
        ev = {r: side_runs.load_events(trace_dir, r) for r in sides}
        for role, side in sides.items():
            side_runs.side_status(side, ev[role], role in timed_out, killed.get(role), timeout)
        result = VerifyResult("", "", sides["original"], sides["migrated"], **common)
        result.mapping = [{**{k: e[k] for k in ("original", "migrated", "shape", "trainable")},
                           "matched_by": e.get("matched_by", "name")}
                          for e in ev["migrated"] if e["kind"] == "mapped"]
        result.unmatched = [{k: e.get(k) for k in ("name", "shape", "trainable")}
                            for e in ev["migrated"] if e["kind"] in ("unmatched", "mismatch")]
        result.budget = budget.of_run(ev)
        _decide(result, trace_dir, ev, rtol, atol)
        result.legacy = _legacy_evidence(original, trace_dir, ev["original"])
        lockstep.after_plain_run(result, lockstep_mode, partial(side_runs.sides_again, original, migrated, timeout, steps,
                                                                program_args, swap, original_swap=original_swap))
        original_runs.after_divergence(result, rerun_original, trace_dir, ev["original"],
                                       partial(side_runs.original_again, original, timeout, steps, program_args,
                                               original_swap))
        usage_errors.explain(result)
        past_cap = output_cap.uncompared(trace_dir) if result.verdict == EQUIVALENT else None
        if past_cap:
            result.verdict, result.reason = NOT_COMPARABLE, past_cap
        _past_trace_cap(result, ev)
        budget.after_verdict(result, original, migrated)
        if keep_trace is not None:
            _keep(trace_dir, Path(keep_trace), ev)
    finally:
        trace_seal.hide(trace_dir, False)
        shutil.rmtree(trace_dir, ignore_errors=True)
        stopping.forget(trace_dir)
    result.elapsed = time.monotonic() - t0
    return result


def _past_trace_cap(result: VerifyResult, ev: dict) -> None:
    """A side whose recording stopped (trace_cap.py) leaves steps uncompared: an agreeing
    pair is NOT_COMPARABLE, any other verdict says where the trace stopped."""
    cut_short = trace_cap.uncompared(ev, result.comparison.steps if result.comparison else None)
    if cut_short is None:
        return
    result.trace_cap = {role: {k: mark[k] for k in ("steps", "cap", "why")}
                        for role, mark in ((r, trace_cap.marker(e)) for r, e in ev.items()) if mark is not None}
    if result.verdict == EQUIVALENT:
        result.verdict, result.reason = NOT_COMPARABLE, f"{result.reason}, but {cut_short}"
    else:
        result.reason += f"; {cut_short}"


def _keep(trace_dir: str, keep: Path, ev: dict) -> None:
    """The trace as plain files (`--keep-trace`): the shared folder's, each side's checked events
    as JSON lines, its final values and plots, its output."""
    keep.mkdir(parents=True, exist_ok=True)
    for entry in Path(trace_dir).iterdir():
        if entry.is_file():
            shutil.copy2(entry, keep / entry.name)
        elif entry.name == lockstep_files.FOLDER:
            shutil.copytree(entry, keep / entry.name, dirs_exist_ok=True)
    for role in ("original", "migrated"):
        (keep / f"{role}.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev[role]))
        for name in ("final.json", "plots.json"):
            value = trace_seal.load_json(trace_dir, role, name)
            if value is not None:
                (keep / f"{role}.{name}").write_text(json.dumps(value))
        for stream in ("stdout", "stderr"):
            with contextlib.suppress(OSError):
                shutil.copy2(trace_seal.side_file(trace_dir, role, stream), keep / f"{role}.{stream}")


def _legacy_evidence(original: Path, trace_dir: str, events: list) -> list[str]:
    """The original's legacy training bugs (TFG8xx) with the numbers its run showed; what
    cannot be read says nothing (it never costs the verdict)."""
    from tf1gradfix.legacy import evidence

    try:
        return evidence.measured(original, trace_dir, events)
    except Exception:  # noqa: BLE001 - evidence is a note, the verdict stands without it
        return []


def check_limits(rtol: float, atol: float, timeout: float) -> None:
    """A NaN tolerance makes every comparison pass, so it (and any other
    meaningless limit) is refused rather than turned into a verdict."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0 and not math.isnan(timeout)):
        raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")


def _mismatch_text(e: dict) -> str:
    shapes = f"shape {e['migrated_shape']}" if e["migrated_shape"] != e["original_shape"] else ""
    odt, mdt = e.get("original_dtype"), e.get("migrated_dtype")
    dtypes = f"dtype {mdt}" if odt != mdt else ""
    what = " and ".join(x for x in (shapes, dtypes) if x)
    was = " and ".join(x for x in (f"shape {e['original_shape']}" if shapes else "",
                                   f"dtype {odt}" if dtypes else "") if x)
    return f"variable {e['name']} has {what} in the migrated program but {was} in the original {e['original']}"


def _random_reason(randoms: dict) -> str:
    """Why a pair in which TensorFlow random ops ran is not compared (rule: random_ops.py)."""
    parts = [random_ops.describe(randoms[r], r) for r in ("original", "migrated") if randoms[r]]
    for role in ("original", "migrated"):
        if not randoms[role]:
            parts.append(f"the {role} program ran none")
    return ("TensorFlow random ops ran after initialization whose numbers the verifier does not align, "
            "and a TF1 graph and TF2 eager code draw different numbers from them: " + "; ".join(parts)
            + ". Compared values are reported but prove nothing; verify without that op (TOLERANCES.md "
              "lists the ops whose numbers are aligned) to compare")


def _decide(result: VerifyResult, trace_dir: str, ev: dict, rtol: float, atol: float) -> None:
    o, m = result.original, result.migrated
    same_exit = o.status == m.status == "exited" and o.exit_code == m.exit_code
    if same_exit:   # a shared non-zero status is behaviour to compare, not a failure of either side
        o.status = m.status = "ok"
    after_cut = budget.failed_after_cut(o, m, ev, result.budget)
    _decide_run(result, trace_dir, ev, rtol, atol)
    result.reason += after_cut if result.verdict != EQUIVALENT else ""
    if same_exit:
        result.reason += f"; both programs exited with status {o.exit_code}"


def _decide_run(result: VerifyResult, trace_dir: str, ev: dict, rtol: float, atol: float) -> None:
    o, m = result.original, result.migrated
    sealed = {role: {name: trace_seal.load_json(trace_dir, role, name) for name in ("final.json", "plots.json")}
              for role in ("original", "migrated")}
    forged = trace_seal.tampered(ev, sealed)
    if forged:   # (before anything is read from it)
        result.verdict, result.reason = NOT_COMPARABLE, forged
        return
    result.random_numbers = {role: aligned_random.tally(ev[role]) for role in ("original", "migrated")}
    result.functions = next(({k: v for k, v in e.items() if k not in ("kind", "seq")}
                             for e in reversed(ev["migrated"]) if e["kind"] == "functions"), {})
    timed = budget.timed_roles(o, m, ev)   # a timeout keeps what was compared up to it
    if o.failed and "original" not in timed:
        result.verdict, result.reason = ORIGINAL_FAILED, f"original {o.reason}"
        return
    mismatched = [e for e in ev["migrated"] if e["kind"] == "mismatch"]
    if mismatched:  # the root cause even when the migration then crashes on it
        result.verdict = NOT_COMPARABLE
        result.reason = ("; ".join(_mismatch_text(e) for e in mismatched[:5])
                         + (f" (the migrated program then {m.reason})" if m.failed else ""))
        return
    if m.failed and "migrated" not in timed:
        result.verdict, result.reason = MIGRATED_FAILED, f"migrated {m.reason}"
        return
    unmatched = [e for e in ev["migrated"] if e["kind"] == "unmatched" and e.get("trainable")]
    if unmatched:
        names = ", ".join(f"{e['name']} {e['shape']}" for e in unmatched)
        result.verdict = NOT_COMPARABLE
        result.reason = (f"trainable variable(s) of the migrated program without a counterpart in the "
                         f"original (by name, scope or layer order): {names}; they would start from "
                         f"different values")
        return
    finals = {role: sealed[role]["final.json"] for role in ("original", "migrated")}
    traces = {role: side_runs.trace_of(trace_dir, role, ev[role], sealed[role]) for role in ("original", "migrated")}
    stopped, stop_notes = budget.prepare(traces, finals, ev, timed)
    comparison = cmp_mod.compare_traces(traces["original"], traces["migrated"], rtol, atol, stopped=stopped)
    comparison.notes += stop_notes
    initial_values.into(comparison, ev["migrated"])
    result.comparison = comparison
    for role in ("original", "migrated"):
        texts = list(dict.fromkeys(e["text"] for e in ev[role] if e["kind"] == "note"))
        comparison.notes += [f"{role}: {t}" for t in texts[:10]]
    if any(e["kind"] == "init" and e.get("partial") for e in ev["original"]):
        comparison.notes.append("original: not every variable was initialized when the first gradient "
                                "ran; only the initialized ones were passed on")
    compared = sum(s.compared for s in comparison.stats.values())
    randoms = {role: [e for e in ev[role] if e["kind"] == "random"] for role in ("original", "migrated")}
    if randoms["original"] or randoms["migrated"]:
        result.verdict, result.reason = NOT_COMPARABLE, _random_reason(randoms)
        return
    if comparison.divergences:
        result.verdict, result.reason = DIVERGED, comparison.first.describe()
    elif timed:
        result.verdict = MIGRATED_FAILED if timed == ["migrated"] else NOT_COMPARABLE
        result.reason = budget.timeout_reason(timed, o, m, comparison.steps if compared else 0)
    elif compared == 0:
        result.verdict = NOT_COMPARABLE
        result.reason = "nothing to compare: no gradients, variables, printed output or plots on both sides"
    else:
        result.verdict, result.reason = EQUIVALENT, f"{compared} quantities agree within rtol={rtol:g}, atol={atol:g}"
        result.reason += budget.cut_reason(result.budget)
