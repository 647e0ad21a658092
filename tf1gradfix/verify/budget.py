"""Step budget, per-side working folders and pre-run checks of `verify`.

A step budget (``--steps N``) stops both programs at the same point of
their training so a long program is compared on its first N steps instead
of timing out.  Both runners count with :class:`StepCounter`, so a "step"
means the same on both sides:

* a training unit is a ``Session.run`` (original) or an outermost
  ``tf.function`` call (migrated) that computes traced gradients or applies
  traced updates; outside any ``tf.function`` (plain eager loops) a new step
  begins with a gradient computation that follows an update, or whose loss
  differs from the previous one (two gradient calls of the same loss are one
  step, as the comparison merges them);
* a program that never trains counts runs (original, not counting the runs
  that initialize variables) and ``tf.function`` calls (migrated).

A side stops right before its step N+1 would begin (nothing of it has run),
records its variables and ends; a program with at most N steps runs whole.
Nothing here imports TensorFlow.
"""

from __future__ import annotations

import os
import re
import shutil

from tf1gradfix.verify import settings, trace_cap

STEPS_ENV = "TF1GRADFIX_STEPS"
DEFAULT_REWRITE_STEPS = 100     # rewrite --verify; reasoning in TOLERANCES.md
COPY_FILE_LIMIT = 1 << 20       # files up to 1 MiB are copied into a side's folder, bigger ones linked
COPY_ENTRY_LIMIT = 1000         # entries mirrored; past that, whole subfolders are linked
TF_MISSING = "TensorFlow is not installed here"
HOOK_DEPENDENCIES = 'additional_dependencies: ["tensorflow-cpu==2.21.*", "tf-keras==2.21.*"]'


def install_advice() -> str:
    """How to get the verifier where this run is: a pre-commit hook's environment is
    pre-commit's to make (it sets PRE_COMMIT=1), so `pip install` there would not last."""
    import os

    if os.environ.get("PRE_COMMIT") == "1":
        return f"add `{HOOK_DEPENDENCIES}` to this hook in .pre-commit-config.yaml"
    return "pip install 'tf1gradfix[verify]'"


def missing_reason() -> str:
    """Why nothing was proven here, with the advice that fits where the run is."""
    return f"{TF_MISSING}: {install_advice()}"


class StepCounter:
    """Training steps and calls of one side, and whether the budget is spent."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.steps = 0          # training steps begun
        self.calls = 0          # runs / calls completed (used only while nothing trained)
        self.last = None        # (kind, loss) of the previous traced event outside a unit
        self.capped = False     # the events trace reached its cap (trace_cap.py): stop at the next unit

    def due(self, training: bool) -> bool:
        """Must the side stop before a unit that trains (or not) begins?"""
        if self.capped:
            return True
        if self.limit is None:
            return False
        if self.steps:
            return training and self.steps >= self.limit
        return self.calls >= self.limit

    def begins(self, kind: str, loss=None) -> bool:
        """Does a traced event outside any unit begin a new step?"""
        prev, self.last = self.last, (kind, loss)
        if kind == "compute":
            return prev is None or prev[0] == "apply" or not _same(prev[1], loss)
        return prev is None or (prev[0] == "apply" and self.steps == 0)


def _same(a, b) -> bool:
    return a == b or (a != a and b != b)


def limit_from_env() -> int | None:
    value = settings.get(STEPS_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


# -- the verdict of a stopped run ------------------------------------------------

def stopped_at(events: list) -> int | None:
    """The step count at which a side was cut by the budget, or None."""
    cut = next((e for e in reversed(events) if e["kind"] == "cut"), None)
    return None if cut is None else cut["steps"]


def ended_at_cut(events: list) -> bool:
    """Did the budget end this side at once (a run outside every loop), not just its loop?"""
    cut = next((e for e in reversed(events) if e["kind"] == "cut"), None)
    return cut is not None and "loop" not in cut


def waited_for_original(events: list) -> bool:
    """A migrated side that never got the original's initial values was blocked by it."""
    return any(e["kind"] == "start" for e in events) and not any(e["kind"] == "init_wait" for e in events)


def timeout_reason(timed_out: list, o, m, agreed: int) -> str:
    """Who was still running at the timeout, and what was compared up to there."""
    if len(timed_out) == 2:
        text = f"both timed out after {o.reason.rpartition(' after ')[2]}"
    else:
        side, other = (o, m) if timed_out == ["original"] else (m, o)
        text = f"{side.role} {side.reason}"
        if other.status == "ok" and agreed and other.elapsed > 0:
            text += f" (the {other.role} finished in {other.elapsed:.1f} s)"
    if agreed:
        text += (f"; the first {agreed} steps agreed (a timeout proves nothing about the rest: "
                 f"pass --steps to compare a cut)")
    return text


