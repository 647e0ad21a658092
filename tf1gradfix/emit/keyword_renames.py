"""The old keywords of TF1 functions renamed in place (`dim=` -> `axis=`), as byte edits.

Which calls and keywords: detect/keywords.py (TensorFlow's own upgrade table). A file
that stays TF1 gets the `safe` renames only (its tf.compat.v1 functions take the new
keywords too); a restructured program gets every one, since it must run on TF2.
"""

from __future__ import annotations

from tf1gradfix.detect.keywords import RESTRUCTURED, SAFE, hits

EVERY = frozenset({SAFE, RESTRUCTURED})


def renamed(source: bytes, reaches: frozenset[str] = frozenset({SAFE})) -> bytes:
    """`source` with the old keywords of the given reaches renamed; nothing else changes."""
    out = source
    for hit in reversed(hits(source)):
        if hit.reach in reaches:
            out = out[:hit.offset] + hit.new.encode() + out[hit.offset + len(hit.old):]
    return out
