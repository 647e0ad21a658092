"""The rule tables are data in the top-level `rules/`, and a wheel carries them: built
from the files a build reads, unpacked as pip installs it, the copy outside the
checkout finds its own tables (tf1gradfix/_rules), the same bytes as `rules/`.

(test_packaging.py installs the wheel into a fresh environment with its dependencies;
this one needs neither the network nor a new environment.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
BUILD_INPUTS = ("setup.cfg", "pyproject.toml", "README.md", "tf1gradfix", "rules")
TABLES = sorted(p.name for p in (ROOT / "rules").iterdir() if p.suffix in (".toml", ".txt"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pickle"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                           "--quiet", "-w", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [built] = sorted(out.glob("tf1gradfix-*.whl"))
    return built


def test_the_wheel_carries_every_table_of_rules(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert TABLES and "codes.toml" in TABLES and "tf2_api.txt" in TABLES
    for table in TABLES:
        assert f"tf1gradfix/_rules/{table}" in names, f"rules/{table} is not in the wheel"
        assert zipfile.ZipFile(wheel).read(f"tf1gradfix/_rules/{table}") == (ROOT / "rules" / table).read_bytes()
    assert not any(n.startswith("rules/") for n in names)   # (no top-level `rules` in site-packages)


def test_an_installed_copy_reads_its_own_tables(wheel, tmp_path):
    installed, outside = tmp_path / "site", tmp_path / "elsewhere"
    outside.mkdir()
    zipfile.ZipFile(wheel).extractall(installed)   # (a pure wheel is installed by unpacking it)
    script = ("import tf1gradfix.rules as r, tf1gradfix.rules.catalog as c, tf1gradfix.detect.keywords as k;"
              "print(r.tables_folder()); print(len(c.load().rules)); print(len(k.table()) > 0)")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(installed)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=outside, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder, count, keywords = proc.stdout.split()
    assert Path(folder) == installed / "tf1gradfix" / "_rules"
    assert int(count) > 0 and keywords == "True"
