"""A model function the graph calls once, read as its statements where it is called.

    def model(x, labels):                      x = tf.placeholder(...)
        hidden = encoder(x)                    labels = tf.placeholder(...)
        logits = tf.layers.dense(hidden, 2) -> hidden = encoder(x)
        loss = ...(labels, logits)             logits = tf.layers.dense(hidden, 2)
        return logits, loss                    loss = ...(labels, logits)
    logits, loss = model(x, labels)

TF1 builds the same ops whichever way Python reaches them: a call adds no name scope
and no op, so the graph read from the statements is the one the call built. What the
model then sees statement by statement is what a run needs (a prediction fetching
`logits` feeds no labels), and a function that makes layers and calls a builder is
straight-line graph code. Python's meaning is kept: each parameter is bound to its
argument (or the name is used for it, when the function never rebinds it), the
function's locals are renamed apart from every name the file uses elsewhere, and the
call's targets take the returned value.

Only a module function called once in the file, by a statement the reading visits (the
module's, a function's or a `with` block's), opening no `with` block (a builder's
variable scope: builders.py makes such a function a module; a last reading of its own
takes variable and name scopes of a literal name, `with tf.variable_scope("gen"):`,
`reuse=True`: called once, it opens them where it is called all the same, and makes the
same names), with plain parameters
(literal defaults, or module constants bound once to a literal), no decorator, no
`global`/`nonlocal`, no nested definition, whose one `return` ends it, and none of whose
free names the caller binds. A runner is read the same way: a function that opens a
session and runs what its caller built (`fit(x, loss, step)`, called once as a statement,
returning nothing, its `with` blocks the session's or not TensorFlow's): the graph built
in one function and run in another is then one program where the caller is. A function
an inlined one calls is read in the next pass. The reading is tried where the module as
written is refused (emit/restructure.py); the function's definition goes when nothing
reads its name any more, unless another file of a project holds it (its other importers
may call it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import libcst as cst

from tf1gradfix.constructs import layer_copies
from tf1gradfix.cst import line_maps
from tf1gradfix.cst.layout import refit
from tf1gradfix.cst.syntax import (alias_qualified, bound_names, call_root, fresh_name, free_names, is_docstring,
                                   literal_string, loads, matches, name_nodes, names_renamed, tensorflow_aliases)
from tf1gradfix.cst.walk import walk

_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.Name)
_FORBIDDEN = (cst.Global, cst.Nonlocal, cst.FunctionDef, cst.ClassDef, cst.Yield, cst.Await)
_PASSES = 4


@dataclass(frozen=True)
class Inlining:
    module: cst.Module                 # the module read so, parsed again
    origin: Callable[[int], int]       # its line -> the user's line
    functions: tuple[str, ...]         # the functions read where they are called
    copies: tuple[tuple[str, int], ...] = ()   # (a function read at several calls, how many)


def inlined(module: cst.Module, scoped: bool = False, repeated: bool = False) -> Inlining | None:
    """The module with each such call read as the function's statements, or None; read again
    while a pass reads more (a model function calling another: `create_model` calling
    `create_rnn`), a few passes at most. `scoped`: functions opening scopes of a literal name
    too (a reading of its own, tried after the others: builders.py keeps such a function
    whole where it can). `repeated`: layer functions making `tf.Variable`s called more than
    once too, each call read as a copy of the statements (a reading of its own)."""
    found = _pass(module, scoped, repeated)
    if found is None:
        return None
    for _ in range(_PASSES - 1):
        again = _pass(found.module, scoped, repeated)
        if again is None:
            break
        found = Inlining(again.module, _through(found.origin, again.origin), found.functions + again.functions,
                         found.copies + again.copies)
    return found


def _through(first: Callable[[int], int], then: Callable[[int], int]) -> Callable[[int], int]:
    """A later pass's line, through the earlier pass's map, to the user's."""
    return lambda line: first(then(line))


