"""Keras RNN cell weights of the migrated side <-> the original cell's variables.

TF1's LSTM keeps one kernel over [inputs, state] with its gates in the order
i, j, f, o; Keras's LSTMCell keeps `kernel` and `recurrent_kernel` with the
gates i, f, c, o, and the forget bias inside its `bias`. The variables do not
correspond by name or shape, so matching by name cannot pair them. The
layouts of rules/rnn_cells.toml (which the rewrite reads too) say
which block of which original variable each Keras weight is: a Keras weight
starts from those blocks of the original's initial values, and the traces
fold the Keras weights back into the original's variables, so gradients and
values are compared variable by variable in the original's terms.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from tf1gradfix.rules.catalog import _read

MARK = " (keras)"   # the trace name of a Keras weight not folded (yet) into its original


@functools.lru_cache(maxsize=None)
def layouts() -> dict[str, dict]:
    """Keras cell class name -> its layout row."""
    return {row["keras"]: row for row in _read("rnn_cells.toml")["layout"].values()}


def keras_cell(depth: int = 2):
    """The Keras cell whose `build` creates the variable being created, or None."""
    frame = sys._getframe(depth)
    for _ in range(64):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and type(owner).__name__ in layouts() and type(owner).__module__.startswith("keras"):
            return owner
        frame = frame.f_back
    return None


def _fits(layout: dict, name: str, shape: list, units: int) -> bool:
    """Has the original variable `name` the shape the layout reads from it: its gates'
    columns, and (a kernel) more rows than the state's (the input's come first)?"""
    blocks = [(rows, gate) for leaf in ("kernel", "recurrent_kernel", "bias") for n, rows, gate in layout[leaf] if n == name]
    columns = (1 + max(gate for _, gate in blocks)) * units
    kernel = any(rows != "all" for rows, _ in blocks)
    return shape[-1] == columns and (len(shape) == 2 and shape[0] > units if kernel else len(shape) == 1)


def _rows(rows: str, total: int, units: int) -> slice:
    return {"input": slice(0, total - units), "state": slice(total - units, total), "all": slice(None)}[rows]


class Cell:
    """One Keras cell paired with one original cell (the variables under `prefix`)."""

    def __init__(self, layout: dict, units: int, prefix: str, shapes: dict, shift: float):
        self.layout, self.units, self.prefix, self.shapes, self.shift = layout, units, prefix, shapes, shift
        self.weights: dict[str, object] = {}   # Keras leaf -> variable

    def blocks(self, leaf: str):
        n = self.units
        for b, (name, rows, gate) in enumerate(self.layout[leaf]):
            target = (slice(None), slice(b * n, (b + 1) * n)) if leaf != "bias" else (slice(b * n, (b + 1) * n),)
            total = self.shapes[name][0]
            source = (_rows(rows, total, n), slice(gate * n, (gate + 1) * n)) if rows != "all" \
                else (slice(gate * n, (gate + 1) * n),)
            yield b, name, target, source

    def offset(self, leaf: str, b: int) -> float:
        shift = self.layout.get("shift")
        return self.shift if shift is not None and shift[0] == leaf and shift[1] == b else 0.0

    def keras_value(self, leaf: str, init: dict, values: bool = True) -> np.ndarray:
        """The Keras weight `leaf` made of the original's initial values; `values`: add the
        shift (a gradient or an optimizer slot has none)."""
        parts = [init[name][source] + (self.offset(leaf, b) if values else 0.0)
                 for b, name, _, source in self.blocks(leaf)]
        return np.concatenate(parts, axis=-1)

    def fold(self, arrays: dict, values: bool) -> dict | None:
        """The original's variables from the Keras weights `arrays` (leaf -> array); None
        unless every Keras weight is there. `values`: undo the shift (gradients have none)."""
        leaves = [k for k in ("kernel", "recurrent_kernel", "bias") if k in self.layout]
        if any(leaf not in arrays for leaf in leaves):
            return None
        dtype = np.result_type(*(np.asarray(arrays[leaf]).dtype for leaf in leaves))
        out = {name: np.zeros(self.shapes[name], dtype) for name in self.layout["tf1"]}
        for leaf in leaves:
            for b, name, target, source in self.blocks(leaf):
                out[name][source] = np.asarray(arrays[leaf])[target] - (self.offset(leaf, b) if values else 0.0)
        return {f"{self.prefix}/{name}": value for name, value in out.items()}


class CellWeights:
    """The Keras cells of the migrated program and the original cells they stand for."""

    def __init__(self):
        self.cells: dict[int, Cell | None] = {}   # id(Keras cell) -> its pairing (None: none found)
        self.of_var: dict[int, tuple[Cell, str]] = {}

    def inject(self, var, cell, init: dict, taken: set, decode):
        """(the Keras weight's value, the original names it stands for) or None if no
        original cell fits; pairs the cell with the next free original cell in creation order."""
        layout = layouts()[type(cell).__name__]
        leaf = var.name.split(":")[0].rpartition("/")[2]
        if leaf not in layout:
            return None
        if id(cell) not in self.cells:
            self.cells[id(cell)] = self._pair(cell, layout, init, taken, decode)
        paired = self.cells[id(cell)]
        if paired is None:
            return None
        self.of_var[id(var)] = (paired, leaf)
        values = {name: decode(init[f"{paired.prefix}/{name}"]["value"]) for name in layout["tf1"]}
        value = paired.keras_value(leaf, values)
        if list(value.shape) != [int(d) for d in var.shape]:
            return None
        return value, f"{paired.prefix}/{leaf}{MARK}"

    @staticmethod
    def _pair(cell, layout: dict, init: dict, taken: set, decode) -> Cell | None:
        units = int(cell.units)
        first = "/" + layout["tf1"][0]
        prefixes = [n[: -len(first)] for n in init if n not in taken and n.endswith(first)]
        for prefix in prefixes:
            names = [f"{prefix}/{w}" for w in layout["tf1"]]
            if all(n in init and n not in taken for n in names):
                shapes = {w: list(decode(init[n]["value"]).shape) for w, n in zip(layout["tf1"], names)}
                if all(_fits(layout, w, shape, units) for w, shape in shapes.items()):
                    taken.update(names)
                    shift = layout.get("shift")
                    return Cell(layout, units, prefix, shapes, float(bool(getattr(cell, shift[2]))) if shift else 0.0)
        return None

    def by_prefix(self, prefix: str) -> Cell | None:
        return next((c for c in self.cells.values() if c is not None and c.prefix == prefix), None)

    def fold(self, named: dict, values: bool, encode=None, decode=None) -> dict:
        """`named` (trace name -> array, or encoded array) with each paired cell's Keras
        weights replaced by the original variables they make up."""
        groups: dict[int, dict] = {}
        for name in list(named):
            if not name.endswith(MARK):
                continue
            prefix, _, leaf = name[: -len(MARK)].rpartition("/")
            cell = self.by_prefix(prefix)
            if cell is not None:
                groups.setdefault(id(cell), {"cell": cell, "names": [], "arrays": {}})
                group = groups[id(cell)]
                group["names"].append(name)
                group["arrays"][leaf] = decode(named[name]) if decode else named[name]
        out = dict(named)
        for group in groups.values():
            folded = group["cell"].fold(group["arrays"], values)
            if folded is None:
                continue
            for name in group["names"]:
                del out[name]
            out.update({k: (encode(v) if encode else v) for k, v in folded.items()})
        return out
