"""What the original program did, in numbers, for each legacy bug found in it: read off
the verifier's trace of the TF1 run (how far a "frozen" variable moved, how many updates
gave a listed variable no gradient, how many random numbers runs outside training drew).

The verifier calls `measured` once the pair has run; the bugs are found again by reading
the original (no TensorFlow, no run), and each gets one sentence of evidence.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tf1gradfix.legacy import Found
from tf1gradfix.legacy.reading import read
from tf1gradfix.verify import trace_seal

# code -> what its evidence is read from the trace
EVIDENCE = {"TFG801": "moved", "TFG802": "moved", "TFG803": "no_gradient", "TFG804": "draws",
            "TFG805": "kept", "TFG806": "unclipped"}


def measured(original: Path, trace_dir: str, events: list[dict]) -> list[str]:
    """One line per legacy bug of `original`: where, code, and what the TF1 run showed."""
    found = _found(original)
    if not found:
        return []
    final = trace_seal.load_json(trace_dir, "original", "final.json") or {}
    values = {"initial": _variables(os.path.join(trace_dir, "init.json")), "final": final.get("variables", {})}
    out = []
    for f in found:
        shown = _READERS[EVIDENCE[f.code]](f, values, events)
        if shown:
            out.append(f"line {f.line}: {f.code}: {shown}")
    return out


def _found(original: Path) -> list[Found]:
    try:
        data = original.read_bytes()
    except OSError:
        return []
    return read(data, str(original))


def _variables(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle).get("variables", {})
    except (OSError, ValueError):
        return {}


def _changes(name: str, values: dict):
    """The absolute change of each of a variable's entries over the run (None: not traced)."""
    import numpy as np

    from tf1gradfix.verify.runner_common import decode_array

    start, end = values["initial"].get(name), values["final"].get(name)
    if start is None or end is None:
        return None
    change = np.abs(decode_array(end["value"]).astype(np.float64) - decode_array(start["value"]).astype(np.float64))
    return change if change.size else None


def _change(name: str, values: dict) -> tuple[float, float] | None:
    """The largest and the mean absolute change of a variable's entries over the run."""
    change = _changes(name, values)
    return None if change is None else (float(change.max()), float(change.mean()))


def _kept(found: Found, values: dict, events: list[dict]) -> str:
    """How many entries of a masked variable kept their initial value (a mask applied to
    every update would keep at least those it zeroes)."""
    parts = []
    for name in found.variables:
        change = _changes(name, values)
        if change is not None:
            parts.append(f"{int((change == 0).sum())} of the {change.size} entries of `{name}` kept their initial value "
                         f"(the others moved by up to {change.max():.6g})")
    return "in TF1 " + "; ".join(parts) if parts else ""


def _moved(found: Found, values: dict, events: list[dict]) -> str:
    parts = [f"`{name}` moved by up to {change[0]:.6g} (mean {change[1]:.6g})"
             for name in found.variables if (change := _change(name, values)) is not None]
    return "in TF1 " + "; ".join(parts) + " over the run" if parts else ""


def _no_gradient(found: Found, values: dict, events: list[dict]) -> str:
    computed = [e for e in events if e.get("kind") == "compute"]
    if not computed:
        return ""
    parts = []
    for name in found.variables:
        missing = sum(name in e.get("none", ()) for e in computed)
        change = _change(name, values)
        parts.append(f"`{name}` got no gradient in {missing} of {len(computed)} gradient computations"
                     + (f" and moved by {change[0]:.6g}" if change is not None else ""))
    return "in TF1 " + "; ".join(parts)


def _draws(found: Found, values: dict, events: list[dict]) -> str:
    tally = next((e for e in reversed(events) if e.get("kind") == "aligned"), None)
    if tally is None or tally.get("evaluating") is None:
        return ""
    return (f"TF1 drew random numbers {tally['draws']} times, {tally['evaluating']} of them in runs that update "
            f"no variable (each moved on the stream the training steps draw from)")


def _unclipped(found: Found, values: dict, events: list[dict]) -> str:
    """How often the gradients applied had a global norm above the clip norm (each would have been scaled)."""
    import numpy as np

    from tf1gradfix.verify.runner_common import decode_array

    if found.limit is None or not found.variables:
        return _moved(found, values, events)
    norms = []
    for e in events:
        grads = e.get("grads", {}) if e.get("kind") == "apply" else {}
        if grads and all(name in grads for name in found.variables):
            norms.append(float(np.sqrt(sum(np.sum(decode_array(grads[name]).astype(np.float64) ** 2)
                                           for name in found.variables))))
    if not norms:
        return ""
    over = [n for n in norms if n > found.limit]
    return (f"in TF1 the gradients applied to {', '.join(f'`{n}`' for n in found.variables)} had a global norm "
            f"above {found.limit:g} in {len(over)} of their {len(norms)} updates (largest {max(norms):.6g}): "
            f"clipping scales such gradients down")


_READERS = {"moved": _moved, "no_gradient": _no_gradient, "draws": _draws, "unclipped": _unclipped, "kept": _kept}
