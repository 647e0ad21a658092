"""`make demo` succeeds when every rewritten example is proven; the examples refused on
purpose are listed in the reports (NOT_RESTRUCTURED) and do not count against it."""

from __future__ import annotations

import json

from tf1gradfix.cli.demo import EXAMPLES, _all_proven, copy_examples


def _reports(tmp_path, verdicts):
    (tmp_path / "summary.json").write_text(json.dumps([{"path": f"e{i}.py", "verdict": v}
                                                       for i, v in enumerate(verdicts)]))
    return tmp_path


def test_refused_examples_do_not_count_and_an_unproven_one_does(tmp_path):
    assert _all_proven(_reports(tmp_path, ["EQUIVALENT", "NOT_RESTRUCTURED", "EQUIVALENT"]))
    assert not _all_proven(_reports(tmp_path, ["EQUIVALENT", "NOT_RESTRUCTURED", "DIVERGED"]))
    assert not _all_proven(_reports(tmp_path, ["NOT_RESTRUCTURED"]))


def test_every_example_gets_the_folders_it_reads(tmp_path):
    sources = sorted(EXAMPLES.glob("*/input.py"))
    copy_examples(sources, tmp_path / "examples")
    for source in sources:
        assert (tmp_path / "examples" / f"{source.parent.name}.py").read_bytes() == source.read_bytes()
        for data in source.parent.iterdir():
            if data.is_dir() and data.name != "__pycache__":
                assert (tmp_path / "examples" / data.name).is_dir(), data
    assert (tmp_path / "examples" / "checkpoints").is_dir()   # (saver_restore_by_name restores from it)


def test_the_demo_ends_with_a_short_summary_not_pages(tmp_path, monkeypatch, capsys):
    from tf1gradfix.cli import demo

    def chatty(argv):
        print("a line of the command\n" * 500)
        if argv[0] == "rewrite":
            _reports(tmp_path / "work" / "reports", ["EQUIVALENT", "NOT_RESTRUCTURED", "EQUIVALENT"])
        return 1
    (tmp_path / "work" / "reports").mkdir(parents=True)
    monkeypatch.setattr(demo, "cli", chatty)
    assert demo.run(tmp_path / "work") == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) <= 5, out
    assert out[-3] == "3 files: 2 EQUIVALENT, 1 NOT_RESTRUCTURED"
    assert "a line of the command" in (tmp_path / "work" / "demo.log").read_text()
