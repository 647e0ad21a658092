"""The migrated side's variables, each paired with the original's of the same weight and
given its initial value, so both programs start from the same point.

A variable is paired by name, by an unambiguous scope difference, or by layer order
(V2Variables.match); the original's values come from its trace folder (``init.json``),
waited for while the original is still building graphs. Part of the migrated side's
tracer (runner_v2.V2Tracer), whose state these methods share.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from tf1gradfix.rules import contrib
from tf1gradfix.verify import cell_weights, initial_values
from tf1gradfix.verify import runner_common as rc

LEAF_ALIASES = contrib.variable_aliases()   # Keras variable name -> the TF1 names of the same weight


def _shape(entry) -> list:
    return list(entry["value"].get("shape", []))


def _same_kind(a, b) -> bool:
    """Same dtype (traces store booleans as int8)."""
    return a == b or (b.kind == "b" and a == np.int8)


class V2Variables(rc.Reentrancy):
    """The variable creator of the migrated side and the pairing of its variables (the
    tracer's fields: init, taken, layer_pairs, created, names, mapped, used...)."""

    def load_init(self) -> dict:
        if self.init is None:
            path = os.path.join(self.trace.dir, rc.INIT_FILE)
            deadline, start = time.monotonic() + self.wait, time.monotonic()
            while not os.path.exists(path) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not self.read_init(path):
                self.init, self.init_final = {}, True
                self.trace.event("note", text=f"no initial values from the original after {self.wait:.0f} s")
            self.trace.event("init_wait", seconds=round(time.monotonic() - start, 3), count=len(self.init))
        return self.init

    def read_init(self, path: str) -> bool:
        import json
        try:
            stamp = os.stat(path).st_mtime_ns
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return False
        self.init, self.init_stamp = data.get("variables", {}), stamp
        self.init_final = data.get("final", True)
        return True

    def later_init(self) -> bool:
        """Wait for the original to read the variables of a graph it builds
        later (a program of several graphs); False once it has no more."""
        if self.init_final:
            return False
        path = os.path.join(self.trace.dir, rc.INIT_FILE)
        done = os.path.join(self.trace.dir, rc.ORIGINAL_DONE)
        deadline, start = time.monotonic() + self.wait, time.monotonic()
        while time.monotonic() < deadline:
            exited = os.path.exists(done)
            try:
                if os.stat(path).st_mtime_ns != self.init_stamp and self.read_init(path):
                    self.trace.event("init_wait", seconds=round(time.monotonic() - start, 3), count=len(self.init))
                    return True
            except OSError:
                pass
            if exited:
                break
            time.sleep(0.02)
        self.init_final = True
        return False

    def unique(self, base: str) -> str:
        """Uniquify like a TF1 graph does: w, w_1, w_2, ..."""
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name

    @staticmethod
    def keras_path():
        """Keras 3 names its tf.Variable by the short name; its path matches TF1."""
        frame = sys._getframe(2)
        for _ in range(16):
            if frame is None:
                return None
            owner = frame.f_locals.get("self")
            if owner is not None and isinstance(getattr(owner, "_path", None), str) and any(
                    c.__name__ == "Variable" and c.__module__.startswith("keras")
                    for c in type(owner).__mro__):
                return owner._path
            frame = frame.f_back
        return None

    def creator(self, next_creator, **kwargs):
        if self.graph_calls.tracing():
            self.graph_calls.refuse("it creates a variable when traced")
        self.randomness.creating += 1
        try:
            var = next_creator(**kwargs)
        finally:
            self.randomness.creating -= 1
        if not self.tf.executing_eagerly():
            return var
        self.randomness.variable_created()
        try:
            self.inject(var)
        except Exception as exc:  # noqa: BLE001 - report, never break the program
            self.trace.event("unmatched", name=rc.strip_name(var.name), shape=[], trainable=bool(var.trainable),
                             error=f"{type(exc).__name__}: {exc}"[:300])
        return var

    def inject(self, var) -> None:
        """Give ``var`` the original's initial value of the same name, and record the mapping."""
        base = self.keras_path() or rc.strip_name(var.name)
        name = self.unique(base)
        init = self.load_init()
        shape = [int(d) for d in var.shape]
        dtype = var.dtype.as_numpy_dtype
        pairs = dict(self.layer_pairs)
        cell = cell_weights.keras_cell() if var.trainable else None
        if cell is not None and self.cell_weight(var, cell, name, init, dtype):
            return
        original, how = self.match(name, shape, init)
        while original is None and var.trainable and self.later_init():
            self.layer_pairs = dict(pairs)   # a failed match is no verdict while more variables may come
            init = self.init
            original, how = self.match(name, shape, init)
        # Traces use the original's name so both sides speak of the same variable.
        self.created.append((original or name, var))
        self.names[id(var)] = original or name
        if original is None:
            self.trace.event("unmatched", name=name, shape=shape, trainable=bool(var.trainable))
            return
        self.taken.add(original)
        value = rc.decode_array(init[original]["value"])
        if list(value.shape) != shape or not _same_kind(value.dtype, np.dtype(dtype)):
            self.trace.event("mismatch", name=name, original=original,
                             original_shape=list(value.shape), migrated_shape=shape,
                             original_dtype=str(value.dtype), migrated_dtype=str(np.dtype(dtype)))
            return
        self.check_own(var, original, value, init[original].get("random"))
        var.assign(np.asarray(value).astype(dtype))
        self.mapped.add(id(var))
        self.trace.event("mapped", original=original, migrated=name, created_as=base, matched_by=how,
                         shape=shape, trainable=bool(var.trainable))

    def check_own(self, var, original: str, value, random) -> None:
        """The value the migration gave ``var`` itself, against the original's (initial_values.py)."""
        try:
            own = var.numpy()
        except Exception:  # noqa: BLE001 - an uninitialized variable: nothing of its own to check
            own = None
        self.trace.event("init_check", original=original,
                         **initial_values.own_check(original, own, value, random, self.own_draws))

    def cell_weight(self, var, cell, name: str, init: dict, dtype) -> bool:
        """A Keras RNN cell's weight from blocks of the original cell's variables (cell_weights.py)."""
        hit = self.cells.inject(var, cell, init, self.taken, rc.decode_array)
        if hit is None:
            return False
        value, traced = hit
        var.assign(np.asarray(value).astype(dtype))
        self.created.append((traced, var))
        self.names[id(var)] = traced
        self.mapped.add(id(var))
        self.trace.event("mapped", original=traced[: -len(cell_weights.MARK)].rpartition("/")[0], migrated=name,
                         created_as=name, matched_by="rnn cell layout", shape=list(value.shape), trainable=True)
        return True

    def match(self, name: str, shape: list, init: dict):
        """The original variable for ``name`` and how it was found.

        1. ``name``: the same name (a Keras ``kernel``/``bias`` also takes a
           contrib layer's ``weights``/``biases`` of the same layer).
        2. ``scope``: an unambiguous scope difference.  Keras 3 prefixes the
           model's name (``small_cnn/dense/kernel``) where TF1 layers had none
           (``dense/kernel``), and TF1 programs often wrap everything in one
           more scope than the migration.
        3. ``layer order``: layers named differently on the two sides
           (``conv1`` vs TF1's automatic ``conv2d``).  A layer's first
           variable takes the first free original variable, in the
           original's creation order, with the same last name component
           (``kernel``, ``bias``, ``gamma``), if it has the same shape; that
           pairs the layers (``conv1`` -> ``conv2d``) and the layer's other
           variables go to the same original layer or stay unmatched.  Both
           programs create a layer's variables when it is first called, so
           creation order is call order; a layer that does not fit the next
           original one is left unmatched rather than paired out of order.
        """
        free = [n for n in init if n not in self.taken]
        prefix, _, leaf = name.rpartition("/")
        # a contrib layer's `weights`/`biases` are a Keras layer's `kernel`/`bias` (contrib.toml)
        leaves = [leaf, *LEAF_ALIASES.get(leaf, ())] if prefix else [leaf]
        names = [f"{prefix}/{other}" if prefix else other for other in leaves]
        for same in names:
            if same in init and same not in self.taken:
                return same, "name"
        for same in names:
            parts = same.split("/")
            for i in range(1, len(parts)):
                suffix = "/".join(parts[i:])
                if suffix in free:
                    return suffix, "scope"
            longer = [n for n in free if n.endswith("/" + same)]
            if len(longer) == 1:
                return longer[0], "scope"
        if not prefix:
            return None, None
        if prefix in self.layer_pairs:    # this layer was paired (or failed to pair) already
            paired = self.layer_pairs[prefix]
            ok = [f"{paired}/{other}" for other in leaves if paired is not None and f"{paired}/{other}" in free]
            return (ok[0], "layer order") if ok else (None, None)
        paired_layers = {p for p in self.layer_pairs.values() if p is not None}
        candidates = [n for n in free if n.rpartition("/")[2] in leaves and n.rpartition("/")[0]
                      and n.rpartition("/")[0] not in paired_layers]
        # only the next original layer in creation order: skipping one would pair layers out of order
        if candidates and _shape(init[candidates[0]]) == shape:
            self.layer_pairs[prefix] = candidates[0].rpartition("/")[0]
            return candidates[0], "layer order"
        self.layer_pairs[prefix] = None
        return None, None
