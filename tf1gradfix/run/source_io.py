"""Reading and writing source files without losing anything.

Encoding (coding cookie, BOM) and newline style are kept because LibCST parses
the raw bytes and renders them back the same way. Writes are atomic: a
temporary file in the same folder, then a rename, keeping the file's mode,
and only when the file is still what was read. Only regular files within
the size limits are read: a FIFO would block forever and a huge file would
cost gigabytes in the parser.
"""

from __future__ import annotations

import io
import os
import re
import stat
from pathlib import Path

from tf1gradfix.records import record
from tf1gradfix.run.findings import FileError

MAX_FILE_BYTES = 1024 * 1024  # a larger .py is generated code, or not code
MAX_LINE_BYTES = 50_000  # LibCST's memory and time grow steeply with a line's length


class SourceError(OSError):
    """A file the tool will not read or replace; the message says why."""


@record(frozen=True)
class Snapshot:
    """What a file was when it was read, to tell whether someone changed it since."""

    size: int
    mtime_ns: int
    digest: bytes

    @classmethod
    def of(cls, info: os.stat_result, data: bytes) -> Snapshot:
        import hashlib  # (here: a cold `check` need not import it)

        return cls(info.st_size, info.st_mtime_ns, hashlib.sha256(data).digest())


def refusal(info: os.stat_result, limit: int = MAX_FILE_BYTES) -> str | None:
    """Why a file with this `os.stat` must not be read, if it must not."""
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > limit:
        return f"file too large: {info.st_size} bytes (limit {limit} bytes, setting max-file-size); left as it is"
    return None


def long_line(data: bytes) -> str | None:
    """The limit message when a line of `data` is longer than MAX_LINE_BYTES."""
    if len(data) <= MAX_LINE_BYTES:
        return None
    for number, line in enumerate(re.split(rb"\r\n?|\n", data), start=1):
        if len(line) > MAX_LINE_BYTES:
            return f"line {number} is {len(line)} bytes long (limit {MAX_LINE_BYTES} bytes); left as it is"
    return None


def read_source(path: str, limit: int = MAX_FILE_BYTES, snapshot: bool = True,
                lines: bool = True) -> tuple[bytes, Snapshot | None]:
    """The bytes of a regular file within the limits, checked before anything is read,
    and what the file was (None without `snapshot`: a run that writes nothing needs no digest).
    `lines`: check the line length (a notebook's is checked on its code: an image output is
    one long line of its JSON).

    Opened non-blocking so a file swapped for a FIFO after the check cannot hang the run.
    """
    why = refusal(os.stat(path), limit)
    if why:
        raise SourceError(why)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        why = refusal(info, limit)
        if why:
            raise SourceError(why)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise SourceError(f"file too large: more than {limit} bytes (setting max-file-size); left as it is")
    why = long_line(data) if lines else None
    if why:
        raise SourceError(why)
    return data, Snapshot.of(info, data) if snapshot else None


def unchanged(path: Path, expected: Snapshot) -> bool:
    """Whether `path` still holds what was read (size and mtime first: no read when they differ)."""
    info = os.stat(path)
    if (info.st_size, info.st_mtime_ns) != (expected.size, expected.mtime_ns):
        return False
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).digest() == expected.digest


def decode_error(display: str, data: bytes) -> FileError | None:
    """A FileError naming the line when `data` is not text in its declared encoding."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return FileError(display, "binary file: NUL byte (not Python source)", line, None)
    if plain_utf8(data):
        return None
    import tokenize  # (here: most files are plain UTF-8, which needs no tokenizer to tell)

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


def plain_utf8(data: bytes) -> bool:
    """Whether `data` is UTF-8 with no BOM and no `coding` in its first two lines: text
    tokenize.detect_encoding takes for UTF-8, without a declaration to read."""
    if data.startswith(b"\xef\xbb\xbf") or b"coding" in b"\n".join(data.split(b"\n", 2)[:2]):
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


CHANGED = "changed while being rewritten; left as it is"


def write_atomic(path: Path, data: bytes, expected: Snapshot | None = None) -> None:
    """Replace `path` with `data` in one rename; the file is old or new, never partial.

    With `expected`, an edit saved since the file was read wins: SourceError(CHANGED).
    """
    import tempfile  # (only a write needs it)

    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tf1gradfix", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if expected is not None and not unchanged(path, expected):
            raise SourceError(CHANGED)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
