"""A matplotlib backend for verified programs: it draws nothing and records what was plotted.

Many TF1 scripts end in a figure (a fitted line, a scatter of samples), not a
printed number. Both runners point ``MPLBACKEND`` here (runner_common), so a
figure's data is compared like a printed number: a snapshot of every open
figure at each ``show()``, at each ``savefig()`` (that figure), and at the end
of a program that did neither. A snapshot lists each axes' artists in drawing
order with their data coordinates: lines, collections (scatter points, filled
areas), patches (bars, histograms) and images.

Only imported by matplotlib itself, inside the user's program.
"""

from __future__ import annotations

import numpy as np
from matplotlib._pylab_helpers import Gcf   # the open figures, as every backend reads them
from matplotlib.backends.backend_agg import FigureCanvasAgg

MAX_ELEMENTS = 2_000_000   # numbers kept over the whole run; the rest is not compared

SNAPSHOTS: list = []
_state = {"elements": 0, "truncated": False}


class FigureCanvas(FigureCanvasAgg):
    """Agg canvas (savefig still writes the file) that snapshots the figure it saves."""

    def print_figure(self, *args, **kwargs):
        snapshot([self.figure])
        return super().print_figure(*args, **kwargs)


def show(*args, **kwargs) -> None:
    """`plt.show()`: nothing to display; snapshot every open figure."""
    snapshot([m.canvas.figure for m in Gcf.get_all_fig_managers()])


def snapshot(figures) -> None:
    entries = []
    for fig in figures:
        for a_no, ax in enumerate(fig.get_axes(), 1):
            for kind, data in _artists(ax):
                arr = np.asarray(data, dtype=np.float64)
                if _state["elements"] + arr.size > MAX_ELEMENTS:
                    _state["truncated"] = True
                    break
                _state["elements"] += arr.size
                entries.append({"figure": int(fig.number) if hasattr(fig, "number") else 0,
                                "axes": a_no, "artist": kind, "array": arr})
    if entries or figures:
        SNAPSHOTS.append(entries)


def _artists(ax):
    """(kind, data coordinates) of each artist of an axes that carries numbers."""
    for line in ax.get_lines():
        yield "line", line.get_xydata()
    for coll in ax.collections:
        offsets = np.asarray(coll.get_offsets())
        if offsets.size and not (offsets.shape[0] == 1 and not offsets.any()):
            yield "points", offsets
        else:
            yield "area", np.concatenate([p.vertices for p in coll.get_paths()] or [np.zeros((0, 2))])
        values = coll.get_array()
        if values is not None:
            yield "colour values", np.ma.filled(np.ma.asarray(values, dtype=np.float64), np.nan)
    for patch in ax.patches:
        yield "patch", patch.get_patch_transform().transform(patch.get_path().vertices)
    for image in ax.images:
        yield "image", np.ma.filled(np.ma.asarray(image.get_array(), dtype=np.float64), np.nan)


def at_exit() -> None:
    """A program that never showed or saved a figure is compared on what it left open."""
    if not SNAPSHOTS:
        figures = [m.canvas.figure for m in Gcf.get_all_fig_managers()]
        if figures:
            snapshot(figures)


def truncated() -> bool:
    return _state["truncated"]
