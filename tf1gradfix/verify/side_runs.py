"""The two sides of a verification as processes: start, watch, stop, and read what each left.

Each runner is forked from a warm TensorFlow process of its side (pool.py) or
started afresh; both start at once and are polled here for the timeout, a failed
original (the migration then stops) and a flood of output. A side is over when its
runner exits, and whatever the program forked goes with it (its process group).
What a side left (events, final values, the heads and tails of its output) is read
back for the verdict (orchestrate.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tf1gradfix.verify import budget, lockstep_files, output_cap, pool, progress, stopping, trace_cap, trace_seal
from tf1gradfix.verify.runner_common import ORIGINAL_DONE, VERIFIER_PID

STDOUT_CAP = output_cap.COMPARED   # bytes of stdout parsed for printed numbers
TAIL = 3000                    # characters of stderr kept for the report
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
RUNNERS = {"original": "tf1gradfix.verify.runner_v1", "migrated": "tf1gradfix.verify.runner_v2"}
# `python -m runner` would put the runner's working folder, the program's, first
# on sys.path, and a user's json.py there would replace the standard library's
# in the runner's own imports. The program gets its folder on sys.path only when
# it starts (runner_common.run_user_script), after the runner's imports.
# A fresh runner forks the program off and waits for it: the program's parent is then this
# process, not the verifier, so a program that stops its parent stops only this one (which
# the verifier continues, _poll). It dies with the verifier, the program with it
# (runner_common.exit_with_verifier, told this process's pid), and what the program forked
# that left its process group ends with it (a subreaper, as pool.py's warm processes).
_BOOT = ("import sys\n"
         "if not getattr(sys.flags, 'safe_path', False): del sys.path[0]\n"
         "import os, signal, time\n"
         f"verifier = os.environ.get({VERIFIER_PID!r}, '')\n"
         "if sys.platform.startswith('linux'):\n"
         "    import ctypes\n"
         "    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER\n"
         "child = os.fork() if hasattr(os, 'fork') else 0\n"
         "if child:\n"
         "    while True:\n"
         "        done, status = os.waitpid(child, os.WNOHANG)\n"
         "        if done:\n"
         "            break\n"
         "        if verifier.isdigit() and os.getppid() != int(verifier):\n"
         "            os.killpg(os.getpgid(0), signal.SIGKILL)\n"
         "        time.sleep(0.02)\n"
         "    me = str(os.getpid()).encode()\n"   # (what the program forked and left its group: orphans come here)
         "    for entry in (os.listdir('/proc') if os.path.isdir('/proc') else []):\n"
         "        try:\n"
         "            with open(f'/proc/{entry}/stat', 'rb') as handle:\n"
         "                if entry.isdigit() and handle.read().rsplit(b')', 1)[1].split()[1] == me:\n"
         "                    os.kill(int(entry), signal.SIGKILL)\n"
         "        except (OSError, IndexError):\n"
         "            pass\n"
         "    code = os.waitstatus_to_exitcode(status)\n"
         "    os._exit(code if code >= 0 else 128 - code)\n"
         f"if hasattr(os, 'fork'): os.environ[{VERIFIER_PID!r}] = str(os.getppid())\n"
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
    out_path, err_path = (trace_seal.side_file(trace_dir, role, stream) for stream in ("stdout", "stderr"))
    secret = trace_seal.secret(trace_dir, role)
    with stopping.deferred():   # a warm TensorFlow process forks it (pool.py), or a new one starts
        run = pool.start(env_legacy, [module, trace_dir, str(script), *extra], env, str(script.parent),
                         out_path, err_path, secret)
        if run is not None:
            stopping.register(run)
            return run
    out = open(out_path, "wb")
    err = open(err_path, "wb")
    handed = trace_seal.pipe_with(secret)
    env[trace_seal.FD_ENV] = str(handed)
    try:
        proc = stopping.popen(
            [sys.executable, "-c", _BOOT, module, trace_dir, str(script), *extra],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=str(script.parent),
            env=env, start_new_session=True, pass_fds=(handed,))
    finally:
        out.close()
        err.close()
        os.close(handed)
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


def read_head(path: str, limit: int = STDOUT_CAP) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


load_events = trace_seal.load_events   # (a side's events, checked against the run's seal)


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def exception_line(tb: str) -> str:
    """The line naming the exception. TensorFlow's messages carry the traceback of
    the op after them, and a chained error may only say "Graph execution error:",
    so: the last exception line that says more than a heading."""
    lines = [ln for ln in tb.strip().splitlines() if _EXCEPTION_LINE.match(ln)]
    telling = [ln for ln in lines if not ln.rstrip().endswith(":")]
    if telling:
        return telling[-1]
    return lines[-1] if lines else (tb.strip().splitlines()[-1] if tb.strip() else "exception")


def _missing_module_hint(summary: str) -> str:
    """A program importing what this interpreter lacks: the verifier runs programs with the
    interpreter tf1gradfix runs in, so the fix is an install there, not in the program."""
    if not summary.startswith("ModuleNotFoundError"):
        return ""
    return (f" (programs are run with {sys.executable}: install what they import there; in a "
            "pre-commit hook, in its additional_dependencies)")


def side_status(side: SideResult, events: list, timed_out: bool, killed: tuple[str, str] | None,
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
            summary = error.get("exception") or exception_line(error.get("traceback", ""))
            side.status, side.reason = "failed", f"raised {summary}{_missing_module_hint(summary)}"
        elif rc is not None and rc < 0:
            side.status, side.reason = "failed", f"killed by signal {-rc} after its script ended"
        elif side.exit_code:
            how = "sys.exit" if side.exit_code == code else "set after the script ended: atexit or os._exit"
            side.status, side.reason = "exited", f"exited with status {side.exit_code} ({how})"
        else:
            side.status = "ok"
    elif not started:
        side.status, side.reason = "failed", f"the runner could not start the program (exit code {rc})"
    elif trace_cap.disk_full_reason(rc):
        side.status, side.reason = "failed", trace_cap.disk_full_reason(rc) or ""
    elif rc == 0:
        side.status, side.reason, side.exit_code = "ok", "left through os._exit(0)", 0
    elif rc is not None and rc < 0:
        side.status, side.reason = "failed", f"killed by signal {-rc}"
    else:
        side.status, side.reason = "failed", f"exited with code {rc} before finishing (os._exit or a crash)"


def trace_of(trace_dir: str, role: str, events: list, sealed: dict) -> dict:
    """A side's trace as compare_traces reads it; `sealed`: its loaded final.json and plots.json."""
    final, plots = sealed.get("final.json") or {}, sealed.get("plots.json") or {}
    return {"events": events, "final": final.get("variables"), "plots": plots.get("snapshots"),
            "stdout": read_head(trace_seal.side_file(trace_dir, role, "stdout"))}


