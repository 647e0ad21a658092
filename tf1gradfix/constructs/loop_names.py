"""The names TF1 gives the variables a loop makes (constructs/variable_loops.py), iteration by
iteration, and the TF2 expression that gives each of them.

TF1 makes a name scope's name unique in the graph when it is entered (`conv` twice is
`conv`, `conv_1`), a `tf.Variable` takes the name scopes and `tf.get_variable` the
variable scopes only. The TF2 program writes the scopes into the variable's name, from
the same values (`name="conv-%d/W" % width`), and that expression is evaluated for every
iteration (host_values) to be sure it gives the name TF1 gave.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

import libcst as cst

from tf1gradfix.constructs import host_values, loop_layers
from tf1gradfix.cst.syntax import Refusal, literal_string
from tf1gradfix.model.parts import LayerSite, LoopStatement, VariableSite

VALID_SCOPE = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")   # (TF1's own check of an op or scope name)


@dataclass
class Scoped:
    """A statement of a loop's body with the scopes it runs under (outermost first)."""

    stmt: LoopStatement
    scopes: tuple[tuple[cst.With, str, cst.BaseExpression], ...]   # (the `with`, its kind, its name)


def name(builder, item, statements: list[Scoped], runs: list[dict], code) -> None:
    """Each variable's TF1 name in each iteration, as TF1 makes it (scopes entered in order,
    made unique in the graph), and the expression that names it in TF2; each layer's under
    the loop's variable scopes (loop_layers); Refusal where a name repeats (in the loop, or a
    name the graph has) or is not known before the program runs."""
    taken: set[str] = set()   # (with the graph's names: TF1 compares names in lower case, model/tf1_names.py)
    given: dict[int, set[str]] = {}   # id of the `with` or call -> the names it gave
    made: dict[int, list[tuple[dict, str]]] = {}   # id of a variable site -> (the values where it is made, its name)
    layer_names: set[str] = set()   # the layers' TF1 names (in lower case) in the iterations so far
    for env in runs:
        env = dict(env)
        entered: dict[int, tuple[str, str]] = {}   # id(with) -> (name scope, variable scope) inside it
        inside: tuple = ()   # the scopes the last statement ran under, outermost first
        for scoped in statements:
            st = scoped.stmt
            names_scope, variable_scope = item.scope, item.prefix
            _leave(builder, inside, scoped.scopes, entered)
            for stmt, kind, expr in scoped.scopes:
                if id(stmt) not in entered:
                    label = _evaluated(builder, expr, env, stmt, code)
                    if not VALID_SCOPE.fullmatch(label) or label.endswith("/"):
                        raise Refusal.of(stmt, "variable_loop_scope_form", api=f"tf.{kind}")
                    opened = names_scope + label
                    if kind == "variable_scope" and builder.graph_names.taken(opened):   # (its name scope numbered, as TF1 does:
                        opened = builder.unique_name(opened)                   # only a `tf.Variable` under it would care)
                    else:
                        _take(builder, opened, taken, given.setdefault(id(stmt), set()), stmt)
                    inner = variable_scope + label + "/" if kind == "variable_scope" else variable_scope
                    if kind == "variable_scope":   # (TF1 counts the layers in it afresh: model/tf1_names.py)
                        builder.variable_scopes.open(inner[:-1])
                    entered[id(stmt)] = (opened + "/", inner)
                names_scope, variable_scope = entered[id(stmt)]
            inside = scoped.scopes
            if st.role == "host":
                try:
                    if not isinstance(st.stmt, cst.Assign):
                        raise host_values.NotFixed
                    env[cast(str, st.name)] = host_values.value(builder, cast(cst.BaseExpression, st.value), env)
                except host_values.NotFixed as unknown:
                    env[cast(str, st.name)] = unknown
            if isinstance(st.site, LayerSite) and st.site.scopes:
                loop_layers.name_in_iteration(builder, st.site, env, variable_scope, names_scope,
                                              given.setdefault(id(st.site.call), set()), layer_names,
                                              lambda expr, values, node: _evaluated(builder, expr, values, node, code))
            if not isinstance(st.site, VariableSite):
                continue
            site = st.site
            label_expr = site.bound.get("name")
            label = "Variable" if label_expr is None else _evaluated(builder, label_expr, env, site.call, code)
            full = (names_scope if site.source == "tensorflow.Variable" else variable_scope) + label
            _take(builder, full, taken, given.setdefault(id(site.call), set()), site.call)
            site.tf1_names += (full,)
            made.setdefault(id(site), []).append((dict(env), full))
        _leave(builder, inside, (), entered)
    for scoped in statements:   # the name written in TF2: one that gives TF1's name in every iteration
        site = cast(VariableSite, scoped.stmt.site)
        if not isinstance(site, VariableSite):
            continue
        parts = _parts(item, scoped, site)
        texts = [name_text(parts, code, merge) for merge in (True, False)]
        wrong = [next((full for env, full in made.get(id(site), ()) if not _gives(builder, text, env, full)), None)
                 for text in texts]
        site.name = next((text for text, full in zip(texts, wrong) if full is None), "")
        if not site.name:   # (a name scope numbered by TF1, or what a scope's name reads changed in the loop)
            raise Refusal.of(site.call, "variable_loop_name_differs", name=site.local, tf1=cast(str, wrong[-1]),
                             expr=texts[-1])


def _leave(builder, inside: tuple, scopes: tuple, entered: dict[int, tuple[str, str]]) -> None:
    """Leaves the scopes of `inside` the next statement does not run under (`scopes`), innermost
    first: a variable scope left counts the scopes opened in it afresh, as TF1 does."""
    staying = {id(stmt) for stmt, _, _ in scopes}
    for stmt, kind, _ in reversed(inside):
        if id(stmt) not in staying and kind == "variable_scope":
            builder.variable_scopes.close(entered[id(stmt)][1][:-1])


