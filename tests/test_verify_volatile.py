"""Volatile printed values (verify/volatile.py) are shown, not decisive; everything else still compares."""

from __future__ import annotations

import pytest

from tf1gradfix.verify import compare_output, comparison, volatile


@pytest.mark.parametrize("line,kind", [
    ("took 0.63 s", "duration"), ("done in 12ms", "duration"), ("3.1 sec/step", "duration"),
    ("elapsed: 4.2", "duration"), ("time=17.5", "duration"), ("(12.3 seconds)", "duration"),
    ("250.5 examples/sec", "throughput"), ("2026-12-05 10:59:05.123", "timestamp"),
    ("2026-12-05T10:59:05+00:00", "timestamp"), ("Sat Dec  5 10:59:05 2026", "timestamp"),
    ("at 1733400000.25", "timestamp"), ("on 2026-12-05", "date"), ("at 10:59:05", "clock"),
    ("pid 4242", "pid"), ("saved /tmp/tf1gradfix-cwd-x1/original/model.ckpt", "path"),
])
def test_each_class_is_masked(line, kind):
    masked, found = volatile.mask(line)
    assert [k for k, _ in found] == [kind] and f"<{kind}>" in masked


@pytest.mark.parametrize("line", [
    "loss 0.3 min 0.1 max 0.5", "time_steps 20", "step 10 loss 0.25", "epoch 3 of 10", "lr 1e-3 decay 0.96",
    "hidden 128 units", "saved ./model.ckpt-100",
])
def test_training_numbers_are_not_volatile(line):
    assert volatile.mask(line) == (line, [])


def _compare(out_o: str, out_m: str):
    cmp = comparison.Comparison()
    compare_output.compare_printed(cmp, out_o, out_m, 1e-3, 1e-6)
    return cmp


def test_volatile_values_differ_and_the_rest_still_compares():
    same = _compare("2026-12-05 10:00:01 step 10 loss 0.25000 (12.1 ms/step)\ntook 0.63 s\n",
                    "2026-12-05 10:00:04 step 10 loss 0.25000 (15.9 ms/step)\ntook 0.71 s\n")
    assert same.equivalent and same.printed_numbers == 2
    assert [v["class"] for v in same.volatile] == ["timestamp", "duration", "duration"]
    assert same.volatile[2] == {"class": "duration", "line": 2, "original": "0.63 s", "migrated": "0.71 s"}
    assert any(n.startswith("volatile output shown, not compared") for n in same.notes)
    wrong = _compare("2026-12-05 10:00:01 step 10 loss 0.25000\n", "2026-12-05 10:00:04 step 10 loss 0.26000\n")
    assert wrong.first.quantity == "printed number" and wrong.first.original == "0.25000"
    worded = _compare("took 0.63 s\n", "took about 0.63 s\n")
    assert worded.first.quantity == "printed text"
