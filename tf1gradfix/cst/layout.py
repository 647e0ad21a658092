"""Generated statements laid out as black lays them out, so that a formatter run
after the migration leaves what the rewrite wrote as it is.

A statement that fits in black's default 88 columns (at the indentation it
lands at) stays on one line. Otherwise its trailing call or bracket is split as
black's right-hand split does: the arguments on one line of their own when they
fit there, else one per line with a trailing comma, each split again the same
way; a comprehension is split before its `for` and `if` clauses. A statement
holding a comment or a line break of the user's code is left as written.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

WIDTH = 88   # black's default line length
_MODULE = cst.Module([])


class _AsWritten(Exception):
    """The statement cannot be laid out here: keep its text."""


def fit(text: str, indent: int) -> str:
    """`text` (one statement, or a decorator line starting with `@`) laid out for `indent`
    columns; the lines after the first are indented relative to the first. A trailing
    comment of a statement that is split goes after its first opening bracket, where
    black keeps it (and where `# tf1gradfix: ignore[...]` names the statement's line)."""
    try:
        prefix, expr, comment = _parts(text)
        if comment and indent + len(text) <= WIDTH:
            return text
        lines = _split(expr, indent, prefix, "", width=WIDTH - (len(comment) + 2 if comment else 0))
        if len(lines) == 1 and not comment and prefix not in ("", "@") and indent + len(lines[0][1]) > WIDTH:
            lines = _right_hand(expr, indent, prefix) or lines
    except (_AsWritten, cst.ParserSyntaxError):
        return text
    if comment:
        if len(lines) == 1 or lines[0][1][-1:] not in "([{":
            return text
        lines[0] = (lines[0][0], f"{lines[0][1]}  {comment}")
    return "\n".join(" " * (column - indent) + line for column, line in lines)


def placed(text: str, column: int, margin: str) -> str:
    """`fit(text, column)` with `margin` before each of its lines: a statement of a snippet
    indented by `margin` that lands at `column` in the module."""
    return margin + fit(text, column).replace("\n", "\n" + margin)


def fit_header(head: str, text: str, tail: str, indent: int) -> str:
    """A compound statement's header (`for x in zip(a, b):`: `head`, the expression `text`,
    `tail`) laid out for `indent` columns as black lays it out: split at its last bracket."""
    try:
        lines = _split(cst.parse_expression(text), indent, head, tail)
    except (_AsWritten, cst.ParserSyntaxError):
        return head + text + tail
    return "\n".join(" " * (column - indent) + line for column, line in lines)


def _parts(text: str) -> tuple[str, cst.BaseExpression, str]:
    if "\n" in text.strip() and "#" in text:
        raise _AsWritten
    if text.startswith("@"):
        return "@", cst.parse_expression(text[1:]), ""
    stmt = cst.parse_statement(text + "\n")
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        raise _AsWritten
    comment = stmt.trailing_whitespace.comment.value if stmt.trailing_whitespace.comment else ""
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return _flat(small.targets[0].target) + " = ", _invisible_parens(small.value), comment
    if isinstance(small, cst.Expr):
        return "", small.value, comment
    if isinstance(small, cst.Return) and small.value is not None:
        return "return ", small.value, comment
    raise _AsWritten


def _invisible_parens(value: cst.BaseExpression) -> cst.BaseExpression:
    """An operation the user (or black) put in parentheses of its own on the right of `=`:
    black treats those parentheses as its own, added only when the line needs them."""
    if isinstance(value, cst.BinaryOperation) and len(value.lpar) == 1 and len(value.rpar) == 1 \
            and not _has_comment(value):
        return value.with_changes(lpar=[], rpar=[])
    return value


def _flat(node: cst.CSTNode) -> str:
    """`node` on one line (the calls and lists a generated statement holds rejoined);
    code the user wrote over several lines, or with a comment, is left as written."""
    if isinstance(node, cst.Call) and not node.lpar:
        return _flat(node.func) + "(" + ", ".join(_argument(a) + _flat(a.value) for a in node.args) + ")"
    if isinstance(node, cst.List) and not node.lpar:
        return "[" + ", ".join(_element(e) for e in node.elements) + "]"
    if isinstance(node, cst.ListComp) and not node.lpar:
        return "[" + " ".join(_clauses(node)) + "]"
    if isinstance(node, cst.Lambda) and not node.lpar:
        head = _MODULE.code_for_node(node.with_changes(body=cst.Name("_")))[:-1]
        return head + _flat(node.body)
    if isinstance(node, cst.UnaryOperation) and not node.lpar:
        operator = _MODULE.code_for_node(node.operator).strip()
        return operator + (" " if operator == "not" else "") + _flat(node.expression)
    if isinstance(node, cst.Attribute) and not node.lpar:
        return f"{_flat(node.value)}.{node.attr.value}"
    if isinstance(node, cst.BinaryOperation) and not node.lpar:
        operator = _MODULE.code_for_node(node.operator)   # (as written: `x**2` stays hugged)
        if "#" in operator:
            raise _AsWritten
        if "\n" in operator:   # (a break the user made: one space each side)
            operator = f" {_bare(node.operator)} "
        return f"{_flat(node.left)}{operator}{_flat(node.right)}"
    code = _MODULE.code_for_node(node)
    if "\n" in code or "#" in code and _has_comment(node):
        raise _AsWritten
    return code


def _bare(operator: cst.CSTNode) -> str:
    """A binary operator without the spaces or line breaks around it."""
    return _MODULE.code_for_node(operator.with_changes(whitespace_before=cst.SimpleWhitespace(""),
                                                       whitespace_after=cst.SimpleWhitespace("")))


def _clauses(node: cst.ListComp) -> list[str]:
    """A comprehension's element and its `for` and `if` clauses, each on one line."""
    parts = [_flat(node.elt)]
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        if clause.asynchronous is not None:
            raise _AsWritten
        parts.append(f"for {_flat(clause.target)} in {_flat(clause.iter)}")
        parts += [f"if {_flat(c.test)}" for c in clause.ifs]
        clause = clause.inner_for_in
    return parts


def _has_comment(node: cst.CSTNode) -> bool:
    """Does `node` hold a comment (a `#` may be inside a string instead)?"""
    found: list = []

    class _Comments(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    node.visit(_Comments())
    return bool(found)


def _element(element: cst.BaseElement) -> str:
    return ("*" if isinstance(element, cst.StarredElement) else "") + _flat(element.value)


def _argument(arg: cst.Arg) -> str:
    if arg.keyword is not None:
        return f"{arg.keyword.value}="
    return arg.star


def _split(node: cst.BaseExpression, indent: int, prefix: str, suffix: str, width: int = WIDTH) -> list[tuple[int, str]]:
    line = prefix + _flat(node) + suffix
    if indent + len(line) <= width:
        return [(indent, line)]
    if isinstance(node, cst.Lambda) and isinstance(node.body, cst.Call) and not node.lpar:   # (its body's call)
        return _split(node.body, indent, prefix + _flat(node)[:-len(_flat(node.body))], suffix)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Call) and not node.lpar:
        return _split(node.expression, indent, prefix + _flat(node)[:-len(_flat(node.expression))], suffix)
    if isinstance(node, cst.Call) and not node.lpar and not node.args and isinstance(node.func, cst.Attribute) \
            and isinstance(node.func.value, cst.Call) and not node.func.value.lpar:   # `f(...).numpy()`: black splits f's
        return _split(node.func.value, indent, prefix, f".{node.func.attr.value}()" + suffix, width)
    if isinstance(node, cst.Call) and not node.lpar:
        head = prefix + _flat(node.func) + "("
        arguments = _flat(node)[len(_flat(node.func)):]
        if indent + len(head) > WIDTH and isinstance(node.func, cst.Call):   # split the callee, as black omits a trailer
            return _split(node.func, indent, prefix, arguments + suffix)
        items = [(_argument(a), a.value) for a in node.args]
        return _bracketed(head, items, ")" + suffix, indent)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)) and (node.lpar or not isinstance(node, cst.Tuple)):
        opening, closing = {cst.List: "[]", cst.Tuple: "()", cst.Set: "{}"}[type(node)]
        if isinstance(node, cst.Tuple):
            if len(node.elements) < 2:
                raise _AsWritten
            opening, closing = "(", ")"
        items = [("*" if isinstance(e, cst.StarredElement) else "", e.value) for e in node.elements]
        return _bracketed(prefix + opening, items, closing + suffix, indent, explode=len(items) > 1)
    if isinstance(node, cst.ListComp) and not node.lpar:
        body = _flat(node)[1:-1]
        if indent + 4 + len(body) <= WIDTH:
            return [(indent, prefix + "["), (indent + 4, body), (indent, "]" + suffix)]
        parts: list[tuple[str, cst.BaseExpression]] = [("", node.elt)]   # (each split again where too long)
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            parts.append((f"for {_flat(clause.target)} in ", clause.iter))
            parts += [("if ", c.test) for c in clause.ifs]
            clause = clause.inner_for_in
        inner = [line for head, part in parts for line in _split(part, indent + 4, head, "")]
        return [(indent, prefix + "[")] + inner + [(indent, "]" + suffix)]
    if isinstance(node, cst.BinaryOperation) and not node.lpar and prefix == "" and suffix in ("", ","):
        # inside brackets: split before each operator of the lowest precedence, as black's delimiter split
        group = _GROUPS.get(type(node.operator))
        operands: list[tuple[str, cst.BaseExpression]] = []
        left: cst.BaseExpression = node
        while isinstance(left, cst.BinaryOperation) and not left.lpar and _GROUPS.get(type(left.operator)) == group:
            operands.insert(0, (_bare(left.operator) + " ", left.right))
            left = left.left
        if group is not None:   # (each operand split again where too long, as black splits its line)
            return _split(left, indent, "", "") + [ln for op, v in operands[:-1] for ln in _split(v, indent, op, "")] + \
                _split(operands[-1][1], indent, operands[-1][0], suffix)
    return [(indent, line)]   # (nothing black would split either)


