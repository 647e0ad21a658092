"""How much of a side's events trace is recorded, and what a verdict says past it.

A long program traces every step's gradients and updates; at 100,000 steps
of 784x64 weights that is tens of GB, which fills the temporary folder and
the verifier's memory (it reads both traces whole). So a side's recorder
stops at CAP bytes of `<side>.events.jsonl` (or when the disk is full): it
writes one `trace_cap` event with the step reached, records nothing more,
and the side ends at its next step (the budget's way, runner_common.stop_here).
Both sides are then compared on the steps both recorded; a pair that agrees
there is NOT_COMPARABLE, never EQUIVALENT, and the reason says where each
side stopped and what was not compared. `--steps` compares a cut instead.
"""

from __future__ import annotations

import os

CAP = 2 * 1024 * 1024 * 1024   # bytes of events one side may record (the verifier reads both whole):
#   100 steps of an RNN classifier with a 10,000-word embedding came to 1.2 GB a side, and was proven
#   whole before the cap existed; 512 MiB cut it at step 44
RESERVE = 64 * 1024         # kept under CAP for the marker, the final notes and the end event
CAP_ENV = "TF1GRADFIX_TRACE_CAP"   # (tests) a smaller cap in bytes, read by the runner before the program
MARKER = "trace_cap"
DISK_FULL_EXIT = 74         # a runner that could not even write its marker exits with this (EX_IOERR)
# kinds still written once recording stopped (small, once or twice a run): the end, and the run's
# summaries the verdict reads (its tf.function calls decide whether lockstep can retry, the budget's cuts
# what ran after a loop, the aligned random ops what was drawn)
AFTER_CUT = ("end", "error", MARKER, "functions", "cut", "aligned", "lockstep")


def limit(get=os.environ.get) -> int:
    """The cap in bytes: CAP, or CAP_ENV's value when it is a positive number."""
    value = get(CAP_ENV, "") or ""
    return int(value) if value.isdigit() and int(value) > 0 else CAP


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB" if size >= 1 << 20 else f"{size:,} bytes"


def marker(events: list) -> dict | None:
    """The side's `trace_cap` event, or None when its whole run was recorded."""
    return next((e for e in events if e["kind"] == MARKER), None)


def _why(mark: dict) -> str:
    if mark.get("why") == "cap":
        return f"reached the {_mib(mark['cap'])} cap"
    return f"could not be written further ({mark.get('why')})"


def stopped(ev: dict) -> set:
    """The sides whose recording stopped before their program ended."""
    return {role for role, events in ev.items() if marker(events) is not None}


def uncompared(ev: dict, compared_steps: int | None = None) -> str | None:
    """Why the pair is not compared past some step: where each capped side stopped, else None.
    `compared_steps`: the steps the comparison paired."""
    cut = {role: mark for role, mark in ((r, marker(e)) for r, e in ev.items()) if mark is not None}
    if not cut:
        return None
    said = {(_why(mark), mark["steps"]) for mark in cut.values()}
    if len(cut) == 2 and len(said) == 1:
        why, steps = said.pop()
        where = f"both sides' events traces {why} at training step {steps}"
    else:
        where = "; ".join(f"the {role}'s events trace {_why(mark)} at training step {mark['steps']}"
                          for role, mark in cut.items())
    first = min(mark["steps"] for mark in cut.values())
    compared = f"{compared_steps} steps" if compared_steps is not None else "the steps"
    return (f"{where}, where the recorder stopped and the side was ended at its next step; compared: {compared} "
            f"both sides recorded; not compared: every later step and the rest of each program (pass --steps "
            f"{max(first - 1, 1)} to compare a cut)")


def disk_full_reason(returncode) -> str | None:
    """The reason of a side whose runner stopped because its trace could not be written at all."""
    if returncode != DISK_FULL_EXIT:
        return None
    return (f"was stopped: its events trace could not be written (disk full) and the verifier could not "
            f"record that it stopped (exit code {DISK_FULL_EXIT})")
