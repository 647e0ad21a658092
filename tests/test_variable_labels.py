"""The original's variables named as the migrated program's single namespace names them
(verify/variables_v1.py): a later graph's `Variable_1` is the program's next `Variable`."""

from __future__ import annotations

from types import SimpleNamespace

from tf1gradfix.verify.variables_v1 import V1Variables


class _Graph:
    def __init__(self, *names: str) -> None:
        self.vars = [SimpleNamespace(name=f"{n}:0") for n in names]

    def get_collection(self, key: str) -> list:
        assert key == "variables"
        return self.vars


def _labeller() -> V1Variables:
    tracer = V1Variables.__new__(V1Variables)
    tracer.labels, tracer.graphs_seen = {}, {}
    return tracer


def _labels(tracer: V1Variables, graph: _Graph) -> list[str]:
    return [tracer.label(graph, v.name) for v in graph.vars]


def test_one_graph_keeps_its_names() -> None:
    tracer = _labeller()
    assert _labels(tracer, _Graph("Variable", "Variable_1", "w", "w_2")) == ["Variable", "Variable_1", "w", "w_2"]


def test_a_later_graph_continues_the_count() -> None:
    tracer = _labeller()
    _labels(tracer, _Graph("Variable", "Variable_1"))
    assert _labels(tracer, _Graph("Variable", "Variable_1", "Variable_2", "b")) == [
        "Variable_2", "Variable_3", "Variable_4", "b"]


def test_a_name_asked_for_is_kept_where_its_base_came_later() -> None:
    # `w_1` named by the program before any `w` of its graph: not a uniquified `w`
    tracer = _labeller()
    _labels(tracer, _Graph("w_1"))
    assert _labels(tracer, _Graph("w_1", "w")) == ["w_1_1", "w"]


def test_a_gap_in_the_count_is_not_read_as_uniquified() -> None:
    tracer = _labeller()
    _labels(tracer, _Graph("w", "w_2"))
    assert _labels(tracer, _Graph("w", "w_2")) == ["w_1", "w_2_1"]
