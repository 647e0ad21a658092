"""The legacy bugs of a file's source, found by reading it as the rewrite does.

Apart from the package's rules: reading needs the restructuring (emit), which itself
runs the rules, so the rules' package must not import it.
"""

from __future__ import annotations

from tf1gradfix.legacy import Found


def read(data: bytes, path: str) -> list[Found]:
    """The legacy bugs of `data` (LibCST, no TensorFlow); none where it does not parse."""
    import libcst as cst

    from tf1gradfix.emit.restructure import restructure

    try:
        module = cst.parse_module(data)
    except (cst.ParserSyntaxError, UnicodeDecodeError, SyntaxError):
        return []
    return list(restructure(module, path).legacy)
