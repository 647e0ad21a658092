"""Graph statements under a host `if`, read as the definitions TF1 made of them.

    if use_l2:                             loss = loss + l2 * tf.nn.l2_loss(w) if use_l2 else loss
        loss += l2 * tf.nn.l2_loss(w)  ->  probe = tf.placeholder(tf.float32, [None, 4])
    if args.plot:                          shown = tf.sigmoid(probe @ w) if args.plot else None
        probe = tf.placeholder(...)
        shown = tf.sigmoid(probe @ w)

TF1 runs such an `if` once, while it builds the graph: a statement it holds adds an op,
or not, and an op computes nothing until a run fetches it. So a graph statement is its
conditional expression: the value, or what the name held before (None for a new name).
Its test, read again where the step function runs, gives what it gave when TF1 built the
graph where it calls nothing and nothing binds its names again (`_steady`); the step
function then shows the user's `if` again (`restored`). Where the block does rebind a
name of its test, a statement binding a new name moves as it is (a run fetching it could
only reach it where the `if` was taken: elsewhere the name is unbound in TF1), and a
placeholder always does (a parameter of the steps that feed it).

Only statements at the start or the end of the `if`'s block move, so that the host
statements keep their order and their one test. An `if`/`else` of graph statements alone
is each branch's statements under its test (`not c` for the `else`), written back as the
user's `if`/`else`. Which statements are graph code is first guessed from the names (one
that calls TensorFlow or a function of the file that does, or reads a name such a
statement bound); `check` then requires each moved statement to be a placeholder or a
computed tensor of the program the model reads, and the reading is refused otherwise.
The lowered module is tried where the module as written is refused (emit/restructure.py);
its lines map back to the user's (`Lowering.origin`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import cast

import libcst as cst

from tf1gradfix.cst import line_maps
from tf1gradfix.cst.syntax import Refusal, bound_names, call_root, loads, stored_name_nodes, tensorflow_aliases
from tf1gradfix.cst.walk import walk

_PURE_TESTS = (cst.Name, cst.Attribute, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Integer,
               cst.Float, cst.SimpleString, cst.ComparisonTarget, cst.Subscript, cst.SubscriptElement, cst.Index)
_RUNS = frozenset({"run", "eval"})   # (what a session run returns is host data)
_MOVED_KINDS = frozenset({"Placeholder", "Tensor", "LayerCall", "Computed"})


@dataclass(frozen=True)
class Lowering:
    module: cst.Module                   # the lowered module, parsed again
    origin: Callable[[int], int]         # its line -> the user's line
    moved: frozenset[int]                # its lines of the statements moved out of an `if`
    spans: tuple[tuple[int, int], ...]   # the user's lines of each `if` read so
    tests: frozenset[tuple[str, str, str]]   # each conditional expression it wrote, its test and branch


def lowered(module: cst.Module) -> Lowering | None:
    """The module with the graph statements of host `if`s moved out of them, or None."""
    aliases = tensorflow_aliases(module)
    if not aliases:
        return None
    makers = {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))
              and any(isinstance(n, cst.Call) and call_root(n.func) in aliases for n in walk(s))}
    lowering = _Lower(aliases | makers, _rebound_attributes(module))
    new = lowering.body_of(module, module.body, set(), set())
    if not lowering.moved:
        return None
    made = module.with_changes(body=new)
    new_lines = line_maps.statement_lines(made)
    moved = frozenset(new_lines[key][0] for key in lowering.moved if key in new_lines)
    old_lines = line_maps.statement_lines(module, (cst.SimpleStatementLine, cst.If))   # (one read: both kinds)
    spans = tuple(old_lines[key] for key in lowering.ifs)
    return Lowering(module=cst.parse_module(made.code), origin=line_maps.origin(old_lines, new_lines, lowering.source),
                    moved=moved, spans=spans, tests=frozenset(lowering.tests))


def restored(module: cst.Module, tests: frozenset[tuple[str, str, str]]) -> cst.Module:
    """The rewritten module with each conditional expression the lowering wrote (`t = v if c
    else t`) back in the `if` form the user wrote, wherever the rewrite copied it on one line
    (the step functions are written as text: verbatim.py)."""
    forms = {line: (test, kept) for line, test, kept in tests}
    lines = module.code.splitlines(keepends=True)
    out: list[str] = []
    last = None   # (indent, test) of the `if` the line before wrote: the next of the same test joins it
    for line in lines:
        text = line.strip()
        if text in forms:
            indent = line[:len(line) - len(line.lstrip())]
            test, kept = forms[text]
            if last == (indent, test):
                out.append(f"{indent}    {kept}\n")
            elif last is not None and last[0] == indent and test in (f"not {last[1]}", f"not ({last[1]})"):
                out += [f"{indent}else:\n", f"{indent}    {kept}\n"]   # (the other branch, right after the first)
            else:
                out += [f"{indent}if {test}:\n", f"{indent}    {kept}\n"]
            last = (indent, test)
        else:
            out.append(line)
            last = None
    return cst.parse_module("".join(out)) if out != lines else module


_EMPTY = cst.Module(body=[])


def check(program, moved: frozenset[int], line_of) -> None:
    """Each statement moved out of an `if` is a placeholder or a computed tensor of the program:
    the refusals of those that are not join the program's."""
    if moved:
        program.refused.extend(Refusal.of(item.stmt, "graph_in_host_if") for item in program.items
                               if line_of(item.stmt) in moved and not item.drop
                               and (item.node is None or type(item.node).__name__ not in _MOVED_KINDS))


