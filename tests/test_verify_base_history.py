"""`verify --base REF` in real git histories: renames and copies followed to their source,
deletions, notebooks proven as notebooks, a project proven with its modules at REF."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fixture_patch import counterpart_text
from tf1gradfix.cli import main as cli
from tf1gradfix.verify import base

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "verify" / "dev_linear_sgd"
pytestmark = pytest.mark.integration

MODULE_AT_REF = "SCALE = 1.0\n"
KEPT = "import sys\nrate = 0.5\nfor step in range(3):\n    rate *= 0.9\n    print(step, rate)\nprint('kept', sys.argv[1:])\n"
SCRIPT = "from helpers import SCALE\nprint('scale', SCALE)\n"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


def notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "execution_count": None, "outputs": []} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    _git(tmp_path, "init", "-q")
    original = (FIXTURE / "original.py").read_text(encoding="utf-8")
    files = {"train.py": original, "kept.py": KEPT, "helpers.py": MODULE_AT_REF, "runner.py": SCRIPT,
             "gone.py": "print('gone')\n", "lab.ipynb": notebook("%%time\nvalue = 2 * 3\n", "print(value)")}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "TF1 code")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def branch(repo: Path) -> None:
    """A branch's work: train.py renamed (and migrated), kept.py copied (and migrated), gone.py
    deleted, the notebook and the project (runner.py with helpers.py) changed."""
    _git(repo, "mv", "train.py", "train_tf2.py")
    (repo / "train_tf2.py").write_text((FIXTURE / "migrated.py").read_text(encoding="utf-8"), encoding="utf-8")
    (repo / "kept_tf2.py").write_text(KEPT.replace("0.9", "0.8"), encoding="utf-8")
    _git(repo, "rm", "-q", "gone.py")
    (repo / "lab.ipynb").write_text(notebook("%%time\nvalue = 3 * 3\n", "print(value)"), encoding="utf-8")
    (repo / "helpers.py").write_text("SCALE = 2.0\n", encoding="utf-8")
    (repo / "runner.py").write_text(SCRIPT + "print('done')\n", encoding="utf-8")
    _git(repo, "add", "-A")


def test_renames_and_copies_are_followed_to_their_source(repo):
    branch(repo)
    found, before = base.changes("HEAD")
    assert found == {"helpers.py": "helpers.py", "kept_tf2.py": "kept.py", "lab.ipynb": "lab.ipynb",
                     "runner.py": "runner.py", "train_tf2.py": "train.py"}
    assert sorted(before) == ["gone.py", "helpers.py", "runner.py", "train.py"]


def test_each_file_is_proven_against_its_source_as_a_program_of_its_kind(repo, monkeypatch, capsys):
    from tf1gradfix.verify import orchestrate
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    branch(repo)
    ran = {}

    def verified(original, migrated, original_swap=None, **_):
        ran[Path(migrated).name] = (original.read_text(), migrated.read_text(), original_swap)
        return VerifyResult("EQUIVALENT", "compared", SideResult("original", str(original)),
                            SideResult("migrated", str(migrated)))

    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    assert cli.main(["verify", "--base", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert "  train_tf2.py: EQUIVALENT" in out and "  kept_tf2.py: EQUIVALENT" in out and "  lab.ipynb: EQUIVALENT" in out
    assert ran["train_tf2.py"][0] == (FIXTURE / "original.py").read_text()
    assert ran["kept_tf2.py"][:2] == (KEPT, KEPT.replace("0.9", "0.8"))
    notebook_sides = [sides for name, sides in ran.items() if name.startswith(".lab.tf1gradfix-base-")]
    assert [sides[:2] for sides in notebook_sides] == [("pass\nvalue = 2 * 3\nprint(value)\n",
                                                        "pass\nvalue = 3 * 3\nprint(value)\n")]
    assert ran["runner.py"][2] == {"helpers.py": MODULE_AT_REF.encode(), "gone.py": b"print('gone')\n",
                                   "train.py": (FIXTURE / "original.py").read_bytes()}
    assert sorted(p.name for p in repo.iterdir() if p.name != ".git") == [
        "helpers.py", "kept.py", "kept_tf2.py", "lab.ipynb", "runner.py", "train_tf2.py"], "no temporary file left"


def test_a_ref_that_looks_like_an_option_is_refused(repo, monkeypatch, capsys):
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    assert cli.main(["verify", "--base=--output=stolen.txt"]) == 2
    assert "not a revision: '--output=stolen.txt'" in capsys.readouterr().err
    assert not (repo / "stolen.txt").exists()


@pytest.mark.tf
def test_a_renamed_wrong_migration_diverges_and_a_project_is_proven_with_its_modules_at_the_ref(repo, capsys):
    branch(repo)
    (repo / "train_tf2.py").write_text(counterpart_text(FIXTURE, "wrong_learning_rate"), encoding="utf-8")
    code = cli.main(["verify", "--base", "HEAD", "--steps", "5", "train_tf2.py", "runner.py"])
    out = capsys.readouterr().out
    assert code == 1 and "  train_tf2.py: DIVERGED" in out, out
    assert "  runner.py: DIVERGED" in out and "scale" in out   # (1.0 at the ref, 2.0 on the branch)
