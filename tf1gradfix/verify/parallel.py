"""Several proofs at once (`-j N`): a thread per slot, results in the order given.

A proof spends its time waiting for its two programs, so a thread per slot is
enough; each slot has its own warm TensorFlow processes (pool.py keeps them per
thread: two per slot, some 300-500 MB each), so a program that hangs or stops
its zygote costs no other slot's proof. Results are handed back in input order
whatever order they finish in, so reports and summaries read the same for any
N; `finished` hears of each proof as it ends (a progress line). Only the main
thread takes stop signals (stopping.py): it kills every slot's runners, and the
slots, daemon threads, end with the process.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from tf1gradfix.verify import pool

Item = TypeVar("Item")
Result = TypeVar("Result")
WAIT = 0.5    # seconds the main thread waits at a time (so a stop signal is taken at once)


def slots(jobs: int | None, count: int) -> int:
    """Proofs run at once: as asked (default 1), never more than programs or cores."""
    return max(1, min(jobs or 1, count, os.cpu_count() or 1))


def in_order(items: Sequence[Item], prove: Callable[[Item], Result], jobs: int,
             finished: Callable[[int, Result], None] | None = None) -> Iterator[tuple[Item, Result]]:
    """(item, prove(item)) for each item, in the order of `items`, with up to `jobs` proofs
    running at once; `finished(index, result)` as each ends (in the order they end)."""
    if jobs <= 1 or len(items) <= 1:
        for index, item in enumerate(items):
            result = prove(item)
            yield item, result
            if finished is not None:
                finished(index, result)
        return
    todo: queue.Queue = queue.Queue()
    for index, item in enumerate(items):
        todo.put((index, item))
    done: queue.Queue = queue.Queue()
    stop = threading.Event()
    for _ in range(min(jobs, len(items))):
        threading.Thread(target=_slot, args=(todo, done, prove, stop), daemon=True).start()
    ready: dict[int, tuple[bool, object]] = {}
    try:
        for index, item in enumerate(items):
            while index not in ready:
                try:
                    at, ok, value = done.get(timeout=WAIT)
                except queue.Empty:
                    continue
                ready[at] = (ok, value)
                if ok and finished is not None:
                    finished(at, value)  # type: ignore[arg-type]
            ok, value = ready.pop(index)
            if not ok:
                raise value  # type: ignore[misc]
            yield item, value  # type: ignore[misc]
    finally:
        stop.set()


def _slot(todo: queue.Queue, done: queue.Queue, prove: Callable, stop: threading.Event) -> None:
    """One slot: prove items until none is left (or the caller stopped), then end its zygotes."""
    try:
        while not stop.is_set():
            try:
                index, item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((index, True, prove(item)))
            except BaseException as exc:  # noqa: BLE001 - raised in the main thread, in its turn
                done.put((index, False, exc))
    finally:
        pool.shutdown()
