"""argparse `type=` functions shared by every command: a bad number is a usage error (exit 2)."""

from __future__ import annotations

import argparse
import math


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return value


def nonneg_float(text: str) -> float:
    """A finite number >= 0 (tolerances)."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (timeouts in seconds)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1 (worker counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text!r}")
    return value


def shard(text: str) -> tuple[int, int]:
    """`K/N`: the K-th of N shares of a tree (1 <= K <= N), for a CI matrix."""
    k, sep, n = text.partition("/")
    if not sep or not (k.strip().isdigit() and n.strip().isdigit()) or not 1 <= int(k) <= int(n):
        raise argparse.ArgumentTypeError(f"must be K/N with 1 <= K <= N (2/4: the second of four), not {text!r}")
    return int(k), int(n)
