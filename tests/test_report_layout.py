"""Reports a reviewer reads: paths relative to the run (two files may share a basename),
no rows for quantities never recorded, totals at the end of summary.md, one JUnit
classname per file, and no lines of the tool's own in a side's stderr tail."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tf1gradfix.verify import report
from tf1gradfix.verify.comparison import Comparison
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult


def result(tmp_path, name, verdict="EQUIVALENT", stderr=""):
    r = VerifyResult(verdict, "compared", SideResult("original", str(tmp_path / name / "train.py")),
                     SideResult("migrated", str(tmp_path / "out" / name / "train.py"), stderr_tail=stderr))
    r.comparison = Comparison()
    r.comparison.stats["loss"].compared = 3
    return r


def test_markdown_names_paths_relative_to_the_run_and_ends_with_totals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "summary.md"
    report.write_reports([result(tmp_path, "a"), result(tmp_path, "b", "DIVERGED")], markdown=str(target),
                         refused=[("c/train.py", "a FIFOQueue")])
    text = target.read_text()
    assert "`a/train.py` → `out/a/train.py`" in text and "`b/train.py`" in text
    assert "| loss | 3 |" in text and "| plotted value |" not in text and "| gradient |" not in text
    assert text.rstrip().splitlines()[-1] == "**Total: 3 files**: 1 EQUIVALENT, 1 DIVERGED, 1 not restructured."


def test_junit_has_one_classname_per_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "junit.xml"
    report.write_reports([result(tmp_path, "a"), result(tmp_path, "b")], junit=str(target),
                         refused=[("c/train.py", "a FIFOQueue")])
    cases = ET.parse(target).getroot().iter("testcase")
    assert sorted({c.get("classname") for c in cases}) == ["a/train.py", "b/train.py", "c/train.py"]


def test_stderr_tail_drops_the_tools_own_lines_and_keeps_the_programs():
    stderr = "\n".join([
        "2026-12-05 16:00:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on.",
        "<frozen runpy>:128: RuntimeWarning: 'tf1gradfix.verify.runner_v1' found in sys.modules after import "
        "of package 'tf1gradfix.verify', but prior to execution of 'tf1gradfix.verify.runner_v1'; this may "
        "result in unpredictable behaviour",
        "  warn(RuntimeWarning(msg))",
        "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the "
        "appropriate compiler flags.",
        "2026-12-05 16:00:01.000000: W tensorflow/core/framework/op_kernel.cc:1840] OP_REQUIRES failed",
        "RuntimeWarning: overflow in my own code",
        "ValueError: the program's own error",
    ])
    assert report._tail(stderr).splitlines() == stderr.splitlines()[4:]


def test_check_junit_classname_is_the_file_a_notebook_cell_included(tmp_path, monkeypatch, capsys):
    from tf1gradfix.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import tensorflow as tf\ny = tf.log(2.0)\n")
    main(["check", "-j", "1", "--format", "junit", "pkg/a.py"])
    (case,) = ET.fromstring(capsys.readouterr().out).iter("testcase")
    assert case.get("classname") == "pkg/a.py"


def test_a_printed_line_with_one_number_says_number():
    from tf1gradfix.verify.compare_output import compare_printed

    cmp = Comparison()
    compare_printed(cmp, "loss 0.5\n", "loss 0.5 0.25\n", 1e-5, 1e-8)
    assert "original line 1 prints 1 number, migrated line 1 prints 2" in cmp.first.reason