def _right_hand(expr: cst.BaseExpression, indent: int, prefix: str) -> list[tuple[int, str]] | None:
    """An operation too long for its line (`x = a + b * (c + d)`, `return a + f(b)`) as
    black splits it: at its last bracket when that closes the line and the operator of
    the lowest precedence appears once, the head fitting; else inside parentheses of
    its own, one operand a line (None: not an operation of `_GROUPS`)."""
    group = _GROUPS.get(type(expr.operator)) if isinstance(expr, cst.BinaryOperation) and not expr.lpar else None
    if group is None:
        return None
    count, left = 0, expr
    while isinstance(left, cst.BinaryOperation) and not left.lpar and _GROUPS.get(type(left.operator)) == group:
        count, left = count + 1, left.left
    last = expr
    while isinstance(last, cst.BinaryOperation) and not last.lpar:
        last = last.right
    bracketed = isinstance(last, (cst.Call, cst.List)) and not last.lpar \
        or len(getattr(last, "lpar", ())) == 1 and not isinstance(last, cst.Tuple)
    if count == 1 and bracketed:
        head = prefix + _flat(expr)[:-len(_flat(last))]
        if isinstance(last, cst.Call):
            head += _flat(last.func) + "("
            lines = _bracketed(head, [(_argument(a), a.value) for a in last.args], ")", indent)
        elif isinstance(last, cst.List):
            head += "["
            lines = _bracketed(head, [("", e.value) for e in last.elements], "]", indent, explode=len(last.elements) > 1)
        else:
            inner = cast(cst.BaseExpression, last.with_changes(lpar=[], rpar=[]))
            head += "("
            lines = [(indent, head)] + _split(inner, indent + 4, "", "") + [(indent, ")")]
        if indent + len(head) <= WIDTH:
            return lines
    return [(indent, prefix + "(")] + _split(expr, indent + 4, "", "") + [(indent, ")")]