# -- a working folder per side ----------------------------------------------------

def side_folder(source: str, dest: str) -> str:
    """A view of ``source`` in ``dest``: relative reads see its files, writes stay in ``dest``.

    Small files are copied (a program may append to its own log); big files
    are symlinked (data sets are read, and copying them would cost more than
    the run); past COPY_ENTRY_LIMIT entries, or for .git, whole folders are
    symlinked.  The user's folder is never written to.
    """
    os.makedirs(dest, exist_ok=True)
    budget = [COPY_ENTRY_LIMIT]
    _mirror(source, dest, budget)
    return dest


def _mirror(source: str, dest: str, budget: list) -> None:
    try:
        entries = sorted(os.scandir(source), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if ".tf1gradfix-candidate" in entry.name or ".tf1gradfix-base-" in entry.name or entry.name == "__pycache__":
            continue
        target = os.path.join(dest, entry.name)
        budget[0] -= 1
        try:
            if entry.is_dir(follow_symlinks=False) and budget[0] > 0 and entry.name != ".git":
                os.mkdir(target)
                _mirror(entry.path, target, budget)
            elif entry.is_file(follow_symlinks=False) and budget[0] > 0 \
                    and entry.stat().st_size <= COPY_FILE_LIMIT:
                shutil.copy2(entry.path, target)
            else:
                os.symlink(os.path.realpath(entry.path), target)
        except OSError:
            pass     # an unreadable entry is one the program could not use either


# -- checks before running --------------------------------------------------------

def tensorflow_missing() -> bool:
    """Without importing TensorFlow (seconds): is it importable by the runners?"""
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is None
    except (ImportError, ValueError):
        return True


_TF1_MARKS = re.compile(r"\b(Session|InteractiveSession|placeholder)\s*\(")


def looks_swapped(original: str, migrated: str) -> bool:
    """The "original" has no Session/placeholder and the "migrated" does.

    compat.v1 alone does not count: correct migrations keep v1 optimizers.
    """
    try:
        with open(original, encoding="utf-8", errors="replace") as fh:
            o_text = fh.read()
        with open(migrated, encoding="utf-8", errors="replace") as fh:
            m_text = fh.read()
    except OSError:
        return False
    return not _TF1_MARKS.search(o_text) and bool(_TF1_MARKS.search(m_text))


SWAPPED_HINT = ("the files look swapped: the original has no Session or placeholder and the "
                "migrated program has; pass the TF1 program first")


# -- runner side ---------------------------------------------------------------

def runner_args(argv: list[str]) -> tuple[str, str, str | None, list[str]]:
    """``TRACE_DIR SCRIPT [--cwd DIR] [-- ARGS...]`` of a runner subprocess."""
    import sys

    rest, args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    cwd = None
    if len(rest) == 4 and rest[2] == "--cwd":
        cwd, rest = rest[3], rest[:2]
    if len(rest) != 2:
        sys.stderr.write("usage: python -m tf1gradfix.verify.runner_vN TRACE_DIR SCRIPT [--cwd DIR] [-- ARGS...]\n")
        raise SystemExit(64)
    return rest[0], rest[1], cwd, args


def leave_now(trace) -> None:
    """The program's output flushed, an end event written, and the side ended at once
    (os._exit: nothing of the user's runs after, not even a finally block)."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    trace.event("end", status="ok", code=0)
    os._exit(0)


# -- parent side: what a stopped pair compares ------------------------------------

def timed_roles(o, m, ev: dict) -> list:
    """Sides still running at the timeout. Empty when the original hung before the
    migrated side got its initial values: then only the original is to blame."""
    timed = [s.role for s in (o, m) if s.status == "timeout"
             or (s.status == "killed" and o.status == "timeout")]
    if o.status == "timeout" and waited_for_original(ev["migrated"]):
        return []
    return timed


def prepare(traces: dict, finals: dict, ev: dict, timed: list) -> tuple[set, list]:
    """The sides that stopped early (cut or timeout), with finals kept only when
    both were taken at the same step; a killed side's torn last stdout line dropped."""
    stopped = set(timed) | {r for r in traces if ended_at_cut(ev[r])} | trace_cap.stopped(ev)
    notes = []
    loops = {r: [e["loop"] for e in ev[r] if e["kind"] == "cut" and "loop" in e] for r in traces}
    if loops["original"] or loops["migrated"]:
        lines = {r: ", ".join(str(n) for n in dict.fromkeys(loops[r])) or "none" for r in traces}
        notes.append(f"the --steps budget ended the training loop (line {lines['original']} of the original, "
                     f"{lines['migrated']} of the migration); the rest of each program ran and was compared")
    for role in timed:
        text = traces[role]["stdout"]
        traces[role]["stdout"] = text[:text.rfind("\n") + 1]
    if not stopped:
        return stopped, notes
    steps = {r: (finals[r] or {}).get("steps") for r in traces}
    if any(traces[r]["final"] is None for r in traces) or steps["original"] != steps["migrated"]:
        for r in traces:
            traces[r]["final"] = None
        why = (f"the {' and the '.join(timed)} {'was' if len(timed) == 1 else 'were'} stopped at the timeout"
               if timed else f"the sides stopped at different steps (original {steps['original']}, "
                             f"migrated {steps['migrated']})")
        notes.append(f"final variable values not compared: {why}")
    else:
        notes.append(f"final variable values compared at the cut, after {steps['original']} steps")
    return stopped, notes


def cut_reason(about: dict | None) -> str:
    """Appended to an EQUIVALENT verdict when the budget cut a side (``about``: of_run's object)."""
    if about is None:
        return ""
    steps = about["steps_compared"]
    if about["ended_at_cut"]:
        return (f"; partial: the --steps budget ended the {' and the '.join(about['ended_at_cut'])} after "
                f"{steps} steps, outside any loop of its folder's code: what the program does after that was not run")
    if about.get("could_not_continue"):
        return (f"; partial: the --steps budget ended the training loop after {steps} steps, and the program "
                f"could not go on after it: both sides {about['could_not_continue']}; not compared: what the "
                f"program does after that (run it whole, without --steps, to compare it)")
    return (f"; partial: the --steps budget ended the training loop after {steps} steps; "
            f"the rest of the program ran and was compared")


def failed_after_cut(o, m, ev: dict, about: dict | None) -> str:
    """Both sides raised the same error after the budget ended their loop (a result indexed
    by the loop's full length): the cut, not the migration, stopped them. Both are then
    compared up to there; returns what the reason adds ("" when that is not the case)."""
    if about is None or not about["loop_cut"] or not (o.status == m.status == "failed") or o.reason != m.reason:
        return ""
    for role in ("original", "migrated"):
        kinds = [e["kind"] for e in ev[role] if e["kind"] in ("cut", "error")]
        if "error" not in kinds or "cut" not in kinds or kinds.index("cut") > kinds.index("error"):
            return ""
    o.status = m.status = "ok"
    about["could_not_continue"] = o.reason
    return f"; both sides {o.reason} after the --steps budget's cut (what follows was not compared)"


def of_run(ev: dict) -> dict | None:
    """The JSON report's ``budget`` object, or None when no side was cut:
    ``steps_compared`` (training steps both sides ran), ``loop_cut`` (the budget ended
    a loop and the program went on), ``ended_at_cut`` (sides ended at once, nothing
    after the cut run), ``partial`` (always true: the verdict covers those steps)."""
    roles = [r for r in ("original", "migrated") if r in ev]
    cuts = [stopped_at(ev[r]) for r in roles if stopped_at(ev[r]) is not None]
    if not cuts:
        return None
    return {"steps_compared": max(cuts), "partial": True,
            "loop_cut": any(e["kind"] == "cut" and "loop" in e for r in roles for e in ev[r]),
            "ended_at_cut": [r for r in roles if ended_at_cut(ev[r])]}


def headline(verdict: str, about: dict | None) -> str:
    """The verdict as shown: an EQUIVALENT under a budget says how far it goes."""
    if about and verdict == "EQUIVALENT":
        return f"EQUIVALENT within the first {about['steps_compared']} training steps"
    return verdict


def after_verdict(result, original, migrated) -> None:
    """Hints that need both files: swapped arguments; a rewrite candidate named as the user's file."""
    if result.verdict != "EQUIVALENT" and looks_swapped(str(original), str(migrated)):
        result.reason += f"; {SWAPPED_HINT}"
    name = os.path.basename(str(migrated))
    match = re.fullmatch(r"\.(.+)\.tf1gradfix-candidate(-\w*)?\.py", name)
    if match:
        shown = os.path.join(os.path.dirname(str(migrated)), f"{match.group(1)}.py (rewritten)")
        side = result.migrated
        side.stderr_tail = side.stderr_tail.replace(str(migrated), shown)
        result.reason = result.reason.replace(str(migrated), shown)
        side.reason = side.reason.replace(str(migrated), shown)
