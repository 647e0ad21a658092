"""Which files a run looks at: the paths given, minus excludes and tool folders."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

from tf1gradfix.run.findings import FileError

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


def discover(paths: list[str], exclude: tuple[str, ...] = (),
             gitignore: bool = True, skipped: list[str] | None = None) -> tuple[list[str], list[FileError]]:
    """Expand `paths` into Python files, in a stable order.

    Returns (files, errors). A file named explicitly is always taken;
    folders are walked without following symlinked folders, so a run never
    leaves the tree it was given. Only regular files are taken (a FIFO would
    block the read forever); a folder that cannot be read is an error, never
    a silent skip. A file reached twice (`a.py`, `./a.py`, a link to it) is
    taken once, under the first spelling. `gitignore`: in a git repository,
    what its `.gitignore` files leave out is not walked into (a file named
    explicitly is still taken). `skipped` receives the named files that
    `exclude` leaves out, so that the run can say so.
    """
    files: list[str] = []
    errors: list[FileError] = []
    seen: set = set()
    exclude = tuple(exclude)

    def add(name: str, key) -> None:
        if key not in seen:
            seen.add(key)
            files.append(name)

    for raw in paths:
        if raw == STDIN:
            add(STDIN, STDIN)
            continue
        try:
            info = os.stat(raw)
        except (FileNotFoundError, NotADirectoryError):
            errors.append(FileError(raw, "no such file or folder"))
            continue
        except OSError as exc:
            errors.append(FileError(raw, f"cannot read: {exc.strerror or exc}"))
            continue
        path = Path(raw)
        if stat.S_ISDIR(info.st_mode):
            _walk(path, exclude, add, errors, gitignore)
        elif not stat.S_ISREG(info.st_mode):
            errors.append(FileError(raw, "not a regular file; not read"))
        elif not _excluded(path, exclude):
            add(str(path), (info.st_dev, info.st_ino))
        elif skipped is not None:
            skipped.append(raw)
    return files, errors


def _walk(top: Path, exclude: tuple[str, ...], add, errors: list[FileError], gitignore: bool = True) -> None:
    """Each folder's files (sorted), then its subfolders depth first, as os.walk orders them."""
    if gitignore:
        from tf1gradfix.cli.gitignore import Ignored

        ignored = Ignored(top)
        if ignored.root is None:
            gitignore = False
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
            try:
                os.stat(os.path.join(folder, "."))
            except OSError as exc:  # listed but not enterable (r without x)
                errors.append(FileError(str(folder), f"cannot enter folder: {exc.strerror or exc}; its files were not checked"))
                continue
            subfolders = []
            for entry in entries:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    # Default folders are pruned by name below the given root only:
                    # a project that itself lives under `build/` is still checked.
                    if not any(fnmatch.fnmatchcase(name, p) for p in DEFAULT_EXCLUDES) and not _excluded(folder / name, exclude) \
                            and not (gitignore and ignored(folder / name, True)):
                        subfolders.append(folder / name)
                elif name.endswith((".py", ".pyi", ".ipynb")) and entry.is_file(follow_symlinks=False):
                    candidate = folder / name
                    if not _excluded(candidate, exclude) and not (gitignore and ignored(candidate, False)):
                        info = entry.stat(follow_symlinks=False)
                        add(str(candidate), (info.st_dev, info.st_ino))
        except OSError as exc:
            errors.append(FileError(str(folder), f"cannot read folder: {exc.strerror or exc}; its files were not checked"))
            continue
        stack.extend(reversed(subfolders))
