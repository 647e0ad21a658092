"""A side's records are read back only under the run's seal and in sequence (trace_seal.py)."""

from __future__ import annotations

import json
import os

from tf1gradfix.verify import trace_seal


def _write(trace_dir: str, role: str, lines: list[str]) -> None:
    trace_seal.make_side_dirs(trace_dir)
    with open(trace_seal.side_file(trace_dir, role, "events.jsonl"), "w", encoding="utf-8") as fh:
        fh.write("".join(lines))


def _sealed(trace_dir: str, role: str, seq: int, kind: str = "note") -> str:
    return trace_seal.seal(trace_seal.token(trace_dir, role), json.dumps({"kind": kind, "seq": seq})) + "\n"


def test_sealed_records_in_sequence_are_read_and_a_torn_last_line_is_dropped(tmp_path):
    trace = str(tmp_path)
    _write(trace, "migrated", [_sealed(trace, "migrated", 0), _sealed(trace, "migrated", 1), '{"kind": "no'])
    events = trace_seal.load_events(trace, "migrated")
    assert [e["seq"] for e in events] == [0, 1]
    assert trace_seal.tampered({"migrated": events}, {}) is None


def test_unsealed_replayed_and_missing_records_are_tampering(tmp_path):
    trace = str(tmp_path)
    cases = {
        "unsealed": [_sealed(trace, "migrated", 0), json.dumps({"kind": "note", "seq": 1}) + "\n"],
        "the other side's": [_sealed(trace, "migrated", 0), _sealed(trace, "original", 1)],
        "a gap": [_sealed(trace, "migrated", 0), _sealed(trace, "migrated", 2)],
        "a repeat": [_sealed(trace, "migrated", 0), _sealed(trace, "migrated", 0)],
    }
    for what, lines in cases.items():
        _write(trace, "migrated", lines)
        events = trace_seal.load_events(trace, "migrated")
        reason = trace_seal.tampered({"migrated": events}, {})
        assert reason and "migrated program's trace was tampered with" in reason, what


def test_a_sealed_file_rewritten_without_the_seal_is_tampering(tmp_path):
    trace = str(tmp_path)
    trace_seal.make_side_dirs(trace)
    path = trace_seal.side_file(trace, "original", "final.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(trace_seal.seal(trace_seal.token(trace, "original"), json.dumps({"variables": {}})))
    assert trace_seal.load_json(trace, "original", "final.json") == {"variables": {}}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"variables": {}}, fh)
    loaded = {"final.json": trace_seal.load_json(trace, "original", "final.json")}
    assert "its final.json is not sealed" in trace_seal.tampered({}, {"original": loaded})


def test_the_secret_reaches_the_runner_over_a_pipe_and_leaves_the_environment(monkeypatch, tmp_path):
    fd = trace_seal.pipe_with(trace_seal.secret(str(tmp_path), "original"))
    monkeypatch.setenv(trace_seal.FD_ENV, str(fd))
    token, folder = trace_seal.receive()
    assert token == trace_seal.token(str(tmp_path), "original")
    assert folder == trace_seal.side_dir(str(tmp_path), "original")
    assert trace_seal.FD_ENV not in os.environ
