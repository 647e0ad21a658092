"""Results of `check` kept by content, so an unchanged file is not analysed again.

Repeated pre-commit runs mostly see files they have seen; a hit costs a hash
and a small read instead of importing LibCST and analysing the file. The key
covers everything the result depends on: the file's path and bytes, the codes
selected (configuration included), the tool's own code and rule tables,
LibCST's and Python's versions. Set TF1GRADFIX_NO_CACHE=1 to turn it off;
TF1GRADFIX_CACHE_DIR moves it (default: $XDG_CACHE_HOME/tf1gradfix or
~/.cache/tf1gradfix).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from tf1gradfix.run.findings import FileError, Finding

_PACKAGE = Path(__file__).resolve().parents[1]   # tf1gradfix/, every subpackage (and an installed copy's rule tables)


def folder() -> Path | None:
    if os.environ.get("TF1GRADFIX_NO_CACHE"):
        return None
    chosen = os.environ.get("TF1GRADFIX_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tf1gradfix"


@functools.lru_cache(maxsize=None)
def fingerprint() -> bytes:
    """The tool's code and rule tables, byte for byte, Python's version and LibCST's
    (its _version.py, read without importing LibCST)."""
    import hashlib  # (in the functions: with the cache off, `check` imports none of these)
    import importlib.util

    from tf1gradfix.rules import tables_folder

    digest = hashlib.sha256(sys.version.encode())
    libcst = importlib.util.find_spec("libcst")
    files = [Path(libcst.origin).parent / "_version.py"] if libcst and libcst.origin else []
    files += sorted(p for p in _PACKAGE.rglob("*") if p.suffix in (".py", ".toml", ".txt") and "__pycache__" not in p.parts)
    tables = tables_folder(str(_PACKAGE))
    if tables is not None and _PACKAGE not in Path(tables).parents:   # (a checkout's: rules/ beside the package)
        files += sorted(p for p in Path(tables).iterdir() if p.suffix in (".toml", ".txt"))
    for path in files:
        name = path.relative_to(_PACKAGE).as_posix() if _PACKAGE in path.parents else path.name
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def key(mode: str, path: str, data: bytes, codes) -> str:
    import hashlib

    digest = hashlib.sha256(fingerprint())
    for part in (mode, path, repr((codes.select, codes.ignore))):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def load(name: str) -> tuple[list[Finding], FileError | None, bool] | None:
    """(findings, error, changed) stored under `name`, or None (missing or unreadable)."""
    where = folder()
    if where is None:
        return None
    import json

    try:
        entry = json.loads((where / name).read_text("utf-8"))
        error = FileError(**entry["error"]) if entry["error"] else None
        return [Finding(**f) for f in entry["findings"]], error, entry["changed"]
    except (OSError, ValueError, KeyError, TypeError):  # a damaged entry is a miss
        return None


def store(name: str, findings: list[Finding], error: FileError | None, changed: bool) -> None:
    """Kept best effort: a read-only or full disk only costs the next run time."""
    where = folder()
    if where is None:
        return
    import json
    import tempfile  # (here: a hit writes nothing)

    entry = {"findings": [f.to_json() for f in findings], "error": error.to_json() if error else None,
             "changed": changed}
    try:
        where.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=where, prefix=".tmp-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(entry, out)
        os.replace(temporary, where / name)
    except OSError:
        pass
