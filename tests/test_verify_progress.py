"""The progress line of a long verification (verify/progress.py): at a terminal only."""

from __future__ import annotations

import io
import json

from tf1gradfix.verify import trace_seal
from tf1gradfix.verify.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _append(folder, role: str, kinds: list[str], partial: str = "") -> None:
    trace_seal.make_side_dirs(str(folder))   # (each side's events are in its own folder)
    with open(trace_seal.side_file(str(folder), role, "events.jsonl"), "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps({"kind": k, "seq": i}) + "\n" for i, k in enumerate(kinds)) + partial)


def test_the_line_counts_each_sides_updates_as_they_are_written(tmp_path):
    screen = Terminal()
    shown = Progress(str(tmp_path), stream=screen, delay=0.0, every=0.0)
    _append(tmp_path, "original", ["start", "apply", "apply"])
    _append(tmp_path, "migrated", ["start", "apply"], partial='{"kind": "apply", "se')   # a line being written
    shown.tick()
    assert screen.getvalue().endswith("verifying: original 2 updates, migrated 1 updates, 0 s\x1b[K")
    _append(tmp_path, "migrated", [], partial='q": 9}\n')
    _append(tmp_path, "original", ["apply", "end"])
    shown.tick()
    assert "original 3 updates, migrated 2 updates" in screen.getvalue().rsplit("\r", 1)[-1]
    shown.close()
    assert screen.getvalue().endswith("\r\x1b[K"), "the line is cleared at the end"


def test_nothing_is_printed_where_stderr_is_not_a_terminal(tmp_path):
    log = io.StringIO()
    shown = Progress(str(tmp_path), stream=log, delay=0.0, every=0.0)
    _append(tmp_path, "original", ["apply"])
    shown.tick()
    shown.close()
    assert log.getvalue() == ""


def test_short_verifications_show_nothing(tmp_path):
    screen = Terminal()
    shown = Progress(str(tmp_path), stream=screen)     # the first two seconds are quiet
    shown.tick()
    shown.close()
    assert screen.getvalue() == ""
