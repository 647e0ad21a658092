"""`.gitignore` files, read as git reads them, for the folders a run walks.

Only inside a git repository (a folder with `.git` at or above the walk's
top), as git itself: the `.gitignore` of each folder from the repository's
root down applies to what lies below it; the last matching pattern wins, `!`
takes a path back, a trailing `/` matches folders only, and a pattern with
a `/` elsewhere is anchored to its file's folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

NAME = ".gitignore"


def _glob(pattern: str) -> str:
    """A gitignore glob as a regular expression over `/`-separated paths."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def parse(text: str) -> list[tuple[re.Pattern, bool, bool]]:
    """(regex over the path relative to the file's folder, negated, folders only) per pattern."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\"):   # `\#`, `\!`: a literal first character
            line = line[1:] if line[1:2] in ("#", "!") else line
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = _glob(line.lstrip("/"))
        rules.append((re.compile(body if anchored else "(?:.*/)?" + body, re.S), negated, folders_only))
    return rules


class Ignored:
    """Which paths under a walk's top the repository's `.gitignore` files leave out."""

    def __init__(self, top: Path):
        self.root = _repository(top)
        self.rules: dict[str, list] = {}   # folder (absolute) -> its parsed .gitignore

    def _of(self, folder: str) -> list:
        found = self.rules.get(folder)
        if found is None:
            try:
                with open(os.path.join(folder, NAME), encoding="utf-8", errors="replace") as handle:
                    found = parse(handle.read())
            except OSError:   # none, or unreadable: nothing to leave out
                found = []
            self.rules[folder] = found
        return found

    def __call__(self, path: Path, is_folder: bool) -> bool:
        if self.root is None:
            return False
        absolute = os.path.abspath(path)
        try:
            relative = Path(absolute).relative_to(self.root)
        except ValueError:
            return False
        parts = relative.parts
        verdict = False
        for depth in range(len(parts)):   # the .gitignore of each folder above, root first
            folder = os.path.join(self.root, *parts[:depth])
            below = "/".join(parts[depth:])
            for regex, negated, folders_only in self._of(folder):
                if (is_folder or not folders_only) and regex.fullmatch(below):
                    verdict = not negated
        return verdict


def _repository(top: Path) -> str | None:
    """The nearest folder at or above `top` holding `.git` (a folder, or a file in a worktree)."""
    folder = Path(os.path.abspath(top))
    for candidate in (folder, *folder.parents):
        if os.path.exists(os.path.join(candidate, ".git")):
            return str(candidate)
    return None