def sides_again(original: Path, migrated: Path, timeout: float, steps, program_args, swap, trace_dir: str,
                 more_env: dict, original_swap=None) -> tuple[dict, dict, dict, dict]:
    """Both programs run once more into `trace_dir` (a lockstep run, lockstep.py, with
    `more_env`): (sides, events, stdout heads, plot snapshots), by role."""
    sides, timed_out, killed = run_both(original, migrated, trace_dir, timeout, steps, program_args, swap, more_env,
                                         original_swap)
    events = {r: load_events(trace_dir, r) for r in sides}
    for role, side in sides.items():
        side_status(side, events[role], role in timed_out, killed.get(role), timeout)
    out = {r: read_head(trace_seal.side_file(trace_dir, r, "stdout")) for r in sides}
    plots = {r: (trace_seal.load_json(trace_dir, r, "plots.json") or {}).get("snapshots") for r in sides}
    return sides, events, out, plots


def original_again(original: Path, timeout: float, steps, program_args, original_swap, trace_dir: str):
    """The original alone, once more, into `trace_dir` (original_runs.py): its side and events."""
    sides, timed_out, killed = run_both(original, original, trace_dir, timeout, steps, program_args,
                                         original_swap=original_swap, alone=True)
    events = load_events(trace_dir, "original")
    side_status(sides["original"], events, "original" in timed_out, killed.get("original"), timeout)
    return sides["original"], events


