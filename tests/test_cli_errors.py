"""Usage errors a newcomer makes, each answered in one clear line with exit 2,
before TensorFlow starts (the verifier's own checks run in-process here)."""

from __future__ import annotations

import subprocess

import pytest

from tf1gradfix.cli.main import main


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_bad_option_after_a_command_shows_that_commands_usage(capsys):
    for command, usage in (("check", "usage: tf1gradfix check"), ("verify", "usage: tf1gradfix verify")):
        with pytest.raises(SystemExit) as stop:
            main([command, "--no-such-option", "x.py"])
        err = capsys.readouterr().err
        assert stop.value.code == 2
        assert err.startswith(usage), err
        assert f"tf1gradfix {command}: error: unrecognized arguments: --no-such-option" in err


def test_verify_of_missing_files_is_one_line(capsys):
    code, out, err = run(capsys, "verify", "missing1.py", "missing2.py")
    assert (code, out) == (2, "")
    assert err == "tf1gradfix verify: missing1.py: no such file; missing2.py: no such file\n"


def test_verify_of_a_syntax_error_fails_before_any_program_runs(capsys, tmp_path):
    (tmp_path / "bad.py").write_text("x = (\n")
    (tmp_path / "good.py").write_text("print(1)\n")
    code, out, err = run(capsys, "verify", "bad.py", "good.py")
    assert (code, out) == (2, "")
    assert err.startswith("tf1gradfix verify: bad.py:1: syntax error:"), err


def test_verify_help_names_the_programs_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = capsys.readouterr().out
    assert "ORIGINAL MIGRATED [-- ARGS ...]" in out
    assert "--base REF" in out


def test_an_unknown_setting_suggests_the_nearest_known_one(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tf1gradfix]\nselectt = ["TFG1"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = run(capsys, "check", "a.py")
    assert code == 2
    assert "unknown setting `selectt` (did you mean `select`?" in err


def test_verify_base_with_an_unknown_ref_says_so(capsys, tmp_path):
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    pytest.importorskip("tensorflow")   # (--base checks for TensorFlow before asking git)
    code, out, err = run(capsys, "verify", "--base", "nosuchref")
    assert (code, out) == (2, "")
    assert "`nosuchref` names no commit in this repository" in err
    assert "rev-parse" not in err


def test_the_advice_for_a_missing_tensorflow_fits_where_the_run_is(monkeypatch):
    from tf1gradfix.verify.budget import install_advice

    monkeypatch.delenv("PRE_COMMIT", raising=False)
    assert install_advice() == "pip install 'tf1gradfix[verify]'"
    monkeypatch.setenv("PRE_COMMIT", "1")   # (pre-commit sets it for every hook it runs)
    assert "additional_dependencies" in install_advice() and "pip install" not in install_advice()


def test_report_counts_say_one_thing_and_several_things():
    from tf1gradfix.verify.report import counted

    assert [counted(1, "step"), counted(2, "step"), counted(0, "gradient")] == ["1 step", "2 steps", "0 gradients"]
    assert [counted(1, "line of text"), counted(3, "line of text")] == ["1 line of text", "3 lines of text"]


@pytest.mark.parametrize("argv", [["rewrite"], ["rewrite", "--verify"], ["verify", "a.py", "a.py"]])
def test_a_hook_without_tensorflow_is_told_of_additional_dependencies(argv, tmp_path, monkeypatch, capsys):
    """The rewrite hook (and verify's) runs in an environment pre-commit makes: `pip install`
    there would not last, `additional_dependencies` does."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None])\n"
                                   "y = x * 2.0\nwith tf.Session() as sess:\n    print(sess.run(y, {x: [1.0]}))\n")
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: True)
    monkeypatch.setenv("PRE_COMMIT", "1")
    code, out, err = run(capsys, *argv, "a.py") if argv[0] == "rewrite" else run(capsys, *argv)
    assert "additional_dependencies" in out + err and "pip install" not in out + err, out + err
    assert code in (0, 1, 2)
