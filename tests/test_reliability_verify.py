"""The verifier's failure paths: bad tolerances, exit statuses, signals, forked
processes, leftover files, report errors and user modules shadowing the stdlib.

Most tests replace the two TensorFlow runners by a TensorFlow-free one that runs
the program through the same `runner_common.run_user_script`, so the orchestration
(process groups, exit statuses, signals, cleanup) is tested at no TensorFlow cost.
"""

from __future__ import annotations

import math

from tf1gradfix.verify import compare


def test_a_divergence_names_an_element_that_fails_the_tolerance():
    # element 0 has the largest difference but is within rtol; element 1 fails atol + rtol*|b|
    ok, abs_err, rel_err, index, _ = compare.check([1.0, 1e-5], [1.0005, 1.3e-5], 1e-3, 1e-6)
    assert not ok and index == [1]
    assert abs_err > 1e-6 + 1e-3 * 1.3e-5
    cmp = compare.Comparison()
    compare._record(cmp, "gradient", [1.0, 1e-5], [1.0005, 1.3e-5], 1e-3, 1e-6, step=1, name="w", order=(0, 0))
    text = cmp.first.describe()
    assert "original 1e-05 vs migrated 1.3e-05 at [1]" in text
    assert "largest difference at [0]" in text and "within tolerance" in text
    # the statistics still show the largest difference
    assert math.isclose(cmp.stats["gradient"].max_abs_err, 5e-4, rel_tol=1e-6)