def _pass(module: cst.Module, scoped: bool, repeated: bool = False) -> Inlining | None:
    aliases = tensorflow_aliases(module)
    named_defaults = any(isinstance(p.default, cst.Name) for s in module.body if isinstance(s, cst.FunctionDef)
                         for p in s.params.params)
    constants = _constants(module) if named_defaults else set()
    functions = {s.name.value: s for s in module.body
                 if isinstance(s, cst.FunctionDef) and (_plain(s, aliases if scoped else None, constants, aliases)
                                                        or _runner(s, aliases, constants))}
    layered = {s.name.value: s for s in module.body if repeated and isinstance(s, cst.FunctionDef)
               and _plain(s, aliases, constants, aliases, named=True)}   # (scopes a call names too: layer_copies)
    if not functions and not layered:
        return None
    nodes = list(walk(module))
    reads = [n.value for n in name_nodes(module)]   # (not attribute names: `sess.run` reads no `run`)
    named = Counter(reads)
    calls = Counter(c.func.value for c in nodes if isinstance(c, cst.Call) and isinstance(c.func, cst.Name))
    placed = _placed_calls(module.body)   # (a call under `if __name__ == ...` is not read: its function's body is)
    once = {name: f for name, f in functions.items() if calls[name] == 1 and named[name] == 2 and placed[name] == 1}
    many = layer_copies.copied(layered, module, aliases, calls, named, _placed_calls(module.body, lifted=True),
                               _placed_calls(module.body, loops=True, lifted=True)) if repeated else {}
    if not once and not many:
        return None
    reading = _Inline({**once, **many}, reads, set(many), aliases)
    body = reading.body(module.body, None)
    if not reading.done:
        return None
    done = Counter(reading.done)
    gone = {name for name in done if done[name] == calls[name]} - module_functions(module)
    body = [s for s in body if not (isinstance(s, cst.FunctionDef) and s.name.value in gone)]
    made = module.with_changes(body=body)
    return Inlining(module=cst.parse_module(made.code), origin=line_maps.origin(module, made, reading.source),
                    functions=tuple(reading.done), copies=tuple((name, done[name]) for name in sorted(many)
                                                                if done[name] == calls[name]))