_GROUPS = {cst.Add: "sum", cst.Subtract: "sum", cst.Multiply: "product", cst.Divide: "product",
           cst.FloorDivide: "product", cst.Modulo: "product", cst.MatrixMultiply: "product"}


def _bracketed(head: str, items: list[tuple[str, cst.BaseExpression]], tail: str,
               indent: int, explode: bool = False) -> list[tuple[int, str]]:
    """Arguments on one line when they fit; a list, tuple or set display split by black
    always has one element per line (`explode`)."""
    body = ", ".join(p + _flat(v) for p, v in items)
    if not items:
        return [(indent, head + tail)]
    if indent + 4 + len(body) <= WIDTH and not explode:
        return [(indent, head), (indent + 4, body), (indent, tail)]
    if len(items) == 1:
        p, v = items[0]
        return [(indent, head)] + _split(v, indent + 4, p, "") + [(indent, tail)]
    lines = [(indent, head)]
    for p, v in items:
        lines += _split(v, indent + 4, p, ",")
    return lines + [(indent, tail)]


def refit(before: cst.BaseStatement, after: cst.BaseStatement, indent: int,
          before_indent: int | tuple[int, ...] | None = None) -> cst.BaseStatement:
    """`after` (`before` edited: a run replaced by a call, `x` -> `self.x`; now at `indent`,
    `before` was at `before_indent`) laid out again when `before` was laid out as `fit`
    lays it out and `after` no longer is; the user's own layouts stay as they are.
    Compound statements: their blocks, statement by statement."""
    before_indent = indent if before_indent is None else before_indent
    if type(before) is not type(after):
        return after
    if isinstance(before, cst.SimpleStatementLine):
        old, new = (_MODULE.code_for_node(s.with_changes(leading_lines=())).rstrip("\n") for s in (before, after))
        columns = before_indent if isinstance(before_indent, tuple) else (before_indent,)
        if old == new and columns == (indent,) or all(fit(old, c) != old for c in columns) or fit(new, indent) == new:
            return after
        statement = cst.parse_statement(fit(new, indent) + "\n")
        return statement.with_changes(leading_lines=after.leading_lines)
    if isinstance(before, cst.For) and isinstance(after, cst.For):
        after = _refit_for(before, after, indent, before_indent)
    changes = {}
    for field in ("body", "orelse"):
        old_part, new_part = getattr(before, field, None), getattr(after, field, None)
        if isinstance(old_part, cst.IndentedBlock) and isinstance(new_part, cst.IndentedBlock):
            inner = tuple(c + 4 for c in before_indent) if isinstance(before_indent, tuple) else before_indent + 4
            changes[field] = new_part.with_changes(body=refit_body(list(old_part.body), list(new_part.body), indent + 4, inner))
        elif isinstance(old_part, (cst.Else, cst.If)) and isinstance(new_part, type(old_part)):
            changes[field] = refit(old_part, new_part, indent, before_indent)
    return after.with_changes(**changes) if changes else after


