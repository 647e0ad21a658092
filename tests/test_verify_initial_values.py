"""The migration's own initial values (verify/initial_values.py): exact when deterministic, by distribution when random."""

from __future__ import annotations

import numpy as np

from tf1gradfix.verify import initial_values as iv


def test_deterministic_values_must_agree_within_the_tolerances():
    assert iv.check(np.zeros(4, np.float32), np.zeros(4, np.float32), False, 1e-3, 1e-6)["ok"]
    assert iv.check(np.full(3, 0.1000001, np.float32), np.full(3, 0.1, np.float32), False, 1e-3, 1e-6)["ok"]
    bad = iv.check(np.full(3, 0.01, np.float32), np.full(3, 0.1, np.float32), False, 1e-3, 1e-6)
    assert not bad["ok"] and bad["how"] == iv.EXACT and "3 of 3 elements differ" in bad["detail"]
    assert not iv.check(np.array([0, 1]), np.array([0, 2]), False, 1e-3, 1e-6)["ok"]   # integers: equal


def test_a_constant_against_a_draw_and_another_spread_diverge():
    rng = np.random.default_rng(1)
    drawn = rng.uniform(-0.4, 0.4, (16, 16))
    assert not iv.check(np.zeros((16, 16)), drawn, True, 1e-3, 1e-6)["ok"]
    wide = iv.check(rng.normal(0, 1.0, (16, 3)), rng.normal(0, 0.1, (16, 3)), True, 1e-3, 1e-6)
    assert not wide["ok"] and wide["p"] < iv.ALPHA
    assert iv.check(rng.uniform(-0.4, 0.4, (16, 16)), drawn, True, 1e-3, 1e-6)["ok"]
    assert iv.check(np.zeros(3), drawn[:1, :3].ravel(), None, 1e-3, 1e-6)["how"] == iv.UNCHECKED


def test_two_variables_drawn_identically_are_named():
    rng = np.random.default_rng(2)
    own = rng.uniform(-1, 1, (4, 4))
    draws: list = []
    assert iv.own_check("a", own, rng.uniform(-1, 1, (4, 4)), True, draws)["ok"]
    twin = iv.own_check("b", own.copy(), rng.uniform(-1, 1, (4, 4)), True, draws)
    assert not twin["ok"] and "identically to a" in twin["detail"]


def test_the_distribution_test_keeps_its_false_alarm_rate():
    """Under the null (the same distribution), p < alpha about alpha of the time, never far more."""
    rng = np.random.default_rng(3)
    p = np.array([iv.same_distribution_pvalue(rng.normal(size=64), rng.normal(size=64)) for _ in range(4000)])
    assert np.mean(p < 1e-2) <= 0.015 and np.mean(p < 1e-3) <= 0.003 and p.min() > iv.ALPHA
