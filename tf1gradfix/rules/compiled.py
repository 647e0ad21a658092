"""Rule tables read once and kept, like bytecode, in the loaders' __pycache__.

Parsing the TOML tables and the TF2 name list costs a cold `check` about
as much as starting Python; unpickling what they were read into costs a
tenth of that. A kept copy is named after the size and modification time
of every table file (rules/), of every loader and the tool's version, so an
edited table is read again; an unwritable folder only means reading the
tables every time.
"""

from __future__ import annotations

import functools
import os

_FOLDER = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    from tf1gradfix import __version__

    from tf1gradfix.rules import tables_folder

    parts = [__version__]
    for folder in dict.fromkeys(filter(None, (_FOLDER, tables_folder()))):   # the loaders, the tables
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_file() and entry.name.endswith((".toml", ".txt", ".py")):
                info = entry.stat()
                parts.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    digest = 0xcbf29ce484222325   # FNV-1a: stable across runs, and no extension module to load
    for byte in ";".join(parts).encode():
        digest = ((digest ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}"


def _unpickle(handle):
    try:   # the C unpickler alone: importing `pickle` (its Python classes too) costs a cold `check` 2 ms
        from _pickle import load
    except ImportError:   # an interpreter without it
        from pickle import load
    return load(handle)


def kept(name: str):
    """Decorator: the value `build()` returns, kept on disk under `name` (see module docstring)."""
    def wrap(build):
        @functools.wraps(build)
        def load():
            path = os.path.join(_FOLDER, "__pycache__", f"{name}.{_stamp()}.pickle")
            try:
                with open(path, "rb") as handle:
                    return _unpickle(handle)
            except Exception:  # missing, stale or damaged: read the tables
                pass
            value = build()
            import pickle

            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                temporary = f"{path}.{os.getpid()}.tmp"
                with open(temporary, "wb") as handle:
                    pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, path)
                for entry in os.scandir(os.path.dirname(path)):   # copies of tables since edited
                    if entry.name.startswith(f"{name}.") and entry.name.endswith(".pickle") and entry.path != path:
                        os.unlink(entry.path)
            except OSError:
                pass
            return value
        return load
    return wrap
