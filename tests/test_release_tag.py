"""The pre-commit snippets name `rev: v<version>`, a tag `make release-tag` makes."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("release_tag", ROOT / "scripts" / "release_tag.py")
release_tag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release_tag)


def test_the_documented_rev_is_v_and_the_version_in_setup_cfg():
    name = f"v{release_tag.version()}"
    revs = release_tag.documented_revs()
    assert revs == {file: [name] for file in release_tag.DOCS}, revs


def test_the_makefile_has_the_release_tag_target():
    assert "\nrelease-tag:\n\t$(PYTHON) scripts/release_tag.py\n" in (ROOT / "Makefile").read_text()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    for name in ("setup.cfg", *release_tag.DOCS):
        shutil.copy(ROOT / name, tmp_path / name)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "release")
    return tmp_path


def test_release_tag_makes_the_annotated_tag_once(repo, capsys, monkeypatch):
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")
    name = f"v{release_tag.version(repo)}"
    assert release_tag.main(["--root", str(repo), "--dry-run"]) == 0
    assert _git(repo, "tag") == ""
    assert release_tag.main(["--root", str(repo)]) == 0
    assert _git(repo, "tag") == name and _git(repo, "cat-file", "-t", name) == "tag"
    assert release_tag.main(["--root", str(repo)]) == 0          # again: already there
    assert "already tags" in capsys.readouterr().out


def test_release_tag_refuses_a_version_the_docs_do_not_name(repo, capsys):
    cfg = repo / "setup.cfg"
    cfg.write_text(cfg.read_text().replace("\nversion = ", "\nversion = 9", 1))
    _git(repo, "commit", "-q", "-am", "bump")
    assert release_tag.main(["--root", str(repo)]) == 2
    assert "must name rev: v9" in capsys.readouterr().err
    assert _git(repo, "tag") == ""
