"""Costs of the verifier's own mechanisms that must not grow with the program (no TensorFlow here)."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import tracemalloc

import numpy as np
import pytest

from tf1gradfix.verify import compare, compare_many, comparison, pool


class _FakeProcess:
    """The zygote's side of the command pipe: its reports are written into `stdout` by the test."""

    def __init__(self):
        read, self.write_end = os.pipe()
        self.stdout = os.fdopen(read, "rb", buffering=0)
        self.stdin = io.BytesIO()
        self.pid = os.getpid()

    def poll(self):
        return None

    def wait(self, timeout=None):
        self.waited = True
        return 0

    def report(self, *messages) -> None:
        os.write(self.write_end, b"".join(json.dumps(m).encode() + b"\n" for m in messages))


def _zygote() -> pool._Zygote:
    zygote = pool._Zygote.__new__(pool._Zygote)
    zygote.statuses, zygote._lock, zygote._buffer, zygote.ready = {}, threading.Lock(), b"", True
    zygote.requests = 0
    zygote.proc = _FakeProcess()
    return zygote


def test_a_reused_pid_does_not_inherit_the_exit_of_the_earlier_child():
    # The system reuses pids (pid_max is often 32768): a new child with the pid of a
    # reaped one must not look as if it had exited already (it was killed before it
    # started: "the runner could not start the program (exit code 0)").
    zygote = _zygote()
    zygote.proc.report({"pid": 4242, "id": 1})
    first = zygote.run(["m"], {}, "/", os.devnull, os.devnull)
    zygote.proc.report({"exited": 4242, "status": 0})
    assert first.wait() == 0
    zygote.proc.report({"pid": 4242, "id": 2})
    second = zygote.run(["m"], {}, "/", os.devnull, os.devnull)
    assert second.pid == 4242
    assert not second.exited()
    zygote.proc.report({"exited": 4242, "status": 3})
    assert second.wait() == 3


def test_a_late_answer_to_an_earlier_request_is_not_taken_for_this_one():
    zygote = _zygote()
    zygote.requests = 1                    # a request given up on
    zygote.proc.report({"pid": 7, "id": 1}, {"pid": 8, "id": 2})
    assert zygote.run(["m"], {}, "/", os.devnull, os.devnull).pid == 8


def test_a_zygote_that_does_not_answer_is_closed_and_the_run_starts_afresh(monkeypatch):
    monkeypatch.delenv(pool.NO_POOL, raising=False)
    monkeypatch.setattr(pool, "RUN_REPLY_WAIT", 0.05)
    env = dict(os.environ)
    zygote = _zygote()
    zygote.key = (True, sys.executable, pool._startup_key(env))
    monkeypatch.setitem(pool._ZYGOTES, True, zygote)
    assert pool.start(True, ["m"], env, "/", os.devnull, os.devnull) is None
    assert True not in pool._ZYGOTES and zygote.proc.waited, "a fork it answers later would run twice"


def test_naming_a_variable_does_not_build_a_million_candidate_names():
    from tf1gradfix.verify import runner_v1

    tracer = type("T", (), {"labels": {}, "graphs_seen": {}})()
    graph = object()
    tracemalloc.start()
    try:
        labels = [runner_v1.V1Tracer.label(tracer, graph, f"dense/kernel{i % 3}:0") for i in range(3)]
        labels.append(runner_v1.V1Tracer.label(tracer, object(), "dense/kernel0:0"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert labels == ["dense/kernel0", "dense/kernel1", "dense/kernel2", "dense/kernel0_1"]
    assert peak < 1 << 20, f"{peak} bytes to name four variables"


def _pairs():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 3)).astype(np.float32)
    odd = base.copy()
    odd[1, 2] = np.nan
    inf = base.copy()
    inf[0, 0] = np.inf
    return [
        (base, base), (base, base * (1 + 1e-5)), (base, base + 1e-2), (1.25, 1.25000001), (1.0, 2.0),
        (np.float64(3.0), np.float64(3.0)), (odd, odd), (odd, base), (inf, inf), (inf, base),
        (np.arange(6), np.arange(6)), (np.arange(6), np.arange(6) + 1), (np.array([True, False]), np.array([True, True])),
        (np.zeros((0, 3)), np.zeros((0, 3))), (base, base[:2]), (np.array(["a"]), np.array(["a"])),
        (np.array([1 + 1j]), np.array([1 + 1j])), (np.zeros(5), np.array([0, 0, 1e-7, 0, -1e-7])),
        (np.full(3, 1e300), np.full(3, -1e300)), (np.array([0.0, -0.0, 5.0, 5.0]), np.array([0.0, 0.0, 5.1, 5.1])),
    ]


@pytest.mark.filterwarnings("ignore:Casting complex values")
@pytest.mark.parametrize("rtol,atol", [(1e-3, 1e-6), (0.0, 0.0), (0.5, 1e-2)])
def test_pairs_tested_together_get_what_closeness_gives_each(rtol, atol, monkeypatch):
    pairs = _pairs()
    monkeypatch.setattr(compare_many, "BATCH_ELEMENTS", 7)    # several batches
    together = compare_many.closeness_many(pairs, rtol, atol)
    for (a, b), got in zip(pairs, together):
        alone = comparison.closeness(a, b, rtol, atol)
        if got is None:
            a, b = np.asarray(a), np.asarray(b)
            assert not (compare_many.simple(a, b) and alone["ok"]), (a, b)
        else:
            assert got == alone, (a, b)


def test_a_long_agreeing_trace_is_compared_without_a_closeness_call_per_quantity(monkeypatch):
    from tf1gradfix.verify.runner_common import encode_array

    def events(scale):
        out = []
        for step in range(500):
            g = {"w": encode_array(np.full((3, 1), step * scale, np.float32)), "b": encode_array(np.ones(1, np.float32))}
            out += [{"kind": "compute", "seq": 2 * step, "loss": float(step), "grads": g, "none": []},
                    {"kind": "apply", "seq": 2 * step + 1, "grads": g}]
        return out

    calls = []
    real = comparison.closeness
    monkeypatch.setattr(comparison, "closeness", lambda *a, **k: calls.append(1) or real(*a, **k))
    same = compare.compare_traces({"events": events(1.0), "final": None, "stdout": ""},
                                  {"events": events(1.0), "final": None, "stdout": ""})
    assert same.equivalent and same.stats["gradient"].compared == 1000 and same.stats["loss"].compared == 500
    assert len(calls) < 10, f"{len(calls)} one-by-one tests"
    calls.clear()
    off = compare.compare_traces({"events": events(1.0), "final": None, "stdout": ""},
                                 {"events": events(1.01), "final": None, "stdout": ""})
    assert off.first.describe().startswith("step 2, gradient of w")
