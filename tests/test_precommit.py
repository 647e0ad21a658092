"""The hooks in `.pre-commit-hooks.yaml`, run by the real `pre-commit`.

pre-commit installs a hook repository at a commit, so the hooks repository
here is a copy of the working tree committed into a fresh git repository.
`pre-commit try-repo` builds a throw-away store (and hook environment) on
every call, so it is used once; the other tests run `pre-commit run` with a
config naming the same repository and commit, which is what try-repo does
inside, and share one PRE_COMMIT_HOME: one environment install for the module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "reports"
)
GIT = ["git", "-c", "user.name=tf1gradfix tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false"]

TF1 = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
grads = tf.gradients(tf.reduce_sum(x), [x])
"""
TF2 = """\
import tensorflow as tf

w = tf.Variable(tf.zeros([3, 1]), name="w")


@tf.function
def forward(x):
    return tf.matmul(x, w)
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def _make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    return path


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory) -> Path:
    """The working tree (with .pre-commit-hooks.yaml) committed into its own git repository."""
    copy = tmp_path_factory.mktemp("hooks") / "tf1gradfix"
    shutil.copytree(ROOT, copy, ignore=SKIP, symlinks=True)
    assert (copy / ".pre-commit-hooks.yaml").is_file()
    _git(copy, "init", "-q", "-b", "main")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "hooks under test")
    return copy


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("pre-commit-home")
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    environ.update(
        PRE_COMMIT_HOME=str(home),
        GIT_AUTHOR_NAME="tf1gradfix tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="tf1gradfix tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    environ.pop("PRE_COMMIT_COLOR", None)
    return environ


def _pre_commit(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PRE_COMMIT), *argv, "--color", "never", "--verbose"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def try_repo(hooks_repo: Path, env: dict[str, str], repo: Path, hook: str) -> subprocess.CompletedProcess:
    return _pre_commit(["try-repo", str(hooks_repo), hook, "--all-files"], repo, env)


def run_hook(hooks_repo: Path, env: dict[str, str], repo: Path, hook: str) -> subprocess.CompletedProcess:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks_repo, check=True, capture_output=True, text=True)
    config = repo.parent / f"{repo.name}-pre-commit-config.yaml"  # outside the project: not one of its files
    config.write_text(f"repos:\n-   repo: {hooks_repo}\n    rev: {head.stdout.strip()}\n    hooks:\n    -   id: {hook}\n")
    return _pre_commit(["run", "--config", str(config), "--all-files"], repo, env)


def test_hooks_file_declares_both_hooks():
    import yaml  # pre-commit depends on PyYAML

    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"tf1gradfix-check", "tf1gradfix-rewrite", "tf1gradfix-verify"}
    assert hooks["tf1gradfix-check"]["entry"] == "tf1gradfix check"
    assert hooks["tf1gradfix-rewrite"]["entry"] == "tf1gradfix rewrite"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is (hook["id"] == "tf1gradfix-verify")   # TensorFlow runs one at a time
        assert hook["description"].strip()
    # the verify hook's command is one the tool accepts, and it verifies what changed since HEAD
    from tf1gradfix.cli.main import build_parser

    verify = hooks["tf1gradfix-verify"]
    args = build_parser().parse_args(verify["entry"].split()[1:])
    assert args.base == "HEAD" and verify["pass_filenames"] is False


@pytest.mark.parametrize("runner", [try_repo, run_hook], ids=["try-repo", "run"])
def test_check_hook_fails_on_tf1_code(hooks_repo, env, tmp_path, runner):
    repo = _make_repo(tmp_path / "project", {"train.py": TF1, "README.md": "# demo\n"})
    proc = runner(hooks_repo, env, repo, "tf1gradfix-check")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Failed" in output
    assert "train.py:3:5: TFG101 [manual] `tf.placeholder` does not exist in TF2" in output
    assert "train.py:4:9: TFG201 [manual] `tf.gradients` only works in graphs" in output
    assert (repo / "train.py").read_text() == TF1  # check never writes


def test_check_hook_passes_without_python_files(hooks_repo, env, tmp_path):
    repo = _make_repo(tmp_path / "docs-only", {"README.md": "# tensorflow notes\n", "notes.txt": "tf.Session()\n"})
    proc = run_hook(hooks_repo, env, repo, "tf1gradfix-check")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Skipped" in output or "Passed" in output
    assert "TFG" not in output


def test_check_hook_passes_on_tf2_code(hooks_repo, env, tmp_path):
    repo = _make_repo(tmp_path / "tf2", {"model.py": TF2, "pkg/__init__.py": ""})
    proc = run_hook(hooks_repo, env, repo, "tf1gradfix-check")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Passed" in output
    assert "TFG" not in output


def test_rewrite_hook_applies_safe_fixes(hooks_repo, env, tmp_path):
    source = "import tensorflow as tf\n\ntf.set_random_seed(0)\nnoise = tf.random_normal([3])\n"
    repo = _make_repo(tmp_path / "seeded", {"seed.py": source, "clean.py": TF2})
    proc = run_hook(hooks_repo, env, repo, "tf1gradfix-rewrite")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output
    assert (repo / "seed.py").read_text() == "import tensorflow as tf\n\ntf.compat.v1.set_random_seed(0)\nnoise = tf.random.normal([3])\n"
    assert (repo / "clean.py").read_text() == TF2
    again = run_hook(hooks_repo, env, repo, "tf1gradfix-rewrite")
    assert again.returncode == 0, again.stdout + again.stderr
