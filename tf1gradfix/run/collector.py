"""The cyclic garbage collector paused while one file is processed.

Processing a file builds millions of small objects (syntax trees, analysis
tables) that live as long as the file does. With the collector running, its
collections walk them again and again as they grow: in a file of 2,000
session blocks that was a fifth of the rewrite time, and it grew as the
square of the file. Paused, one collection of the young generation after
the file (everything made while paused is young) frees the file's cycles,
in time linear in what the file made; peak memory on that file rose 10 %
(benchmarks/session_blocks.py).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside; the young generation collected after (if it was on)."""
    if not gc.isenabled():   # (nested, or the caller chose to run without it)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