class _Inline:
    def __init__(self, functions: dict[str, cst.FunctionDef], reads: list[str], repeated: frozenset[str] | set[str] = frozenset(),
                 aliases: frozenset[str] | set[str] = frozenset()):
        self.functions, self.taken, self.aliases = functions, set(reads), aliases
        self.counts = Counter(reads)
        self.repeated = repeated   # (functions read at several calls: each copy's locals are its own)
        for name in repeated:   # (a local no other code names is free for the first copy)
            inside = Counter(n.value for n in name_nodes(functions[name]))
            self.taken -= {local for local, count in inside.items() if self.counts[local] == count}
        self.done: list[str] = []
        self.source: dict[int, int] = {}   # id of a statement made -> id of the user's it stands for

    def body(self, statements, caller: cst.FunctionDef | None, indent: int = 0) -> list:
        out: list = []
        for stmt in statements:
            if isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock) \
                    and stmt.name.value not in self.functions:   # (one read where it is called is copied as written)
                inner = self.body(stmt.body.body, stmt, indent + 4)
                if inner != list(stmt.body.body):
                    stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
            elif (isinstance(stmt, cst.With) or self.repeated and isinstance(stmt, cst.For)) \
                    and isinstance(stmt.body, cst.IndentedBlock):   # (a loop: only where layer functions are copied)
                inner = self.body(stmt.body.body, caller, indent + 4)
                if inner != list(stmt.body.body):
                    stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
            parts = layer_copies.hoisted(stmt, self.repeated, self.taken) if self.repeated else None
            for part in parts or [stmt]:   # (a copied function's call nested in an expression: its own line first)
                made = self._call(part, caller, indent) if isinstance(part, cst.SimpleStatementLine) else None
                out.extend(made if made is not None else [part])
        return out

    def _call(self, stmt: cst.SimpleStatementLine, caller: cst.FunctionDef | None, indent: int) -> list | None:
        small = stmt.body[0] if len(stmt.body) == 1 else None
        call = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in self.functions):
            return None
        function = self.functions[call.func.value]
        runs = _returns_nothing(function)
        if runs != isinstance(small, cst.Expr) or isinstance(small, cst.Assign) and len(small.targets) != 1:
            return None   # (a model function's result is bound; a runner's call is a statement)
        defaults = {p.default.value for p in function.params.params if isinstance(p.default, cst.Name)}
        if caller is function or caller is not None and (free_names(function) | defaults) & _locals(caller):
            return None   # (a global the function reads, shadowed where it is called)
        arguments = bound_arguments(function, call)
        if arguments is None:
            return None
        body = [s for s in cast(cst.IndentedBlock, function.body).body if not is_docstring(s)]
        own = {p.name.value for p in function.params.params} | set().union(*(bound_names(s) for s in body))
        inside = [n.value for n in name_nodes(function)]
        rebound = set().union(*(bound_names(s) for s in body))
        # (locals the call's targets name keep their names)
        scoped = isinstance(body[-1], cst.With)   # (a copied layer function's scope around its return)
        kept = [] if runs or scoped else _returned_as(cast(cst.Assign, small), body, rebound, set(loads(call)))
        renames = {name: fresh_name(name, self.taken) for name in sorted(own - set(kept))
                   if self.counts.get(name, 0) > inside.count(name)   # (a name the file uses elsewhere too,
                   or function.name.value in self.repeated}           # or by another copy)
        literal: dict[str, cst.BaseExpression] = {}
        made: list = []
        for param, value in arguments.items():
            if isinstance(value, cst.Name) and param not in rebound and (value.value == param or value.value not in own):
                renames[param] = value.value   # (the argument's own name, read where the parameter was)
            elif (isinstance(value, _LITERALS[:3]) or _member(value, self.aliases)) and param not in rebound:
                literal[param] = value   # (a literal argument or `tf.nn.relu`, written where the parameter was read)
                renames.pop(param, None)
            else:
                made.append(cst.SimpleStatementLine(body=[cst.Assign(
                    targets=[cst.AssignTarget(cst.Name(renames.get(param, param)))], value=value)]))
        copies = [refit(s, _literals(names_renamed(s, renames), literal), indent, 4) for s in body]
        for copy, original in zip(copies, body):
            self.source[id(copy)] = id(original)   # (a refusal inside is reported at the function's line)
        if runs:
            made += copies
        else:
            *steps, last = copies
            returned = cast(cst.Return, layer_copies.final_return(last)).value
            made += steps
            parts = [stmt.with_changes(body=[p]) for p in _unpacked(cast(cst.Assign, small).with_changes(value=returned))]
            if scoped:
                made.append(layer_copies.returned_into(cast(cst.With, last), parts))
                self.source[id(made[-1])] = id(body[-1])
            for part in parts if not scoped else []:
                made.append(part)
                self.source[id(made[-1])] = id(stmt)
        if not made:
            return None   # (a function returning its argument: nothing to read)
        first = made[0]
        made[0] = first.with_changes(leading_lines=(*stmt.leading_lines, *first.leading_lines))
        self.source[id(made[0])] = self.source.get(id(first), id(stmt))
        self.done.append(function.name.value)
        return made


def _placed_calls(statements, loops: bool = False, lifted: bool = False) -> Counter:
    """How often each function is called by a statement `_Inline.body` reads (`f(...)`,
    `x = f(...)` in the module's body, a function's, a `with` block's; a `for` loop's, with
    `loops`), or, with `lifted`, nested in one where Python calls it first (layer_copies)."""
    out: Counter = Counter()
    for stmt in statements:
        block = stmt.body if isinstance(stmt, (cst.FunctionDef, cst.With)) or loops and isinstance(stmt, cst.For) else None
        if isinstance(block, cst.IndentedBlock):
            out += _placed_calls(block.body, loops, lifted)
            continue
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        call = value if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            else layer_copies.first_nested(stmt) if lifted else None
        if call is not None:
            out[cast(cst.Name, call.func).value] += 1
    return out


def _returns_nothing(function: cst.FunctionDef) -> bool:
    """A runner (`_runner`): no `return` at all; a model function ends with its one."""
    return not any(isinstance(n, cst.Return) for n in walk(function.body))


def module_functions(module: cst.Module) -> set[str]:
    """Functions of another file of a project read in place of its import (between the
    markers run/project_text.py writes): the file keeps them for its other importers."""
    inside, found = False, set()
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
        if isinstance(target, cst.Name) and target.value.startswith("__tf1gradfix_module_"):
            inside = target.value.endswith("_begin__")
        elif inside and isinstance(stmt, cst.FunctionDef):
            found.add(stmt.name.value)
    return found


