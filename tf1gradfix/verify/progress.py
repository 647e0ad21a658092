"""A one-line progress report of a long verification, at a terminal only.

Real training scripts run for minutes; without a sign of life a verification
looks hung. Every half second (after the first two) the line says how many
updates each side has applied and how long it has run. It reads only the
bytes the runners appended to their event files since the last look, so it
costs nothing measurable, and it is silent where stderr is not a terminal
(CI logs, pipes).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from tf1gradfix.verify import trace_seal

_UPDATE = b'"kind": "apply"'
_ROLES = ("original", "migrated")


class Progress:
    def __init__(self, trace_dir: str, stream=None, delay: float = 2.0, every: float = 0.5):
        self.stream = stream if stream is not None else sys.stderr
        # (one proof at a time: proofs run side by side, parallel.py, each print one line as they finish)
        self.enabled = (bool(getattr(self.stream, "isatty", lambda: False)())
                        and threading.current_thread() is threading.main_thread())
        self.trace_dir, self.delay, self.every = trace_dir, delay, every
        self.start = time.monotonic()
        self.last = 0.0
        self.offsets = {role: 0 for role in _ROLES}
        self.updates = {role: 0 for role in _ROLES}
        self.shown = False

    def _read(self, role: str) -> None:
        path = trace_seal.side_file(self.trace_dir, role, "events.jsonl")
        try:
            with open(path, "rb") as fh:
                fh.seek(self.offsets[role])
                data = fh.read()
        except OSError:
            return
        cut = data.rfind(b"\n") + 1        # a line being written is read next time
        self.updates[role] += data[:cut].count(_UPDATE)
        self.offsets[role] += cut

    def tick(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last < self.every:
            return
        self.last = now
        for role in _ROLES:
            self._read(role)
        line = (f"verifying: original {self.updates['original']} updates, "
                f"migrated {self.updates['migrated']} updates, {now - self.start:.0f} s")
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