def _refit_for(before: cst.For, after: cst.For, indent: int, before_indent: int | tuple[int, ...]) -> cst.For:
    """`after`'s header (`for x in zip(...)`, a name in it now `self.x`) laid out again as `fit_header`
    lays it out, where `before`'s was laid out so and `after`'s no longer is."""
    old, new = _for_header(before), _for_header(after)
    columns = before_indent if isinstance(before_indent, tuple) else (before_indent,)
    if old is None or new is None or all(_laid_for(old, c) is None or _header_of(_laid_for(old, c)) != _header_of(before)
                                         for c in columns):
        return after
    made = _laid_for(new, indent)
    if made is None or _header_of(made) == _header_of(after):
        return after
    return after.with_changes(target=made.target, iter=made.iter, whitespace_after_for=made.whitespace_after_for,
                              whitespace_before_in=made.whitespace_before_in, whitespace_after_in=made.whitespace_after_in,
                              whitespace_before_colon=made.whitespace_before_colon)


def _for_header(node: cst.For) -> tuple[str, str] | None:
    """(`for TARGET in `, the iterable on one line) of a `for` statement, or None (`async`, a
    target or iterable laid out by hand)."""
    target = _MODULE.code_for_node(node.target)
    try:
        return (None if node.asynchronous is not None or "\n" in target else (f"for {target} in ", _flat(node.iter)))
    except _AsWritten:
        return None


