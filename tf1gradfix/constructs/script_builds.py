"""Graph code a script builds on a model's attributes right after making it, read as the
end of the model class's `__init__`.

    net = Classifier(n_in, n_out)
    global_step = tf.Variable(0, trainable=False, name="global_step")
    optimizer = tf.train.AdamOptimizer(1e-3)
    train_op = optimizer.minimize(net.loss, global_step=global_step)

The class computes the loss, the script trains it (the text classifiers' and GANs'
layout). A model class is read from its `__init__` (model_classes.py), so the training
graph built outside it had no place. Python runs these statements right after
`Classifier(...)` returns: the same as an `__init__` ending with them, `net` read as
`self` and each name they bind kept as an attribute of that name, which the script then
reads as `net.train_op`. Nothing runs between, so every name they read has the same
value there; the names they read must be visible from the class (the module's, not the
locals of the function constructing it).

Only the statements right after the class's one construction (after its build calls,
host_builds.py), each a plain assignment to names that binds a graph value (it calls
TensorFlow or reads the instance or an earlier such name), up to the last that reads the
instance or such a name; each name bound nowhere else in the file and new to the class.
The rewrite reads the module so where the module as written is refused (emit/restructure.py);
the class's TF2 `__init__` then makes the optimizer and the step methods train with it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tf1gradfix.constructs.host_builds import build_call, construction, initializer, runs
from tf1gradfix.constructs.savers import KEPT, SYMBOL as SAVER
from tf1gradfix.cst import line_maps
from tf1gradfix.cst.syntax import alias_qualified, binding_counts, bound_names, call_root, free_names, matches, outer_reads, \
    stored_name_nodes, target_names, tensorflow_aliases
from tf1gradfix.cst.walk import walk

# the marker statements around a module's code read into its script (run/project_text.py)
_BEGIN, _END = "__tf1gradfix_module_begin__", "__tf1gradfix_module_end__"


@dataclass(frozen=True)
class Folding:
    """The module read with a script's graph statements in `__init__`; `origin`: its line -> the user's."""
    module: cst.Module
    origin: Callable[[int], int]
    cls: str
    names: tuple[str, ...]   # the names the statements bound, now attributes of the instance
    instance: str = ""
    first: tuple[int, int] = (1, 1)   # the user's line and column of the first statement moved


def note(folding: Folding) -> tuple[int, int, str, str, str]:
    """The info diagnostic of a rewrite that read them so (TFG210)."""
    names = ", ".join(f"`{folding.instance}.{n}`" for n in folding.names[:4]) + (", ..." if len(folding.names) > 4 else "")
    return (*folding.first, "TFG210", f"the graph the script builds on `{folding.instance}` right after making it is "
                                      f"built at the end of `{folding.cls}.__init__`; the script reads {names}", "safe")


def folded(module: cst.Module) -> Folding | None:
    """The module with the graph statements that follow a model class's one construction
    moved to the end of its `__init__`, or None when there are none."""
    for cls, scope, block, index, instance, taken, _ in _reads(module):
        if taken:
            return _apply(module, cls, scope, block, taken, instance)
    return None


def apart(module: cst.Module) -> list[tuple[cst.SimpleStatementLine, str, str, str]]:
    """(statement, instance, class, why) for each graph statement after a class's one construction
    that `__init__` cannot end with, and what keeps it out."""
    return [(stop[0], instance, cls.name.value, stop[1])
            for cls, _, _, _, instance, _, stop in _reads(module) if stop is not None]


def _reads(module: cst.Module):
    qualified = alias_qualified(tensorflow_aliases(module))
    counts = binding_counts(module)
    for cls in [s for s in module.body if isinstance(s, cst.ClassDef) and _builds(s, qualified)]:
        site = _site(module, cls)
        if site is not None:
            scope, block, index, instance = site
            yield (cls, scope, block, index, instance,
                   *_statements(module, cls, scope, list(block.body)[index + 1:], instance, qualified, counts))


def _builds(cls: cst.ClassDef, qualified) -> bool:
    """Is it a model class: does it call TensorFlow (a replay buffer of NumPy arrays does not)?"""
    return any(isinstance(n, cst.Call) and (qualified(n.func) or "").startswith("tensorflow.") for n in walk(cls))


def _site(module: cst.Module, cls: cst.ClassDef):
    """(scope, block, index of the construction, instance name) of the class's one construction
    in a module or function body (or a block of one), or None."""
    init = initializer(cls)
    if init is None or any(isinstance(n, cst.Return) for n in walk(init.body, skip=(cst.FunctionDef, cst.Lambda))):
        return None
    name = cls.name.value
    if sum(1 for n in walk(module) if isinstance(n, cst.Name) and n.value == name) != 2:
        return None   # (its definition and one construction, nothing else)
    scopes: list[cst.CSTNode] = [module]
    for scope in scopes + [f for f in walk(module, skip=(cst.ClassDef,)) if isinstance(f, cst.FunctionDef)]:
        for block in _blocks(scope):
            for index, stmt in enumerate(block.body):
                instance = construction(stmt, name)
                if instance is not None:
                    return scope, block, index, instance
    return None


def _blocks(scope: cst.CSTNode):
    """The statement blocks of a scope itself (not of the functions or classes it defines)."""
    start = scope if isinstance(scope, cst.Module) else cast(cst.FunctionDef, scope).body
    for node in walk(start, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            yield node


def _statements(module, cls, scope, after: list, instance: str, qualified, counts):
    """(the graph statements after the construction, up to its first run, that `__init__` can
    end with, the first graph statement it cannot and why, or None). Host statements between
    (`os.makedirs(log_dir)`) stay where they are: they read no graph value, and the graph
    statements read nothing they bind, so building the graph before them changes neither."""
    local = _own_names(scope)
    aliases = tensorflow_aliases(module)   # (a summary writer's call of TensorFlow changes nothing graph code reads)
    visible = _section_names(module, cls)
    attributes = _attribute_names(cls)
    tracked, between = {instance}, set()
    taken: list[cst.SimpleStatementLine] = []
    reading, stop = False, None
    for stmt in after:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        reads = outer_reads(getattr(small, "value", None) or stmt)
        bare = _bare(stmt, instance)
        if runs(stmt) or bare and not reads & (tracked - {instance}) or build_call(stmt, instance):
            break   # (a run: the graph is built; the instance passed on; a build method's call: host_builds)
        graph = bool(reads & tracked) or any(
            isinstance(n, cst.Call) and (qualified(n.func) or "").startswith("tensorflow.") for n in walk(stmt))
        if not graph or _writer(small, qualified):   # (a summary writer is host code: summaries.Writers)
            between |= bound_names(stmt) | (_touched(stmt) - aliases)
            continue
        why = f"but it uses `{instance}` itself, not only its attributes" if bare else \
            f"but it reads `{sorted(reads & between)[0]}`, which code run after `{instance}` is made binds or calls" \
            if reads & between else \
            _why(small, reads - tracked - (_settings(small, qualified) - local), tracked, local, visible, attributes, counts,
                 scope)
        if why is not None:
            stop = (stmt, why)
            break
        taken.append(stmt)
        reading = reading or bool(reads & tracked)
        tracked |= set(target_names(cast(cst.Assign, small).targets[0].target) or ())
    if not reading:
        return [], stop
    if _bindings(counts, instance) != 1 or any(
            n.value in _bound(taken) for n in walk(cls) if isinstance(n, cst.Name)):
        return [], None   # (the instance bound again; the class naming one of the names itself)
    return taken, stop


def _settings(small, qualified) -> set[str]:
    """Names a Saver reads only in what it keeps (`max_to_keep=FLAGS.keep`): the saves in the
    script read them (savers.py), not the class."""
    call = getattr(small, "value", None)
    if not isinstance(call, cst.Call) or qualified(call.func) != SAVER:
        return set()
    kept = set().union(*(outer_reads(a.value) for a in call.args if a.keyword is not None and a.keyword.value in KEPT))
    return kept - set().union(*(outer_reads(a.value) for a in call.args if a.keyword is None or a.keyword.value not in KEPT))


def _touched(stmt) -> set[str]:
    """Names a host statement may change without binding them: what it calls (`rng.shuffle`,
    `np.random.seed`: `rng`, `np`) and the names it passes to a call (`shuffle(rows)`)."""
    out: set[str] = set()
    for call in (n for n in walk(stmt) if isinstance(n, cst.Call)):
        root = call_root(call.func)
        out |= {root} if root else set()
        out |= {a.value.value for a in call.args if isinstance(a.value, cst.Name)}
    return out


def _writer(small, qualified) -> bool:
    """`w = tf.summary.FileWriter(...)`."""
    return isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) \
        and matches(qualified(small.value.func), "summary_writers")


def _bare(stmt, instance: str) -> bool:
    """Does the statement use the instance other than for its attributes (`pool = [net]`)?"""
    attributes = {id(n.value) for n in walk(stmt) if isinstance(n, cst.Attribute)}
    return any(isinstance(n, cst.Name) and n.value == instance and id(n) not in attributes for n in walk(stmt))


def _why(small, outer: set[str], tracked, local, visible, attributes, counts, scope) -> str | None:
    """Why a graph statement cannot end `__init__`, or None."""
    names = target_names(small.targets[0].target) if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if not names:
        return "but it is not an assignment to names"
    seen = outer & local
    if seen:
        return f"but it reads `{sorted(seen)[0]}`, a local of `{cast(cst.FunctionDef, scope).name.value}` the class cannot see"
    unseen = outer - visible - set(dir(builtins)) if visible is not None else set()
    if unseen:
        return f"but it reads `{sorted(unseen)[0]}`, which the class's own module does not bind"
    for name in names:
        if name in tracked or name in attributes:
            return f"but `{name}` is a name of the class already"
        if _bindings(counts, name) != 1:
            return f"but the file binds `{name}` elsewhere too"
    return None


def _section_names(module: cst.Module, cls: cst.ClassDef) -> set[str] | None:
    """The names a class read into a script from its own module (between the project's markers,
    run/project_text.py) can see: those its module binds; None for a class of the file itself."""
    begin: int | None = None
    for index, stmt in enumerate(module.body):
        mark = _marker(stmt)
        if mark == _BEGIN:
            begin = index
        elif mark == _END and begin is not None:
            if any(s is cls for s in module.body[begin:index]):
                return set().union(*(bound_names(s) for s in module.body[begin + 1:index]))
            begin = None
    return None


def _marker(stmt) -> str | None:
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _own_names(scope) -> set[str]:
    """The names a function binds itself (its parameters and locals); none for the module."""
    if isinstance(scope, cst.Module):
        return set()
    function = cast(cst.FunctionDef, scope)
    return (_all_names(function) - free_names(function)) | {
        p.name.value for p in (*function.params.params, *function.params.kwonly_params, *function.params.posonly_params)}


def _all_names(node) -> set[str]:
    return {n.value for n in walk(node) if isinstance(n, cst.Name)}


def _attribute_names(cls: cst.ClassDef) -> set[str]:
    """Every attribute name the class's code spells, its methods and class-level names."""
    return {n.attr.value for n in walk(cls) if isinstance(n, cst.Attribute)} | {
        s.name.value for s in cls.body.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))} | {
        n.value for s in cls.body.body if isinstance(s, cst.SimpleStatementLine) for small in s.body
        if isinstance(small, cst.Assign) for t in small.targets for n in stored_name_nodes(t.target)}


