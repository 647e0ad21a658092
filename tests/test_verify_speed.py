"""Costs of the verifier's own mechanisms that must not grow with the program (no TensorFlow here)."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import tracemalloc

from tf1gradfix.verify import pool


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
