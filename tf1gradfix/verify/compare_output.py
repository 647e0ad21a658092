"""What the programs left besides their gradients, compared: final values, printed numbers
and text, plotted values.

Printed numbers get one unit of their last printed digit on top of the tolerances,
because two values a few ulps apart can round to neighbouring decimals; values that
differ from run to run (object addresses, timings: volatile.py) are shown, not
compared, and TF1's descriptions of graph objects are left out of the original's
output (descriptions.py).
"""

from __future__ import annotations

import math
import re

from tf1gradfix.verify import descriptions, volatile
from tf1gradfix.verify.comparison import Comparison, Divergence, _record

# Object addresses differ from run to run and say nothing about the numbers.
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = descriptions.NUMBER

def compare_finals(cmp: Comparison, orig: dict | None, mig: dict | None, rtol, atol, decode) -> None:
    if orig is None or mig is None:
        side = "original" if orig is None else "migrated"
        cmp.notes.append(f"final variable values were not recorded by the {side} run; not compared")
        return
    common = sorted(set(orig) & set(mig))
    for n in common:
        _record(cmp, "final value", decode(orig[n]["value"]), decode(mig[n]["value"]), rtol, atol,
                step=None, name=n, order=(math.inf, 0))
    cmp.variables = len(common)
    missing = sorted(n for n in set(orig) - set(mig) if orig[n].get("trainable"))
    if missing:
        cmp.notes.append("trainable variables of the original absent from the migrated program: "
                         + ", ".join(missing))


