"""Plain statement forms of graph code, read as the one-statement forms they mean.

Real scripts write `x = ...; y = ...` on one line and `l2 += tf.nn.l2_loss(w)`.
The model moves graph code statement by statement, so it refuses both
(`several_statements_line`, `augmented_assignment`). They mean exactly:

* `a; b` on a line: `a` then `b`, each on its own line (Python runs them so);
* `a = b = y` of a graph value: `a = y`, then `b = a` (Python binds both to the
  one object `y` gave, left to right);
* a layer call nested in an expression (`h = tf.nn.relu(tf.layers.dense(x, 8))`):
  the layer call on a line of its own before it (`h_dense = tf.layers.dense(x, 8)`,
  then `h = tf.nn.relu(h_dense)`), in the order Python calls them, and only while no
  other call of the statement would have run before it (an op made first keeps its
  place in the graph, and its op seed);
* `a, b = y, z` of graph values: `a = y`, then `b = z`, where no element reads a
  name the statement binds (Python computes every element before it binds any; a
  swap `a, b = b, a` stays refused). Read as one statement, the run needing `b`
  alone would need what `y` reads too (a placeholder it does not feed);
* `xb, yb = ds.make_one_shot_iterator().get_next()`: the iterator bound first
  (`xb_iterator = ds.make_one_shot_iterator()`), then `xb, yb = xb_iterator.get_next()`:
  TF1 made the iterator once, where the graph was built, and each run draws from it;
* `x op= y` with `x` a name (or `a.x`) bound to a graph value: `x = x op (y)`. A
  tf.Tensor (and a TF1 Variable, whose `__iadd__` returns `self + other`) has
  no in-place operators, so Python falls back to the binary one in TF1 and
  TF2 alike. A list or other container on the right (`parts += [t]`), or an
  item target (`d[k] += t`), stays refused: those mutate in place.

Lines of several statements are split before the program is read; augmented
assignments are written out where the model refuses them (it alone knows a
graph value), and the program read again (`restructured`). What is still
refused is reported at the user's own lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tf1gradfix.constructs import layer_hoist, loss_hoist
from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import fresh_name
from tf1gradfix.cst.walk import walk

REASONS = frozenset({"augmented_assignment", "chained_assignment", "layer_in_expression", "tuple_assignment",
                     "iterator_in_expression", "loss_expression"})
ATTEMPTS = 12   # (a reading stops before statements reading a refused one: a chain of them takes a reading each)

# Operands printed after `x op` without parentheses: binding as tightly as a call.
_ATOMS = (cst.Name, cst.Call, cst.Attribute, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)
_CONTAINERS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp)
_BLOCKS = (cst.IndentedBlock, cst.If, cst.Else, cst.For, cst.While, cst.With, cst.Try, cst.TryStar,
           cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.FunctionDef, cst.ClassDef, cst.Match,
           cst.MatchCase)


def restructured(module: cst.Module, analyse: Callable[[cst.Module], Any]):
    """`analyse(module)` (a Restructured), read again with `module`'s lines in their plain form
    where it holds several statements on a line or its refusals name an augmented assignment;
    diagnostics at `module`'s lines."""
    lines: set[int] = set()
    shaped: Any = None if _several_on_a_line(module) else analyse(module)
    for _ in range(ATTEMPTS):
        if shaped is not None:
            if shaped.reshape <= lines:
                break
            lines |= shaped.reshape
        plain, origin = plain_form(module, lines)
        if plain is None:   # (never on the first reading of a line of several statements: it is split)
            break
        shaped = analyse(plain)
        back = [origin(d[0]) for d in shaped.diagnostics]
        shaped = replace(shaped, diagnostics=[(line, *d[1:]) for line, d in zip(back, shaped.diagnostics)],
                         reshape=frozenset(origin(line) for line in shaped.reshape))
    assert shaped is not None
    return replace(shaped, reshape=frozenset())


def _several_on_a_line(node: cst.CSTNode) -> bool:
    """Does a line of `node`'s statements hold several (`a = 1; b = 2`)?"""
    for child in node.children:
        if isinstance(child, cst.SimpleStatementLine):
            if len(child.body) > 1:
                return True
        elif isinstance(child, _BLOCKS) and _several_on_a_line(child):
            return True
    return False


