"""The nodes of tf.data input pipelines: the pipelines, their iterators, what starts them
and the placeholders only their starts feed (constructs/datasets.py, restarted_iterators.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tf1gradfix.model.nodes import Static


@dataclass(eq=False, kw_only=True)
class Dataset(Static):
    """A tf.data pipeline built from host values: the same object in TF2 (constructs/datasets.py)."""

    kind: ClassVar[str] = "dataset"


@dataclass(eq=False, kw_only=True)
class DataIterator(Static):
    """`dataset.make_one_shot_iterator()`: `iter(dataset)` in TF2, made once (constructs/datasets.py);
    an initializable or reinitializable one (`restarts`), made by each run that starts it
    (constructs/restarted_iterators.py)."""

    kind: ClassVar[str] = "iterator"
    source: str = ""       # the pipeline its initializer starts it over (none: `from_structure`)
    restarts: bool = False


@dataclass(eq=False, kw_only=True)
class PipelineInput(Static):
    """`x_in = tf.placeholder(...)` read by a tf.data pipeline alone and fed only by runs of
    its iterator's initializer, each with the same host array `fed`: `tf.constant(fed)`
    where the graph was built (constructs/restarted_iterators.py)."""

    kind: ClassVar[str] = "pipeline input"
    fed: str


@dataclass(eq=False, kw_only=True)
class IteratorStart(Static):
    """`start = reader.make_initializer(pairs)`, `start = batches.initializer`: a run of it
    starts `iterator` over `source` (constructs/restarted_iterators.py)."""

    kind: ClassVar[str] = "iterator start"
    iterator: str
    source: str
