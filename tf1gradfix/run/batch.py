"""Runs the engine over many files: serially for one, in a process pool for many.

Workers get a path and small settings and send back findings and a diff, never
whole syntax trees; in rewrite mode the worker writes the file itself.
"""

from __future__ import annotations

import _thread
import os
import time
from collections.abc import Callable
from pathlib import Path

from tf1gradfix.records import field, record
from tf1gradfix.run import notebooks
from tf1gradfix.run.engine import may_parse, preload, process_source
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
from tf1gradfix.cli.output import shown
from tf1gradfix.run.source_io import MAX_FILE_BYTES, Snapshot, SourceError, read_source, refusal, write_atomic

CHECK, DIFF, PREVIEW, WRITE = "check", "diff", "preview", "write"
PROPOSE = "propose"  # return the new source to the parent, write nothing (rewrite --verify)
GUARDED = "guarded"  # write safe fixes; return a restructuring to the parent for proof (plain rewrite)
MAX_WORKERS = 61  # more gains nothing on a single machine; also the Windows limit of a process pool
EXIT_ORPHANED = 3


@record(frozen=True)
class Job:
    path: str
    mode: str
    codes: CodeFilter
    max_bytes: int = MAX_FILE_BYTES  # files above are errors, never read (setting max-file-size)


@record
class Outcome:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    changed: bool = False
    diff: str | None = None
    new_source: bytes | None = None  # only for stdin, where the parent prints it
    snapshot: Snapshot | None = None  # PROPOSE, GUARDED: what the file was when read, for the later write
    restructured: bool = False   # GUARDED: new_source is a whole-program rewrite awaiting proof
    safe_source: bytes | None = None  # GUARDED: the file with its safe fixes only (None: none apply)
    safe_later: Callable[[], bytes | None] | None = None   # GUARDED, a project's file: makes safe_source (safe_source_of)
    companions: dict | None = None   # a project's script: its modules' path -> (new bytes, snapshot), written with it
    group: tuple = ()   # scripts sharing a module with this one: proven each, written all or none (project_groups)


def safe_source_of(outcome: Outcome) -> bytes | None:
    """The file with its safe fixes only, for a restructuring not proven: a project's files
    compute them now, once (a proven project never needs them)."""
    if outcome.safe_later is not None:
        outcome.safe_source, outcome.safe_later = outcome.safe_later(), None
    return outcome.safe_source


def restructured(findings: list[Finding]) -> bool:
    """A rewrite that went beyond the safe fixes: a finding of another safety was fixed."""
    return any(f.fixed and f.safety != "safe" for f in findings)


def unified_diff(path: str, old: bytes, new: bytes) -> str:
    """A diff `patch` applies: lines end at LF only, as `patch` reads them (CR LF, and a
    lone CR, form feed or U+2028 inside a line, are part of it; a CR-only file is one
    line), and a last line without one is marked `\\ No newline at end of file`."""
    import difflib
    import io
    import re
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(old).readline)

    def lines(data: bytes) -> list[str]:
        return [line.decode(encoding, errors="replace") for line in re.findall(rb"[^\n]*\n|[^\n]+", data)]

    out = []
    for line in difflib.unified_diff(lines(old), lines(new), f"a/{path}", f"b/{path}"):
        out.append(line)
        if not line.endswith("\n"):  # (header lines always end with one)
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


INTERNAL = "internal error"
BUG_HINT = "a bug in tf1gradfix: please report it"
_WRITING = _thread.allocate_lock()  # a worker whose parent died waits for a running write to end
# (threading's Lock is this one: a serial `check` need not import threading)


def internal_error(path: str, exc: BaseException) -> FileError:
    return FileError(path, f"{INTERNAL}: {type(exc).__name__}: {exc}; file left unchanged ({BUG_HINT})")


def run_source(path: str, data: bytes, mode: str, codes: CodeFilter, snapshot: Snapshot | None = None) -> Outcome:
    """One file's outcome; `snapshot` is what the file was when read, so a later edit is never overwritten."""
    try:
        return _run_source(path, data, mode, codes, snapshot)
    except Exception as exc:  # a bug of ours must not cost the user a file or the run
        return Outcome(path, error=internal_error(path, exc))


