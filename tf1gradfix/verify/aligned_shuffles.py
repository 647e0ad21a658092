"""tf.data shuffles given the same seeds on both sides, so that their orders agree.

`dataset.shuffle(buffer)` without a seed takes its order from the graph seed and the
op's position in the graph (TF1) or from an eager counter (TF2): the two sides shuffle
differently, and a pair whose training reads a shuffled pipeline was NOT_COMPARABLE.
With the same global seed (both runners set it) and the same op seed, a TF1 graph and
TF2 eager code shuffle alike, over every pass of a `repeat()` too (measured:
tests/test_aligned_shuffles.py). So both runners give the k-th `shuffle` call made
without a seed the seed `BASE + k`; a seed the program gives is kept.

One difference stays: a TF1 iterator initialized again over a seeded shuffle repeats
its first order, where TF2's `iter(dataset)` again (or a second `for x in dataset:`)
reshuffles. A shuffled pipeline started more than once is therefore still unaligned
randomness (random_ops.py): the graph side counts the runs of each iterator
initializer that reaches a shuffle, the eager side the iterations of each dataset
holding one. Only `shuffle` is aligned (`ShuffleDataset`, V2, V3); other shuffling
datasets (`shuffle_and_repeat`) stay unaligned.

No TensorFlow import at module level: the runners call `install` once TensorFlow is set up.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

BASE = 5309
_ALIGNED = re.compile(r"^ShuffleDataset(V2|V3)?$")


def is_aligned(op_type: str) -> bool:
    """A dataset shuffle op whose seeds `install` aligned (when its pipeline starts once)."""
    return bool(_ALIGNED.match(op_type))


def install(restarted: Callable[[object], None] | None = None) -> None:
    """Seed unseeded shuffles by call order; `restarted(dataset)`: called (eager side) when
    a dataset holding a shuffle is iterated a second time."""
    from tensorflow.python.data.ops import dataset_ops, shuffle_op

    original, calls = shuffle_op._shuffle, [0]

    def _shuffle(input_dataset, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        if seed is None:
            seed, calls[0] = BASE + calls[0], calls[0] + 1
        return original(input_dataset, buffer_size, seed, reshuffle_each_iteration, name=name)

    shuffle_op._shuffle = _shuffle
    if restarted is None:
        return
    started: Counter = Counter()
    iterate = dataset_ops.DatasetV2.__iter__

    def __iter__(self):
        if _holds_shuffle(self):
            started[id(self)] += 1
            if started[id(self)] > 1:
                restarted(self)
        return iterate(self)

    dataset_ops.DatasetV2.__iter__ = __iter__


def _holds_shuffle(dataset, budget: int = 200) -> bool:
    """Does the pipeline ending in `dataset` shuffle (a `ShuffleDataset` among its inputs)?"""
    stack, seen = [dataset], 0
    while stack and seen < budget:
        current = stack.pop()
        seen += 1
        if type(current).__name__.startswith("_Shuffle") or type(current).__name__ == "ShuffleDataset":
            return True
        try:
            stack.extend(current._inputs())
        except Exception:  # noqa: BLE001 - a dataset without inputs (a source)
            continue
    return False


class GraphStarts:
    """Graph side: the runs of each iterator initializer that reaches an aligned shuffle."""

    def __init__(self):
        self.runs: Counter = Counter()

    def unaligned(self, fetch_op, reached: list) -> list:
        """Of the random ops a run's fetch `fetch_op` reaches, those that stay unaligned: all but
        the aligned shuffles, and those too from the second run of the same initializer on."""
        shuffles = [op for op in reached if is_aligned(op.type)]
        if not shuffles:
            return reached
        self.runs[fetch_op.name] += 1
        return reached if self.runs[fetch_op.name] > 1 else [op for op in reached if not is_aligned(op.type)]
