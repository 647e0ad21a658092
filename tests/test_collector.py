"""The cyclic collector is paused while a file is processed and back on after
(tf1gradfix/run/collector.py); the time it saves is measured by
benchmarks/session_blocks.py, not asserted here."""

from __future__ import annotations

import gc

from tf1gradfix.run import collector, engine
from tf1gradfix.run.findings import CodeFilter

PROGRAM = b"import tensorflow as tf\nx = tf.placeholder(tf.float32)\n"


def test_a_file_is_processed_with_the_collector_paused(monkeypatch):
    seen = []
    real = engine._process_source

    def spy(*args):
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(engine, "_process_source", spy)
    assert gc.isenabled()
    result = engine.process_source("a.py", PROGRAM, CodeFilter())
    assert seen == [False] and gc.isenabled()
    assert result.findings


def test_a_cycle_made_while_paused_is_freed_after():
    class Node:
        pass

    with collector.paused():
        node = Node()
        node.self = node
        count = sum(isinstance(o, Node) for o in gc.get_objects())
        del node
    assert count == 1
    assert not any(isinstance(o, Node) for o in gc.get_objects())


def test_a_caller_that_runs_without_the_collector_keeps_it_off():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