def _run_source(path: str, data: bytes, mode: str, codes: CodeFilter, snapshot: Snapshot | None) -> Outcome:
    result = _processed(path, data, codes, check=mode == CHECK)
    outcome = Outcome(path, result.findings, result.error)
    if result.new_source is None:
        if path == "-" and mode in (WRITE, GUARDED):
            outcome.new_source = data  # a stdin filter echoes what it does not change
        return outcome
    outcome.changed = True
    if mode == DIFF:
        diff = notebooks.cell_diff if notebooks.is_notebook(path) else unified_diff
        outcome.diff = diff(shown(path), data, result.new_source)
    elif mode == PROPOSE or (mode == GUARDED and restructured(result.findings) and path != "-"):
        outcome.new_source = result.new_source
        outcome.snapshot = snapshot
        if mode == GUARDED:
            outcome.restructured = True
            outcome.safe_source = _processed(path, data, codes, restructure=False).new_source
    elif mode in (WRITE, GUARDED):
        if path == "-" and mode == GUARDED and restructured(result.findings):   # an editor filter: safe fixes only
            safe = _processed(path, data, codes, restructure=False).new_source
            outcome.new_source = data if safe is None else safe
            outcome.findings = [Finding(**{**f.to_json(), "fixed": f.fixed and f.safety == "safe"})
                                for f in outcome.findings]
        elif path == "-":
            outcome.new_source = result.new_source
        else:
            write_outcome(outcome, result.new_source, snapshot)
    return outcome


def _processed(path: str, data: bytes, codes: CodeFilter, restructure: bool = True, check: bool = False):
    """A file's result, a notebook's by its code cells."""
    process = notebooks.process if notebooks.is_notebook(path) else process_source
    return process(path, data, codes, fix=True, restructure=restructure, check=check)


def write_outcome(outcome: Outcome, source: bytes, snapshot: Snapshot | None) -> None:
    """Replace the file with `source` (unless it changed since `snapshot` was taken, or must
    not be replaced); on failure the outcome says so and its findings are not fixed."""
    try:
        refusal = unwritable(Path(outcome.path))
        if refusal:
            raise OSError(refusal)
        with _WRITING:
            write_atomic(Path(outcome.path), source, snapshot)
    except OSError as exc:
        outcome.changed = False
        message = str(exc) if isinstance(exc, SourceError) else f"cannot write: {exc.strerror or exc}"
        outcome.error = FileError(outcome.path, message)
        outcome.findings = [Finding(**{**f.to_json(), "fixed": False}) for f in outcome.findings]


def unwritable(path: Path) -> str | None:
    """Why `path` must not be replaced, if it must not.

    A rename would replace a symlink by a plain file and ignores the file's own
    write bits, so both are checked here rather than left to the OS.
    """
    if path.is_symlink():
        return "is a symlink; rewrite the file it points to instead"
    if not os.stat(path).st_mode & 0o222:
        return "file is read-only"
    return None


def run_job(job: Job) -> Outcome:
    try:
        return _run_job(job)
    except Exception as exc:  # in a worker too: one file's bug is that file's error
        return Outcome(job.path, error=internal_error(job.path, exc))


def _read(path: str, limit: int = MAX_FILE_BYTES, snapshot: bool = True) -> tuple[bytes, Snapshot | None] | FileError:
    try:
        return read_source(path, limit, snapshot, lines=not notebooks.is_notebook(path))
    except SourceError as exc:
        return FileError(path, str(exc))
    except OSError as exc:
        return FileError(path, f"cannot read: {exc.strerror or exc}")


