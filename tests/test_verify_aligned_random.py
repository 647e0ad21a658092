"""The aligned random stream (verify/aligned_random.py) without TensorFlow: how draws are keyed."""

from __future__ import annotations

import numpy as np

from tf1gradfix.verify import aligned_random as ar


class _Trace:
    def __init__(self):
        self.events = []

    def event(self, kind, **payload):
        self.events.append({"kind": kind, **payload})


def test_numbers_are_a_function_of_key_kind_shape_and_dtype():
    a = ar.values("uniform", [3, 4], np.float32, (("train", 0), 0))
    assert a.dtype == np.float32 and a.shape == (3, 4) and ((a >= 0) & (a < 1)).all()
    np.testing.assert_array_equal(a, ar.values("uniform", np.array([3, 4]), np.float32, (("train", 0), 0)))
    for other in (ar.values("uniform", [3, 4], np.float32, (("train", 1), 0)),
                  ar.values("uniform", [3, 4], np.float32, (("train", 0), 1)),
                  ar.values("uniform", [3, 4], np.float32, (("other", 0), 0)),
                  ar.values("normal", [3, 4], np.float32, (("train", 0), 0)),
                  ar.values("uniform", [3, 4], np.float64, (("train", 0), 0))):
        assert not np.array_equal(a, other)
    t = ar.values("truncated_normal", [2000], np.float32, ("k",))
    assert np.abs(t).max() <= 2 and t.std() > 0.5
    i = ar.values("uniform_int", [500], np.int64, ("k",), np.int64(3), np.int64(7))
    assert i.dtype == np.int64 and set(i.tolist()) == {3, 4, 5, 6}
    assert ar.values("uniform", [], np.float16, ("k",)).shape == ()


def _graph_draws(creation_ids):
    draws = ar.GraphDraws(_Trace())
    draws.created = list(creation_ids)
    draws.names = {s: f"op{s}" for s in range(len(creation_ids))}
    return draws


def test_graph_draws_follow_creation_order_not_execution_order():
    """A TF1 run executes its random ops in any order: the index comes from creation order."""
    draws = _graph_draws([10, 5])          # site 1 was created first
    draws.begin_run(True, 0, [0, 1])
    late, early = draws.draw(0, "uniform", [2], np.float32), draws.draw(1, "uniform", [2], np.float32)
    draws.end_run()
    np.testing.assert_array_equal(early, ar.values("uniform", [2], np.float32, (("train", 0), 0)))
    np.testing.assert_array_equal(late, ar.values("uniform", [2], np.float32, (("train", 0), 1)))
    # the next training step starts its numbering again; evaluation runs continue theirs
    draws.begin_run(True, 1, [1])
    np.testing.assert_array_equal(draws.draw(1, "uniform", [2], np.float32),
                                  ar.values("uniform", [2], np.float32, (("train", 1), 0)))
    draws.begin_run(False, 2, [1])
    draws.begin_run(False, 2, [1])
    np.testing.assert_array_equal(draws.draw(1, "uniform", [2], np.float32),
                                  ar.values("uniform", [2], np.float32, (("other", 2), 1)))
    draws.end_run()
    # outside a traced run (an initializer's run) an op counts its own draws
    np.testing.assert_array_equal(draws.draw(0, "normal", [2], np.float32),
                                  ar.values("normal", [2], np.float32, ("op", 0, 0)))
    draws.summary()
    assert draws.trace.events[-1] == {"kind": "aligned", "ops": 2, "draws": 5, "training": 3, "evaluating": 0}
    assert [e["name"] for e in draws.trace.events if e["kind"] == "aligned_op"] == ["op0", "op1"]


def test_graph_draws_count_those_of_runs_that_update_nothing():
    """A gradient probe is a training run for the numbering, but it updates no variable:
    its draws are counted apart (the evidence of TFG804), and the numbers stay the same."""
    draws = _graph_draws([10, 5])
    draws.begin_run(True, 0, [0], updating=False)
    probe = draws.draw(0, "uniform", [2], np.float32)
    draws.end_run()
    np.testing.assert_array_equal(probe, ar.values("uniform", [2], np.float32, (("train", 0), 0)))
    draws.begin_run(True, 0, [0])
    draws.draw(0, "uniform", [2], np.float32)
    draws.end_run()
    draws.draw(1, "normal", [2], np.float32)   # (outside a run: an initializer's)
    draws.summary()
    assert draws.trace.events[-1] == {"kind": "aligned", "ops": 2, "draws": 3, "training": 2, "evaluating": 1}


def test_eager_index_is_execution_order_within_a_segment():
    stream = ar.Stream(_Trace())
    assert [stream.index(("train", 0)), stream.index(("train", 0)), stream.index(("other", 1)),
            stream.index(("train", 1)), stream.index(("train", 1))] == [0, 1, 0, 0, 1]


def test_tally_and_report_line():
    events = [{"kind": "aligned_op"}, {"kind": "aligned", "ops": 1, "draws": 33, "training": 30}]
    both = {"original": ar.tally(events), "migrated": ar.tally([{"kind": "aligned_op"}])}
    assert both == {"original": {"ops": 1, "draws": 33, "training": 30}, "migrated": {"ops": 1, "draws": None}}
    line = ar.describe(both)
    assert line.startswith("aligned") and "original 33 draws (30 in training steps) by 1 random op" in line
    assert "migrated an unknown number of draws by 1 random op" in line
    assert "migrated none" in ar.describe({"original": both["original"], "migrated": ar.tally([])})
    assert ar.describe({"original": ar.tally([]), "migrated": ar.tally([])}) == ""


def test_categorical_samples_follow_the_softmax_and_the_key():
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]]))
    many = ar.categorical(np.repeat(logits, 1, axis=0), 20000, np.int64, ("train", 0))
    assert many.shape == (2, 20000) and many.dtype == np.int64
    for row, want in zip(many, np.exp(logits)):
        assert np.abs(np.bincount(row, minlength=3) / row.size - want).max() < 0.02
    again = ar.categorical(logits, 20000, np.int64, ("train", 0))
    assert (again == many).all()                      # one key, the same samples on both sides
    other = ar.categorical(logits, 20000, np.int64, ("train", 1))
    assert (other != many).any()                      # the next draw of the run, other samples
    flipped = ar.categorical(logits[:, ::-1], 20000, np.int64, ("train", 0))
    assert (flipped != many).any()                    # the samples depend on the logits
