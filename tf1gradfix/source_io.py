"""Reading and writing source files without losing anything.

Encoding (coding cookie, BOM) and newline style are kept because LibCST parses
the raw bytes and renders them back the same way. Writes are atomic: a
temporary file in the same folder, then a rename, keeping the file's mode.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import tokenize
from pathlib import Path

from tf1gradfix.findings import FileError


def decode_error(display: str, data: bytes) -> FileError | None:
    """A FileError naming the line when `data` is not text in its declared encoding."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return FileError(display, "binary file: NUL byte (not Python source)", line, None)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # Undecodable bytes in the first two lines (where a coding cookie may
        # stand): name the line that holds them.
        try:
            data.decode("utf-8")
            line = None
        except UnicodeDecodeError as bad:
            line = data[: bad.start].count(b"\n") + 1
        return FileError(display, f"cannot decode: {exc}", line, None)
    try:
        data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        line = data[:start].count(b"\n") + 1
        return FileError(display, f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}", line, None)
    return None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename; the file is old or new, never partial."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tf1gradfix", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
