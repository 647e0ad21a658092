"""What selection and suppression mean for the whole-program restructuring, and which
files a run sees: it is one fix of all its codes, made when one of them is selected;
a rename it would have to make that is deselected, or a line it would change that a
comment protects, leaves the file intact with that reason."""

from __future__ import annotations

import json

import pytest

from tf1gradfix.cli.main import main

SESSION = """\
import tensorflow as tf
tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([1, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(loss, feed_dict={x: [[1.0]]}))
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _diff(capsys, *argv) -> dict:
    _, out, _ = run(capsys, "rewrite", "--diff", "--format", "json", *argv, "train.py")
    return json.loads(out)


def test_ignoring_one_code_of_the_restructuring_only_hides_its_findings(folder, capsys):
    (folder / "train.py").write_text(SESSION)
    document = _diff(capsys, "--ignore", "TFG107")
    assert "def compute_loss(x):" in document["diffs"]["train.py"]
    assert "TFG107" not in {f["code"] for f in document["findings"]}
    assert {f["code"] for f in document["findings"]} >= {"TFG101", "TFG103", "TFG105"}


def test_a_selection_of_some_of_its_codes_restructures(folder, capsys):
    """README's example: `select = TFG1, TFG2` leaves TFG3xx and the renames out of the report."""
    (folder / "train.py").write_text(SESSION.replace("tf.set_random_seed(0)\n", ""))
    (folder / "setup.cfg").write_text("[tf1gradfix]\nselect = TFG1, TFG2\nignore = TFG402\n")
    document = _diff(capsys)
    assert "def compute_loss(x):" in document["diffs"]["train.py"]


@pytest.mark.parametrize("how, argv, source", [
    ("deselected", ("--ignore", "TFG401"), SESSION),
    ("deselected", ("--select", "TFG1"), SESSION),
    ("protects", (), SESSION.replace("seed(0)\n", "seed(0)  # tf1gradfix: ignore[TFG401]\n")),
    ("protects", (), SESSION.replace("tf.Session() as sess:", "tf.Session() as sess:  # tf1gradfix: ignore")),
])
def test_a_withheld_fix_leaves_a_session_program_intact_and_says_why(folder, capsys, how, argv, source):
    path = folder / "train.py"
    path.write_text(source)
    lines = source.splitlines()
    line = 1 + next((n for n, text in enumerate(lines) if "ignore" in text),
                    next(n for n, text in enumerate(lines) if "random_seed" in text))
    document = _diff(capsys, *argv)
    assert "diffs" not in document
    (blocker,) = document["not_restructured"]["train.py"]
    assert blocker["line"] == line and blocker["code"] == "TFG905" and how in blocker["message"], blocker
    code, out, _ = run(capsys, "rewrite", "--no-verify", *argv, "train.py")
    assert code == 1 and path.read_text() == source
    assert f"train.py: not restructured (still TF1 graph code) because of line {line}: TFG905" in out


TF1 = "import tensorflow as tf\nx = tf.placeholder(tf.float32)\ntf.set_random_seed(0)\n"


def _checked(capsys, *argv) -> set[str]:
    _, out, _ = run(capsys, "check", "--format", "json", *argv)
    return {f["path"] for f in json.loads(out)["findings"]}


def test_a_skip_file_comment_leaves_the_file_out_of_check_and_rewrite(folder, capsys):
    skipped = "import tensorflow as tf\n# tf1gradfix: skip-file\ntf.set_random_seed(0)\n"
    (folder / "skipped.py").write_text(skipped)
    (folder / "trailing.py").write_text("import tensorflow as tf\ntf.set_random_seed(0)  # tf1gradfix: skip-file\n")
    (folder / "cr.py").write_bytes(skipped.replace("\n", "\r").encode())
    assert _checked(capsys, ".") == {"trailing.py"}
    code, _, _ = run(capsys, "rewrite", "skipped.py", "cr.py")
    assert code == 0 and (folder / "skipped.py").read_text() == skipped


