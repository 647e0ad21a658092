"""Results on stdout, progress and logs on stderr, in every command and format.

`tf1gradfix check --format json . > out.json` must give one document whatever
the run says about itself (settings, clean files, proofs under way), and a
terminal's reader must see the progress even when stdout goes to a file. Each
case runs a command in process and reads both streams apart. (`rewrite --diff`
in text is the one exception ruff also makes: the diff is its result, the
findings beside it go to stderr.)
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from test_cli_selection import SESSION   # (a session program: its findings are decided by `rewrite`)
from tf1gradfix.cli.main import main

RENAME = "import tensorflow as tf\ny = tf.log(tf.constant(2.0))\nz = tf.to_float(3)\n"
CLEAN = "x = 1\n"

FORMATS = ("text", "json", "sarif", "junit", "github")
FINDING = re.compile(r"^\S+\.py:\d+:\d+: TFG\d+ ")
PROGRESS = re.compile(r"^(tf1gradfix: (proving \d|\[\d+/\d+\]|settings from|No Python files)|\S+\.py: clean$)")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: True)   # (no program is run)
    for name, text in (("train.py", SESSION), ("util.py", RENAME), ("clean.py", CLEAN)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _run(capsys, argv) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_document(fmt: str, out: str) -> None:
    """stdout is the format's result and nothing else."""
    if fmt in ("json", "sarif"):
        json.loads(out)
    elif fmt == "junit":
        ET.fromstring(out.strip())
    elif fmt == "github":
        assert all(line.startswith("::") for line in out.splitlines() if line), out


FILE_RUNS = [
    ("check", ["check", "-v"]),
    ("rewrite --diff", ["rewrite", "--diff", "-v"]),
    ("rewrite --check", ["rewrite", "--check", "-v"]),
    ("rewrite --no-verify", ["rewrite", "--no-verify", "-v"]),
    ("rewrite", ["rewrite", "-v"]),
    ("rewrite --verify", ["rewrite", "--verify", "-v"]),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name,argv", FILE_RUNS, ids=[name for name, _ in FILE_RUNS])
def test_results_go_to_stdout_and_progress_to_stderr(folder, capsys, name, argv, fmt):
    code, out, err = _run(capsys, [*argv, "--format", fmt, "."])
    assert code in (0, 1, 2), (out, err)
    assert not any(PROGRESS.match(line) for line in out.splitlines()), out
    assert "settings from" in err and "clean.py: clean" in err            # (-v: logs)
    if name == "rewrite --verify":
        assert re.search(r"^tf1gradfix: proving 2 programs ", err, re.MULTILINE), err
        assert re.search(r"^tf1gradfix: \[2/2\] \S+\.py: NOT_COMPARABLE", err, re.MULTILINE), err
    if fmt != "text":
        _one_document(fmt, out)
        assert not any(FINDING.match(line) for line in err.splitlines()), err
        assert "util.py" in out and "train.py" in out
    elif name == "rewrite --diff":
        assert out.startswith("--- a/") and "+++ b/util.py" in out
    else:
        assert any(FINDING.match(line) for line in out.splitlines()), out
        assert not any(FINDING.match(line) for line in err.splitlines()), err


@pytest.mark.parametrize("argv", [["rules"], ["rules", "--format", "json"], ["rules", "--format", "markdown"],
                                  ["explain", "TFG402"], ["explain", "fix_withheld"]])
def test_the_catalog_is_printed_on_stdout_alone(capsys, argv):
    code, out, err = _run(capsys, argv)
    assert code == 0 and out.strip() and err == ""
    if "json" in argv:
        json.loads(out)


@pytest.mark.parametrize("argv", [["explain", "NOPE"], ["verify", "a.py", "b.py"], ["verify", "--base", "HEAD"],
                                  ["rewrite", "--diff", "--rtol", "1", "."]])
def test_an_error_is_on_stderr_and_stdout_stays_empty(folder, capsys, argv):
    code, out, err = _run(capsys, argv)
    assert code == 2 and err.startswith("tf1gradfix") and out == "", (out, err)


@pytest.mark.parametrize("argv", [["check", "--format", "json", "--select", "XYZ", "."], ["verify", "-j", "0"]])
def test_a_usage_error_is_on_stderr_and_stdout_stays_empty(folder, capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "" and "error:" in err


def test_an_empty_run_says_so_on_stderr(folder, capsys):
    (folder / "empty").mkdir()
    for fmt in FORMATS:
        code, out, err = _run(capsys, ["check", "--format", fmt, "empty"])
        assert code == 0 and out == "" and "No Python files found" in err


def test_nothing_to_prove_against_a_ref_says_so_on_stderr(folder, capsys, monkeypatch):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True,
                       capture_output=True)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    code, out, err = _run(capsys, ["verify", "--base", "HEAD"])
    assert (code, out) == (0, "") and "no Python file or notebook differs from HEAD" in err
