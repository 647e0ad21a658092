"""Consecutive `with tf.keras.name_scope("a"):` blocks the rewrite writes, one block.

A layer made under a TF1 variable scope is called under a Keras name scope of the
same name (so its weights get TF1's names); each call is written with its own
`with`. Two such blocks one after the other open the same scope twice, which names
nothing differently: a function's body writes them as one, as a person would.
"""

from __future__ import annotations


def joined(statements: list[str], tf: str) -> list[str]:
    """`statements` (texts of one block) with each run of adjacent `with <tf>.keras.name_scope(...):`
    statements of the same header written as one `with` holding their bodies."""
    out: list[str] = []
    for text in statements:
        head = _header(text, tf)
        if out and head is not None and _header(out[-1], tf) == head:
            out[-1] = out[-1] + text[len(head):]
        else:
            out.append(text)
    return out


def _header(text: str, tf: str) -> str | None:
    first = text.split("\n", 1)[0]
    return first if first.startswith(f"with {tf}.keras.name_scope(") and first.endswith(":") and "\n" in text else None