def with_class(cls: cst.ClassDef) -> Refusal:
    """A model class found in the lowered module: its desugaring would move the lines the
    check reads, so the reading stops there."""
    return Refusal.of(cls, "host_if_with_model_class", cls=cls.name.value)


class _Lower:
    """Walks each body in the order Python runs it, guessing which names hold graph values."""

    def __init__(self, aliases: set[str], attributes: set[str]):
        self.aliases, self.attributes = aliases, attributes   # (TensorFlow's names, and the file's graph makers)
        self.moved: list[int] = []           # ids of the statements moved (as they are in the new module)
        self.source: dict[int, int] = {}     # id of a statement made anew -> id of the user's
        self.ifs: list[int] = []             # ids of the user's `if`s read so
        self.tests: list[tuple[str, str, str]] = []   # (its code, test, `t = v`) of each one written
        self._binds: dict[int, set[str]] = {}

    def body_of(self, owner, body, graph: set[str], bound: set[str]) -> list:
        out: list = []
        statements = list(body)
        last: dict[str, int] = {}   # name -> the last statement of the body binding it (`_steady`)
        for index, stmt in enumerate(statements):
            for name in self.binds(stmt):
                last[name] = index
        scoped = any(isinstance(n, (cst.Global, cst.Nonlocal)) for s in statements for n in walk(s))
        for index, stmt in enumerate(statements):
            if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock) and not _main_guard(stmt.test):
                later = partial(_bound_after, last, index, scoped)
                marks = len(self.moved), len(self.tests)
                made = self._if(stmt, graph, bound, later) if stmt.orelse is None else \
                    self._if_else(stmt, graph, bound, later)
                if made is None:   # (what a reading given up had noted goes with it)
                    del self.moved[marks[0]:], self.tests[marks[1]:]
                if made is not None:
                    out.extend(made)
                    for s in made:
                        self._note(s, graph, bound)
                    continue
            if isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock):
                inner = self.body_of(stmt, stmt.body.body, graph, bound)
                stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner)) if inner != list(stmt.body.body) else stmt
                out.append(stmt)
                continue
            if isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock):
                inner = self.body_of(stmt, stmt.body.body, set(graph), set())
                if inner != list(stmt.body.body):
                    stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
            self._note(stmt, graph, bound)
            out.append(stmt)
        return out

    def _note(self, stmt, graph: set[str], bound: set[str]) -> None:
        for part in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if isinstance(part, cst.SimpleStatementLine) and self._graph(part, graph):
                graph |= bound_names(part)
        bound |= bound_names(stmt)

    def _graph(self, stmt: cst.SimpleStatementLine, graph: set[str]) -> bool:
        """Does the statement look like graph code: a TensorFlow call, or a graph value read,
        and no session run?"""
        calls = [n for n in walk(stmt) if isinstance(n, cst.Call)]
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value in _RUNS for c in calls):
            return False
        tensorflow = any(call_root(c.func) in self.aliases for c in calls)
        return tensorflow or bool(set(loads(stmt)) & graph)

    def _if(self, stmt: cst.If, graph: set[str], bound: set[str], later) -> list | None:
        body = list(cast(cst.IndentedBlock, stmt.body).body)
        inner_graph, kinds = set(graph), []
        for s in body:   # (in order: a graph statement makes what a later one reads graph code)
            if isinstance(s, cst.SimpleStatementLine):
                kinds.append(self._graph(s, inner_graph) and _movable(s))
                if not kinds[-1] and self._graph(s, inner_graph):
                    return None   # (a graph statement of another form: the model reads it as written)
                if kinds[-1]:
                    inner_graph |= bound_names(s)
            else:
                if any(isinstance(p, cst.SimpleStatementLine) and self._graph(p, inner_graph) for p in walk(s)):
                    return None
                kinds.append(False)
        if not any(kinds) or set(loads(stmt.test)) & graph or not _pure(stmt.test):
            return None
        head = 0
        while head < len(kinds) and kinds[head]:
            head += 1
        tail = len(kinds)
        while tail > head and kinds[tail - 1]:
            tail -= 1
        if any(kinds[head:tail]):
            return None   # (graph statements between host ones: their order would change)
        tested = set(loads(stmt.test))
        steady = self._steady(stmt, tested, later)
        before = set(bound)
        moved: list = []
        for s in body[:head]:
            made = self._moved(s, stmt.test, before, steady, tested)
            if made is None:
                return None
            moved.append(made)
            before |= bound_names(s)
        kept = body[head:tail]
        for s in body[head:tail]:
            before |= bound_names(s)
        after: list = []
        for s in body[tail:]:
            made = self._moved(s, stmt.test, before, steady, tested)
            if made is None:
                return None
            after.append(made)
            before |= bound_names(s)
        self.ifs.append(id(stmt))
        kept_if = [stmt.with_changes(body=stmt.body.with_changes(body=kept), leading_lines=() if moved else stmt.leading_lines)] \
            if kept else []
        out = [*moved, *kept_if, *after]   # (no block left: a test of names and comparisons runs nothing)
        if moved:   # (the comments above the `if` stay above its first statement)
            first = out[0]
            out[0] = first.with_changes(leading_lines=(*stmt.leading_lines, *first.leading_lines))
            self.source[id(out[0])] = self.source.get(id(first), id(first))
            self.moved[self.moved.index(id(first))] = id(out[0])
        elif not kept_if:
            out[0] = out[0].with_changes(leading_lines=(*stmt.leading_lines, *out[0].leading_lines))
            self.source[id(out[0])] = self.source.get(id(after[0]), id(after[0]))
            self.moved[self.moved.index(id(after[0]))] = id(out[0])
        return out

    def _if_else(self, stmt: cst.If, graph: set[str], bound: set[str], later) -> list | None:
        """`if c: <graph statements> else: <graph statements>` as the statements of each branch
        read with `c`, then with `not c`: each leaves a value as it was where its test fails."""
        orelse = stmt.orelse
        if not isinstance(orelse, cst.Else) or not isinstance(orelse.body, cst.IndentedBlock):
            return None   # (an `elif`)
        branches = [list(cast(cst.IndentedBlock, stmt.body).body), list(orelse.body.body)]
        tested = set(loads(stmt.test))
        if tested & graph or not _pure(stmt.test) or not self._steady(stmt, tested, later):
            return None
        for branch in branches:
            known = set(graph)
            for s in branch:
                if not (isinstance(s, cst.SimpleStatementLine) and _movable(s) and self._graph(s, known)) \
                        or _made_input(s.body[0]):
                    return None   # (host code, or a placeholder either branch may make: read as written)
                known |= bound_names(s)
        test = stmt.test if isinstance(stmt.test, (cst.Name, cst.Attribute, cst.Subscript)) else \
            stmt.test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        negated = cst.UnaryOperation(operator=cst.Not(), expression=test)
        before, out = set(bound), []
        fresh: set[str] = set()
        own: set[str] = set()
        for s in branches[0]:
            fresh |= bound_names(s) - before
            out.append(self._moved(s, stmt.test, before, True, tested))
            before |= bound_names(s)
        for s in branches[1]:
            small = cast("cst.Assign | cst.AugAssign", cast(cst.SimpleStatementLine, s).body[0])   # (_movable)
            reads = set(loads(small.value)) | (set(loads(small.target)) if isinstance(small, cst.AugAssign) else set())
            if reads & fresh - own:
                return None   # (a name only the other branch binds: unbound here in TF1)
            out.append(self._moved(s, negated, before, True, tested))
            before |= bound_names(s)
            own |= bound_names(s)
        if any(made is None for made in out):
            return None
        self.ifs.append(id(stmt))
        first = out[0]
        out[0] = first.with_changes(leading_lines=(*stmt.leading_lines, *first.leading_lines))
        self.source[id(out[0])] = self.source.get(id(first), id(first))
        self.moved[self.moved.index(id(first))] = id(out[0])
        return out

    def _moved(self, s, test, before: set[str], steady: bool, tested: set[str]):
        """The statement (a simple one: `_if` moves no other) as it reads outside the `if`, or None."""
        small = cast(cst.SimpleStatementLine, s).body[0]
        targets = _targets(small)
        if targets is None or set(targets) & tested:
            return None
        fresh = not set(targets) & before
        if isinstance(small, cst.Assign) and fresh and (_made_input(small) or not (steady and len(targets) == 1)):
            self.moved.append(id(s))
            return s
        if not steady or len(targets) != 1:
            return None
        name = targets[0]
        other: cst.BaseExpression = cst.Name("None") if fresh else cst.Name(name)
        if isinstance(small, cst.AugAssign):
            operator = getattr(cst, type(small.operator).__name__.replace("Assign", ""))()
            value: cst.BaseExpression = cst.BinaryOperation(
                left=cst.Name(name), operator=operator,
                right=small.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                if isinstance(small.value, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp, cst.Lambda,
                                            cst.Comparison, cst.UnaryOperation)) else small.value)
        else:
            value = cast(cst.Assign, small).value
            if isinstance(value, (cst.IfExp, cst.Lambda)):
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
            if isinstance(test, (cst.IfExp, cst.Lambda)) else test
        made = s.with_changes(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))],
                                               value=cst.IfExp(test=test, body=value, orelse=other),
                                               semicolon=cst.MaybeSentinel.DEFAULT)])
        self.source[id(made)] = id(s)
        self.moved.append(id(made))
        kept = cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value.with_changes(lpar=[], rpar=[])
                          if isinstance(value, (cst.IfExp, cst.Lambda)) else value)
        self.tests.append((_EMPTY.code_for_node(made.body[0]), _EMPTY.code_for_node(test.with_changes(lpar=[], rpar=[])
                           if isinstance(test, (cst.IfExp, cst.Lambda)) else test), _EMPTY.code_for_node(kept)))
        return made

    def _steady(self, stmt: cst.If, tested: set[str], later) -> bool:
        """Nothing binds the test's names again once it is read (nor an attribute it reads): not
        the `if` itself, not a later statement of its body (`later(names)`)."""
        if later(tested) or tested & self.binds(stmt):
            return False
        attributes = {n.attr.value for n in walk(stmt.test) if isinstance(n, cst.Attribute)}
        return not (attributes & self.attributes or attributes and "*" in self.attributes)

    def binds(self, stmt) -> set[str]:
        """`bound_names`, once per statement of the module."""
        found = self._binds.get(id(stmt))
        if found is None:
            found = self._binds[id(stmt)] = bound_names(stmt)
        return found


