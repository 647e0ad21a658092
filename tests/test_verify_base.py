"""`verify --base REF`: files migrated in a branch proven against their version at REF (a real git repository)."""

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


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    _git(tmp_path, "init", "-q")
    (tmp_path / "models").mkdir()
    for name in ("train.py", "probe.py", "models/net.py"):
        (tmp_path / name).write_text((FIXTURE / "original.py").read_text(encoding="utf-8"), encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "TF1 code")
    return tmp_path


def test_changed_files_are_the_python_files_that_differ_from_the_ref(repo, monkeypatch):
    (repo / "models" / "net.py").write_text("print('migrated')\n", encoding="utf-8")
    (repo / "new.py").write_text("print('new')\n", encoding="utf-8")   # not at the ref: nothing to prove against
    (repo / "notes.txt").write_text("x\n", encoding="utf-8")
    assert base.changed_files("HEAD", str(repo)) == ["models/net.py"]
    assert base.changed_files("HEAD", str(repo / "models")) == ["net.py"]
    assert base.content_at("HEAD", str(repo / "models" / "net.py")) == (FIXTURE / "original.py").read_bytes()


def test_an_unknown_ref_or_no_repository_is_one_line_and_exit_2(repo, tmp_path_factory, monkeypatch, capsys):
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    monkeypatch.chdir(repo)
    assert cli.main(["verify", "--base", "no-such-ref"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tf1gradfix: verify --base no-such-ref:") and err.count("\n") == 1 and "Traceback" not in err
    monkeypatch.chdir(tmp_path_factory.mktemp("plain"))
    assert cli.main(["verify", "--base", "HEAD"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_verify_needs_two_files_or_a_base(capsys):
    assert cli.main(["verify", "only_one.py"]) == 2
    assert "give ORIGINAL and MIGRATED, or --base REF" in capsys.readouterr().err
    assert cli.main(["verify", "a.py", "b.py", "--report-dir", "r"]) == 2


@pytest.mark.tf
def test_each_changed_file_is_proven_against_its_version_at_the_ref(repo, tmp_path, monkeypatch, capsys):
    (repo / "train.py").write_text((FIXTURE / "migrated.py").read_text(encoding="utf-8"), encoding="utf-8")
    (repo / "models" / "net.py").write_text(counterpart_text(FIXTURE, "wrong_learning_rate"), encoding="utf-8")
    monkeypatch.chdir(repo)
    reports = tmp_path / "reports"
    code = cli.main(["verify", "--base", "HEAD", "--steps", "5", "--report-dir", str(reports)])
    out = capsys.readouterr().out
    assert code == 1, out                     # one file diverged
    assert "  models/net.py: DIVERGED" in out and "  train.py: EQUIVALENT" in out
    rows = {row["path"]: row["verdict"] for row in json.loads((reports / "summary.json").read_text())}
    assert rows == {"models/net.py": "DIVERGED", "train.py": "EQUIVALENT"}
    assert (reports / "summary.md").is_file() and (reports / "junit.xml").is_file()
    assert "(at HEAD)" in (reports / "summary.md").read_text()
    assert sorted(p.name for p in repo.rglob("*.py")) == ["net.py", "probe.py", "train.py"], "no temporary file left"
