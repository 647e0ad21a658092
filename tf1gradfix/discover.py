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


def _relative(path: Path) -> Path:
    """The path as the user's settings speak of it: relative to the current folder when inside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute


def _excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    """A bare pattern (`generated`, `*.pb2.py`) matches any folder or file name in
    the path; a pattern with a slash (`pkg/generated`) matches the path relative
    to the current folder, or anything below it."""
    if not patterns:
        return False
    relative = _relative(path)
    texts = {relative.as_posix(), path.as_posix()}
    for pattern in patterns:
        bare = pattern.rstrip("/")
        if "/" not in bare:
            if any(fnmatch.fnmatchcase(part, bare) for part in relative.parts):
                return True
            continue
        for text in texts:
            if fnmatch.fnmatchcase(text, bare) or fnmatch.fnmatchcase(text, bare + "/*"):
                return True
    return False


def discover(paths: list[str], exclude: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Expand `paths` into Python files, in a stable order.

    Returns (files, missing). A file named explicitly is always taken;
    folders are walked without following symlinked folders, so a run never
    leaves the tree it was given.
    """
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
                # Default folders are pruned by name below the given root only:
                # a project that itself lives under `build/` is still checked.
                dirs[:] = sorted(
                    d for d in dirs
                    if not any(fnmatch.fnmatchcase(d, p) for p in DEFAULT_EXCLUDES)
                    and not _excluded(root_path / d, tuple(exclude))
                )
                for name in sorted(names):
                    candidate = root_path / name
                    if name.endswith((".py", ".pyi")) and not candidate.is_symlink() and not _excluded(candidate, tuple(exclude)):
                        add(str(candidate))
        else:
            missing.append(raw)
    return files, missing
