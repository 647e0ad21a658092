"""A rewrite's output, checked before it is written (engine.py's last step).

What LibCST loses is put back from the input (a form feed that starts a line,
the last line ending of a file mixing lone CR and LF), and every line the
rewrite did not edit must then equal the input byte for byte; Python must
compile the result; and a restructured program must spell no `tf.*` name TF2
lacks. A rewrite that fails any of these is not written.
"""

from __future__ import annotations

import re


# A line with its own ending: bytes split only at real line endings (\n, \r\n, \r),
# never at a form feed or U+2028 inside a string as str.splitlines would.
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


_SHAPE = re.compile(rb"([ \t\x0c]*)(.*?)(\r\n|\r|\n|)\Z", re.S)


def split_lines(data: bytes) -> list[bytes]:
    return _LINE.findall(data)


def as_written(data: bytes, new: bytes, edited: set[int] | None) -> tuple[bytes, int | None]:
    """`new`, with what LibCST loses put back from `data`; and the first line the check below finds changed.

    LibCST drops a form feed that starts a line and, in a file mixing lone CR
    and LF, the last line ending. Lines the rewrite kept get theirs back:
    for renames, line by line (a rename never adds or removes a line), where
    every line outside `edited` (the renamed chains' lines) must then equal
    the input, byte for byte; for a restructuring, the lines its output
    shares with the input apart from form feeds and line endings.
    """
    if data == new:
        return new, None
    old_lines, new_lines = split_lines(data), split_lines(new)
    out = list(new_lines)
    if edited is not None:
        if len(old_lines) != len(new_lines):
            return new, 1 + next((i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b), len(new_lines))
        for index, (old, line) in enumerate(zip(old_lines, new_lines)):
            if old != line:
                out[index] = _rejoined(old, line)
                if out[index] != old and index + 1 not in edited:
                    return new, index + 1
        return b"".join(out), None
    def bare(line: bytes) -> bytes:
        return line.rstrip(b"\r\n").replace(b"\x0c", b"")

    # Matching the lines costs time quadratic in the lines repeated (blank lines,
    # `with tf.Session() as sess:`...): it runs only when what it could put back
    # differs from the output, i.e. some line of the output equals, up to form
    # feeds and ending, an input line written otherwise (None: written in two ways).
    forms: dict[bytes, bytes | None] = {}
    for line in old_lines:
        key = bare(line)
        forms[key] = line if forms.get(key, line) == line else None
    if all(forms.get(bare(line), line) == line for line in new_lines):
        return new, None
    import difflib

    matcher = difflib.SequenceMatcher(None, [bare(line) for line in old_lines], [bare(line) for line in new_lines], autojunk=False)
    for start, new_start, size in matcher.get_matching_blocks():
        out[new_start:new_start + size] = old_lines[start:start + size]
    return b"".join(out), None


def _rejoined(old: bytes, new: bytes) -> bytes:
    """`new`'s text with `old`'s line ending, and `old`'s indentation where it differs only by form feeds."""
    old_indent, _, old_end = _SHAPE.match(old).groups()
    indent, body, _ = _SHAPE.match(new).groups()
    if old_indent.replace(b"\x0c", b"") == indent.replace(b"\x0c", b""):
        indent = old_indent
    return indent + body + old_end


def _lines_of(hits) -> set[int]:
    """Lines the renamed chains of `hits` span."""
    import libcst as cst

    lines = set()
    for hit in hits:
        span = len(split_lines(cst.Module([]).code_for_node(hit.node).encode("utf-8")))
        lines.update(range(hit.line, hit.line + max(span, 1)))
    return lines


def _names_tf2_lacks(source: bytes, original: bytes):
    """The refusal of a rewrite that would spell a `tf.*` name TF2 does not have, or None.

    Such a program fails with an AttributeError the first time that line runs;
    the line reported is where the original spells the name (or 1). A line the
    rewrite kept on purpose carries a suppression comment and is not judged.
    """
    from tf1gradfix.detect import api_surface
    from tf1gradfix.run.findings import suppressions
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.model.refusals import diagnostic

    tree = python_tree(source)   # (read already: _unparsable compiled it)
    gone = api_surface.missing(tree) if tree is not None else []
    if gone and b"tf1gradfix:" in source:
        kept = suppressions(source.decode("utf-8", "replace"))
        gone = [m for m in gone if m.line not in kept]
    if not gone:
        return None
    name = gone[0].name
    tree = python_tree(original)
    where = [m for m in api_surface.missing(tree) if m.name == name] if tree is not None else []
    line, col = (where[0].line, where[0].col) if where else (1, 1)
    return diagnostic(line, col, "rewrite_writes_removed_name", name=name)


def _unparsable(source: bytes) -> str | None:
    """Why Python cannot compile `source`, if it cannot.

    The renames put one dotted name in place of another in a tree LibCST
    printed; Python's own compiler is the reader that matters to the user.
    """
    import warnings

    from tf1gradfix.detect.prefilter import python_tree

    tree = python_tree(source)   # (parsed already when the prefilter read the rewrite's imports)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's own warnings are not ours to print
            compile(source if tree is None else tree, "<rewritten>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None
