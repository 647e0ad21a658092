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


def test_the_modules_calls_are_walked_once_per_file(monkeypatch):
    """Whether a module switches every variable to a resource one was asked by each block's
    builder, each walking the whole module: N blocks, N walks of N blocks."""
    import libcst as cst

    from tf1gradfix.model import graph

    walked = []
    real = graph.walk

    def counted(node):
        if isinstance(node, cst.Module):
            walked.append(node)
        return real(node)

    monkeypatch.setattr(graph, "walk", counted)
    for blocks in (10, 20):
        walked.clear()
        result = process_source(f"blocks_{blocks}.py", session_blocks.program(blocks).encode(), CodeFilter())
        assert result.new_source is not None
        assert len(walked) <= 1, (blocks, len(walked))


def test_a_referent_is_read_once_per_name_read_not_once_per_read(monkeypatch):
    """The k-th read of a name bound k times (`sess` of every block) has k referents; what
    each adds to the answer is kept, so N blocks cost N, not N * N, values read."""
    from tf1gradfix.detect import ast_names, names

    counts = {}
    for module, cls in ((ast_names, ast_names.Names), (names, names.NameResolver)):
        real = cls._module_of
        seen: list = []

        def counted(self, value, real=real, seen=seen):
            seen.append(value)
            return real(self, value)

        monkeypatch.setattr(cls, "_module_of", counted)
        counts[module.__name__] = seen
    totals = {}
    for blocks in (10, 20):
        for seen in counts.values():
            seen.clear()
        process_source(f"blocks_{blocks}.py", session_blocks.program(blocks).encode(), CodeFilter())
        totals[blocks] = {name: len(seen) for name, seen in counts.items()}
    for name in counts:
        assert totals[20][name] <= 2.2 * totals[10][name] + 4, (name, totals)


def test_a_bound_name_is_looked_up_once_per_scope_not_once_per_binding(monkeypatch):
    """The assignment targets (`sess` of `with ... as sess` in every block) were each asked of
    LibCST, which searches all the name's assignments for the target's own: N * N."""
    from tf1gradfix.detect import names

    asked = []
    real = names.NameResolver._libcst_lookup

    def counted(self, scope, node):
        asked.append(node)
        return real(self, scope, node)

    monkeypatch.setattr(names.NameResolver, "_libcst_lookup", counted)
    process_source("blocks_20.py", session_blocks.program(20).encode(), CodeFilter())
    assert len(asked) <= 2, len(asked)


def test_fresh_names_start_from_the_last_number_given():
    """The N-th `train_step` of a file was found by trying `train_step`, `_2`, ... `_N`:
    the names are the same, found in one try each."""
    from tf1gradfix.cst.syntax import TakenNames, fresh_name

    class Counted(TakenNames):
        tries = 0

        def __contains__(self, name):
            Counted.tries += 1
            return super().__contains__(name)

    plain, counted = {"step", "step_3", "x"}, Counted({"step", "step_3", "x"})
    bases = ["step", "x", "step", "y"] * 200
    assert [fresh_name(b, plain) for b in bases] == [fresh_name(b, counted) for b in bases]
    assert Counted.tries <= 2 * len(bases) + 4
