"""Reports and options that must not turn on the user: a report path that is a program,
a report folder holding the sources, colliding report names, SARIF URIs, JUnit with
control characters, `rewrite --verify --check`, a named file left out by `exclude`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.cli.rewrite_verify import _slug
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

SESSION = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        _, value = sess.run([train_op, loss], feed_dict={x: np.ones((4, 2), np.float32)})
        print(value)
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    return tmp_path


def proven(monkeypatch, verdict="EQUIVALENT"):
    from tf1gradfix.verify import orchestrate

    def verified(original, candidate, **_):
        return VerifyResult(verdict, "compared", SideResult("original", str(original)),
                            SideResult("migrated", str(candidate)))
    monkeypatch.setattr(orchestrate, "verify_pair", verified)


def test_a_report_path_that_is_a_program_being_verified_is_refused(folder, capsys):
    (folder / "original.py").write_text(SESSION)
    (folder / "migrated.py").write_text("print(1)\n")
    assert main(["verify", "original.py", "migrated.py", "--json", "./original.py"]) == 2
    assert "a report would overwrite a program being verified: ./original.py" in capsys.readouterr().err
    assert (folder / "original.py").read_text() == SESSION


def test_a_report_folder_holding_the_sources_is_refused(folder, capsys, monkeypatch):
    proven(monkeypatch)
    (folder / "train.py").write_text(SESSION)
    (folder / "summary.md").write_text("the user's own notes\n")
    code = main(["rewrite", "--verify", "--report-dir", ".", "train.py"])
    captured = capsys.readouterr()
    assert code == 2 and "holds the files being proven" in captured.err
    assert (folder / "summary.md").read_text() == "the user's own notes\n"
    assert not (folder / "junit.xml").exists()


def test_report_names_of_paths_that_lose_characters_stay_apart():
    stems = {_slug(f"/r/{name}", "/r") for name in ("a/b.py", "a_b.py", "ü.py", "ä.py", "x y.py", "x_y.py")}
    assert len(stems) == 6
    assert _slug("/r/a_b.py", "/r") == "a_b.py"   # (a name that loses nothing is kept as it is)


def test_rewrite_verify_check_exits_1_when_something_would_change(folder, capsys, monkeypatch):
    proven(monkeypatch)
    (folder / "train.py").write_text(SESSION)
    assert main(["rewrite", "--verify", "--check", "train.py"]) == 1
    assert main(["rewrite", "--check", "--no-verify", "train.py"]) == 1
    assert (folder / "train.py").read_text() == SESSION


def test_sarif_uris_are_percent_encoded_and_a_cell_is_no_file(folder, capsys):
    (folder / "a #1%?.py").write_text("import tensorflow as tf\nx = tf.log(1.0)\n")
    cells = [{"cell_type": "code", "metadata": {}, "source": "import tensorflow as tf\ny = tf.log(2.0)",
              "execution_count": None, "outputs": []}]
    (folder / "n b.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    main(["check", "--format", "sarif", "a #1%?.py", "n b.ipynb"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    places = [r["locations"][0]["physicalLocation"] for r in results]
    assert {p["artifactLocation"]["uri"] for p in places} == {"a%20%231%25%3F.py", "n%20b.ipynb"}
    cell = next(p for p in places if p["artifactLocation"]["uri"] == "n%20b.ipynb")
    assert cell["region"]["startLine"] == 2 and cell["region"]["properties"] == {"cell": 1}
    main(["check", "--format", "json", "n b.ipynb"])
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["path"], finding["cell"], finding["line"]) == ("n b.ipynb", 1, 2)
    main(["check", "--format", "github", "n b.ipynb"])
    assert capsys.readouterr().out.startswith("::warning file=n b.ipynb,line=2,col=5,title=TFG401 (cell 1)::")


def test_junit_with_control_characters_stays_well_formed(tmp_path):
    from tf1gradfix.verify import report

    result = VerifyResult("NOT_COMPARABLE", "printed \x1b[31m and \x00", SideResult("original", "/x/o\x01.py"),
                          SideResult("migrated", "/x/m\x07.py", stderr_tail="bell \x07"))
    target = tmp_path / "junit.xml"
    report.write_reports([result], junit=str(target))
    root = ET.parse(target).getroot()   # (raises on characters XML cannot hold)
    assert "o\\x01.py" in root.find("testsuite").get("name")


def test_a_named_file_left_out_by_exclude_is_said(folder, capsys):
    (folder / "pyproject.toml").write_text('[tool.tf1gradfix]\nexclude = ["*"]\n')
    (folder / "a.py").write_text("import tensorflow as tf\nx = tf.log(1.0)\n")
    assert main(["check", "a.py"]) == 0
    assert "a.py: named but excluded (exclude = ['*']); not read" in capsys.readouterr().err


def test_deeply_nested_json_or_toml_is_one_line_and_exit_2(folder, capsys):
    (folder / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    code = main(["check", "deep.ipynb"])
    out = capsys.readouterr().out
    assert code == 2 and "deep.ipynb: error: not a Jupyter notebook (nbformat 4 JSON): nested too deeply" in out
    (folder / "deep.ipynb").unlink()
    (folder / "pyproject.toml").write_text("[tool.tf1gradfix]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (folder / "a.py").write_text("x = 1\n")
    code = main(["check", "a.py"])
    captured = capsys.readouterr()
    assert code == 2 and "invalid TOML: nested too deeply to read" in captured.out + captured.err
    assert "internal error" not in captured.out + captured.err
