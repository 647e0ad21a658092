"""The migration's side of a lockstep run: every training step starts from the original's state.

Before an outermost ``tf.function`` call that may begin training step K
(K >= 2) the migration waits for the original's state before its step K
(lockstep_files.py) and then

1. compares the change its step K-1 made (its values now minus the
   original's state before step K-1, from which it started) with the
   original's change (its state before K minus before K-1): every variable
   and every optimizer slot, in the original's terms (RNN cells folded,
   Keras slots mapped back through rules/optimizer_state.toml), element by
   element with the verifier's tolerances plus one unit in the last place of
   the value (the change is known only to the variable's precision);
2. overwrites every matched variable and every mapped slot with the
   original's state before step K.

At each update the optimizer is handed the gradients the original applied in
that step (the migration's own were recorded and compared first): a step is
thus proven as two maps from equal inputs to equal results, state to
gradients and (state, gradients) to the next state, each at the tolerance,
and Adam's normalization of gradient entries that are rounding noise cannot
turn tolerated differences into different steps. Step 1 starts from the
initial values the plain run gives (no slot is overwritten: an optimizer's
own starting state is part of the migration). Keras's `iterations` is never
overwritten. Anything this cannot follow is refused: the side ends at once
and the plain verdict stands.
"""

from __future__ import annotations

import functools
import os
from typing import cast

import numpy as np

from tf1gradfix.rules.catalog import _read
from tf1gradfix.verify import budget, cell_weights, comparison
from tf1gradfix.verify import lockstep_files as files
from tf1gradfix.verify import runner_common as rc
from tf1gradfix.verify import settings

KERAS_OPTIONS = ("clipnorm", "clipvalue", "global_clipnorm", "gradient_accumulation_steps", "loss_scale_factor")


TABLE_ENV = "TF1GRADFIX_LOCKSTEP_TABLE"   # another table (a TOML path): how tests/test_lockstep.py
                                         # shows that a wrong mapping diverges


@functools.lru_cache(maxsize=None)
def table() -> dict:
    """(v1 optimizer class, Keras optimizer class) -> its row of optimizer_state.toml."""
    other = settings.get(TABLE_ENV)
    if other:
        import tomllib

        with open(other, "rb") as fh:
            rows = tomllib.load(fh)["state"]
    else:
        rows = _read("optimizer_state.toml")["state"]
    return {(row["v1"], row["keras"]): row for row in rows}


class Refused(Exception):
    """Lockstep cannot follow this program; the message says why."""