def _returned_as(small: cst.Assign, body: list, rebound: set[str], arguments: set[str]) -> list[str]:
    """Locals the function returns in the places of call targets of the same names, bound once
    in it and named by no argument: they keep their names (`logits, loss = model(x)`)."""
    target, last = small.targets[0].target, body[-1].body[0].value
    pairs = list(zip(target.elements, last.elements)) if isinstance(target, (cst.Tuple, cst.List)) \
        and isinstance(last, (cst.Tuple, cst.List)) and len(target.elements) == len(last.elements) else [(target, last)]
    counts = [n for s in body for n in bound_names(s)]
    return [t.value for t, v in ((getattr(t, "value", t), getattr(v, "value", v)) for t, v in pairs)
            if isinstance(t, cst.Name) and isinstance(v, cst.Name) and t.value == v.value
            and t.value in rebound and t.value not in arguments and counts.count(t.value) == 1]


def _literals(node, literal: dict[str, cst.BaseExpression]):
    """`node` with each read of a parameter in `literal` written as its literal argument, and
    a sum of two string literals it makes written as the string Python makes of it
    (`name + "_w"` of `name="conv1"`: `"conv1_w"`, a variable's name as a literal)."""
    if not literal:
        return node
    reads = {n for n in name_nodes(node) if n.value in literal}

    class Put(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return literal[original.value] if original in reads else updated

        def leave_BinaryOperation(self, original, updated):
            left, right = literal_string(updated.left), literal_string(updated.right)
            if not isinstance(updated.operator, cst.Add) or left is None or right is None \
                    or not any(n in reads for n in walk(original)):
                return updated
            a, b = cast(cst.SimpleString, updated.left), cast(cst.SimpleString, updated.right)
            if (a.prefix, a.quote) != (b.prefix, b.quote):
                return cst.SimpleString(repr(left + right))
            cut = len(a.prefix) + len(a.quote)   # (the two texts joined in the first one's quotes)
            return cst.SimpleString(a.value[:-len(a.quote)] + b.value[cut:])

    return node.visit(Put())


def _unpacked(assign: cst.Assign) -> list[cst.Assign]:
    """`a, b = x, y` as `a = x` then `b = y` (one graph value per statement, as the model reads
    what a run needs), where no later value reads an earlier target; else as it is."""
    target, value = assign.targets[0].target, assign.value
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
            and len(target.elements) == len(value.elements)
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))):
        same = isinstance(target, cst.Name) and isinstance(value, cst.Name) and target.value == value.value
        return [] if same else [assign]
    parts: list[cst.Assign] = []
    bound: set[str] = set()
    for t, v in zip(target.elements, value.elements):
        if isinstance(t.value, cst.Name) and isinstance(v.value, cst.Name) and t.value.value == v.value.value:
            continue   # (`loss = loss` of a local that kept its name: nothing, and the name means what it meant)
        if set(loads(v.value)) & bound:
            return [assign]
        parts.append(cst.Assign(targets=[cst.AssignTarget(cast(cst.BaseAssignTargetExpression, t.value))],
                                value=v.value))
        bound |= set(loads(t.value))
    return parts


def _constants(module: cst.Module) -> set[str]:
    """Module names bound once, by `NAME = <number or string>` at the top level, and
    named by no `global`: a default that names one is the value it had at the definition."""
    bound = Counter(name for stmt in module.body for name in bound_names(stmt))
    declared = {n.value for g in walk(module) if isinstance(g, cst.Global) for n in (a.name for a in g.names)}
    out = set()
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and isinstance(small.value, _LITERALS[:3]):
            name = small.targets[0].target.value
            if bound[name] == 1 and name not in declared:
                out.add(name)
    return out


def _plain_params(function: cst.FunctionDef, constants: set[str], aliases: frozenset[str] | set[str] = frozenset()) -> bool:
    """`aliases`: TensorFlow's names, whose members (`tf.nn.tanh`) a default may name: the same
    object where the function is called."""
    params = function.params
    if function.decorators or params.star_arg is not cst.MaybeSentinel.DEFAULT and params.star_arg is not None \
            or params.star_kwarg is not None or params.kwonly_params or params.posonly_params:
        return False
    if any(p.default is not None and not (isinstance(p.default, _LITERALS[:3]) or isinstance(p.default, cst.Name)
                                          and (p.default.value in ("True", "False", "None") or p.default.value in constants)
                                          or _member(p.default, aliases))
           for p in params.params):
        return False   # (a default is the value it had when the function was defined)
    return isinstance(function.body, cst.IndentedBlock) and bool(function.body.body)


