"""tf1gradfix.records: the value classes of the `check` path behave as the dataclasses they replace."""

import dataclasses
import pickle

import pytest

from tf1gradfix.records import FrozenRecordError, as_dict, field, record, replace


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


@record
class Bag:
    name: str
    items: list[int] = field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_constructor_defaults_and_repr_as_a_dataclass():
    assert Point(1) == Point(x=1, y=0)
    assert repr(Point(1, 2, ("a",))) == repr(DataPoint(1, 2, ("a",))).replace("DataPoint", "Point")
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, x=2)
    with pytest.raises(TypeError):
        Point(1, 2, (), 4)
    with pytest.raises(TypeError):
        Point(1, z=3)


def test_frozen_records_hash_by_value_and_refuse_assignment():
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and len({Point(1, 2), Point(1, 2), Point(2)}) == 2
    with pytest.raises(FrozenRecordError):
        Point(1).x = 2
    with pytest.raises(AttributeError):
        del Point(1).x
    assert Point(1) != (1, 0, ()) and Point(1) != DataPoint(1)


def test_mutable_records_get_a_fresh_default_and_no_hash():
    first, second = Bag("a"), Bag("b")
    first.items.append(1)
    assert second.items == [] and "items" not in vars(Bag)
    first.name = "c"
    assert first == Bag("c", [1])
    with pytest.raises(TypeError):
        hash(first)


def test_replace_as_dict_and_pickle():
    point = Point(1, 2, ("t",))
    assert replace(point, y=5) == Point(1, 5, ("t",)) and point.y == 2
    assert list(as_dict(point).items()) == [("x", 1), ("y", 2), ("tags", ("t",))]
    assert pickle.loads(pickle.dumps(point)) == point
    bag = pickle.loads(pickle.dumps(Bag("a", [3])))
    assert bag == Bag("a", [3])
