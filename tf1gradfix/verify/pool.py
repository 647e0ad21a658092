"""A warm TensorFlow process per side: programs start as forks of it, not as new interpreters.

Importing TensorFlow is most of a verification's cost (about 4 s of CPU,
against well under a second for a small program). A *zygote* per side (TF1
semantics with legacy Keras; plain TF2) imports TensorFlow once, creates no
session, graph, op or thread pool of its own, and then forks one child per
program. Each child is a clean copy of that state: whatever the program does
(variables, graphs, seeds, `sys.modules`, files it opens) dies with it, and
the next program starts from the zygote again (and what a program forked
out of its process group is killed once no run is left). Forking a process that has
only imported TensorFlow is safe on Linux (the import starts no thread that
holds a lock across the fork; measured: every fixture gives the same trace
as in a fresh process, tests/test_verify_pool.py); sessions and thread pools
are made in the child.

The child behaves like the runner process it replaces: it leads its own
session (the orchestrator kills its process group), its standard streams are
the side's files, it runs the runner module as `__main__` with the same
argv, environment and folder, and it exits as an interpreter would (threads
joined, `atexit` handlers run, the exit status kept). The zygote keeps an
exited child unreaped until the orchestrator has killed its group, so a
group id is never reused under it, and it reaps orphans the program left
(it is their subreaper). It exits when the orchestrator goes (its command
pipe closes), killing its children's groups.

Where forking is not available, or `TF1GRADFIX_NO_POOL=1`, or a zygote
cannot start, each side is a fresh process as before (side_runs._start).
No TensorFlow import here: the parent process stays TensorFlow-free.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from tf1gradfix.verify.runner_common import VERIFIER_PID

NO_POOL = "TF1GRADFIX_NO_POOL"


def resume(pid: int) -> None:
    """Continue the process `pid` if it is stopped (a program's `os.kill(os.getppid(), SIGSTOP)`
    stops the process it was started from, which then reports nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return
    if state in (b"T", b"t"):
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
RUN_REPLY_WAIT = 60.0   # seconds a zygote has to fork a run (it answers in milliseconds when well)
REAP_WAIT = 10.0        # seconds a zygote has to report a killed run's end before it is killed itself
# Environment read when an interpreter or TensorFlow starts: a zygote serves
# only runs whose values of these equal its own.
_STARTUP_PREFIXES = ("TF_", "KERAS", "CUDA", "OMP_", "OPENBLAS", "MKL", "PYTHON")
_PRELOAD = {
    True: ("tensorflow", "tensorflow.compat.v1", "tf_keras", "numpy", "tf1gradfix.verify.runner_v1"),
    False: ("tensorflow", "keras", "numpy", "tf1gradfix.verify.runner_v2"),
}


def enabled() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux") and os.environ.get(NO_POOL) != "1"


def _startup_key(env: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(_STARTUP_PREFIXES)))


class PooledRun:
    """A program run forked by a zygote, with the part of `subprocess.Popen` the orchestrator uses.

    `pid` is the child's, which leads its own session: `os.killpg(pid, ...)`
    reaches it and all it started. `exited()` says whether it ended without
    reaping it; `wait()` reaps it (after the caller killed its group).
    """

    def __init__(self, zygote: "_Zygote", pid: int):
        self._zygote, self.pid, self.returncode, self._status = zygote, pid, None, None

    def exited(self) -> bool:
        if self._status is None:
            self._zygote.resume()
            self._zygote.pump()
            self._status = self._zygote.statuses.get(self.pid)
        return self._status is not None

    def poll(self):
        return self.returncode if self.returncode is not None else (self.wait() if self.exited() else None)

    def wait(self, timeout=None):
        """The run's status, once its zygote reported it; a zygote that does not within
        REAP_WAIT (a program stopped or hung it) is killed, and the run counts as killed."""
        deadline = time.monotonic() + REAP_WAIT
        while not self.exited():
            if not self._zygote.alive() or time.monotonic() > deadline:
                _discard(self._zygote)
                self._status = -signal.SIGKILL
                break
            self._zygote.pump(0.05)
        if self.returncode is None:
            self.returncode = self._status
            self._zygote.statuses.pop(self.pid, None)
            self._zygote.send({"op": "reap", "pid": self.pid})
        return self.returncode

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass


class _Zygote:
    def __init__(self, legacy: bool, env: dict):
        self.key = (legacy, sys.executable, _startup_key(env))
        self.statuses: dict[int, int] = {}
        self.requests = 0
        self._lock = threading.Lock()
        self._buffer = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE_BOOT, json.dumps(list(_PRELOAD[legacy]))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd="/", start_new_session=True)
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        message = self._read(timeout=600)
        if message != {"ready": True}:
            self.close()
            raise OSError(f"zygote did not start: {message}")
        self.ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def resume(self) -> None:
        """Continue the zygote if a program stopped it (`os.kill(os.getppid(), SIGSTOP)`):
        stopped, it would report no run's end."""
        resume(self.proc.pid)

    def kill(self) -> None:
        """End the zygote now (it may be stopped: SIGKILL ends a stopped process too)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()

    def send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def _read(self, timeout: float | None):
        """One message, or None after `timeout` seconds (or at end of file)."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def pump(self, timeout: float = 0.0) -> None:
        """Take in the exit reports that have arrived."""
        with self._lock:
            while True:
                message = self._read(timeout)
                if message is None:
                    return
                if "exited" in message:
                    self.statuses[message["exited"]] = message["status"]
                timeout = 0.0

    def run(self, argv: list[str], env: dict, cwd: str, stdout: str, stderr: str,
            secret: str | None = None) -> PooledRun | None:
        """The forked run (`secret`: its trace's, handed to it over a pipe), or None (then the caller starts it afresh and this zygote is closed:
        a fork it answers too late must not run beside the fresh process)."""
        with self._lock:
            # the program's runner dies with its parent, the zygote (runner_common.exit_with_verifier)
            env = {**env, VERIFIER_PID: str(self.proc.pid)}
            self.requests += 1
            self.send({"op": "run", "id": self.requests, "argv": argv, "env": env, "cwd": cwd,
                       "stdout": stdout, "stderr": stderr, "secret": secret})
            while True:
                message = self._read(timeout=RUN_REPLY_WAIT)
                if message is None or ("exited" not in message and "pid" not in message):
                    return None
                if "exited" in message:
                    self.statuses[message["exited"]] = message["status"]
                    continue
                if message.get("id") != self.requests:   # the answer to an earlier request given up on
                    continue
                # a pid the system reuses: what an earlier child of that pid left is not this one's
                self.statuses.pop(message["pid"], None)
                return PooledRun(self, message["pid"])

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()


_ZYGOTES: dict[bool, _Zygote] = {}
_SLOT = threading.local()


def _zygotes() -> dict[bool, _Zygote]:
    """The zygotes of this thread: the main thread's, or those of a slot of proofs run side by
    side (parallel.py), so a program that hangs its zygote costs no other slot's proof."""
    if threading.current_thread() is threading.main_thread():
        return _ZYGOTES
    if not hasattr(_SLOT, "zygotes"):
        _SLOT.zygotes = {}
    return _SLOT.zygotes


def _discard(zygote: _Zygote) -> None:
    """A zygote that no longer answers: killed, and the next run starts a new one."""
    for key, known in list(_zygotes().items()):
        if known is zygote:
            del _zygotes()[key]
    zygote.kill()


def _zygote(legacy: bool, env: dict) -> _Zygote | None:
    """The side's zygote for this startup environment, started (not yet ready) if need be."""
    key = (legacy, sys.executable, _startup_key(env))
    zygote = _zygotes().get(legacy)
    if zygote is not None and (zygote.key != key or not zygote.alive()):
        _zygotes().pop(legacy).close()
        zygote = None
    if zygote is None:
        try:
            zygote = _zygotes()[legacy] = _Zygote(legacy, env)
        except (OSError, ValueError):
            return None
    return zygote


