"""Pieces shared by the two runner subprocesses.

Both runners must seed identically, write their trace in the same format and
run the user's script the same way, otherwise the comparison would measure
the harness instead of the migration.  Nothing here imports TensorFlow.

Trace format (init.json lives in TRACE_DIR, the rest in the side's private folder,
each record sealed: trace_seal.py):

* ``<side>.events.jsonl`` -- one JSON object per line, written at once so
  that a crash or ``os._exit`` keeps everything seen so far; at most
  trace_cap's cap per side.
* ``init.json`` -- the original's variable values right after
  initialization, written atomically (temp file + rename); the migrated side
  polls for it.
* ``<side>.final.json`` -- variable values at the end of the run, written
  atomically (it may be rewritten several times; the last write wins).
* ``<side>.plots.json`` -- what the program plotted (plot_backend.py), when
  it used matplotlib.

Arrays are stored as ``{"dtype", "shape", "b64"}`` (raw little-endian bytes)
so values round-trip bit for bit, NaN included.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import random
import runpy
import signal
import sys
import threading
import time
import traceback

import numpy as np

from tf1gradfix.verify import budget, loop_cut, settings, trace_cap, trace_seal

SEED = 0
INIT_FILE = "init.json"
SHARED_FILES = {INIT_FILE}            # what a runner writes for the other side (Trace.write_atomic)
ORIGINAL_DONE = "original.done"   # written by the orchestrator once the original has exited
VERIFIER_PID = "TF1GRADFIX_VERIFIER_PID"   # set by the orchestrator: the runner dies with it
PLOT_BACKEND = "tf1gradfix.verify.plot_backend"
_FOUND_BY_NAME = {PLOT_BACKEND, loop_cut.__name__}   # (hide_recorder leaves them)
_HIDDEN: dict = {}   # the modules hide_recorder took out, kept alive


# -- arrays ---------------------------------------------------------------

class Reentrancy:
    """Per-thread depth of the tracer's own TensorFlow calls, which must not be traced.

    Subclasses set `self.local = threading.local()`.
    """

    def busy(self) -> bool:
        return getattr(self.local, "depth", 0) > 0

    def enter(self):
        self.local.depth = getattr(self.local, "depth", 0) + 1

    def leave(self):
        self.local.depth -= 1


def encode_array(value) -> dict:
    """Encode a NumPy-convertible value exactly (IndexedSlices already dense)."""
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "USV":
        return {"dtype": "str", "shape": list(arr.shape), "repr": repr(arr.tolist())[:200]}
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    arr = np.array(arr, order="C", copy=True)  # ascontiguousarray would turn 0-d into 1-d
    dt = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    arr = arr.astype(dt, copy=False)
    return {"dtype": dt.str, "shape": list(arr.shape),
            "b64": base64.b64encode(arr.tobytes()).decode("ascii")}


def decode_array(obj: dict) -> np.ndarray:
    """Inverse of :func:`encode_array` (string payloads become object arrays)."""
    if "b64" not in obj:
        return np.array(obj.get("repr", ""), dtype=object)
    data = base64.b64decode(obj["b64"])
    return np.frombuffer(data, dtype=np.dtype(obj["dtype"])).reshape(obj["shape"]).copy()


def densify_slices(values, indices, dense_shape) -> np.ndarray:
    """Turn an IndexedSlices value into the dense gradient it stands for."""
    values = np.asarray(values)
    dense = np.zeros(tuple(int(d) for d in dense_shape), dtype=values.dtype)
    np.add.at(dense, np.asarray(indices), values)
    return dense


def loss_value(values) -> float:
    """The traced "loss" of a gradient call: the sum of all target elements.

    ``tf.gradients`` and ``GradientTape.gradient`` both differentiate the sum
    of their targets, so the sum is the quantity both sides agree on.
    """
    return float(sum(np.sum(np.asarray(v), dtype=np.float64) for v in values))


def strip_name(name: str) -> str:
    """TensorFlow names carry an output index (``w:0``); compare without it."""
    return name[:-2] if name.endswith(":0") else name


# -- trace writer ---------------------------------------------------------

class Trace:
    """Append-only JSON-lines writer; every event is written at once (one write call).

    Its own records go to the side's private folder, sealed with the run's token
    (trace_seal.py: both handed over a pipe); `dir` is the folder the sides share
    (initial values, lockstep states). Without a handed secret (a runner started by
    hand) both are `trace_dir` and records go unsealed.

    At trace_cap's cap, or when the disk is full, it writes one `trace_cap`
    marker with the step reached (`counter`, the runner's StepCounter) and
    then only the end event: the program must not fail in the recorder, and
    the counter makes the side end at its next step. The marker takes the
    sequence number of the first record left out (the seal checks the numbers).
    """

    def __init__(self, trace_dir: str, side: str):
        self.dir = trace_dir
        self.side = side
        handed = trace_seal.receive()
        self._token, self._folder = handed if handed is not None else (None, trace_dir)
        self._lock = threading.RLock()
        self._fd = os.open(os.path.join(self._folder, f"{side}.events.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                           0o644)
        self.written = os.fstat(self._fd).st_size   # offset after the last whole line
        self.cap = trace_cap.limit(settings.get)
        self.counter: budget.StepCounter | None = None
        self.capped = False
        self.seq = 0

    def _line(self, payload: dict) -> bytes:
        return (trace_seal.seal(self._token, json.dumps(payload)) + "\n").encode("utf-8")

    def event(self, kind: str, **payload) -> None:
        with self._lock:
            if self.capped and kind not in trace_cap.AFTER_CUT:
                return
            line = self._line({"kind": kind, "seq": self.seq, **payload})
            if not self.capped and self.written + len(line) > self.cap - trace_cap.RESERVE:
                self._stop_recording("cap")
                if kind not in trace_cap.AFTER_CUT:
                    return
                line = self._line({"kind": kind, "seq": self.seq, **payload})   # (numbered after the marker)
            self.seq += 1
            try:
                self._write(line)
            except OSError as exc:
                self.seq -= 1   # (the marker takes the lost record's number)
                self._stop_recording(exc.strerror or type(exc).__name__)

    def _write(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view):]
        self.written += len(line)

    def _stop_recording(self, why: str) -> None:
        """Write the marker (dropping the torn line a full disk left); with no room even for
        that, leave at once with trace_cap.DISK_FULL_EXIT, for the verifier to say so."""
        if self.capped:   # (the end event after the marker failed: the marker says it all)
            return
        self.capped = True
        steps = self.counter.steps if self.counter is not None else 0
        if self.counter is not None:
            self.counter.capped = True
        line = self._line({"kind": trace_cap.MARKER, "seq": self.seq, "steps": steps, "cap": self.cap,
                           "bytes": self.written, "why": why})
        self.seq += 1
        try:
            os.ftruncate(self._fd, self.written)
            self._write(line)
        except OSError:
            os._exit(trace_cap.DISK_FULL_EXIT)

    def write_atomic(self, filename: str, obj) -> None:
        """The initial values go to the shared folder as they are (the other side reads them);
        the rest is this side's, sealed."""
        if filename in SHARED_FILES:
            write_json_atomic(os.path.join(self.dir, filename), obj)
        else:
            write_text_atomic(os.path.join(self._folder, filename), trace_seal.seal(self._token, json.dumps(obj)))


def write_json_atomic(path: str, obj) -> None:
    """Readers must never see a half-written file: write aside, then rename."""
    write_text_atomic(path, json.dumps(obj))


def write_text_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# -- seeding and running ----------------------------------------------------

def seed_python() -> None:
    """Seed the host-side generators; TF seeds are set by each runner. NumPy reseeded with
    no seed (`np.random.seed()`, as TF1's MNIST loader does when no seed is set) would
    draw from the system, differently on each side: there the k-th such call of a run
    seeds with SEED + k, on both sides."""
    random.seed(SEED)
    np.random.seed(SEED)
    seed, count = np.random.seed, itertools.count(1)

    def reseed(seed_value=None):
        seed(SEED + next(count) if seed_value is None else seed_value)

    np.random.seed = reseed


def quiet_tensorflow_env() -> None:
    """Keep TF's C++ info logs out of stderr tails unless the user asked."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_user_script(script: str, trace: Trace, before_exit=None, argv=(), cwd=None) -> int:
    """Run ``script`` as ``__main__`` in ``cwd`` (default: its folder) with
    ``sys.argv = [script, *argv]``; always leave an end event.

    ``SystemExit`` is recorded with its code (a deliberate exit is not a
    crash); any other exception is recorded with its traceback and printed
    to stderr as Python would.  ``before_exit`` runs in every case, so
    final variable values are captured even when the script fails.
    """
    exit_with_verifier()
    settings.withdraw()   # (the program does not find the verifier's settings in its environment)
    _HIDDEN.update(hide_recorder())
    script = os.path.abspath(script)
    folder = os.path.dirname(script)
    os.chdir(cwd or folder)
    if _plots(script):   # (imported before the program's folder can shadow what matplotlib imports)
        _keep_plot_backend()
    sys.path.insert(0, folder)
    sys.argv = [script, *argv]
    use_plot_backend()
    status, code = "ok", 0
    guarded = loop_cut.compile_script(script) if budget.limit_from_env() is not None else None
    if guarded is not None:   # the folder's modules too: a project trains in them
        sys.meta_path.insert(0, loop_cut.GuardImports(folder))
    try:
        if guarded is None:
            runpy.run_path(script, run_name="__main__")
        else:   # under a step budget: the training loop is what the budget ends (loop_cut.py)
            loop_cut.run_as_main(guarded, script)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        status = "exit"
    except BaseException as exc:  # noqa: BLE001 - the user's error is data here
        tb = user_traceback(exc)
        sys.stderr.write(tb)
        trace.event("error", traceback=tb[-4000:], exception=exception_summary(exc))
        status, code = "error", 1
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    record_plots(trace)
    if before_exit is not None:
        try:
            before_exit()
        except Exception:  # noqa: BLE001
            trace.event("note", text="could not record final values:\n" + traceback.format_exc()[-1500:])
    trace.event("end", status=status, code=code)
    return code


def hide_recorder() -> dict:
    """Take the recorder's modules out of `sys.modules`, so the program does not reach the
    live trace by importing them by name (an import gets a fresh copy, holding nothing);
    but the modules looked up by name while the program runs (matplotlib's backend, the
    step budget's guard) stay."""
    return {name: sys.modules.pop(name) for name in list(sys.modules)
            if name.partition(".")[0] == "tf1gradfix" and name not in _FOUND_BY_NAME}


def use_plot_backend() -> None:
    """Send the program's figures to plot_backend. TensorFlow may have imported
    pyplot already (then only switching works); otherwise the variable does."""
    os.environ["MPLBACKEND"] = f"module://{PLOT_BACKEND}"
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        try:
            pyplot.switch_backend(f"module://{PLOT_BACKEND}")
        except Exception:  # noqa: BLE001 - no recording, the run goes on as before
            pass


def _plots(script: str) -> bool:
    """Does the script, or a module beside it, name matplotlib (a project's `utils.py` often
    chooses the backend)? Read as bytes, the folder's top level only."""
    folder = os.path.dirname(script)
    try:
        names = [script] + [os.path.join(folder, n) for n in sorted(os.listdir(folder))[:200] if n.endswith(".py")]
        for name in names:
            with open(name, "rb") as handle:
                if b"matplotlib" in handle.read(1_000_000):
                    return True
    except OSError:
        return False
    return False


def _keep_plot_backend() -> None:
    """A program's own `matplotlib.use("Agg")` would leave one side unrecorded (which side
    depends on when pyplot was first imported): it selects the recording backend instead."""
    os.environ["MPLBACKEND"] = f"module://{PLOT_BACKEND}"   # (read when matplotlib is imported)
    try:
        import matplotlib
    except ImportError:
        return
    chosen = matplotlib.use

    def use(backend, *args, **kwargs):
        return chosen(f"module://{PLOT_BACKEND}", *args, **kwargs)

    matplotlib.use = use


def record_plots(trace: Trace, final: bool = True) -> None:
    """Write what the program plotted, if matplotlib drew through our backend."""
    backend = sys.modules.get(PLOT_BACKEND)
    if backend is None:
        return
    try:
        if final:
            backend.at_exit()
        snapshots = [[{"figure": e["figure"], "axes": e["axes"], "artist": e["artist"],
                       "data": encode_array(e["array"])} for e in snap] for snap in backend.SNAPSHOTS]
        trace.write_atomic(f"{trace.side}.plots.json", {"snapshots": snapshots, "truncated": backend.truncated()})
    except Exception:  # noqa: BLE001 - a figure we cannot read is not the program's failure
        trace.event("note", text="could not record the plotted values:\n" + traceback.format_exc()[-1500:])


def exit_with_verifier() -> None:
    """Die with the verifier. Killed outright (SIGKILL: no chance to clean up),
    it would leave this runner and whatever the program started running with
    no timeout; a watcher thread kills the runner's process group (the runner
    leads its own session) once the verifier is gone."""
    expected = os.environ.pop(VERIFIER_PID, "")
    if not expected.isdigit():
        return

    def watch():
        while os.getppid() == int(expected):
            time.sleep(0.25)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, name="tf1gradfix-verifier-watch", daemon=True).start()


def exception_summary(exc: BaseException) -> str:
    """`Type: what went wrong`, in one line. A TensorFlow error's message goes on
    with the traceback of the op that failed (indented lines, `[[node]]` marks,
    "Detected at node", headings ending in a colon): the last line that is none
    of those says what happened."""
    skip = ("[[", "File ", "Detected at node", "defined at", "Traceback")
    lines = [ln.strip() for ln in str(exc).splitlines()
             if ln.strip() and not ln.startswith((" ", "\t")) and not ln.strip().startswith(skip)]
    telling = [ln for ln in lines if not ln.endswith(":")] or lines   # ("Graph execution error:" heads a block)
    return f"{type(exc).__name__}: {telling[-1][:300]}" if telling else type(exc).__name__


def user_traceback(exc: BaseException) -> str:
    """The traceback as the user would see it, without runpy and runner frames."""
    here = os.path.dirname(os.path.abspath(__file__))
    tbe = traceback.TracebackException.from_exception(exc)
    frames = [f for f in tbe.stack
              if not (f.filename.startswith(here) or f.filename.startswith("<frozen runpy"))]
    tbe.stack = traceback.StackSummary.from_list(frames)
    return "".join(tbe.format())


def parse_args(argv: list[str]) -> tuple[str, str]:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m tf1gradfix.verify.runner_vN TRACE_DIR SCRIPT\n")
        raise SystemExit(64)
    return argv[0], argv[1]


def stop_here(trace, counter: budget.StepCounter, record) -> None:
    """End this side at the budget: record its variables, leave an end event, exit at once.

    os._exit, not an exception: the user's code must not catch it, and
    nothing after the cut (its finally blocks included) may run.
    """
    import traceback

    if counter.capped:   # the trace cap: its marker says where; the side ends at once, no cut event
        record_plots(trace, final=False)
        with contextlib.suppress(Exception):
            record()
        budget.leave_now(trace)
    if loop_cut.cut(counter.steps):   # the loop around this run ends; the program goes on
        trace.event("cut", steps=counter.steps, calls=counter.calls, loop=loop_cut.CUTS[-1][2])
        raise loop_cut.Cut
    trace.event("cut", steps=counter.steps, calls=counter.calls)
    record_plots(trace, final=False)
    try:
        record()
    except Exception:  # noqa: BLE001
        trace.event("note", text="could not record values at the cut:\n" + traceback.format_exc()[-1500:])
    budget.leave_now(trace)
