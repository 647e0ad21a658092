"""The findings of positional arguments TF2 reads as another parameter (TFG404).

Writing TF1's own keyword (`tf.shape(x, name="n")`) or `rate=1 - keep_prob` runs the
same under tf.compat.v1, so it is safe in every file. An argument whose text cannot take
a keyword in front (it is parenthesized) is manual; so is a keyword TF2's function does
not take at all, which a restructured program cannot be given (the rewrite refuses it).
"""

from __future__ import annotations

from tf1gradfix.detect.arguments import hits
from tf1gradfix.run.findings import CodeFilter, Finding, is_suppressed

CODE = "TFG404"


def argument_findings(display: str, text: bytes, tree, codes: CodeFilter, silenced,
                      restructured: bool | None, fix: bool, tf1: bool) -> list[Finding]:
    """`restructured`: True (the program is rewritten into TF2), False (it stays TF1),
    None (`check` of a session program: `rewrite` decides). `tf1`: the file has other
    TF1 findings (detect/arguments.hits)."""
    if not codes.wants(CODE):
        return []
    out = []
    for hit in hits(text, tree, tf1):
        if is_suppressed(hit.line, CODE, silenced):
            continue
        safe = hit.editable and (hit.tf2_takes or restructured is not True)
        out.append(Finding(display, hit.line, hit.col, CODE, hit.message, "safe" if safe else "manual",
                           None if restructured is None and not safe else fix and safe))
    return out


def tf2_lacks_refusal(source: bytes, original: bytes):
    """The refusal of a restructured program that would give a TF2 function a keyword it
    does not take (a TypeError when the line runs), or None; reported at the original's call."""
    from tf1gradfix.detect.arguments import tf2_lacks
    from tf1gradfix.model.refusals import diagnostic

    lacking = tf2_lacks(source)
    if not lacking:
        return None
    _, _, function, keyword = lacking[0]
    last = function.rsplit(".", 1)[-1].encode() + b"("
    lines = original.splitlines()
    line = next((i for i, text in enumerate(lines, 1) if last in text), 1)
    col = lines[line - 1].find(last) + 1 if line <= len(lines) and last in lines[line - 1] else 1
    return diagnostic(line, col, "rewrite_writes_removed_keyword", function=function, keyword=keyword)
