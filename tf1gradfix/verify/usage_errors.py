"""A program that ended on its own usage error needs arguments, not a migration fix.

A script run without the arguments it requires ends in argparse's usage
message and exit status 2 (absl: "FATAL Flags parsing error" and status 1),
on both sides alike; a verdict on that run (NOT_COMPARABLE, or the original
"failed") would hide what to do. The reason then says how to pass them.
"""

from __future__ import annotations

import re

_ARGPARSE = re.compile(r"^usage: .*?^(?P<prog>[^\s:]+): error: (?P<msg>.+)$", re.M | re.S)
_ABSL = re.compile(r"FATAL Flags parsing error: (?P<msg>.+)$", re.M)
HOW = ("the program needs arguments: pass them after `--` (`tf1gradfix verify ORIGINAL MIGRATED -- ARGS`, "
       "`tf1gradfix rewrite --verify PATH -- ARGS`)")


def said(side) -> str | None:
    """The parser's complaint when ``side`` ended on a usage error, else None."""
    tail = side.stderr_tail or ""
    match = _ARGPARSE.search(tail) if side.exit_code == 2 else None
    match = match or (_ABSL.search(tail) if side.exit_code == 1 else None)
    return match.group("msg").strip() if match else None


def explain(result) -> None:
    """Say that the program needs arguments when the original (and the migration) ended on a usage error."""
    if result.verdict not in ("NOT_COMPARABLE", "ORIGINAL_FAILED"):
        return
    complaint = said(result.original)
    if complaint is None:
        return
    result.verdict = "NOT_COMPARABLE"
    result.reason = f"{HOW}; the original ended with its usage message: {complaint}"
