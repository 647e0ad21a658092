"""How much of a side's printed output is kept and compared, and what a verdict says past it.

Each side's stdout and stderr go to files in the trace folder. The first
COMPARED bytes of stdout are parsed and compared; a pair where either side
printed more cannot be EQUIVALENT, since the rest was not compared: it is
NOT_COMPARABLE, and the reason says how much each side printed. A side that
writes more than STORED bytes to either stream is stopped (a program printing
without end would fill the temporary folder), and fails with that reason.
"""

from __future__ import annotations

import os

from tf1gradfix.verify import trace_cap, trace_seal

COMPARED = 4 * 1024 * 1024    # bytes of stdout parsed for printed numbers
STORED = 64 * 1024 * 1024     # bytes of stdout or stderr a side may write before it is stopped
EVENTS_MARGIN = 16 * 1024 * 1024   # past the trace cap: the recorder did not stop
ROLES = ("original", "migrated")


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def flooded(trace_dir: str, role: str) -> str | None:
    """The reason to stop `role` now if one of its streams passed STORED bytes, else None.
    (Its events trace stops itself at trace_cap's cap; past that and a margin, the recorder failed.)"""
    for stream in ("stdout", "stderr"):
        if _size(trace_seal.side_file(trace_dir, role, stream)) > STORED:
            return (f"stopped after writing more than {STORED >> 20} MiB to {stream} (the verifier keeps at most "
                    f"that much of a side's output)")
    if _size(trace_seal.side_file(trace_dir, role, "events.jsonl")) > trace_cap.limit() + EVENTS_MARGIN:
        return f"stopped: its events trace went past the {trace_cap.limit():,}-byte cap"
    return None


def uncompared(trace_dir: str) -> str | None:
    """Why an otherwise agreeing pair is not EQUIVALENT: a side printed past COMPARED, else None."""
    sizes = {role: _size(trace_seal.side_file(trace_dir, role, "stdout")) for role in ROLES}
    if max(sizes.values()) <= COMPARED:
        return None
    printed = ", the ".join(f"{role} printed {size:,} bytes" for role, size in sizes.items())
    return (f"the printed output was compared only up to its first {COMPARED >> 20} MiB: the {printed}; "
            "the numbers printed after that were not compared")