def printed_numbers(text: str) -> list:
    """[(line number, line, [tokens])] for every stdout line holding numbers."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        tokens = _NUMBER.findall(line)
        if tokens:
            out.append((no, line.strip(), tokens))
    return out


def skeleton(line: str) -> str:
    """A printed line without its numbers (compared with the tolerances instead),
    object addresses and runs of spaces (NumPy pads columns to the widest number)."""
    return " ".join(_NUMBER.sub("#", _ADDRESS.sub("0x…", line)).split()).replace("[ ", "[").replace(" ]", "]")


def _quantum(token: str) -> float:
    """One unit of the last printed digit (0 for plain integers)."""
    t = token.lower().lstrip("+-")
    if t in ("nan", "inf") or ("." not in t and "e" not in t):
        return 0.0
    mant, _, exp = t.partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    return 10.0 ** (int(exp or 0) - decimals)


def printed_text(text: str) -> list:
    """[(line number, line)] for every non-blank stdout line holding no number.

    A program whose only output is text (a greeting computed by the graph, a
    label) is compared on that text, exactly, addresses aside.
    """
    return [(no, _ADDRESS.sub("0x…", line.strip())) for no, line in enumerate(text.splitlines(), 1)
            if line.strip() and not _NUMBER.search(line)]


def compare_printed(cmp: Comparison, out_o: str, out_m: str, rtol, atol, stopped=()) -> None:
    """The printed numbers line by line, then the lines of text. Lines of the original that
    are TF1's descriptions of graph objects (verify/descriptions.py) are left out: values
    TF1 never computed, printed while the graph was built."""
    described = descriptions.left_out(out_o)
    if described:
        out_o = descriptions.without(out_o, described)
        cmp.described = len(described)
        cmp.notes.append(f"{len(described)} line{'s' if len(described) > 1 else ''} of the original's output "
                         f"{'are' if len(described) > 1 else 'is'} TF1's description of graph objects (a "
                         "`Tensor(...)`, `<tf.Variable ...>`, an op, a dataset or another object of TensorFlow's "
                         "printed while the graph was built), "
                         "not values: left out of the printed-output comparison")
    (out_o, inline), out_m = descriptions.inline(out_o), descriptions.inline(out_m)[0]   # (a migration kept in tf.compat.v1 prints them too)
    if inline:
        cmp.notes.append(f"{inline} line{'s' if inline > 1 else ''} of the original's output print{'' if inline > 1 else 's'} "
                         "values next to TF1's description of a graph object: the description is left out, "
                         "the values are compared")
    (out_o, volatile_o), (out_m, volatile_m) = volatile.mask_output(out_o), volatile.mask_output(out_m)
    volatile.record(cmp, volatile_o, volatile_m)
    lines_o, lines_m = printed_numbers(out_o), printed_numbers(out_m)
    for i, ((no_o, text_o, tok_o), (no_m, text_m, tok_m)) in enumerate(zip(lines_o, lines_m)):
        order = (math.inf, 1, i)
        if len(tok_o) != len(tok_m):
            cmp.divergences.append(Divergence(
                "printed number", None, f"line {no_o}", text_o[:120], text_m[:120],
                reason=(f"original line {no_o} prints {len(tok_o)} number{'s' if len(tok_o) != 1 else ''}, "
                        f"migrated line {no_m} prints {len(tok_m)}"),
                order=order))
            continue
        if skeleton(text_o) != skeleton(text_m):   # the words around the numbers are output too
            cmp.divergences.append(Divergence(
                "printed text", None, f"line {no_o}", text_o[:120], text_m[:120],
                reason=f"original line {no_o} reads {text_o[:80]!r}, migrated line {no_m} {text_m[:80]!r}",
                order=order))
            continue
        for a, b in zip(tok_o, tok_m):
            cmp.printed_numbers += 1
            if not _record(cmp, "printed number", float(a), float(b), rtol, atol, step=None,
                           name=f"line {no_o}: {text_o[:80]}", order=order,
                           extra_tol=max(_quantum(a), _quantum(b))):
                cmp.divergences[-1].original, cmp.divergences[-1].migrated = a, b
                break
    _compare_counts(cmp, "printed number", "lines with numbers", len(lines_o), len(lines_m), stopped, 2)
    text_o, text_m = printed_text(out_o), printed_text(out_m)
    for i, ((no_o, a), (no_m, b)) in enumerate(zip(text_o, text_m)):
        st = cmp.stats["printed text"]
        st.compared += 1
        st.elements += 1
        if a != b:
            st.diverged += 1
            cmp.divergences.append(Divergence(
                "printed text", None, f"line {no_o}", a[:120], b[:120],
                reason=f"original line {no_o} reads {a[:80]!r}, migrated line {no_m} {b[:80]!r}",
                order=(math.inf, 3, i)))
    _compare_counts(cmp, "printed text", "lines of text", len(text_o), len(text_m), stopped, 4)


def _compare_counts(cmp: Comparison, kind: str, what: str, n_o: int, n_m: int, stopped, rank: int,
                    verb: str = "printed") -> None:
    """A side that printed fewer lines diverges, unless a side was stopped early (by the
    step budget or a timeout): then only the lines both printed are compared."""
    if n_o != n_m and not stopped:
        cmp.divergences.append(Divergence(
            kind, None, None, reason=f"original {verb} {n_o} {what}, migrated {n_m}",
            order=(math.inf, rank)))


def compare_plots(cmp: Comparison, plots_o: list | None, plots_m: list | None, rtol, atol, decode,
                  stopped=()) -> None:
    """Compare what both programs drew (verify/plot_backend.py), snapshot by snapshot.

    Each snapshot is the data of every artist of every open figure at a
    `show()`, a `savefig()` or the program's end, in drawing order.
    """
    if plots_o is None and plots_m is None:
        return
    plots_o, plots_m = plots_o or [], plots_m or []
    for i, (snap_o, snap_m) in enumerate(zip(plots_o, plots_m)):
        labels_o = [(a["figure"], a["axes"], a["artist"]) for a in snap_o]
        labels_m = [(a["figure"], a["axes"], a["artist"]) for a in snap_m]
        if labels_o != labels_m:
            cmp.divergences.append(Divergence(
                "plotted value", None, f"drawing {i + 1}",
                reason=f"drawing {i + 1}: the original drew {_artists(labels_o)}, the migrated program "
                       f"{_artists(labels_m)}", order=(math.inf, 5, i)))
            continue
        for a, b in zip(snap_o, snap_m):
            _record(cmp, "plotted value", decode(a["data"]), decode(b["data"]), rtol, atol, step=None,
                    name=f"drawing {i + 1}, figure {a['figure']}, axes {a['axes']}, {a['artist']}",
                    order=(math.inf, 5, i))
    _compare_counts(cmp, "plotted value", "drawings", len(plots_o), len(plots_m), stopped, 6, "made")


def _artists(labels: list) -> str:
    return ", ".join(f"{art} (figure {fig}, axes {ax})" for fig, ax, art in labels[:4]) or "nothing"