def run_both(original: Path, migrated: Path, trace_dir: str, timeout: float, steps=None, program_args=(),
              swap=None, more_env=None, original_swap=None, alone: bool = False):
    """Both sides at once; `alone`: the original only."""
    sides = {"original": SideResult("original", str(original)),
             "migrated": SideResult("migrated", str(migrated))}
    if alone:
        del sides["migrated"]
    work = stopping.temp_dir("tf1gradfix-cwd-")   # each side writes into its own view of its folder

    def extra(role, script):
        return ["--cwd", budget.side_folder(str(script.parent), os.path.join(work, role)), "--", *program_args]
    pool.prepare([(True, _env(True, timeout))] + ([] if alone else [(False, _env(False, timeout))]))
    migrated_args = extra("migrated", migrated)
    original_args = extra("original", original)
    if swap:   # a project: the migrated script runs in its view, which holds the migrated modules
        migrated = _swapped(migrated, migrated_args[1], swap)
    if original_swap:   # (verify --base: the original runs with its modules as they were)
        original = _swapped(original, original_args[1], original_swap)
    more_env = more_env or {}
    trace_seal.make_side_dirs(trace_dir)
    trace_seal.hide(trace_dir, True)   # (until both sides are over: neither lists the other's folder)
    procs = {"original": _start(RUNNERS["original"], original, trace_dir, "original", timeout, True,
                                original_args, steps, more_env.get("original"))}
    if not alone:
        procs["migrated"] = _start(RUNNERS["migrated"], migrated, trace_dir, "migrated", timeout, False,
                                   migrated_args, steps, more_env.get("migrated"))
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
        trace_seal.hide(trace_dir, False)
        shutil.rmtree(work, ignore_errors=True)
        stopping.forget(work)
    for role, proc in procs.items():
        side = sides[role]
        side.returncode = proc.returncode
        side.elapsed = side.elapsed or time.monotonic() - start
        side.stderr_tail = _read_tail(trace_seal.side_file(trace_dir, role, "stderr"))
        side.stdout_tail = _read_tail(trace_seal.side_file(trace_dir, role, "stdout"), 1000)
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
        for proc in procs.values():   # (a fresh runner its program stopped: pooled ones, pool.py)
            if proc.returncode is None and not isinstance(proc, pool.PooledRun):
                pool.resume(proc.pid)
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
        if "migrated" in procs:
            _pair(procs, trace_dir, timed_out, killed)
        for role, proc in procs.items():
            flood = output_cap.flooded(trace_dir, role) if proc.returncode is None else None
            if flood:
                _kill(proc)
                killed[role] = ("failed", flood)
        time.sleep(0.02)


def _pair(procs, trace_dir, timed_out, killed) -> None:
    """What one side's end tells the other: the migration stops waiting for the original's
    variables, or is stopped when the original failed; an original in lockstep stops
    handing on its states when the migration is over."""
    orig, mig = procs["original"], procs["migrated"]
    if orig.returncode is not None and not os.path.exists(os.path.join(trace_dir, ORIGINAL_DONE)):
        # a migrated side waiting for variables of a later graph stops waiting
        open(os.path.join(trace_dir, ORIGINAL_DONE), "w").close()
    done = os.path.join(trace_dir, lockstep_files.FOLDER, lockstep_files.MIGRATED_DONE)
    if mig.returncode is not None and os.path.isdir(os.path.dirname(done)) and not os.path.exists(done):
        open(done, "w").close()
    if orig.returncode is not None and mig.returncode is None and "original" not in timed_out:
        if _original_failed(trace_dir, orig.returncode):
            _kill(mig)
            killed["migrated"] = _STOPPED
    if "original" in timed_out and mig.returncode is None:
        _kill(mig)
        killed["migrated"] = _STOPPED


def _original_failed(trace_dir: str, returncode: int) -> bool:
    """Whether the migration can stop: the original raised or crashed. A plain
    non-zero exit status after a complete trace is not enough, since the
    migration may exit with the same status (then both are compared)."""
    events = load_events(trace_dir, "original")
    end = next((e for e in reversed(events) if e["kind"] == "end"), None)
    if end is None:
        return returncode != 0
    if end["status"] == "error" and budget.of_run({"original": events}) and budget.of_run({"original": events})["loop_cut"]:
        return False   # failed after the budget's cut: the migration may fail the same way (budget.failed_after_cut)
    return end["status"] == "error" or returncode < 0