def _member(expr: cst.BaseExpression, aliases: frozenset[str] | set[str]) -> bool:
    """`tf.nn.tanh`: a chain of names from one of `aliases`."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in aliases


def _runner(function: cst.FunctionDef, aliases: set[str], constants: set[str]) -> bool:
    """A function that opens a session and runs the graph its caller built, returning nothing
    (`train(loss, step)`, called as a statement): its `with` blocks are the session's or not
    TensorFlow's (a variable scope would make it a builder)."""
    if not _plain_params(function, constants, aliases) or function.name.value in loads(function.body):
        return False
    found = list(walk(function.body))
    if any(isinstance(n, (cst.Return, *_FORBIDDEN)) for n in found):
        return False
    qualified = alias_qualified(aliases)
    opened = False
    for stmt in (n for n in found if isinstance(n, cst.With)):
        for item in stmt.items:
            session = isinstance(item.item, cst.Call) and matches(qualified(item.item.func), "sessions")
            if call_root(item.item) in aliases and not session:
                return False   # (a variable scope: a builder)
            opened |= session
    return opened or any(isinstance(n, cst.Assign) and isinstance(n.value, cst.Call)
                         and matches(qualified(n.value.func), "sessions") for n in found)


def _plain(function: cst.FunctionDef, aliases: set[str] | None, constants: set[str],
           modules: frozenset[str] | set[str] = frozenset(), named: bool = False) -> bool:
    """`aliases`: TensorFlow's names, where a scope of a literal name may open (None: no `with`);
    `modules`: TensorFlow's names, for defaults; `named`: a scope may be named by a parameter
    (`with tf.name_scope(layer_name):`, copied at calls passing a string: layer_copies)."""
    if not _plain_params(function, constants, modules):
        return False
    last = cast(cst.IndentedBlock, function.body).body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) or named and isinstance(last, cst.With)) \
            or layer_copies.final_return(last) is None:
        return False   # (a `return` ends it; in a scope only where the reading copies layer functions)
    returns = [n for n in walk(function.body) if isinstance(n, cst.Return)]
    params = frozenset(p.name.value for p in function.params.params) if named else frozenset()
    if any(isinstance(s, cst.With) and (aliases is None or not _scoped(s, alias_qualified(aliases), params))
           for s in function.body.body):
        return False   # (a builder's variable scope: constructs/builders.py makes it a module)
    return len(returns) == 1 and not any(isinstance(n, _FORBIDDEN) for n in walk(function.body)) \
        and function.name.value not in loads(function.body)


def _scoped(stmt: cst.With, qualified, params: frozenset[str] = frozenset()) -> bool:
    """`with tf.variable_scope("gen"):` (or a name scope, or `reuse=True`): a scope of a
    literal name (or of one of `params`), which the function called opens where it is called
    all the same."""
    for item in stmt.items:
        call = item.item
        if item.asname is not None or not isinstance(call, cst.Call) or qualified(call.func) not in SCOPES \
                or not call.args or not (isinstance(call.args[0].value, cst.SimpleString)
                                         or isinstance(call.args[0].value, cst.Name) and call.args[0].value.value in params) \
                or call.args[0].keyword \
                or any(a.keyword is None and a is not call.args[0] or a.keyword is not None
                       and (a.keyword.value != "reuse" or not isinstance(a.value, (cst.Name, cst.Attribute)))
                       for a in call.args):
            return False
    return True


SCOPES = ("tensorflow.variable_scope", "tensorflow.name_scope")


def bound_arguments(function: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """Parameter -> the argument (or default) the call binds it to, in the call's order, or None."""
    params = [p.name.value for p in function.params.params]
    out: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if i >= len(params):
                return None
            out[params[i]] = arg.value
        elif arg.keyword.value in params and arg.keyword.value not in out:
            out[arg.keyword.value] = arg.value
        else:
            return None
    for p in function.params.params:
        if p.name.value not in out:
            if p.default is None:
                return None
            out[p.name.value] = p.default
    return out   # (in the order Python evaluates them: the call's arguments, then the defaults)


def _locals(function: cst.FunctionDef) -> set[str]:
    params = {p.name.value for p in function.params.params}
    return params | set().union(*(bound_names(s) for s in cast(cst.IndentedBlock, function.body).body))