def _gives(builder, text: str, env: dict, full: str) -> bool:
    """Does the expression `text` compute `full` from the loop's values `env`?"""
    try:
        return host_values.value(builder, cst.parse_expression(text), env) == full
    except (host_values.NotFixed, cst.ParserSyntaxError):
        return False


def _take(builder, full: str, taken: set[str], own: set[str], node: cst.CSTNode) -> None:
    """Registers a name TF1 gives in the loop (`own`: those the same statement gave in earlier
    iterations); Refusal where it was given already."""
    if full.lower() in own:
        raise Refusal.of(node, "variable_loop_name_fixed", tf1=full)
    if full.lower() in taken or builder.graph_names.taken(full):
        raise Refusal.of(node, "variable_loop_name_taken", tf1=full)
    taken.add(full.lower())
    own.add(full.lower())
    builder.unique_name(full)


def _evaluated(builder, expr: cst.BaseExpression, env: dict, node, code) -> str:
    try:
        text = host_values.value(builder, expr, env)
    except host_values.NotFixed:
        text = None
    if not isinstance(text, str):
        raise Refusal.of(node, "variable_loop_name_unknown", expr=code(expr))
    return text


def _parts(item, scoped: Scoped, site: VariableSite) -> list[str | cst.BaseExpression]:
    """A variable's TF1 name as written in TF2: the scopes it takes (a `tf.Variable` all of
    them, a `tf.get_variable` the variable scopes only) and its own name, joined by `/`."""
    parts: list[str | cst.BaseExpression] = [item.scope if site.source == "tensorflow.Variable" else item.prefix]
    for _, kind, expr in scoped.scopes:
        if site.source == "tensorflow.Variable" or kind == "variable_scope":
            parts += [_literal_or(expr), "/"]
    given = site.bound.get("name")
    parts.append("Variable" if given is None else _literal_or(given))
    return parts


def _literal_or(expr: cst.BaseExpression) -> str | cst.BaseExpression:
    """A string literal's value, or the expression."""
    text = literal_string(expr)
    return expr if text is None else text


def name_text(parts: list[str | cst.BaseExpression], code, merge: bool = True) -> str:
    """The TF2 text of a name made of literal parts and expressions: one formatted string where
    the parts allow (`merge`: `"conv-%d/W-%d" % (width, width)`), else the parts joined by `+`."""
    merged: list[str | cst.BaseExpression] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif not (isinstance(part, str) and not part):
            merged.append(part)
    exprs = [p for p in merged if not isinstance(p, str)]
    if not exprs:
        return _quoted("".join(cast("list[str]", merged)))
    joined = _into_format(merged, code) if merge else None
    if joined is not None:
        return joined
    return " + ".join(_quoted(p) if isinstance(p, str) else _operand(p, code) for p in merged)


def _into_format(parts: list, code) -> str | None:
    """`"a/" + ("b-%d" % i) + "/W"` as `"a/b-%d/W" % i` (several `%` strings as one, their values
    in a tuple; one f-string or `.format` string with the literal parts); None where not so."""
    literal = [p for p in parts if isinstance(p, str)]
    exprs = [p for p in parts if not isinstance(p, str)]
    if any(c in text for text in literal for c in "\\\"'\n"):
        return None
    if all(isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Modulo) and _plain(e.left) for e in exprs):
        quotes = {cast(cst.SimpleString, cast(cst.BinaryOperation, e).left).quote for e in exprs}
        if len(quotes) != 1:
            return None
        template, values = "", []
        for part in parts:
            if isinstance(part, str):
                template += part.replace("%", "%%")
                continue
            template += cast(cst.SimpleString, part.left).value[1:-1]
            right = part.right
            values += [code(e.value) for e in right.elements] if isinstance(right, cst.Tuple) else [code(right)]
        quote = quotes.pop()
        if len(exprs) == 1:
            return f"{quote}{template}{quote} % {code(cast(cst.BinaryOperation, exprs[0]).right)}"
        return f"{quote}{template}{quote} % ({', '.join(values)})"
    if len(exprs) != 1:
        return None
    expr = exprs[0]
    at = parts.index(expr)
    before, after = "".join(parts[:at]), "".join(parts[at + 1:])
    escape = lambda t: t.replace("{", "{{").replace("}", "}}")   # noqa: E731
    if isinstance(expr, cst.FormattedString) and expr.prefix in ("f", "F") and len(expr.start) == 2:
        inner = code(expr)[2:-1]
        return f"{expr.prefix}{expr.start[1]}{escape(before)}{inner}{escape(after)}{expr.start[1]}"
    func = expr.func if isinstance(expr, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and _plain(func.value):
        string = cast(cst.SimpleString, func.value)
        rest = code(expr)[len(code(string)):]
        return f"{string.quote}{escape(before)}{string.value[1:-1]}{escape(after)}{string.quote}{rest}"
    return None


def _plain(expr: cst.BaseExpression) -> bool:
    """A one-line string literal without prefix (its text may take more text as is)."""
    return isinstance(expr, cst.SimpleString) and expr.prefix == "" and len(expr.quote) == 1 and not expr.lpar


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _operand(expr: cst.BaseExpression, code) -> str:
    """`expr` as an operand of `+` (parenthesized where its own operator binds less tightly)."""
    loose = isinstance(expr, (cst.IfExp, cst.Lambda, cst.BooleanOperation, cst.Comparison, cst.UnaryOperation)) or \
        isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator, (cst.Modulo, cst.Multiply))
    return f"({code(expr)})" if loose and not expr.lpar else code(expr)
