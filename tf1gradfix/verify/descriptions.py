"""TF1's descriptions of graph objects in a program's printed output.

A TF1 program that prints a graph value while it builds the graph
(`print("logits:", logits)`) prints what the value is, once, never a value:

    Tensor("dense/BiasAdd:0", shape=(?, 3), dtype=float32)           a tensor
    <tf.Tensor 'x:0' shape=(?, 5) dtype=float32>                     one in a list, tuple, dict
    <tf.Variable 'w:0' shape=(3,) dtype=float32_ref>                 a variable
    <tf.Operation 'train' type=NoOp>                                 an op in a container
    <_BatchDataset element_spec=(TensorSpec(shape=(?, 784), ...))>   a tf.data dataset
    <tensorflow.python.data.ops.iterator_ops.Iterator object at 0x7f..>  another object of TF's
    name: "train" / op: "NoOp" / input: "^..." / attr { ... }        an op, over several lines
    (?, 14, 14, 32) / [None, 14, 14, 32]                             a tensor's static shape

Its TF2 migration has no such object there (the rewrite drops the print, or the
graph values from a print of host values too), and these numbers (`:0`, the shape)
are not numbers the program computed. A static shape counts only with a dimension
TF1 did not know (`?`, `None`): a shape known in full prints as numbers a program may
compute, and stays compared. `left_out` finds the lines of the original's
output that hold such descriptions and nothing else that is a number: the labels
printed with them may be words, never a number. In a line that also prints a value,
`inline` takes the descriptions out and the rest is compared. Pure text, no TensorFlow.
"""

from __future__ import annotations

import re

# A number as the comparison reads printed output (verify/compare_output.py).
NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w.])",
    re.IGNORECASE)

_NAME = r"[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*"          # an op's name (TF1's op name pattern)
_SHAPE = r"(?:\((?:(?:\?|\d+)(?:, (?:\?|\d+))*,?)?\)|<unknown>)"   # TensorShape as TF1 prints it
_DTYPE = r"[a-z][a-z0-9_]*"                           # float32, float32_ref, string, resource...
DESCRIPTION = re.compile("|".join((
    rf'Tensor\("{_NAME}:\d+"(?:, shape={_SHAPE})?(?:, dtype={_DTYPE})?(?:, device=[\w:/.-]*)?\)',   # str(tensor)
    rf"<tf\.Tensor '{_NAME}:\d+' shape={_SHAPE} dtype={_DTYPE}>",                                  # repr(tensor)
    rf"<tf\.Variable '{_NAME}:\d+' shape={_SHAPE} dtype={_DTYPE}>",                                # repr(variable)
    rf"<tf\.Operation '{_NAME}' type=\w+>",                                                        # repr(op)
    r"<_?[A-Za-z0-9]*Dataset[A-Za-z0-9]* (?:element_spec=|shapes: )[^<>\n]*>",                    # a tf.data dataset
    r"<tensorflow\.[\w.]+ object at 0x[0-9a-fA-F]+>",                                            # an iterator, a Saver...
    r"\((?:(?:\d+|\?), )*\?(?:, (?:\d+|\?))*,?\)",      # str(tensor.shape) with a dimension unknown: (?, 14, 32)
    r"\[(?:(?:\d+|None), )*None(?:, (?:\d+|None))*\]",     # its as_list(): [None, 14, 32]
)))
# str(op): its NodeDef as protobuf text, one field a line, after what the print put before it
_NODE_NAME = re.compile(rf'^(?P<before>.*?)name: "{_NAME}"$')
_NODE_OP = re.compile(r'^op: "\w+"$')
_NODE_FIELD = re.compile(r'^(?:input|device): ".*"$')
_NODE_OPEN = re.compile(r"^(?:  )*[a-z_]+ \{$")
_NODE_VALUE = re.compile(r"^(?:  )+[a-z_]+: .+$")
_NODE_CLOSE = re.compile(r"^(?:  )*\}$")


def residue(line: str) -> str:
    """The line without its descriptions."""
    return DESCRIPTION.sub("", line)


def _plain(text: str) -> bool:
    """Words only: no number the description could hide."""
    return not NUMBER.search(text)


def _node_def(lines: list[str], start: int) -> int:
    """The number of lines of an op's definition starting at `start` (0: none). The first
    line ends with `name: "..."`, the next is `op: "..."`; then inputs, device and nested
    `attr { ... }` blocks until the braces close."""
    if start + 1 >= len(lines) or not _NODE_OP.match(lines[start + 1]):
        return 0
    depth, end = 0, start + 2
    while end < len(lines):
        line = lines[end]
        if depth == 0 and _NODE_FIELD.match(line):
            pass
        elif _NODE_OPEN.match(line):
            depth += 1
        elif depth > 0 and _NODE_CLOSE.match(line):
            depth -= 1
        elif not (depth > 0 and _NODE_VALUE.match(line)):
            break
        end += 1
    return end - start if depth == 0 else 0


def left_out(text: str) -> set[int]:
    """1-based numbers of the lines of `text` that are TF1 descriptions of graph objects
    with labels holding no number (the other lines are compared as printed)."""
    lines = text.splitlines()
    out: set[int] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        head = _NODE_NAME.match(line)
        size = _node_def(lines, i) if head is not None and _plain(residue(head.group("before"))) else 0
        if size:
            out.update(range(i + 1, i + size + 1))
            i += size
            continue
        if DESCRIPTION.search(line) and _plain(residue(line)):
            out.add(i + 1)
        i += 1
    return out


def inline(text: str) -> tuple[str, int]:
    """`text` with the descriptions left in lines that print values besides (`loss tensor
    Tensor("loss:0", shape=(), dtype=float32) value 0.25`, whose migration prints the value
    alone) taken out, and the number of such lines."""
    lines = text.splitlines()
    out = [residue(line) if DESCRIPTION.search(line) else line for line in lines]
    return "\n".join(out), sum(a != b for a, b in zip(lines, out))


def without(text: str, numbers: set[int]) -> str:
    """`text` with the lines `numbers` (1-based) blanked: the others keep their numbers."""
    if not numbers:
        return text
    return "\n".join("" if no in numbers else line for no, line in enumerate(text.splitlines(), 1))
