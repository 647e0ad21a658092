"""A side's events trace stops at its cap or on a full disk, and the verdict says what was not compared."""

from __future__ import annotations

from pathlib import Path

import errno
import json
import os
import tempfile

import pytest

from tf1gradfix.verify import budget, trace_cap
from tf1gradfix.verify import runner_common as rc

CAP = 200_000


def _events(path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _trace(tmp_path, monkeypatch, cap=CAP):
    monkeypatch.setenv(trace_cap.CAP_ENV, str(cap))
    trace = rc.Trace(str(tmp_path), "original")
    trace.counter = budget.StepCounter(None)
    return trace


def test_the_trace_stops_at_its_cap_and_says_at_which_step(tmp_path, monkeypatch):
    trace = _trace(tmp_path, monkeypatch)
    for step in range(1, 200):
        trace.counter.steps = step
        trace.event("compute", loss=1.0, grads={"w": "x" * 10_000})
    trace.event("end", status="ok", code=0)
    path = tmp_path / "original.events.jsonl"
    assert path.stat().st_size <= CAP
    events = _events(path)
    mark = trace_cap.marker(events)
    assert mark is not None and mark["why"] == "cap" and 10 < mark["steps"] < 30
    assert [e["kind"] for e in events[-2:]] == [trace_cap.MARKER, "end"]
    assert trace.counter.capped and trace.counter.due(False)   # the side ends at its next step
    reason = trace_cap.uncompared({"original": events, "migrated": []})
    assert f"the original's events trace reached the 200,000 bytes cap at training step {mark['steps']}" in reason and "not compared" in reason


def test_the_runs_summaries_are_still_written_past_the_cap(tmp_path, monkeypatch):
    """Lockstep retries a drifting run only where the migration's steps ran in tf.functions,
    which the `functions` summary written at exit says: a capped trace keeps it."""
    trace = _trace(tmp_path, monkeypatch)
    for step in range(1, 200):
        trace.counter.steps = step
        trace.event("compute", loss=1.0, grads={"w": "x" * 10_000})
    trace.event("functions", graph_calls=3, eager_calls=0)
    trace.event("cut", step=40)
    trace.event("end", status="ok", code=0)
    kinds = [e["kind"] for e in _events(tmp_path / "original.events.jsonl")]
    assert kinds[-4:] == [trace_cap.MARKER, "functions", "cut", "end"]
    assert [e["seq"] for e in _events(tmp_path / "original.events.jsonl")] == list(range(len(kinds)))


def test_a_full_disk_leaves_whole_lines_and_a_marker_not_a_traceback(tmp_path, monkeypatch):
    trace = _trace(tmp_path, monkeypatch, cap=trace_cap.CAP)
    room = [50_000]

    class FullDisk:
        """os, with a disk that fills after `room` bytes (the failing write lands half)."""

        def __getattr__(self, name):
            return getattr(os, name)

        def write(self, fd, data):
            if len(data) > room[0]:
                os.write(fd, bytes(data[:room[0] // 2]))
                room[0] = 1_000   # truncating the torn line frees enough for the marker
                raise OSError(errno.ENOSPC, "No space left on device")
            room[0] -= len(data)
            return os.write(fd, data)

    monkeypatch.setattr(rc, "os", FullDisk())
    for step in range(1, 50):
        trace.counter.steps = step
        trace.event("compute", loss=1.0, grads={"w": "y" * 4_000})
    trace.event("end", status="ok", code=0)
    events = _events(tmp_path / "original.events.jsonl")   # every line whole
    mark = trace_cap.marker(events)
    assert mark is not None and mark["why"] == "No space left on device"
    assert [e["kind"] for e in events[-2:]] == [trace_cap.MARKER, "end"]
    assert "could not be written further (No space left on device)" in trace_cap.uncompared({"migrated": events})


def test_a_whole_trace_has_no_marker():
    assert trace_cap.uncompared({"original": [{"kind": "end"}], "migrated": []}) is None
    assert trace_cap.limit(lambda name, default: "") == trace_cap.CAP


PAIR_ORIGINAL = """
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((64, 32), np.float32), name="w")
x = tf.placeholder(tf.float32, [None, 64])
loss = tf.reduce_sum(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.001).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2000):
        sess.run(train, {x: np.ones((1, 64), np.float32)})
    print("w", sess.run(w).sum())
"""

PAIR_MIGRATED = """
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((64, 32), np.float32), name="w")
opt = tf.keras.optimizers.SGD(learning_rate=0.001)
for _ in range(2000):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(np.ones((1, 64), np.float32), w))
    opt.apply_gradients([(tape.gradient(loss, w), w)])
print("w", w.numpy().sum())
"""


@pytest.mark.tf
def test_a_pair_past_the_trace_cap_is_not_equivalent_and_its_folder_is_removed(tmp_path, monkeypatch):
    from tf1gradfix.verify.orchestrate import verify_pair

    original, migrated = tmp_path / "original.py", tmp_path / "migrated.py"
    original.write_text(PAIR_ORIGINAL)
    migrated.write_text(PAIR_MIGRATED)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv(trace_cap.CAP_ENV, str(300_000))
    kept = tmp_path / "kept"
    result = verify_pair(original, migrated, timeout=120, keep_trace=kept, lockstep_mode="off")
    assert result.verdict == "NOT_COMPARABLE", result.reason
    assert "reached the 300,000 bytes cap at training step" in result.reason, result.reason
    assert "not compared" in result.reason
    assert set(result.to_json()["trace_cap"]) == {"original", "migrated"}
    for role in ("original", "migrated"):
        events = kept / f"{role}.events.jsonl"
        assert events.stat().st_size <= 300_000
        assert trace_cap.marker(_events(events)) is not None
    assert result.elapsed < 100
    assert list(temp.iterdir()) == []    # the trace folder and both sides' working folders are gone


def test_a_runner_past_the_cap_is_stopped_and_one_that_could_not_write_says_disk_full(tmp_path, monkeypatch):
    from tf1gradfix.verify import output_cap, side_runs

    monkeypatch.setenv(trace_cap.CAP_ENV, "100")
    monkeypatch.setattr(output_cap, "EVENTS_MARGIN", 100)
    from tf1gradfix.verify import trace_seal

    trace_seal.make_side_dirs(str(tmp_path))
    Path(trace_seal.side_file(str(tmp_path), "original", "events.jsonl")).write_text("x" * 500)
    assert "events trace went past the 100-byte cap" in output_cap.flooded(str(tmp_path), "original")
    assert output_cap.flooded(str(tmp_path), "migrated") is None
    side = side_runs.SideResult("migrated", "m.py")
    side.returncode = trace_cap.DISK_FULL_EXIT
    side_runs.side_status(side, [{"kind": "start"}], False, None, 60)
    assert side.status == "failed" and "disk full" in side.reason