def _laid_for(header: tuple[str, str], indent: int) -> cst.For | None:
    """The `for` statement `fit_header` lays out at `indent` columns (its body `pass`)."""
    holders = "".join(" " * (4 * k) + "class _:\n" for k in range(indent // 4))
    laid = "\n".join(" " * indent + line for line in fit_header(header[0], header[1], ":", indent).split("\n"))
    text = holders + laid + "\n" + " " * (indent + 4) + "pass\n"
    try:
        return next((n for n in _descend(cst.parse_module(text)) if isinstance(n, cst.For)), None)
    except cst.ParserSyntaxError:
        return None


def _header_of(node: cst.For) -> str:
    return _MODULE.code_for_node(node.with_changes(leading_lines=(), body=cst.SimpleStatementSuite([cst.Pass()]), orelse=None))


def refit_body(before: list, after: list, indent: int, before_indent: int | tuple[int, ...] | None = None) -> list:
    """`refit` for each statement of a block (the blocks must match statement for statement)."""
    if len(before) != len(after):
        return after
    return [refit(old, new, indent, before_indent) for old, new in zip(before, after)]


def refit_source(before: bytes, after: bytes) -> bytes:
    """`after` (`before` with byte edits that keep its statements: keywords renamed) with each
    statement `before` held as `fit` lays it out, and `after` no longer, laid out again: a
    call black split that a shorter keyword now fits on one line is joined, as black joins it."""
    if before == after:
        return after
    try:
        old, new = cst.parse_module(before), cst.parse_module(after)
    except cst.ParserSyntaxError:
        return after
    if new.default_indent != "    " or len(old.body) != len(new.body):   # (fit's columns are black's)
        return after
    body = refit_body(list(old.body), list(new.body), 0)
    if all(a is b for a, b in zip(body, new.body)):
        return after
    return new.with_changes(body=body).bytes


def one_line(text: str) -> str:
    """A statement `fit` laid out, on one line again (what it says, layout aside)."""
    return fit(text, -10 ** 9)


def refit_header(before: cst.FunctionDef, after: cst.FunctionDef, indent: int) -> cst.FunctionDef:
    """`after` (`before` with parameters edited, at `indent`) with its parameters laid out
    again as black lays out a `def` when `before`'s were and `after`'s no longer are: one
    line, else the parameters on a line of their own, else one per line with a trailing
    comma. Only plain parameters (no `*`, `/`, annotations of the result)."""
    old, new = (_header(f, indent) for f in (before, after))
    if old is None or new is None or old != _written_header(before) or new == _written_header(after):
        return after
    holder = cst.parse_module("class _:\n" * (indent // 4) + " " * indent + new + "\n" + " " * (indent + 4) + "pass\n")
    made = next(n for n in _descend(holder) if isinstance(n, cst.FunctionDef))
    return after.with_changes(params=made.params, whitespace_before_params=made.whitespace_before_params)


def _descend(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _descend(child)


def _written_header(fn: cst.FunctionDef) -> str:
    text = _MODULE.code_for_node(fn.with_changes(decorators=[], leading_lines=[], body=cst.SimpleStatementSuite([cst.Pass()])))
    return text[:text.rindex("pass")].rstrip()


def _header(fn: cst.FunctionDef, indent: int) -> str | None:
    """The `def` line(s) as black writes them (None: a form not laid out here)."""
    params = fn.params
    if params.star_arg != cst.MaybeSentinel.DEFAULT or params.kwonly_params or params.star_kwarg \
            or params.posonly_params or fn.returns is not None or fn.asynchronous is not None:
        return None
    items = [_MODULE.code_for_node(p.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_param=cst.SimpleWhitespace(""),
                                                  whitespace_after_star=cst.SimpleWhitespace(""))) for p in params.params]
    if any("\n" in item or "#" in item for item in items):
        return None
    head, joined = f"def {fn.name.value}(", ", ".join(items)
    if indent + len(head) + len(joined) + 2 <= WIDTH:
        return f"{head}{joined}):"
    if indent + 4 + len(joined) <= WIDTH:
        return f"{head}\n{' ' * (indent + 4)}{joined}\n{' ' * indent}):"
    return head + "".join(f"\n{' ' * (indent + 4)}{item}," for item in items) + f"\n{' ' * indent}):"


def indented(text: str) -> str:
    """`text` four columns in, its blank lines left blank."""
    return "\n".join("    " + ln if ln.strip() else ln for ln in text.splitlines())
