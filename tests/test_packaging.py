"""The wheel works on its own: built from a copy of the sources, installed into
a fresh virtual environment, run from a folder outside the repository.

The rule tables live in `rules/` in the repository and must ship inside the
package as `tf1gradfix/_rules`; this is where a missing table would show.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "reports"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(argv, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory) -> Path:
    """The working tree as it is now, minus build products and environments."""
    copy = tmp_path_factory.mktemp("pkg") / "src"
    shutil.copytree(ROOT, copy, ignore=SKIP, symlinks=True)
    return copy


@pytest.fixture(scope="module")
def wheel(source_copy, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, source_copy], cwd=out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [built] = sorted(out.glob("tf1gradfix-*.whl"))
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh environment with only the wheel and its declared dependencies."""
    home = tmp_path_factory.mktemp("venv") / "env"
    proc = _run([sys.executable, "-m", "venv", home], cwd=home.parent)
    assert proc.returncode == 0, proc.stderr
    proc = _run([home / "bin" / "python", "-m", "pip", "install", "--quiet", wheel], cwd=home.parent, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return home


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working folder with no path back to the repository."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    assert ROOT not in folder.parents
    return folder


def _codes() -> list[str]:
    return [rule["code"] for rule in tomllib.loads((ROOT / "rules" / "codes.toml").read_text("utf-8"))["rule"]]


def test_wheel_ships_the_rule_tables(wheel, source_copy):
    names = set(zipfile.ZipFile(wheel).namelist())
    for table in ("codes.toml", "renames.toml", "kinds.toml", "tf2_api.txt"):
        assert f"tf1gradfix/_rules/{table}" in names
    for table in sorted((source_copy / "rules").glob("*.toml")):
        assert f"tf1gradfix/_rules/{table.name}" in names, f"rules/{table.name} is not in the wheel"
    for module in sorted((source_copy / "tf1gradfix").rglob("*.py")):
        assert module.relative_to(source_copy).as_posix() in names
    assert not any(n.startswith(("tests/", "fixtures/", "benchmarks/", "rules/")) for n in names), sorted(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "tf1gradfix = tf1gradfix.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_is_the_wheel_not_the_checkout(venv, outside):
    proc = _run([venv / "bin" / "python", "-c", "import tf1gradfix, sys; print(tf1gradfix.__file__)"], cwd=outside)
    assert proc.returncode == 0, proc.stderr
    location = Path(proc.stdout.strip())
    assert venv in location.parents
    assert ROOT not in location.parents


def test_installed_package_reads_its_own_tables(venv, outside):
    proc = _run([venv / "bin" / "python", "-c", "import tf1gradfix.rules as r; print(r.tables_folder())"], cwd=outside)
    assert proc.returncode == 0, proc.stderr
    assert venv in Path(proc.stdout.strip()).parents


def test_version(venv, outside):
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    proc = _run([venv / "bin" / "tf1gradfix", "--version"], cwd=outside)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"tf1gradfix {config['metadata']['version']}"


def test_rules_lists_every_code(venv, outside):
    proc = _run([venv / "bin" / "tf1gradfix", "rules"], cwd=outside)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    assert listed == _codes()
    proc = _run([venv / "bin" / "tf1gradfix", "rules", "--format", "json"], cwd=outside)
    assert [r["code"] for r in json.loads(proc.stdout)] == _codes()


def test_explain(venv, outside):
    proc = _run([venv / "bin" / "tf1gradfix", "explain", "TFG401"], cwd=outside)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "TFG401 renamed-symbol: Symbol renamed in TF2"
    assert "Before (TF1):" in lines and "After (TF2):" in lines
    assert "    tf.random.set_seed(0)" in lines
    unknown = _run([venv / "bin" / "tf1gradfix", "explain", "TFG000"], cwd=outside)
    assert unknown.returncode == 2


def test_installed_tool_checks_and_rewrites(venv, outside):
    """Renames (renames.toml) and session kinds (kinds.toml) come from the installed tables."""
    source = (
        "import tensorflow as tf\n\ntf.set_random_seed(0)\nsess = tf.Session()\nsess.run(tf.random_normal([2]))\n"
    )
    (outside / "train.py").write_text(source)
    proc = _run([venv / "bin" / "tf1gradfix", "check", "train.py"], cwd=outside)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    # (a session program: whether its renames are written depends on the rewrite, so check leaves them without `*`)
    assert lines[0] == ("train.py:3:1: TFG401 [safe] `tf.set_random_seed` is `tf.random.set_seed` in TF2 (in a file "
                        "that stays TF1: `tf.compat.v1.set_random_seed`; tf.compat.v1 lacks the TF2 name or has another "
                        "function under it)")
    assert [line.split()[1] for line in lines[:-1]] == ["TFG401", "TFG103", "TFG105", "TFG401"]
    (outside / "ops.py").write_text("import tensorflow as tf\n\ntf.set_random_seed(0)\n")
    proc = _run([venv / "bin" / "python", "-m", "tf1gradfix", "rewrite", "train.py", "ops.py"], cwd=outside)
    assert proc.returncode == 1  # the session needs manual work
    assert (outside / "train.py").read_text() == source   # a session program it cannot rewrite: left intact
    assert "train.py: not restructured" in proc.stdout, proc.stdout
    assert (outside / "ops.py").read_text() == "import tensorflow as tf\n\ntf.compat.v1.set_random_seed(0)\n"


def test_installed_tool_does_not_need_tensorflow(venv, outside):
    proc = _run([venv / "bin" / "python", "-c", "import importlib.util as u; print(u.find_spec('tensorflow'))"], cwd=outside)
    assert proc.stdout.strip() == "None"  # the fresh environment has no TensorFlow, and the tool still ran above