def _run_job(job: Job) -> Outcome:
    read = _read(job.path, job.max_bytes, snapshot=job.mode != CHECK)
    if isinstance(read, FileError):
        return Outcome(job.path, error=read)
    data, snapshot = read
    if job.mode != CHECK:
        return run_source(job.path, data, job.mode, job.codes, snapshot)
    from tf1gradfix.run import cache  # `check` only: it writes nothing, so its outcome is all there is

    if cache.folder() is None:   # (turned off: no key to compute)
        return run_source(job.path, data, job.mode, job.codes)
    key = cache.key(job.mode, job.path, data, job.codes)
    kept = cache.load(key)
    if kept is not None:
        return Outcome(job.path, *kept)
    outcome = run_source(job.path, data, job.mode, job.codes)
    if not (outcome.error and outcome.error.message.startswith(INTERNAL)):
        cache.store(key, outcome.findings, outcome.error, outcome.changed)
    return outcome


def _parses(job: Job) -> bool:
    """Whether run_job may parse the file: it may hold a TF1 construct and no stored `check` result stands in."""
    try:
        if refusal(os.stat(job.path), job.max_bytes):
            return False  # never read here: run_job reports it
    except OSError:
        return False
    if not may_parse(job.path):
        return False
    if job.mode != CHECK:
        return True
    from tf1gradfix.run import cache

    read = _read(job.path, job.max_bytes, snapshot=False)
    if isinstance(read, FileError):
        return False
    data, _ = read
    return cache.load(cache.key(job.mode, job.path, data, job.codes)) is None


def _start_worker(parent: int) -> None:
    """Workers leave Ctrl-C, SIGTERM and SIGHUP to the parent, which lets running
    chunks finish; a worker whose parent died (even by SIGKILL) exits by itself."""
    import signal

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    import threading

    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="tf1gradfix-parent").start()


def _watch_parent(parent: int, every: float = 0.5) -> None:
    """Orphaned workers would wait for work forever: their copy of the task pipe keeps it open.

    The worker's own parent is the run (fork, spawn) or a fork server that ends with
    the run (forkserver): a change of it, or the run's end, means the run is gone.
    """
    start = os.getppid()
    while os.getppid() == start and _alive(parent):
        time.sleep(every)
    with _WRITING:  # never leave a half-written temporary file behind
        os._exit(EXIT_ORPHANED)


def _alive(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def run_all(jobs: list[Job], workers: int, on_done=None) -> list[Outcome]:
    """Outcomes in the order of `jobs`; `on_done()` is called after each file.

    On Ctrl-C, files not started are left alone and files being processed
    are finished, so every file is either old or new and no temporary file
    stays behind; then KeyboardInterrupt propagates.
    """
    if workers <= 1 or len(jobs) <= 1:
        outcomes = []
        for job in jobs:
            outcomes.append(run_job(job))
            if on_done:
                on_done()
        return outcomes
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor  # only paid for by parallel runs
    from concurrent.futures.process import BrokenProcessPool as BrokenExecutor

    context = multiprocessing.get_context()
    if context.get_start_method() == "fork" and any(_parses(job) for job in jobs):
        preload(any(job.mode != CHECK for job in jobs))  # forked workers inherit LibCST and the rules instead of each loading them
    chunk = max(1, min(4, len(jobs) // (workers * 8) or 1))  # small: Ctrl-C waits for running chunks
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(),))
    outcomes = []
    try:
        for outcome in pool.map(run_job, jobs, chunksize=chunk):
            outcomes.append(outcome)
            if on_done:
                on_done()
    except KeyboardInterrupt:  # SIGTERM and SIGHUP arrive here too (cli.py)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    except BrokenExecutor as exc:  # a worker was killed (out of memory, kill -9): report, do not crash
        pool.shutdown(wait=True, cancel_futures=True)
        lost = f"{INTERNAL}: a worker process died ({type(exc).__name__}); the file is either unchanged or fully rewritten"
        outcomes += [Outcome(job.path, error=FileError(job.path, lost)) for job in jobs[len(outcomes):]]
    pool.shutdown(wait=True)
    return outcomes


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def worker_count(requested: int | None, files: int) -> int:
    """No more workers than files (each costs a process and memory), and at most MAX_WORKERS."""
    wanted = requested if requested is not None else default_workers()
    return max(1, min(wanted, files, MAX_WORKERS))
