"""Printed text and plotted data are compared (verify/compare.py), without TensorFlow.

The fixtures in fixtures/verify/plotted_and_printed_output prove the same
through both runners and the recording backend.
"""

from __future__ import annotations

import numpy as np

from tf1gradfix.verify import compare
from tf1gradfix.verify.runner_common import decode_array, encode_array


def _trace(stdout="", plots=None):
    return {"events": [], "final": {}, "stdout": stdout, "plots": plots}


def _snap(*arrays, artist="line"):
    return [{"figure": 1, "axes": 1, "artist": artist, "data": encode_array(np.asarray(a, dtype=np.float64))}
            for a in arrays]


def test_text_lines_are_compared_exactly():
    same = compare.compare_traces(_trace("b'Hello World!'\n"), _trace("b'Hello World!'\n"), decode=decode_array)
    assert not same.divergences and same.stats["printed text"].compared == 1
    other = compare.compare_traces(_trace("b'Hello World!'\n"), _trace("Hello World!\n"), decode=decode_array)
    assert other.first.quantity == "printed text" and "line 1" in other.first.describe()


def test_addresses_and_blank_lines_do_not_count():
    a = "<object at 0x7f00aa>\n\nready\n"
    b = "<object at 0x7fffbb>\nready\n"
    assert not compare.compare_traces(_trace(a), _trace(b), decode=decode_array).divergences


def test_missing_text_line_diverges_unless_the_budget_stopped_that_side():
    cmp = compare.compare_traces(_trace("start\ndone\n"), _trace("start\n"), decode=decode_array)
    assert "2 lines of text, migrated 1" in cmp.first.describe()
    cut = compare.compare_traces(_trace("start\ndone\n"), _trace("start\n"), decode=decode_array,
                                 stopped=("migrated",))
    assert not cut.divergences


def test_plotted_arrays_are_compared_with_the_tolerances():
    line = [[0.0, 1.0], [1.0, 2.0]]
    close = [[0.0, 1.0], [1.0, 2.0000001]]
    ok = compare.compare_traces(_trace(plots=[_snap(line)]), _trace(plots=[_snap(close)]), decode=decode_array)
    assert not ok.divergences and ok.stats["plotted value"].compared == 1
    off = compare.compare_traces(_trace(plots=[_snap(line)]), _trace(plots=[_snap([[0.0, 1.0], [1.0, 2.1]])]),
                                 decode=decode_array)
    assert off.first.quantity == "plotted value" and "drawing 1" in off.first.describe()


def test_other_artists_or_a_missing_drawing_diverge():
    kinds = compare.compare_traces(_trace(plots=[_snap([[1.0, 2.0]])]),
                                   _trace(plots=[_snap([[1.0, 2.0]], artist="points")]), decode=decode_array)
    assert "the original drew line" in kinds.first.describe()
    none = compare.compare_traces(_trace(plots=[_snap([[1.0, 2.0]])]), _trace(plots=None), decode=decode_array)
    assert "made 1 drawings, migrated 0" in none.first.describe()
    neither = compare.compare_traces(_trace(plots=None), _trace(plots=None), decode=decode_array)
    assert neither.stats["plotted value"].compared == 0 and not neither.divergences