def prepare(sides: list[tuple[bool, dict]]) -> None:
    """Have both sides' zygotes ready before either program starts: they import
    TensorFlow at the same time, and neither program runs while the other side waits."""
    if not enabled():
        return
    started = [z for z in (_zygote(legacy, env) for legacy, env in sides) if z is not None]
    for zygote in started:
        try:
            zygote.wait_ready()
        except OSError:
            _zygotes().pop(next(k for k, v in _zygotes().items() if v is zygote), None)


def start(legacy: bool, argv: list[str], env: dict, cwd: str, stdout: str, stderr: str,
          secret: str | None = None) -> PooledRun | None:
    """Fork `argv` (the runner's `-c` boot arguments) from the side's zygote; None: start it afresh."""
    if not enabled():
        return None
    zygote = _zygote(legacy, env)
    if zygote is None:
        return None
    try:
        zygote.wait_ready()
    except OSError:
        _zygotes().pop(legacy, None)
        return None
    run = zygote.run(argv, env, cwd, stdout, stderr, secret)
    if run is None:
        _zygotes().pop(legacy, None)
        zygote.close()
    return run


def shutdown() -> None:
    """Stop the zygotes of this thread (they also stop by themselves when the process exits)."""
    while _zygotes():
        _, zygote = _zygotes().popitem()
        zygote.close()


# The zygote's own program, run with `python -c` (so nothing of the user's
# folder is on sys.path). It reads commands from stdin, one JSON per line.
_ZYGOTE_BOOT = r'''
import sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]
import ctypes, importlib, json, os, select, signal
try:   # orphans of the programs become our children, and are reaped here
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
import gc
gc.collect()
gc.freeze()   # the collector of a child never walks (and so never copies) the pages of what is preloaded
out = sys.stdout.buffer
def say(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()
def child(job):
    os.setsid()
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        new = os.open(path, flags, 0o644)
        os.dup2(new, fd)
        os.close(new)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    secret = job.pop("secret", None)
    if secret is not None:   # (over a pipe, as a fresh runner gets it: trace_seal.receive)
        read, write = os.pipe()
        os.write(write, secret.encode())
        os.close(write)
        os.environ["TF1GRADFIX_TRACE_FD"] = str(read)
    sys.argv = ["-c"] + job["argv"][1:]
    code = 0
    try:
        import runpy
        runpy.run_module(job["argv"][0], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    # leave as an interpreter does: threads joined, atexit handlers run, streams flushed
    try:
        import threading, atexit
        threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code & 0xFF)
def end_strays():
    """Kill what the programs left that left their process group too (`setpgid(0, 0)` in a
    fork): orphans come to us, the subreaper; with no run left, none of them is a run's."""
    me = str(os.getpid()).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass
children = {}     # pid -> reported?
say({"ready": True})
stdin = sys.stdin.buffer
buffer = b""
while True:
    ready, _, _ = select.select([stdin], [], [], 0.02)
    if ready:
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:      # the verifier is gone: so are its programs
            for pid in children:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            job = json.loads(line)
            if job["op"] == "run":
                pid = os.fork()
                if pid == 0:
                    child(job)
                children[pid] = False
                say({"pid": pid, "id": job.get("id")})
            elif job["op"] == "reap" and job["pid"] in children:
                try:
                    os.waitpid(job["pid"], 0)
                except ChildProcessError:
                    pass
                children.pop(job["pid"], None)
                if not children:
                    end_strays()
    for pid, reported in list(children.items()):
        if reported:
            continue
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            children.pop(pid, None)
        if info is not None:
            status = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            children[pid] = True
            say({"exited": pid, "status": status})
    while True:    # orphans the programs left behind
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            break
        if info is None or info.si_pid in children:
            break
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            break
'''
