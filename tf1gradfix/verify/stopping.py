"""Stop signals (SIGTERM, SIGHUP, SIGINT) while programs are being verified.

The runners lead their own sessions, so a signal to the verifier reaches
neither: left alone they would run on with no timeout, and the trace folder
and the candidate file would stay behind. Inside `guard()` a stop signal
kills every runner's process group at once and raises `Stopped` in the main
thread, so each `finally` removes what it made; the outermost guard then
removes whatever was registered here and not yet removed, prints one line
and exits 128 + the signal number. Further signals during that cleanup are
ignored, and a signal that lands while a runner starts or a file is being
created waits for that step to end (`deferred()`), so nothing is left
half-made or unregistered.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))


class Stopped(BaseException):
    """A stop signal arrived; raised in the main thread."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _State:
    depth = 0            # nested guards (rewrite --verify guards each verify_pair too)
    deferred = 0         # > 0: a step that must not be cut is running
    signum = None        # the first stop signal received
    raised = False
    live: dict = {}      # pid -> Popen of runners not yet reaped (their pid is their group's id)
    made: dict = {}      # path -> True for a folder, False for a file, removed on a stop


def _kill_runners() -> None:
    for pid in list(_State.live):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _stop() -> None:
    if not _State.raised:
        _State.raised = True
        _kill_runners()
        raise Stopped(_State.signum)


def _on_signal(signum, _frame) -> None:
    if _State.signum is not None:
        return                       # already stopping: let the cleanup finish
    _State.signum = signum
    _kill_runners()
    if not _State.deferred:
        _stop()


@contextlib.contextmanager
def deferred():
    """A step that must not be cut in the middle; a stop signal takes effect after it.
    (Only the main thread is interrupted by a signal: a proof's thread, parallel.py, runs on.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _State.deferred += 1
    try:
        yield
    finally:
        _State.deferred -= 1
    if _State.signum is not None and not _State.deferred and _State.depth:
        _stop()


def popen(*args, **kwargs) -> subprocess.Popen:
    """Start a runner (in its own session) and register it to be killed on a stop."""
    with deferred():
        proc = subprocess.Popen(*args, **kwargs)
        _State.live[proc.pid] = proc
    return proc


def register(proc) -> None:
    """A runner started otherwise (a fork of a warm process, pool.py): killed on a stop like the others."""
    with deferred():
        _State.live[proc.pid] = proc


def reaped(proc) -> None:
    """The runner was waited for: its pid may now be reused, never signal it again."""
    _State.live.pop(proc.pid, None)


def temp_dir(prefix: str) -> str:
    """A fresh temporary folder, removed on a stop even if its owner's `finally` never ran."""
    with deferred():
        path = tempfile.mkdtemp(prefix=prefix)
        _State.made[path] = True
    return path


def new_file(folder: str, prefix: str, suffix: str, data: bytes) -> str:
    """Create a file that did not exist (O_EXCL, random name) holding `data`; removed on a stop."""
    with deferred():
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
        _State.made[path] = False
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    return path


def forget(path: str) -> None:
    """`path` was removed by its owner."""
    _State.made.pop(path, None)


def _remove_made() -> None:
    for path, is_dir in list(_State.made.items()):
        if is_dir:
            with contextlib.suppress(OSError):
                os.chmod(path, 0o700)   # (a trace folder is unlistable while its programs run: trace_seal.hide)
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    _State.made.clear()


@contextlib.contextmanager
def guard():
    """Turn stop signals into `Stopped` for the duration (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _State.depth == 0
    previous = {}
    _State.depth += 1
    try:
        if outer:
            _State.signum, _State.raised = None, False
            previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
        yield
    except Stopped as stop:
        if not outer:
            raise
        _remove_made()
        name = signal.Signals(stop.signum).name
        print(f"tf1gradfix: stopped by {name}: the programs being verified were killed and "
              f"their temporary files removed", file=sys.stderr, flush=True)
        raise SystemExit(128 + stop.signum) from None
    finally:
        _State.depth -= 1
        if outer:
            for sig, handler in previous.items():
                if handler is not None:
                    signal.signal(sig, handler)
            _State.live.clear()
            _State.made.clear()


def guarded(func):
    """Decorator form of `guard()`."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with guard():
            return func(*args, **kwargs)
    return wrapper