def _bindings(counts: dict[str, int], name: str) -> int:
    """How many places of the file bind `name` (`counts`: binding_counts of it; a builtin's once more)."""
    return counts.get(name, 0) + (name in dir(builtins))


def _bound(statements) -> set[str]:
    return {n for s in statements for n in target_names(cast(cst.Assign, s.body[0]).targets[0].target) or ()}


def _apply(module, cls, scope, block, taken, instance) -> Folding:
    init = cast(cst.FunctionDef, initializer(cls))
    self_name = init.params.params[0].name.value
    names = _bound(taken)
    source: dict[int, int] = {}
    moved = []
    for stmt in taken:
        new = stmt.visit(_AsAttributes({instance: None, **{n: n for n in names}}, self_name))
        moved.append(new)
        source[id(new)] = id(stmt)
    new_init = init.with_changes(body=init.body.with_changes(body=(*init.body.body, *moved)))
    new_cls = cls.deep_replace(init, new_init)
    gone = {id(s) for s in taken}
    new_block = block.with_changes(body=[s for s in block.body if id(s) not in gone])
    made = module.visit(_Swap({id(block): new_block, id(cls): new_cls}, names, instance, scope, source))
    start = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)[taken[0]].start
    return Folding(cst.parse_module(made.code), line_maps.origin(module, made, source), cls.name.value,
                   tuple(sorted(names)), instance, (start.line, start.column + 1))