def _change(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return after.astype(np.float64) - before.astype(np.float64)


def compare_change(before, after, mine, rtol: float, atol: float) -> dict:
    """The closeness of the original's change (before -> after) and the migration's (before -> mine)."""
    if before.shape != after.shape or mine.shape != after.shape:
        return {"ok": False, "reason": f"shape {list(after.shape)} vs {list(mine.shape)}", "elements": int(after.size)}
    if after.dtype.kind not in "fiu" or mine.dtype.kind not in "fiu":
        same = bool(np.array_equal(after, mine))
        return {"ok": same, "reason": "" if same else "values differ", "elements": int(after.size),
                "abs_err": 0.0, "rel_err": 0.0, "max_abs_err": 0.0, "max_rel_err": 0.0}
    d_o, d_m = _change(before, after), _change(before, mine)
    ulp: object = 0.0
    if after.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ulp = np.spacing(np.maximum(np.abs(after), np.abs(mine.astype(after.dtype)))).astype(np.float64)
        ulp = np.where(np.isfinite(ulp), ulp, 0.0)
    c = comparison.closeness(d_o, d_m, rtol, atol, extra_tol=ulp)
    out = {k: c.get(k) for k in ("ok", "abs_err", "rel_err", "index", "reason", "max_abs_err", "max_rel_err",
                                 "max_index", "max_ok", "rel_beyond_atol")}
    at = tuple(c["index"]) if c["index"] is not None else ()
    out.update(elements=int(after.size), original=float(d_o[at]) if d_o.size else None,
               migrated=float(d_m[at]) if d_m.size else None)
    return out


class Lockstep:
    """Re-synchronizes the migrated side with the original before each training step."""

    def __init__(self, tracer, wait: float):
        self.tracer, self.tf, self.wait = tracer, tracer.tf, wait
        self.folder = files.folder(tracer.trace.dir)
        rtol, atol = settings.get(files.TOLERANCES_ENV, "").split() or ("0.001", "1e-6")
        self.rtol, self.atol = float(rtol), float(atol)
        self.base: tuple | None = None   # (K, arrays, meta): the original's state before the step in progress
        self.trains: dict = {}      # id(tf.function) -> whether its last call trained
        self.optimizers: list = []  # the optimizers the migration applied, checked against the table
        self.rows: dict = {}        # id(optimizer) -> its row (None: a kept v1 optimizer)
        self.originals: dict = {}   # id(optimizer) -> the index of its original in the state's optimizers
        self.grads: tuple | None = None  # (K, arrays, meta): the gradients the original applied in step K
        self.applies = 0            # updates of the step in progress
        self.built: set = set()     # optimizers whose state was checked after their first update
        self.graph = 0              # the index of the original's graph the states are of

    # -- refusing -------------------------------------------------------------------
    def refuse(self, why: str) -> None:
        """End this side now: nothing after this could be compared in lockstep."""
        files.refuse(self.folder, "migrated", why)
        trace = self.tracer.trace
        trace.event("lockstep", status="refused", side="migrated", reason=why[:500])
        budget.leave_now(trace)

    def guarded(self, what, *args):
        try:
            return what(*args)
        except Refused as exc:
            self.refuse(str(exc))
        except Exception as exc:  # noqa: BLE001 - a lockstep fault is a refusal, never the program's failure
            self.refuse(f"lockstep could not follow the program ({type(exc).__name__}: {exc})")

    # -- step boundaries --------------------------------------------------------------
    def before_call(self, fn) -> None:
        """An outermost tf.function call: if it may train, its step starts from the original's state."""
        if self.trains.get(id(fn)) is False:
            return
        step = self.tracer.budget.steps + 1
        if self.base is None or self.base[0] < step:
            self.guarded(self.sync, step, True)

    def after_call(self, fn, steps_before: int) -> None:
        self.trains[id(fn)] = self.tracer.budget.steps > steps_before

    def step_outside_function(self) -> None:
        self.refuse("a training step of the migration runs outside a tf.function (lockstep starts each step "
                    "from the original's state before the function is called)")

    def at_exit(self) -> None:
        """Compare the last step's change with the state the original ended with."""
        step = self.tracer.budget.steps + 1
        if step >= 2 and (self.base is None or self.base[0] < step):
            self.guarded(self.sync, step, False)

    def sync(self, step: int, inject: bool) -> None:
        path = files.state_path(self.folder, step)
        done = os.path.join(self.tracer.trace.dir, rc.ORIGINAL_DONE)
        if not files.wait_for(path, self.folder, done, _deadline(self.wait)):
            refused = files.refusal(self.folder)
            if refused:
                raise Refused(refused["reason"])
            last = files.final_step(self.folder)
            raise Refused(f"the original has no state before step {step}" + (
                f" (it ended after {last - 1} steps)" if last else ""))
        arrays, meta = files.read(path)
        os.remove(path)
        self.follow_graph(meta)
        if step >= 2:
            if self.base is None or self.base[0] != step - 1:
                raise Refused(f"the original's state before step {step - 1} was not taken")
            self.compare(step - 1, self.base[1], arrays)
            if inject:
                self.inject(arrays, meta)
        self.base = (step, arrays, meta)

    def follow_graph(self, meta: dict) -> None:
        """A state of the original's next graph: the optimizers met so far were the last graph's."""
        if meta.get("graph", 0) != self.graph:
            self.graph = meta.get("graph", 0)
            self.optimizers, self.rows, self.originals, self.built = [], {}, {}, set()

    def next_graph(self, step: int) -> None:
        """The first update of step `step` where the state it started from is the end of the
        original's last graph: the state the original's next graph starts this step from."""
        meta = cast(tuple, self.base)[2]
        if not meta.get("final"):
            return
        path = files.state_path(self.folder, step, meta["graph"] + 1)
        done = os.path.join(self.tracer.trace.dir, rc.ORIGINAL_DONE)
        if not files.wait_for(path, self.folder, done, _deadline(self.wait)):
            return
        arrays, meta = files.read(path)
        os.remove(path)
        self.follow_graph(meta)
        self.base = (step, arrays, meta)

    # -- the state in the original's terms ---------------------------------------------
    def own_state(self, meta: dict) -> dict:
        tracer = self.tracer
        values = {name: var.numpy() for name, var in tracer.created if id(var) in tracer.mapped}
        state = tracer.cells.fold(values, True)
        for opt in self.optimizers:
            if self.rows[id(opt)] is not None:
                state.update(self.keras_slots(opt, meta))
        return state

    def keras_slots(self, opt, meta: dict) -> dict:
        """The Keras optimizer's slots as the original's slot variables (label -> array)."""
        row, out, cells = self.rows[id(opt)], {}, {}   # type: ignore[var-annotated]
        for i, var in enumerate(opt._trainable_variables):
            name = self.tracer.source_name(var, i)
            for v1_slot, attr in row["slots"].items():
                value = np.asarray(getattr(opt, attr)[i].numpy()) / self.scale(opt, row, v1_slot)
                if name.endswith(cell_weights.MARK):
                    prefix, _, leaf = name[: -len(cell_weights.MARK)].rpartition("/")
                    cells.setdefault((prefix, v1_slot), {})[leaf] = value
                else:
                    out[self.slot_label(meta, name, v1_slot, opt)] = value
        for (prefix, v1_slot), leaves in cells.items():
            folded = self.tracer.cells.by_prefix(prefix).fold(leaves, False)
            if folded is None:
                raise Refused(f"the optimizer does not train every weight of the cell {prefix}")
            out.update({self.slot_label(meta, n, v1_slot, opt): v for n, v in folded.items()})
        return out

    def slot_label(self, meta: dict, variable: str, slot: str, opt=None) -> str:
        """The original's slot variable of `variable` kept by `opt`'s original optimizer."""
        entries = meta.get("optimizers", [])
        index = self.originals.get(id(opt))
        for entry in entries if index is None else [entries[index]]:
            if slot in entry["slots"].get(variable, {}):
                return entry["slots"][variable][slot]
        raise Refused(f"the original has no slot {slot!r} for {variable}")

    @staticmethod
    def scale(opt, row: dict, v1_slot: str) -> float:
        spec = row.get("scale", {}).get(v1_slot)
        if spec is None:
            return 1.0
        return (-1.0 if spec.startswith("-") else 1.0) * float(np.asarray(getattr(opt, spec.lstrip("-"))))

    def inject(self, arrays: dict, meta: dict) -> None:
        """Overwrite every matched variable and mapped slot with the original's state."""
        tracer = self.tracer
        earlier, known = set(meta.get("earlier", ())), meta.get("known")
        for name, var in tracer.created:
            if id(var) not in tracer.mapped or name in earlier:
                continue   # (a variable of a graph the original trained before this one)
            value = self.keras_layout(name, arrays, True)
            if value is None and known is not None and name not in known:
                continue   # (a variable of a graph the original has not built yet: it starts from its initial value)
            if value is None:
                raise Refused(f"the original's state has no {name}")
            var.assign(np.asarray(value).astype(var.dtype.as_numpy_dtype))
        for opt in self.optimizers:
            row = self.rows[id(opt)]
            if row is None:
                continue
            for i, var in enumerate(opt._trainable_variables):
                name = tracer.source_name(var, i)
                for v1_slot, attr in row["slots"].items():
                    labels = {n: self.slot_label(meta, n, v1_slot, opt) for n in self.original_names(name)}
                    value = self.keras_layout(name, {n: arrays[label] for n, label in labels.items()}, False)
                    slot = getattr(opt, attr)[i]
                    slot.assign(np.asarray(value * self.scale(opt, row, v1_slot)).astype(slot.dtype))

    def original_names(self, name: str) -> list:
        """The original variables a migrated variable's trace name stands for."""
        if not name.endswith(cell_weights.MARK):
            return [name]
        prefix = name[: -len(cell_weights.MARK)].rpartition("/")[0]
        return [f"{prefix}/{n}" for n in self.tracer.cells.by_prefix(prefix).layout["tf1"]]

    def keras_layout(self, name: str, arrays: dict, values: bool):
        """The migrated variable `name`'s value from the original's arrays (by original name)."""
        if not name.endswith(cell_weights.MARK):
            return arrays.get(name)
        prefix, _, leaf = name[: -len(cell_weights.MARK)].rpartition("/")
        cell = self.tracer.cells.by_prefix(prefix)
        return cell.keras_value(leaf, {n: arrays[f"{prefix}/{n}"] for n in cell.layout["tf1"]}, values)

    # -- comparing one step's change ------------------------------------------------------
    def compare(self, step: int, before: dict, after: dict) -> None:
        mine = self.own_state(self.base[2])
        results = {}
        for label in sorted(mine):
            if label in before and label in after:
                results[label] = compare_change(before[label], after[label], np.asarray(mine[label]),
                                                self.rtol, self.atol)
        self.tracer.trace.event("step_change", step=step, results=results,
                                left=sorted(set(after) - set(results))[:20] if step == 1 else [])

    # -- updates ---------------------------------------------------------------------------
    def substitute(self, opt, grads: list, variables: list) -> list:
        """The gradients the original applied in this step, for the optimizer to apply."""
        return self.guarded(self._substitute, opt, list(grads), list(variables))

    def _substitute(self, opt, grads: list, variables: list) -> list:
        tracer, step = self.tracer, self.tracer.budget.steps
        if self.base is None or self.base[0] != step:
            raise Refused("an update outside a step that started from the original's state")
        if self.grads is None or self.grads[0] != step:
            self.load_grads(step)
        names = [tracer.source_name(v, i) for i, v in enumerate(variables)]
        if id(opt) not in self.rows:
            self.next_graph(step)
            self.check_optimizer(opt, names)
        wanted = {n for name, g in zip(names, grads) if g is not None for n in self.original_names(name)}
        _, arrays, meta = self.grads
        matches = [j for j, applied in enumerate(meta["applies"]) if applied is not None and set(applied) == wanted]
        if not matches:
            raise Refused(f"update {self.applies + 1} of step {step} applies to other variables than the "
                          f"original's updates of that step")
        j = matches[0]
        meta["applies"][j] = None   # (taken)
        self.applies += 1
        out = []
        for name, grad, var in zip(names, grads, variables):
            if grad is None:
                out.append(None)
                continue
            if isinstance(grad, self.tf.IndexedSlices):
                raise Refused(f"the gradient of {name} is applied as slices (IndexedSlices); lockstep hands "
                              f"the optimizer the original's dense gradient, which a sparse update may apply otherwise")
            value = self.keras_layout(name, {n: arrays[f"{j}:{n}"] for n in self.original_names(name)}, False)
            if list(np.shape(value)) != [int(d) for d in var.shape]:
                raise Refused(f"the original's gradient of {name} has shape {list(np.shape(value))}")
            out.append(self.tf.constant(np.asarray(value), dtype=var.dtype))
        return out

    def load_grads(self, step: int) -> None:
        path = files.grads_path(self.folder, step)
        done = os.path.join(self.tracer.trace.dir, rc.ORIGINAL_DONE)
        if not files.wait_for(path, self.folder, done, _deadline(self.wait)):
            raise Refused(f"the original applied no gradients in step {step}")
        arrays, meta = files.read(path)
        os.remove(path)
        self.grads, self.applies = (step, arrays, meta), 0

    def check_optimizer(self, opt, names: list) -> None:
        """The original optimizer of these variables, and the row that maps its state to `opt`'s."""
        meta = self.base[2]
        wanted = {n for name in names for n in self.original_names(name)}
        index = self.original_of(opt, meta.get("optimizers", []), wanted)
        if index is None:
            raise Refused(f"no optimizer of the original updates {', '.join(sorted(wanted)[:4])}")
        self.originals[id(opt)] = index
        originals = [meta["optimizers"][index]]
        v1 = originals[0]["class"]
        kind = type(opt).__name__
        if not type(opt).__module__.startswith("keras"):
            if kind != v1:
                raise Refused(f"the migration keeps the v1 optimizer {kind} where the original uses {v1}")
            self.rows[id(opt)] = None
        else:
            row = table().get((v1, kind))
            if row is None:
                raise Refused(f"no lockstep mapping of the state of v1 {v1} to Keras {kind} "
                              f"(rules/optimizer_state.toml)")
            self.check_keras(opt, row, originals[0], wanted)
            self.rows[id(opt)] = row
        self.optimizers.append(opt)

    def original_of(self, opt, entries: list, wanted: set) -> int | None:
        """The original optimizer `opt` stands for. Two optimizers may both update a
        variable (overlapping var_lists: each keeps its own slots for it, `w/Adam` and
        `w/Adam_2`), and one may list variables it never gets a gradient for (no slots
        there): the one whose slotted variables are exactly `wanted`, else the first not
        yet taken by another of the migration's optimizers that covers them."""
        taken = {k for o, k in self.originals.items() if o != id(opt)}
        fits = [k for k, o in enumerate(entries) if wanted <= set(o["slots"])]
        exact = lambda k: {v for v, slots in entries[k]["slots"].items() if slots} == wanted   # noqa: E731
        return min(fits, key=lambda k: (not exact(k), k in taken, k), default=None)

    def check_keras(self, opt, row: dict, original: dict, wanted: set) -> None:
        for attr in KERAS_OPTIONS:
            if getattr(opt, attr, None) not in (None, 1):
                raise Refused(f"the Keras optimizer's {attr}={getattr(opt, attr)} acts inside apply, where "
                              "lockstep hands it the original's gradients")
        if getattr(opt, "use_ema", False):
            raise Refused("the Keras optimizer keeps a moving average of the weights (use_ema)")
        for attr, value in row.get("refuse", {}).items():
            if getattr(opt, attr, None) == value:
                raise Refused(f"Keras {type(opt).__name__}({attr}={value!r}) has no v1 counterpart")
        for name in wanted:
            if set(original["slots"][name]) != set(row["slots"]):
                raise Refused(f"the original's {original['class']} keeps slots {sorted(original['slots'][name])} "
                              f"for {name}; the mapping has {sorted(row['slots'])}")

    def after_apply(self, opt, variables: list) -> None:
        """After an update (the optimizer has built its state): every variable of a Keras
        optimizer is a mapped slot (or its step counter or rate), every slot of a kept v1
        optimizer is the original's, matched by name; else lockstep cannot give them the
        original's values."""
        if id(opt) not in self.rows or id(opt) in self.built:
            return
        self.built.add(id(opt))
        row, tracer = self.rows[id(opt)], self.tracer
        if row is not None:
            for v1_slot, attr in row["slots"].items():
                if len(getattr(opt, attr, None) or ()) != len(opt._trainable_variables):
                    self.refuse(f"Keras {type(opt).__name__} keeps no {attr.lstrip('_')} for each variable where "
                                f"v1 {row['v1']} keeps the slot {v1_slot!r}")
            mapped = {id(v) for attr in row["slots"].values() for v in getattr(opt, attr)}
            own = {id(opt.iterations), id(getattr(opt, "_learning_rate", None))}
            other = [getattr(v, "path", None) or v.name for v in opt.variables if id(v) not in mapped | own]
            if other:
                self.refuse(f"the Keras optimizer keeps state without a v1 counterpart: {', '.join(other[:4])}")
            return
        known = {label for o in self.base[2].get("optimizers", []) for slots in o["slots"].values()
                 for label in slots.values()}
        for i, var in enumerate(variables):
            for slot in opt.get_slot_names():
                made = opt.get_slot(var, slot)
                if made is not None and (id(made) not in tracer.mapped or tracer.names.get(id(made)) not in known):
                    self.refuse(f"the kept optimizer's slot {slot!r} of {tracer.source_name(var, i)} is not "
                                "matched to the original's by name")


def _deadline(wait: float) -> float:
    import time

    return time.monotonic() + wait
