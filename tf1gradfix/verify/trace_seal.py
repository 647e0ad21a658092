"""Each side's trace sealed with a secret of the run, in a folder only the verifier names.

A program runs in the interpreter that records it, so what it can reach is
made as small as a shared process allows. The verifier derives, from a key
that never leaves its own process, a token and a private folder per side and
trace folder. The token and the folder reach the runner over a pipe (its
number in `TF1GRADFIX_TRACE_FD`, withdrawn with the other settings), never in
argv or the environment. The runner writes its events, final values and plots
into that folder, each record sealed (an HMAC of its text under the token);
the verifier reads back only records whose seal holds and whose sequence has
no gap, and calls anything else tampering. The shared trace folder, where the
sides exchange initial values and lockstep states, cannot be listed while the
programs run, so one side does not find the other's folder by name; a side
replaying the other's records fails the seal, the tokens differing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets

FD_ENV = "TF1GRADFIX_TRACE_FD"
ROLES = ("original", "migrated")
TAMPERED = "tampered"                  # the kind of the event standing for a record that failed its check
_KEY = secrets.token_bytes(32)         # the verifier's; the runners get only what is derived from it
_SEAL = 32                             # hex characters of a record's seal


def _derive(purpose: str, trace_dir: str, role: str) -> str:
    return hmac.new(_KEY, f"{purpose}\0{os.path.abspath(trace_dir)}\0{role}".encode(), hashlib.sha256).hexdigest()


def token(trace_dir: str, role: str) -> str:
    return _derive("token", trace_dir, role)


def side_dir(trace_dir: str, role: str) -> str:
    return os.path.join(trace_dir, f"{role}-{_derive('folder', trace_dir, role)[:24]}")


def side_file(trace_dir: str, role: str, suffix: str) -> str:
    """`<role>.<suffix>` (events.jsonl, final.json, plots.json, stdout, stderr) of a side."""
    return os.path.join(side_dir(trace_dir, role), f"{role}.{suffix}")


def make_side_dirs(trace_dir: str) -> None:
    for role in ROLES:
        os.makedirs(side_dir(trace_dir, role), mode=0o700, exist_ok=True)


def hide(trace_dir: str, hidden: bool) -> None:
    """While programs run, the shared folder can be entered but not listed (0300)."""
    try:
        os.chmod(trace_dir, 0o300 if hidden else 0o700)
    except OSError:
        pass


def secret(trace_dir: str, role: str) -> str:
    """What a runner is handed over its pipe."""
    return json.dumps({"token": token(trace_dir, role), "folder": side_dir(trace_dir, role)})


def pipe_with(data: str) -> int:
    """A pipe's read end holding `data` (its write end closed)."""
    read, write = os.pipe()
    os.write(write, data.encode())
    os.close(write)
    return read


def receive() -> tuple[str, str] | None:
    """(token, folder) from the pipe named in the environment, read once; None without one."""
    fd = os.environ.pop(FD_ENV, "")
    if not fd.isdigit():
        return None
    chunks = []
    try:
        while chunk := os.read(int(fd), 65536):
            chunks.append(chunk)
    finally:
        os.close(int(fd))
    got = json.loads(b"".join(chunks))
    return got["token"], got["folder"]


def seal(key: str | None, text: str) -> str:
    """A record as written: its seal, a space, its text (the text alone without a token)."""
    if key is None:
        return text
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()[:_SEAL] + " " + text


def opened(key: str, line: str) -> str | None:
    """The text of a sealed record whose seal holds, else None."""
    mark, _, text = line.partition(" ")
    if len(mark) != _SEAL or not hmac.compare_digest(seal(key, text)[:_SEAL], mark):
        return None
    return text


def load_events(trace_dir: str, role: str) -> list:
    """A side's events, checked: a record whose seal fails, or a gap or repeat in their
    sequence, becomes one TAMPERED event; a torn last line (killed mid-write) is dropped."""
    try:
        with open(side_file(trace_dir, role, "events.jsonl"), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except (OSError, UnicodeDecodeError):
        return []
    events: list[dict] = []
    key, bad = token(trace_dir, role), 0
    for line in lines[:-1]:   # (the last piece has no newline: empty, or torn)
        text = opened(key, line)
        event = _json(text) if text is not None else None
        if not isinstance(event, dict) or event.get("seq") != len(events):
            bad += 1
            continue
        events.append(event)
    if bad:
        events.append({"kind": TAMPERED, "records": bad, "seq": -1})
    return events


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def load_json(trace_dir: str, role: str, suffix: str):
    """A sealed JSON file of a side: its value; {TAMPERED: True} if its seal fails; None if absent."""
    try:
        with open(side_file(trace_dir, role, suffix), encoding="utf-8") as fh:
            line = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    text = opened(token(trace_dir, role), line)
    value = _json(text) if text is not None else None
    return value if isinstance(value, dict) else {TAMPERED: True}


def tampered(events: dict, files: dict) -> str | None:
    """Why the run's evidence cannot be trusted, else None. `files`: role -> loaded sealed files."""
    found = []
    for role in ROLES:
        records = sum(e.get("records", 0) for e in events.get(role, ()) if e.get("kind") == TAMPERED)
        broken = [name for name, value in files.get(role, {}).items() if isinstance(value, dict) and value.get(TAMPERED)]
        if records or broken:
            what = [f"{records} event record(s) without the run's seal or out of sequence"] if records else []
            found.append(f"the {role} program's trace was tampered with: "
                         + "; ".join(what + [f"its {name} is not sealed by the run" for name in broken]))
    return "; ".join(found) or None