class _AsAttributes(cst.CSTTransformer):
    """Names read as attributes of `owner` (`train_op` -> `net.train_op`); a name mapped to None
    is the owner itself (`net` -> `self`). Assignment targets too: the statements moved."""

    def __init__(self, names: dict[str, str | None], owner: str) -> None:
        super().__init__()
        self.names, self.owner = names, owner
        self.active = True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)   # (an attribute's own name is not a read)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if not self.active or original.value not in self.names:
            return updated
        attr = self.names[original.value]
        if attr is None:
            return updated.with_changes(value=self.owner)
        return cst.Attribute(cst.Name(self.owner), cst.Name(attr), lpar=updated.lpar, rpar=updated.rpar)


class _Swap(_AsAttributes):
    """The class and the block replaced (by identity); in the scope of the construction, the
    names the statements bound read from the instance, each statement changed so mapped
    to the user's (`source`)."""

    def __init__(self, by_id: dict, names: set[str], instance: str, scope, source: dict[int, int]) -> None:
        super().__init__({n: n for n in names}, instance)
        self.by_id, self.scope, self.source = by_id, scope, source
        self.active = isinstance(scope, cst.Module)

    def on_visit(self, node) -> bool:
        if node is self.scope:
            self.active = True
        return not (isinstance(node, cst.ClassDef) and id(node) in self.by_id) and super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        replaced = self.by_id.get(id(original_node))
        if isinstance(original_node, cst.ClassDef) and replaced is not None:
            return replaced
        updated_node = super().on_leave(original_node, updated_node)
        if replaced is not None:   # (the block: its statements as visited, less the moved ones)
            kept = {id(s) for s in replaced.body}
            updated_node = updated_node.with_changes(body=[u for o, u in zip(original_node.body, updated_node.body)
                                                           if id(o) in kept])
        if isinstance(original_node, cst.BaseStatement) and updated_node is not original_node \
                and isinstance(original_node, cst.SimpleStatementLine):
            self.source[id(updated_node)] = id(original_node)
        if original_node is self.scope and not isinstance(original_node, cst.Module):
            self.active = False
        return updated_node
