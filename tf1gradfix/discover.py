"""Which files a run looks at: the paths given, minus excludes and tool folders."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

# Folders that never hold the user's own sources.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__",
    "build", "dist", "site-packages", "node_modules", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info",
)
STDIN = "-"


def _excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    for pattern in patterns:
        if fnmatch.fnmatchcase(path.name, pattern) or fnmatch.fnmatchcase(text, pattern):
            return True
        if fnmatch.fnmatchcase(text, pattern.rstrip("/") + "/*"):
            return True
    return False


def discover(paths: list[str], exclude: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Expand `paths` into Python files, in a stable order.

    Returns (files, missing). A file named explicitly is always taken;
    folders are walked without following symlinked folders, so a run never
    leaves the tree it was given.
    """
    patterns = DEFAULT_EXCLUDES + tuple(exclude)
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        if name not in seen:
            seen.add(name)
            files.append(name)

    for raw in paths:
        if raw == STDIN:
            add(STDIN)
            continue
        path = Path(raw)
        if path.is_file():
            if not _excluded(path, tuple(exclude)):
                add(str(path))
        elif path.is_dir():
            for root, dirs, names in os.walk(path, followlinks=False):
                root_path = Path(root)
                dirs[:] = sorted(d for d in dirs if not _excluded(root_path / d, patterns))
                for name in sorted(names):
                    candidate = root_path / name
                    if name.endswith((".py", ".pyi")) and not candidate.is_symlink() and not _excluded(candidate, patterns):
                        add(str(candidate))
        else:
            missing.append(raw)
    return files, missing
