"""Python's compiler judges a file before LibCST reads it (engine.py's first step).

LibCST's native parser crashes the process on very deep input and takes minutes
on a 30,000-term sum, and Python's compiler names the offending line of a
syntax error more exactly: a file Python rejects, or one too deeply nested, is
reported with its line instead of taking the run down.
"""

from __future__ import annotations

from tf1gradfix.run.findings import FileError


def _syntax_error(display: str, data: bytes, exc) -> FileError:
    """Python's own compiler names the offending line more exactly than LibCST's parser."""
    return (_python_syntax_error(display, data)
            or FileError(display, f"syntax error: {exc.message}", exc.editor_line, exc.editor_column + 1))


def _python_syntax_error(display: str, data: bytes) -> FileError | None:
    """The syntax error Python's compiler finds in `data`, with its line, if any."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, display, "exec", dont_inherit=True)
    except SyntaxError as py_exc:
        if py_exc.lineno:
            return FileError(display, f"syntax error: {py_exc.msg}", py_exc.lineno, py_exc.offset)
    except (ValueError, RecursionError, MemoryError):
        pass
    return None


# Deepest syntax tree the rewrite takes (Python's own limit on nested brackets).
# LibCST's printer and visitors recurse once or more per level and exhaust
# Python's recursion limit at about 250 levels; its native parser crashes the
# process on very deep input and takes minutes on a 30,000-term sum.
MAX_DEPTH = 200


def _python_judgement(display: str, data: bytes) -> FileError | None:
    """Why the file must not reach LibCST's parser: Python rejects it, or it is too deep.

    Python's compiler judges first, so a file LibCST would crash or stall on
    is reported, with its line, instead of taking the run down.
    """
    from tf1gradfix.detect.prefilter import python_tree

    tree = python_tree(data)  # (usually read already by the prefilter)
    if tree is None:
        return _python_syntax_error(display, data) or FileError(
            display, "too deeply nested for Python's parser; file left unchanged")
    depth, line = nesting_depth(tree)
    if depth > MAX_DEPTH:
        return FileError(display, f"too deeply nested for the rewrite ({depth} levels, limit {MAX_DEPTH}); "
                         "file left unchanged", line)
    return None


def nesting_depth(tree) -> tuple[int, int | None]:
    """(depth of the deepest node of a Python syntax tree, its line), without recursion.

    `a and b and c` is one node for Python but a nest of two for LibCST, so a
    boolean operation counts one level per operator.
    """
    import ast

    deepest, line = 0, None
    stack = [(tree, 1, tree)]
    pop, push, children, bool_op = stack.pop, stack.append, ast.iter_child_nodes, ast.BoolOp
    while stack:
        node, depth, parent = pop()
        if depth > deepest:  # (a Load or Store marker has no line: its parent's)
            deepest, line = depth, getattr(node, "lineno", None) or getattr(parent, "lineno", None)
        for child in children(node):
            push((child, depth + (len(child.values) - 1 if isinstance(child, bool_op) else 1), node))
    return deepest, line
