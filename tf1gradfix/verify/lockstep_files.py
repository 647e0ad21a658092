"""The files by which the original hands its state to the migration in a lockstep run.

In a lockstep run (lockstep.py) the original writes, in ``TRACE_DIR/lockstep/``:

* ``state-K.npz`` before its training step K: the value of every variable of
  its graph (the model's, the optimizer's slots and its other variables),
  read by a run of their own before the step's run (a run that reads
  variables executes no other op, so the step computes what it would have);
  its metadata says which variable is which slot of which optimizer. After
  the last step (or at the ``--steps`` cut) the state the program ended with,
  marked ``final``;
* ``grads-K.npz`` after step K: the gradients each optimizer applied in it.

The migrated side reads each file once and removes it. The original stays at
most ``WINDOW`` states ahead, so a big model's states do not pile up on disk
(a migration that stays behind past the wait ends lockstep, refused);
it stops writing once the migration is done (``migrated.done``, written by
the orchestrator) or refused lockstep (``refused.json``, either side).

Arrays are NumPy's own format, bit for bit. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from tf1gradfix.verify import settings

ENV = "TF1GRADFIX_LOCKSTEP"              # "1": the runner runs in lockstep
TOLERANCES_ENV = "TF1GRADFIX_LOCKSTEP_TOLERANCES"   # "rtol atol": the migrated side compares each step
FOLDER = "lockstep"
MIGRATED_DONE = "migrated.done"
REFUSED = "refused.json"
WINDOW = 3          # states the original may be ahead of the migration
POLL = 0.01


def active() -> bool:
    return settings.get(ENV) == "1"


def folder(trace_dir: str) -> str:
    path = os.path.join(trace_dir, FOLDER)
    os.makedirs(path, exist_ok=True)
    return path


def state_path(where: str, step: int, graph: int | None = None) -> str:
    """The state before step `step`; `graph`: of a later graph whose first step it is, where
    the last graph's end state holds that step's name already."""
    return os.path.join(where, f"state-{step}.npz" if graph is None else f"state-{step}-graph{graph}.npz")


def grads_path(where: str, step: int) -> str:
    return os.path.join(where, f"grads-{step}.npz")


def write(path: str, arrays: dict, meta: dict) -> None:
    """`arrays` (name -> array) and `meta` (JSON) in one file, written aside and renamed."""
    names = list(arrays)
    tmp = f"{path}.tmp{os.getpid()}.npz"
    payload = {f"a{i}": np.asarray(arrays[n]) for i, n in enumerate(names)}
    np.savez(tmp, __meta__=np.array(json.dumps({**meta, "names": names})), **payload)  # type: ignore[arg-type]
    os.replace(tmp, path)


def read(path: str) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
        arrays = {n: data[f"a{i}"] for i, n in enumerate(meta["names"])}
    return arrays, meta


def stopped(where: str) -> bool:
    """The migration no longer reads states: it ended, or it refused lockstep."""
    return os.path.exists(os.path.join(where, MIGRATED_DONE)) or os.path.exists(os.path.join(where, REFUSED))


def refuse(where: str, side: str, why: str) -> None:
    path = os.path.join(where, REFUSED)
    if not os.path.exists(path):
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"side": side, "reason": why}, fh)
        os.replace(tmp, path)


def refusal(where: str) -> dict | None:
    try:
        with open(os.path.join(where, REFUSED), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def wait_for_room(where: str, deadline: float) -> bool:
    """Original: wait until the migration is fewer than WINDOW states behind; False
    when it will read no more (then nothing more is written). A migration still that
    far behind at the deadline stops lockstep (refused): writing on would pile a big
    model's states on disk without bound."""
    while True:
        if stopped(where):
            return False
        ahead = sum(1 for name in os.listdir(where) if name.startswith("state-") and name.endswith(".npz"))
        if ahead < WINDOW:
            return True
        if time.monotonic() > deadline:
            refuse(where, "original", f"the migration stayed {WINDOW} states behind the original until the wait ran "
                                      "out: lockstep stopped rather than pile states on disk")
            return False
        time.sleep(POLL)


def wait_for(path: str, where: str, original_done: str, deadline: float) -> bool:
    """Migrated: wait for the original's file; False if it will not come (the original
    ended without it, refused, or the wait passed the deadline)."""
    while not os.path.exists(path):
        if os.path.exists(os.path.join(where, REFUSED)) or time.monotonic() > deadline:
            return False
        if os.path.exists(original_done):
            return os.path.exists(path)
        time.sleep(POLL)
    return True


def final_step(where: str) -> int | None:
    """The step number of the original's final state, if it wrote one."""
    for name in os.listdir(where):
        if name.startswith("state-") and name.endswith(".npz"):
            try:
                _, meta = read(os.path.join(where, name))
            except (OSError, ValueError, KeyError):
                continue
            if meta.get("final"):
                return int(name[len("state-"):-len(".npz")])
    return None
