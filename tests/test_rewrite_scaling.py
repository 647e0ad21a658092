"""The rewrite's work grows linearly with the number of session blocks of a file
(benchmarks/session_blocks.py measures the time: 1000, 2000, 4000 blocks)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import session_blocks  # noqa: E402

from tf1gradfix.constructs import graph_prints  # noqa: E402
from tf1gradfix.run.engine import process_source  # noqa: E402
from tf1gradfix.run.findings import CodeFilter  # noqa: E402


def test_each_statement_is_asked_whether_it_binds_print_once_per_file(monkeypatch):
    """Every block's builder asked whether the module rebinds `print`, walking the whole
    module each time: N blocks, N walks of N blocks."""
    calls = []
    real = graph_prints.bound_names

    def counted(stmt):
        calls.append(stmt)
        return real(stmt)

    monkeypatch.setattr(graph_prints, "bound_names", counted)
    counts = {}
    for blocks in (10, 20):
        calls.clear()
        result = process_source(f"blocks_{blocks}.py", session_blocks.program(blocks).encode(), CodeFilter())
        assert result.new_source is not None and b"tf.Session" not in result.new_source
        counts[blocks] = len(calls)
    assert counts[20] <= 2.2 * counts[10], counts


def test_reads_of_a_name_rebound_between_them_are_answered_apart(tmp_path, capsys):
    """Answering each name once must not merge reads that see different bindings: after the
    second import, `tf` may be either module, and its rename is no longer certain."""
    from tf1gradfix.cli.main import main

    (tmp_path / "rebound.py").write_text("import tensorflow as tf\na = tf.log(1.0)\n"
                                         "import tensorflow.compat.v1 as tf\nb = tf.log(2.0)\n")
    main(["check", str(tmp_path / "rebound.py")])
    out = capsys.readouterr().out
    assert "rebound.py:2:5: TFG401 [*safe]" in out and "rebound.py:4:5: TFG401 [manual]" in out   # (not written: manual)