@pytest.fixture
def repository(folder):
    (folder / ".git").mkdir()   # (git itself is not needed: a repository is a folder with .git)
    for name in ("generated/a.py", "src/b.py", "src/c_gen.py", "src/keep_gen.py", "src/deep/d_gen.py", "src/out/e.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(TF1)
    (folder / ".gitignore").write_text("# generated code\ngenerated/\n*_gen.py\n!keep_gen.py\n/src/out\n")
    return folder


def test_folders_are_walked_without_what_gitignore_leaves_out(repository, capsys):
    assert _checked(capsys, ".") == {"src/b.py", "src/keep_gen.py"}
    assert _checked(capsys, "src") == {"src/b.py", "src/keep_gen.py"}   # (the root's .gitignore still applies)
    (repository / "src" / ".gitignore").write_text("b.py\n")
    assert _checked(capsys, ".") == {"src/keep_gen.py"}
    assert _checked(capsys, "src/c_gen.py", "generated/a.py") == {"src/c_gen.py", "generated/a.py"}   # named: taken


def test_gitignore_is_read_only_in_a_repository_and_can_be_turned_off(repository, capsys):
    (repository / "setup.cfg").write_text("[tf1gradfix]\nrespect-gitignore = false\n")
    assert len(_checked(capsys, ".")) == 6
    (repository / "setup.cfg").write_text("[tf1gradfix]\nrespect-gitignore = maybe\n")
    code, _, err = run(capsys, "check", ".")
    assert code == 2 and "setup.cfg:2: error: `respect-gitignore` must be true or false" in err
    (repository / "setup.cfg").unlink()
    (repository / ".git").rmdir()
    assert len(_checked(capsys, ".")) == 6


@pytest.mark.parametrize("pattern, path, folder, ignored", [
    ("*.py", "a/b.py", False, True),
    ("/b.py", "a/b.py", False, False),
    ("a/*.py", "a/b.py", False, True),
    ("a/**/c.py", "a/x/y/c.py", False, True),
    ("**/c.py", "c.py", False, True),
    ("a/**", "a/b/c.py", False, True),
    ("out/", "out", False, False),
    ("out/", "out", True, True),
    ("b?.py", "b1.py", False, True),
    ("[!a]*.py", "a.py", False, False),
    ("\\#x.py", "#x.py", False, True),
])
def test_gitignore_patterns_read_as_git_reads_them(pattern, path, folder, ignored):
    from tf1gradfix.cli.gitignore import parse

    hits = [not negated for regex, negated, folders_only in parse(pattern)
            if (folder or not folders_only) and regex.fullmatch(path)]
    assert bool(hits and hits[-1]) == ignored


def test_pyproject_wins_over_setup_cfg_in_one_folder_and_nothing_is_merged(folder, capsys):
    (folder / "train.py").write_text(TF1)
    (folder / "pyproject.toml").write_text('[tool.tf1gradfix]\nselect = ["TFG4"]\n')
    (folder / "setup.cfg").write_text("[tf1gradfix]\nignore = TFG401\nunknown-setting = 1\n")
    code, out, err = run(capsys, "check", "-v", "train.py")
    assert code == 1 and "settings from" in err and "pyproject.toml" in err
    assert "TFG401" in out and "TFG101" not in out   # (select from pyproject.toml; setup.cfg unread)


@pytest.mark.parametrize("argv", [("rewrite", "--diff"), ("rewrite", "--no-verify"), ("rewrite", "--check")])
def test_a_reason_several_lines_give_is_said_once(folder, capsys, argv):
    """`select = ["TFG1"]` in the settings withholds the rename of three lines: the file's
    one line of blockers names the reason once, with its lines."""
    (folder / "pyproject.toml").write_text('[tool.tf1gradfix]\nselect = ["TFG1"]\n')
    source = SESSION.replace("loss = tf.reduce_mean(tf.matmul(x, w))\n",
                             "a = tf.log(tf.matmul(x, w))\nb = tf.log(a)\nloss = tf.reduce_mean(tf.log(b))\n")
    (folder / "train.py").write_text(source)
    _, out, err = run(capsys, *argv, "train.py")
    for line in (out + err).splitlines():
        sentences = [s for s in line.split("; ") if s]
        assert len(sentences) == len(set(sentences)), line
    (blocker,) = [line for line in (out + err).splitlines() if "not restructured" in line]
    assert blocker.count("which is deselected") == 1 and blocker.endswith("(line 2, line 5, line 6, line 7)"), blocker
