"""tf.data shuffles seeded alike on both sides (tf1gradfix/verify/aligned_shuffles.py), measured:
the same orders in a TF1 graph and in TF2 eager code once each side installs the seeding, over
every pass of a `repeat()`; a TF1 iterator initialized again repeats its order where TF2's
`iter` again reshuffles (why a restarted pipeline stays unaligned); the restart is seen.
The proof of a rewrite: fixtures/rewrite/dataset_shuffled_batches and its wrong counterparts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tf1gradfix.verify import aligned_shuffles

GRAPH = """
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as v1
from tf1gradfix.verify import aligned_shuffles
v1.disable_v2_behavior()
v1.set_random_seed(41)
aligned_shuffles.install()
first = v1.data.Dataset.range(12).shuffle(5).repeat(2).batch(4)
second = v1.data.Dataset.range(6).shuffle(3).batch(6)
it = v1.data.make_initializable_iterator(first)
nxt, other = it.get_next(), v1.data.make_one_shot_iterator(second).get_next()
with v1.Session() as sess:
    sess.run(it.initializer)
    out = [sess.run(nxt).tolist() for _ in range(6)] + [sess.run(other).tolist()]
    sess.run(it.initializer)
    out.append(sess.run(nxt).tolist())
print(json.dumps(out))
"""
EAGER = """
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
from tf1gradfix.verify import aligned_shuffles
tf.random.set_seed(41)
restarts = []
aligned_shuffles.install(restarts.append)
first = tf.data.Dataset.range(12).shuffle(5).repeat(2).batch(4)
second = tf.data.Dataset.range(6).shuffle(3).batch(6)
it = iter(first)
out = [next(it).numpy().tolist() for _ in range(6)] + [next(iter(second)).numpy().tolist()]
out.append(next(iter(first)).numpy().tolist())
seen = len(restarts)
plain = tf.data.Dataset.range(3).batch(2)
list(plain), list(plain)   # (iterated twice, but no shuffle in it)
print(json.dumps([out, seen, len(restarts)]))
"""


def _run(program: str):
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.tf
def test_both_sides_shuffle_alike_until_a_pipeline_starts_again():
    graph = _run(GRAPH)
    eager, restarts, after_plain = _run(EAGER)
    assert graph[:7] == eager[:7]                    # every batch of both passes, and the second pipeline
    assert graph[7] == graph[0] != eager[7]          # started again: TF1 repeats its order, TF2 reshuffles
    assert restarts == 1 and after_plain == 1        # the restart is seen; a pipeline with no shuffle is not


def test_only_the_shuffle_datasets_are_aligned():
    assert all(aligned_shuffles.is_aligned(t) for t in ("ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3"))
    assert not any(aligned_shuffles.is_aligned(t) for t in ("ShuffleAndRepeatDataset", "RandomShuffle",
                                                            "ShuffleAndRepeatDatasetV2", "RandomUniform"))


class _Op:
    def __init__(self, name: str, kind: str):
        self.name, self.type = name, kind


def test_a_graph_initializer_reaching_a_shuffle_counts_from_its_second_run():
    starts = aligned_shuffles.GraphStarts()
    init, shuffle, draw = _Op("MakeIterator", "MakeIterator"), _Op("s", "ShuffleDataset"), _Op("d", "RandomUniform")
    assert starts.unaligned(init, [shuffle, draw]) == [draw]
    assert starts.unaligned(init, [shuffle, draw]) == [shuffle, draw]
    assert starts.unaligned(_Op("other", "MakeIterator"), [shuffle]) == []