def _bound_after(last: dict[str, int], index: int, scoped: bool, names: set[str]) -> bool:
    """Does a statement of the body after the `index`-th bind one of `names` (`scoped`: a
    `global` or `nonlocal` statement of the body may bind any)?"""
    return scoped or any(last.get(name, -1) > index for name in names)


def _made_input(small) -> bool:
    """`x = tf.placeholder(...)`: a parameter of the steps that feed it, made as it is."""
    return isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and isinstance(
        small.value.func, cst.Attribute) and "placeholder" in small.value.func.attr.value


def _movable(stmt: cst.SimpleStatementLine) -> bool:
    return len(stmt.body) == 1 and _targets(stmt.body[0]) is not None


def _targets(small) -> tuple[str, ...] | None:
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return (small.target.value,)
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        names = stored_name_nodes(target)
        plain = isinstance(target, cst.Name) or isinstance(target, (cst.Tuple, cst.List)) and all(
            isinstance(e.value, cst.Name) for e in target.elements)
        return tuple(n.value for n in names) if plain and names else None
    return None


def _pure(test: cst.BaseExpression) -> bool:
    """A test of names, attributes, literals and comparisons: reading it again gives the same."""
    for node in walk(test):
        if isinstance(node, cst.BaseExpression) and not isinstance(node, _PURE_TESTS):
            return False
    return True


def _main_guard(test: cst.BaseExpression) -> bool:
    return "__name__" in loads(test)


def _rebound_attributes(module: cst.Module) -> set[str]:
    """Attribute names the module assigns (`FLAGS.rate = ...`): a test reading one may change."""
    found: set[str] = set()
    for node in walk(module):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
            [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
        for target in targets:
            found |= {n.attr.value for n in walk(target) if isinstance(n, cst.Attribute)}
        if isinstance(node, cst.Call) and call_root(node.func) == "setattr":
            found.add("*")
    return found
