"""Run the original and the migrated program side by side and decide.

User code never runs in this process: each side is a process of its own
(old side with TF1 semantics, new side plain TF2; the Keras flavour is chosen
by an environment variable read at TensorFlow import, so they cannot share
one interpreter), forked from a warm TensorFlow process of that side
(pool.py) or started afresh.  Both start at once, so the wall time is roughly that of the
slower side.  Output goes to temporary files, not pipes, so a chatty
program can never block on a full pipe; reads are capped.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from functools import partial
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tf1gradfix.verify import budget
from tf1gradfix.verify import compare as cmp_mod
from tf1gradfix.verify import lockstep, lockstep_files, output_cap, pool, progress
from tf1gradfix.verify import aligned_random, initial_values, random_ops, stopping, usage_errors
from tf1gradfix.verify.runner_common import ORIGINAL_DONE, VERIFIER_PID

EQUIVALENT, DIVERGED = "EQUIVALENT", "DIVERGED"
ORIGINAL_FAILED, MIGRATED_FAILED, NOT_COMPARABLE = "ORIGINAL_FAILED", "MIGRATED_FAILED", "NOT_COMPARABLE"
EXIT_CODES = {EQUIVALENT: 0, DIVERGED: 1, ORIGINAL_FAILED: 2, MIGRATED_FAILED: 2, NOT_COMPARABLE: 2}
DEFAULT_TIMEOUT = 300.0
STDOUT_CAP = output_cap.COMPARED   # bytes of stdout parsed for printed numbers
TAIL = 3000                    # characters of stderr kept for the report
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
RUNNERS = {"original": "tf1gradfix.verify.runner_v1", "migrated": "tf1gradfix.verify.runner_v2"}
# `python -m runner` would put the runner's working folder, the program's, first
# on sys.path, and a user's json.py there would replace the standard library's
# in the runner's own imports. The program gets its folder on sys.path only when
# it starts (runner_common.run_user_script), after the runner's imports.
_BOOT = ("import sys\n"
         "if not getattr(sys.flags, 'safe_path', False): del sys.path[0]\n"
         "import runpy\n"
         "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")


@dataclass
class SideResult:
    role: str                       # "original" or "migrated"
    script: str
    status: str = "not started"     # ok | failed | exited (non-zero status) | timeout | killed
    reason: str = ""
    returncode: int | None = None
    exit_code: int | None = None    # what the program itself exited with
    elapsed: float = 0.0
    stderr_tail: str = ""
    stdout_tail: str = ""

    @property
    def failed(self) -> bool:
        return self.status != "ok"


@dataclass
class VerifyResult:
    verdict: str
    reason: str
    original: SideResult
    migrated: SideResult
    comparison: cmp_mod.Comparison | None = None
    mapping: list = field(default_factory=list)       # {original, migrated, shape, trainable, matched_by}
    unmatched: list = field(default_factory=list)     # migrated variables without an original
    rtol: float = cmp_mod.DEFAULT_RTOL
    atol: float = cmp_mod.DEFAULT_ATOL
    timeout: float = DEFAULT_TIMEOUT
    elapsed: float = 0.0
    random_numbers: dict = field(default_factory=dict)   # role -> {"ops", "draws"} drawn aligned
    functions: dict = field(default_factory=dict)   # the migration's tf.function calls run as graphs / eagerly
    legacy: list = field(default_factory=list)   # the original's legacy training bugs, with what its run showed
    lockstep: lockstep.LockstepResult | None = None  # the second, lockstep run (lockstep.py), when one was made
    budget: dict | None = None      # the --steps cut (budget.of_run); None when the programs ran whole

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
            "budget": self.budget, "headline": self.headline,
            "legacy_training_bugs": self.legacy,
        }


# -- subprocesses ---------------------------------------------------------------

def _env(legacy_keras: bool, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env[VERIFIER_PID] = str(os.getpid())   # the runner dies with this process (runner_common)
    env["PYTHONUNBUFFERED"] = "1"
    env["TF1GRADFIX_INIT_WAIT"] = str(timeout)
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    if legacy_keras:
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    return env


def _start(module: str, script: Path, trace_dir: str, role: str, timeout: float, env_legacy: bool,
           extra=(), steps=None, more_env=None):
    """``extra``: the runner's --cwd and program arguments; ``steps``: the budget (budget.py);
    ``more_env``: variables of this run (a lockstep run's)."""
    env = _env(env_legacy, timeout)
    env[budget.STEPS_ENV] = str(steps or "")
    env.update(more_env or {})
    with stopping.deferred():   # a warm TensorFlow process forks it (pool.py), or a new one starts
        run = pool.start(env_legacy, [module, trace_dir, str(script), *extra], env, str(script.parent),
                         os.path.join(trace_dir, f"{role}.stdout"), os.path.join(trace_dir, f"{role}.stderr"))
        if run is not None:
            stopping.register(run)
            return run
    out = open(os.path.join(trace_dir, f"{role}.stdout"), "wb")
    err = open(os.path.join(trace_dir, f"{role}.stderr"), "wb")
    try:
        proc = stopping.popen(
            [sys.executable, "-c", _BOOT, module, trace_dir, str(script), *extra],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=str(script.parent),
            env=env, start_new_session=True)
    finally:
        out.close()
        err.close()
    return proc


def _kill(proc) -> None:
    """Kill the runner and anything it spawned: its process group (it leads its
    own session). Called before the runner is reaped, so its pid, the group's
    id, cannot have been reused."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
    stopping.reaped(proc)


def _exited(proc) -> bool:
    """Whether the runner has exited, without reaping it (see _kill)."""
    if proc.returncode is not None:
        return True
    if isinstance(proc, pool.PooledRun):   # (its zygote keeps it unreaped)
        return proc.exited()
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except (ChildProcessError, AttributeError):   # AttributeError: a system without waitid
        if proc.poll() is None:
            return False
        stopping.reaped(proc)
        return True


def _reap(procs) -> None:
    """A side is over when its runner exits: what the program forked goes with it."""
    for proc in procs.values():
        if proc.returncode is None and _exited(proc):
            _kill(proc)


def _read_tail(path: str, limit: int = TAIL) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_head(path: str, limit: int = STDOUT_CAP) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def load_events(path: str) -> list:
    """Events of one side; a torn last line (killed mid-write) is dropped."""
    events = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    break
    except OSError:
        pass
    return events


def _load_json(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def _exception_line(tb: str) -> str:
    """The line naming the exception. TensorFlow's messages carry the traceback of
    the op after them, and a chained error may only say "Graph execution error:",
    so: the last exception line that says more than a heading."""
    lines = [ln for ln in tb.strip().splitlines() if _EXCEPTION_LINE.match(ln)]
    telling = [ln for ln in lines if not ln.rstrip().endswith(":")]
    if telling:
        return telling[-1]
    return lines[-1] if lines else (tb.strip().splitlines()[-1] if tb.strip() else "exception")


def _side_status(side: SideResult, events: list, timed_out: bool, killed: tuple[str, str] | None,
                 timeout: float) -> None:
    """`killed`: (status, reason) of a side the verifier stopped, else None."""
    end = next((e for e in reversed(events) if e["kind"] == "end"), None)
    started = any(e["kind"] == "start" for e in events)
    rc = side.returncode
    if timed_out:
        side.status, side.reason = "timeout", f"timed out after {timeout:g} s"
    elif killed:
        side.status, side.reason = killed
    elif end is not None:
        # The process's own status is the truth: atexit handlers and threads
        # still run after the trace's end event and can change it.
        code = end.get("code")
        side.exit_code = rc if rc is not None and rc >= 0 else code
        if end["status"] == "error":
            error = next((e for e in reversed(events) if e["kind"] == "error"), {})
            summary = error.get("exception") or _exception_line(error.get("traceback", ""))
            side.status, side.reason = "failed", f"raised {summary}"
        elif rc is not None and rc < 0:
            side.status, side.reason = "failed", f"killed by signal {-rc} after its script ended"
        elif side.exit_code:
            how = "sys.exit" if side.exit_code == code else "set after the script ended: atexit or os._exit"
            side.status, side.reason = "exited", f"exited with status {side.exit_code} ({how})"
        else:
            side.status = "ok"
    elif not started:
        side.status, side.reason = "failed", f"the runner could not start the program (exit code {rc})"
    elif rc == 0:
        side.status, side.reason, side.exit_code = "ok", "left through os._exit(0)", 0
    elif rc is not None and rc < 0:
        side.status, side.reason = "failed", f"killed by signal {-rc}"
    else:
        side.status, side.reason = "failed", f"exited with code {rc} before finishing (os._exit or a crash)"


def _sides_again(original: Path, migrated: Path, timeout: float, steps, program_args, swap, trace_dir: str,
                 more_env: dict, original_swap=None) -> tuple[dict, dict, dict, dict]:
    """Both programs run once more into `trace_dir` (a lockstep run, lockstep.py, with
    `more_env`): (sides, events, stdout heads, plot snapshots), by role."""
    sides, timed_out, killed = _run_both(original, migrated, trace_dir, timeout, steps, program_args, swap, more_env,
                                         original_swap)
    events = {r: load_events(os.path.join(trace_dir, f"{r}.events.jsonl")) for r in sides}
    for role, side in sides.items():
        _side_status(side, events[role], role in timed_out, killed.get(role), timeout)
    out = {r: _read_head(os.path.join(trace_dir, f"{r}.stdout")) for r in sides}
    plots = {r: (_load_json(os.path.join(trace_dir, f"{r}.plots.json")) or {}).get("snapshots") for r in sides}
    return sides, events, out, plots


def _run_both(original: Path, migrated: Path, trace_dir: str, timeout: float, steps=None, program_args=(),
              swap=None, more_env=None, original_swap=None):
    sides = {"original": SideResult("original", str(original)),
             "migrated": SideResult("migrated", str(migrated))}
    work = stopping.temp_dir("tf1gradfix-cwd-")   # each side writes into its own view of its folder

    def extra(role, script):
        return ["--cwd", budget.side_folder(str(script.parent), os.path.join(work, role)), "--", *program_args]
    pool.prepare([(True, _env(True, timeout)), (False, _env(False, timeout))])
    migrated_args = extra("migrated", migrated)
    original_args = extra("original", original)
    if swap:   # a project: the migrated script runs in its view, which holds the migrated modules
        migrated = _swapped(migrated, migrated_args[1], swap)
    if original_swap:   # (verify --base: the original runs with its modules as they were)
        original = _swapped(original, original_args[1], original_swap)
    more_env = more_env or {}
    procs = {"original": _start(RUNNERS["original"], original, trace_dir, "original", timeout, True,
                                original_args, steps, more_env.get("original")),
             "migrated": _start(RUNNERS["migrated"], migrated, trace_dir, "migrated", timeout, False,
                                migrated_args, steps, more_env.get("migrated"))}
    start = time.monotonic()
    timed_out: set[str] = set()
    killed: dict[str, tuple[str, str]] = {}   # (role -> the status and reason of a side stopped by the verifier)
    try:
        _wait(procs, sides, start, timeout, trace_dir, timed_out, killed)
    except BaseException:
        # Ctrl-C or any error here: the runners lead their own sessions and
        # would not get the terminal's signal, so stop them explicitly.
        for proc in procs.values():
            _kill(proc)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
        stopping.forget(work)
    for role, proc in procs.items():
        side = sides[role]
        side.returncode = proc.returncode
        side.elapsed = side.elapsed or time.monotonic() - start
        side.stderr_tail = _read_tail(os.path.join(trace_dir, f"{role}.stderr"))
        side.stdout_tail = _read_tail(os.path.join(trace_dir, f"{role}.stdout"), 1000)
    return sides, timed_out, killed


def _swapped(script: Path, view: str, swap: dict) -> Path:
    """`script` copied into `view` (its side's view of its folder), with the modules of
    `swap` (file name -> bytes) in place of the folder's: the script's imports, whose
    folder comes first on `sys.path`, find those."""
    for name, data in {**swap, script.name: script.read_bytes()}.items():
        target = Path(view) / name
        target.unlink(missing_ok=True)   # (a big file of the view is a symlink to the user's)
        target.write_bytes(data)
    return Path(view) / script.name


_STOPPED = ("killed", "stopped because the original failed")


def _wait(procs, sides, start, timeout, trace_dir, timed_out, killed) -> None:
    """Poll both runners; enforce the timeout; stop the migration if the original failed.

    Runners are reaped only by _reap / _kill (``returncode`` is read, never
    ``poll()``), so each side's process group is killed the moment it ends."""
    shown = progress.Progress(trace_dir)
    try:
        _poll(procs, sides, start, timeout, trace_dir, timed_out, killed, shown)
    finally:
        shown.close()


def _poll(procs, sides, start, timeout, trace_dir, timed_out, killed, shown) -> None:
    while True:
        shown.tick()
        _reap(procs)
        if all(p.returncode is not None for p in procs.values()):
            break
        now = time.monotonic()
        for role, proc in procs.items():
            if proc.returncode is None and now - start > timeout:
                _kill(proc)
                timed_out.add(role)
            elif proc.returncode is not None and not sides[role].elapsed:
                sides[role].elapsed = now - start
        orig = procs["original"]
        if orig.returncode is not None and not os.path.exists(os.path.join(trace_dir, ORIGINAL_DONE)):
            # a migrated side waiting for variables of a later graph stops waiting
            open(os.path.join(trace_dir, ORIGINAL_DONE), "w").close()
        done = os.path.join(trace_dir, lockstep_files.FOLDER, lockstep_files.MIGRATED_DONE)
        if procs["migrated"].returncode is not None and os.path.isdir(os.path.dirname(done)) \
                and not os.path.exists(done):
            open(done, "w").close()   # an original in lockstep stops handing on its states
        if orig.returncode is not None and procs["migrated"].returncode is None and "original" not in timed_out:
            if _original_failed(trace_dir, orig.returncode):
                _kill(procs["migrated"])
                killed["migrated"] = _STOPPED
        if "original" in timed_out and procs["migrated"].returncode is None:
            _kill(procs["migrated"])
            killed["migrated"] = _STOPPED
        for role, proc in procs.items():
            flood = output_cap.flooded(trace_dir, role) if proc.returncode is None else None
            if flood:
                _kill(proc)
                killed[role] = ("failed", flood)
        time.sleep(0.02)


def _original_failed(trace_dir: str, returncode: int) -> bool:
    """Whether the migration can stop: the original raised or crashed. A plain
    non-zero exit status after a complete trace is not enough, since the
    migration may exit with the same status (then both are compared)."""
    events = load_events(os.path.join(trace_dir, "original.events.jsonl"))
    end = next((e for e in reversed(events) if e["kind"] == "end"), None)
    if end is None:
        return returncode != 0
    if end["status"] == "error" and budget.of_run({"original": events}) and budget.of_run({"original": events})["loop_cut"]:
        return False   # failed after the budget's cut: the migration may fail the same way (budget.failed_after_cut)
    return end["status"] == "error" or returncode < 0


# -- verdict ------------------------------------------------------------------------

@stopping.guarded
def verify_pair(original: Path, migrated: Path, *, rtol: float = cmp_mod.DEFAULT_RTOL,
                atol: float = cmp_mod.DEFAULT_ATOL, timeout: float = DEFAULT_TIMEOUT,
                keep_trace: Path | None = None, steps: int | None = None, program_args=(),
                swap: dict | None = None, lockstep_mode: str = "auto",
                original_swap: dict | None = None) -> VerifyResult:
    """Run both programs concurrently, compare their traces, return the verdict.

    ``steps``: stop both after that many training steps (budget.py);
    ``program_args``: the sys.argv[1:] both programs get;
    ``swap``: a project's migrated modules (file name -> bytes), which the migrated
    program imports in place of those of its folder;
    ``original_swap``: the same for the original program (its modules at a base commit);
    ``lockstep_mode``: "auto" runs the pair again in lockstep when the plain run
    diverged only by drift (lockstep.py), "off" never, "always" whenever it can.
    """
    check_limits(rtol, atol, timeout)
    if lockstep_mode not in lockstep.MODES:
        raise ValueError(f"lockstep must be one of {', '.join(lockstep.MODES)}, not {lockstep_mode!r}")
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
        return VerifyResult(NOT_COMPARABLE, budget.TF_MISSING, o, m, **common)
    trace_dir = stopping.temp_dir("tf1gradfix-verify-")
    try:
        sides, timed_out, killed = _run_both(original, migrated, trace_dir, timeout, steps, program_args, swap,
                                             original_swap=original_swap)
        ev = {r: load_events(os.path.join(trace_dir, f"{r}.events.jsonl")) for r in sides}
        for role, side in sides.items():
            _side_status(side, ev[role], role in timed_out, killed.get(role), timeout)
        result = VerifyResult("", "", sides["original"], sides["migrated"], **common)
        result.mapping = [{**{k: e[k] for k in ("original", "migrated", "shape", "trainable")},
                           "matched_by": e.get("matched_by", "name")}
                          for e in ev["migrated"] if e["kind"] == "mapped"]
        result.unmatched = [{k: e.get(k) for k in ("name", "shape", "trainable")}
                            for e in ev["migrated"] if e["kind"] in ("unmatched", "mismatch")]
        result.budget = budget.of_run(ev)
        _decide(result, trace_dir, ev, rtol, atol)
        result.legacy = _legacy_evidence(original, trace_dir, ev["original"])
        lockstep.after_plain_run(result, lockstep_mode, partial(_sides_again, original, migrated, timeout, steps,
                                                                program_args, swap, original_swap=original_swap))
        usage_errors.explain(result)
        past_cap = output_cap.uncompared(trace_dir) if result.verdict == EQUIVALENT else None
        if past_cap:
            result.verdict, result.reason = NOT_COMPARABLE, past_cap
        budget.after_verdict(result, original, migrated)
        if keep_trace is not None:
            shutil.copytree(trace_dir, keep_trace, dirs_exist_ok=True)
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)
        stopping.forget(trace_dir)
    result.elapsed = time.monotonic() - t0
    return result


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
    traces, finals = {}, {}
    for role in ("original", "migrated"):
        final = finals[role] = _load_json(os.path.join(trace_dir, f"{role}.final.json"))
        plots = _load_json(os.path.join(trace_dir, f"{role}.plots.json"))
        traces[role] = {"events": ev[role], "final": final.get("variables") if final else None,
                        "stdout": _read_head(os.path.join(trace_dir, f"{role}.stdout")),
                        "plots": plots.get("snapshots") if plots else None}
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
