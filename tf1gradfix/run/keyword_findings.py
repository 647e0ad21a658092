"""The findings of TF1 keywords TF2 renamed (TFG403), labelled for the file they are in.

A `safe` rename is fixed wherever the run fixes; one only TF2's function takes is fixed
by a restructuring (`proven`) and is manual in a file that stays TF1, where writing it
would break the tf.compat.v1 call.
"""

from __future__ import annotations

from tf1gradfix.detect.keywords import SAFE, hits
from tf1gradfix.run.findings import CodeFilter, Finding, is_suppressed

CODE = "TFG403"


def keyword_findings(display: str, text: bytes, tree, codes: CodeFilter, silenced,
                     restructured: bool | None, fix: bool) -> list[Finding]:
    """`restructured`: True (the program is rewritten into TF2), False (it stays TF1),
    None (`check` of a session program: `rewrite` decides)."""
    if not codes.wants(CODE):
        return []
    out = []
    for hit in hits(text, tree):
        if is_suppressed(hit.line, CODE, silenced):
            continue
        safe = hit.reach == SAFE
        safety = "safe" if safe else ("manual" if restructured is False else "proven")
        fixed = None if restructured is None and not safe else fix and (safe or bool(restructured))
        where = "" if safe else " (tf.compat.v1's function does not take it: written when the program is restructured)"
        out.append(Finding(display, hit.line, hit.col, CODE,
                           f"`{hit.function}(..., {hit.old}=...)`: TF2 names this keyword `{hit.new}`{where}",
                           safety, fixed))
    return out