def plain_form(module: cst.Module, lines: set[int]) -> tuple[cst.Module | None, Callable[[int], int]]:
    """`module` with every line of several statements split one statement per line, and
    the augmented assignments of names on `lines` written out, parsed again; and the map
    from its lines back to `module`'s. None where nothing changes."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    plain = _Plain(positions, lines, {n.value for n in walk(module) if type(n) is cst.Name})
    new = module.visit(plain)
    if not plain.changed:
        return None, lambda line: line
    anchors = sorted(plain.anchors)
    starts = [a for a, _ in anchors]

    def origin(line: int) -> int:
        i = bisect_right(starts, line) - 1
        return line if i < 0 else anchors[i][1] + line - anchors[i][0]

    return cst.parse_module(new.code), origin


class _Plain(cst.CSTTransformer):
    def __init__(self, positions, lines: set[int], taken: set[str]):
        super().__init__()
        self.positions, self.lines, self.taken = positions, lines, taken
        self.shift = 0          # lines the splits so far added
        self.anchors: list[tuple[int, int]] = []   # (new line, old line) from which lines count alike
        self.changed = False

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        if not isinstance(original, cst.SimpleStatementLine):
            return updated
        span = self.positions[original]
        if not self._marked(original) and len(original.body) == 1:
            return updated
        assert isinstance(updated, cst.SimpleStatementLine)
        pieces = [(o, n) for o, s in zip(original.body, updated.body)
                  for n in (_written_out(s, self.taken) if self._marked(o) else [s])]
        if len(pieces) == 1 and pieces[0][1] is updated.body[0]:
            return updated
        self.changed = True
        if len(pieces) == 1:
            return updated.with_changes(body=[pieces[0][1]])
        out, extra = [], 0
        for i, (old, small) in enumerate(pieces):
            before = pieces[i - 1][0] if i else None
            if before is old or before is not None and self.positions[old].start.line == self.positions[before].end.line:
                extra += 1   # (a line of its own where it shared one: one line further down now)
            at = self.positions[old].start.line
            self.anchors.append((at + self.shift + extra, at))
            small = small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            out.append(updated.with_changes(body=[small], trailing_whitespace=cst.TrailingWhitespace()) if i == 0
                       else cst.SimpleStatementLine(body=[small]))
        # (the first keeps the comments above the line, the last the comment after it)
        out[-1] = out[-1].with_changes(trailing_whitespace=updated.trailing_whitespace)
        if len(original.body) == 1:   # (a nested layer call moved out: the rest laid out as black would, if it was)
            laid = layout.refit(original, out[-1], span.start.column)
            extra -= _height(out[-1]) - _height(laid)
            out[-1] = cast(cst.SimpleStatementLine, laid)
        self.shift += extra
        self.anchors.append((span.end.line + 1 + self.shift, span.end.line + 1))
        return cst.FlattenSentinel(out)


    def _marked(self, node: cst.CSTNode) -> bool:
        """Does a refusal's line fall within `node` (a nested call's line may be a later one)?"""
        span = self.positions[node]
        return any(line in self.lines for line in range(span.start.line, span.end.line + 1))


def _height(stmt: cst.CSTNode) -> int:
    return cst.Module([]).code_for_node(stmt.with_changes(leading_lines=())).count("\n")


def _written_out(small: cst.BaseSmallStatement, taken: set[str]) -> list[cst.BaseSmallStatement]:
    """`x op= y` as `x = x op (y)`, `a = b = y` as `a = y` and `b = a`, where that is what they
    mean for a graph value; nested layer calls on lines of their own; else `small`."""
    hoisted = layer_hoist.hoisted(small, taken) or loss_hoist.hoisted(small, taken)
    if hoisted is not None:
        return hoisted
    iterator = _iterator_bound(small, taken)
    if iterator is not None:
        return iterator
    if isinstance(small, cst.Assign) and paired(small) and _apart(small):
        names, values = cast(cst.Tuple, small.targets[0].target).elements, cast(cst.Tuple, small.value).elements
        return [cst.Assign(targets=[cst.AssignTarget(target=cast(cst.Name, t.value))], value=v.value)
                for t, v in zip(names, values)]
    if isinstance(small, cst.Assign) and len(small.targets) > 1 and all(isinstance(t.target, cst.Name) for t in small.targets):
        first = cast(cst.Name, small.targets[0].target)
        return [small.with_changes(targets=[small.targets[0]], semicolon=cst.MaybeSentinel.DEFAULT),
                *(cst.Assign(targets=[cst.AssignTarget(target=t.target)], value=cst.Name(first.value))
                  for t in small.targets[1:])]
    if not isinstance(small, cst.AugAssign) or isinstance(small.value, _CONTAINERS):
        return [small]
    target = small.target
    if not (isinstance(target, cst.Name) or isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return [small]
    value = small.value
    if not isinstance(value, _ATOMS) and not (value.lpar and value.rpar):
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    op: cst.BaseBinaryOp = _BINARY[type(small.operator)]()
    return [cst.Assign(targets=[cst.AssignTarget(target=target)],
                       value=cst.BinaryOperation(left=target.deep_clone(), operator=op, right=value),
                       semicolon=small.semicolon)]


def _iterator_bound(small: cst.BaseSmallStatement, taken: set[str]) -> list[cst.BaseSmallStatement] | None:
    """`T = <iterator>.get_next()` as `<name>_iterator = <iterator>` and `T = <name>_iterator.get_next()`."""
    value = small.value if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get_next"
            and isinstance(value.func.value, cst.Call)):
        return None
    target = cast(cst.Assign, small).targets[0].target
    first = target.elements[0].value if isinstance(target, (cst.Tuple, cst.List)) and target.elements else target
    name = fresh_name(f"{first.value if isinstance(first, cst.Name) else 'batch'}_iterator", taken)
    return [cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=value.func.value),
            small.with_changes(value=value.with_changes(func=value.func.with_changes(value=cst.Name(name))))]


def paired(small: cst.Assign) -> bool:
    """`a, b = y, z`: one tuple (or list) of names bound to as many elements, none starred."""
    target, value = small.targets[0].target if len(small.targets) == 1 else None, small.value
    return isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
        and len(target.elements) == len(value.elements) > 1 \
        and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements) \
        and all(isinstance(e, cst.Element) for e in value.elements)


def _apart(small: cst.Assign) -> bool:
    """Do the elements read none of the names bound (so one may be bound before the next is computed)?"""
    bound = {cast(cst.Name, e.value).value for e in cast(cst.Tuple, small.targets[0].target).elements}
    return len(bound) == len(cast(cst.Tuple, small.targets[0].target).elements) and not any(
        type(n) is cst.Name and n.value in bound for e in cast(cst.Tuple, small.value).elements for n in walk(e.value))


_BINARY: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.BitAndAssign: cst.BitAnd, cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor,
    cst.LeftShiftAssign: cst.LeftShift, cst.RightShiftAssign: cst.RightShift,
}
