"""Compare the traces of an original and a migrated run.

Pure NumPy, no TensorFlow: the parent process stays light and these rules
can be tested with synthetic traces. Every quantity passes the element-wise
test of comparison.py (tolerances: TOLERANCES.md).

Gradient events are matched by (kind, sorted source names) and occurrence
index, so a migration that computes two gradients in the other order still
lines up; what cannot be paired is itself a divergence (compare_events.py).
Final values, printed numbers and text, and plots follow (compare_output.py), then
TensorBoard summaries (summary_values.py):
printed numbers additionally get one unit of their last printed digit,
because two values a few ulps apart can round to neighbouring decimals.
"""

from __future__ import annotations

from tf1gradfix.verify import summary_values
from tf1gradfix.verify.compare_events import compare_events, loss_curve
from tf1gradfix.verify.compare_output import compare_finals, compare_plots, compare_printed
from tf1gradfix.verify.comparison import DEFAULT_ATOL, DEFAULT_RTOL, Comparison


def compare_traces(orig: dict, mig: dict, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
                   decode=None, stopped=()) -> Comparison:
    """Compare two loaded traces: ``{"events", "final", "stdout", "plots"}`` each.

    ``stopped``: the sides that stopped early (see compare_events); only the
    common prefix is compared, and the caller decides whether finals are.
    """
    if decode is None:
        from tf1gradfix.verify.runner_common import decode_array as decode
    cmp = Comparison()
    compare_events(cmp, orig["events"], mig["events"], rtol, atol, decode, stopped)
    if not stopped or (orig.get("final") is not None and mig.get("final") is not None):
        compare_finals(cmp, orig.get("final"), mig.get("final"), rtol, atol, decode)
    compare_printed(cmp, orig.get("stdout", ""), mig.get("stdout", ""), rtol, atol, stopped)
    compare_plots(cmp, orig.get("plots"), mig.get("plots"), rtol, atol, decode, stopped)
    summary_values.compare(cmp, orig["events"], mig["events"], rtol, atol, stopped)
    cmp.loss_original, cmp.loss_migrated = loss_curve(orig["events"]), loss_curve(mig["events"])
    return cmp
