"""The old keywords of TF1 functions renamed in place (`dim=` -> `axis=`), as byte edits.

Which calls and keywords: detect/keywords.py (TensorFlow's own upgrade table). A file
that stays TF1 gets the `safe` renames only (its tf.compat.v1 functions take the new
keywords too); a restructured program gets every one, since it must run on TF2. First
the positional arguments TF2 reads as another parameter are given TF1's keyword (or
`rate=1 - keep_prob`: detect/arguments.py), right under both, so the renames reach them;
a restructured program's `tf.to_float(x)` becomes `tf.cast(x, dtype=tf.float32)`
(detect/casts.py), its `tf.nn.xw_plus_b(x, w, b)` TF1's own `tf.nn.bias_add(tf.matmul(x, w), b)`
(detect/expansions.py).
"""

from __future__ import annotations

from tf1gradfix.detect import arguments
from tf1gradfix.detect.casts import hits as cast_hits
from tf1gradfix.detect.expansions import hits as expansion_hits
from tf1gradfix.detect.keywords import RESTRUCTURED, SAFE, hits

EVERY = frozenset({SAFE, RESTRUCTURED})


def renamed(source: bytes, reaches: frozenset[str] = frozenset({SAFE}), tf1: bool = True) -> bytes:
    """`source` with the old keywords of the given reaches renamed; nothing else changes.
    `tf1`: the file is known TF1 code (detect/arguments.hits)."""
    out = with_keywords(source, tf1, casts=RESTRUCTURED in reaches)
    for hit in reversed(hits(out)):
        if hit.reach in reaches:
            out = out[:hit.offset] + hit.new.encode() + out[hit.offset + len(hit.old):]
    return out


def with_keywords(source: bytes, tf1: bool = True, casts: bool = False) -> bytes:
    """`source` with every editable argument hit of detect/arguments written as a keyword,
    and with `casts`, each cast shorthand as `tf.cast` (detect/casts) and each function TF2
    lacks as the expression TF1 computed (detect/expansions; a hit inside another
    one's span in a later pass: spans never overlap in one)."""
    out = source
    for _ in range(4):
        end, edited = len(out) + 1, out
        found = arguments.hits(out, tf1=tf1) + (cast_hits(out) + expansion_hits(out) if casts else [])
        for hit in sorted(found, key=lambda h: h.start, reverse=True):
            if hit.editable and hit.end <= end:
                edited, end = edited[:hit.start] + hit.text + edited[hit.end:], hit.start
        if edited == out:
            break
        out = edited
    return out
