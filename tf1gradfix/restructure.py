"""Entry point: rewrite a TF1 Session/placeholder program into TF2 as a whole,
or refuse and leave it byte-for-byte intact with a manual diagnostic.

Stages: model (graph_model) -> sites and slices (slicing) -> variables and
optimizers (emit_state) -> functions and call sites (emit_tape) -> assembly
here. Never imports TensorFlow, never runs the file.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from tf1gradfix import builders, catalog as catalog_module
from tf1gradfix.emit_state import StateEmitter
from tf1gradfix.emit_tape import TapeEmitter
from tf1gradfix.graph_model import ModelBuilder
from tf1gradfix.syntax import Refusal, bound_names, enters_new_graph, loads, matches
from tf1gradfix.names import BindingCollector, NameResolver
from tf1gradfix.slicing import HostScan, signatures
from tf1gradfix.walk import walk

Diagnostic = tuple[int, int, str, str, str]
_GRAPH_CALLS = ("tensorflow.placeholder", "tensorflow.placeholder_with_default",
                "tensorflow.Variable", "tensorflow.get_variable")
# Codes of the constructs a successful restructuring removes.
HANDLED = ("TFG101", "TFG102", "TFG103", "TFG104", "TFG105", "TFG106", "TFG107",
           "TFG201", "TFG202", "TFG203", "TFG204", "TFG205", "TFG301", "TFG302", "TFG303", "TFG304", "TFG305", "TFG306")


@dataclass
class Restructured:
    new_module: cst.Module | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Meta(cst.MetadataDependent):
    # Names are resolved through the scope analysis (names.NameResolver); the
    # whole-tree qualified-name table would cost a third of the analysis.
    METADATA_DEPENDENCIES = (ScopeProvider, PositionProvider)


def restructure(module: cst.Module, path: str, wrapper: MetadataWrapper | None = None) -> Restructured:
    """`wrapper`: the module's MetadataWrapper, to share resolved metadata with detection."""
    wrapper = wrapper or MetadataWrapper(module, unsafe_skip_copy=True)
    meta = _Meta()
    with meta.resolve(wrapper):
        bindings = BindingCollector()
        module.visit(bindings)
        meta.names = NameResolver(meta, bindings, catalog_module.load())
        try:
            new = _Rewrite(module, meta).run()
        except Refusal as refusal:
            line, col = _position(meta, refusal.node)
            return Restructured(None, [(line, col, refusal.code, refusal.message, "manual")])
        except Exception as exc:  # noqa: BLE001 - a bug here must never cost the user's file
            return Restructured(None, [(1, 1, "TFG905", f"internal error in the rewrite ({type(exc).__name__}: {exc}); file left intact", "manual")])
    if new is None:
        return Restructured(None)
    return Restructured(new, list(getattr(meta, "notes", ())))   # info notes of the model (TFG206)


def _position(meta, node) -> tuple[int, int]:
    try:
        p = meta.get_metadata(PositionProvider, node).start
        return p.line, p.column + 1
    except (KeyError, AttributeError):
        return 1, 1


class _Rewrite:
    def __init__(self, module: cst.Module, meta):
        self.module, self.meta = module, meta
        # names a new binding could shadow (attribute names and keywords cannot be shadowed)
        self.module_names = frozenset(loads(module))
        self.compat_import: cst.SimpleStatementLine | None = None
        self.module_edits: dict = {}
        self.module_helpers: dict | None = None
        self.builder_edits: dict = {}   # builder function -> its tf.Module class and instance
        self.taken = set(self.module_names)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def run(self) -> cst.Module | None:
        creations, sessions = self._graph_calls()
        if not sessions or not creations:
            return None
        owners: dict[int, cst.CSTNode] = {}     # id -> the function (or module) building a graph
        groups: dict[int, list] = {}            # id -> its graph calls
        opened: dict[int, list] = {}            # id -> its session calls
        for call, session in [(c, False) for c in creations] + [(c, True) for c in sessions]:
            owner = self._owner(call, session)
            owners[id(owner)] = owner
            groups.setdefault(id(owner), []).append(call)
            opened.setdefault(id(owner), [])
            if session:
                opened[id(owner)].append(call)
        for key in [k for k, owner in owners.items() if self._is_builder(owner, groups[k], opened[k])]:
            del owners[key]   # a builder function: its variables are made once, where graph code calls it
        self.alias = self._tf_alias()
        self.module_edits = self._module_edits()
        if len(owners) == 1:
            key, owner = next(iter(owners.items()))
            new_owner = self._rewrite_owner(owner, (), opened[key])
            if isinstance(owner, cst.Module):
                return new_owner
            return self.module.visit(_Replace({**self.module_edits, **self.builder_edits, owner: new_owner}))
        # Several functions, each building and running a graph of its own:
        # each is rewritten on its own, all in one pass over the module.
        for key, owner in owners.items():
            self._check_independent(owner, groups[key], opened[key])
        others = tuple(owners.values())
        replaced = {owner: self._rewrite_owner(owner, others, opened[key]) for key, owner in owners.items()}
        return self.module.visit(_Replace({**self.module_edits, **self.builder_edits, **replaced}))

    def _is_builder(self, owner, calls, sessions) -> bool:
        """A function that only makes variables with `tf.get_variable` (under a variable
        scope, for every caller to share), while another function runs the graph."""
        return isinstance(owner, cst.FunctionDef) and not sessions and all(
            self.meta.names.qualified(c.func) == "tensorflow.get_variable" for c in calls)

    def _module_edits(self) -> dict:
        """Module-level statements a rewritten program no longer wants: calls that
        switch TF1 graph mode on, and a `tensorflow.compat.v1` import, which
        becomes the TF2 `tensorflow` import under the same alias (what the code
        still spells `tf.X` is then renamed like in any TF1 file)."""
        edits: dict = {}
        for stmt in self.module.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and matches(self.meta.names.qualified(small.value.func), "drop"):
                edits[stmt] = cst.RemovalSentinel.REMOVE
            elif isinstance(small, cst.Import) and stmt is self.compat_import:
                alias = small.names[0]
                edits[stmt] = stmt.with_changes(body=[small.with_changes(names=[
                    alias.with_changes(name=cst.Name("tensorflow"))])])
        return edits

    def _check_independent(self, owner, calls, sessions: list) -> None:
        """A function may be rewritten alone when it builds and runs its own graph
        and reads nothing graph-wide that another function could have added to."""
        if isinstance(owner, cst.Module):
            raise Refusal(calls[0], "TFG904", "graph built in more than one function")
        if not sessions or len(sessions) == len(calls):
            raise Refusal(calls[0], "TFG904", f"graph built in one function and run in another (`{owner.name.value}`)")
        for call, q, graph_with in self.scan.graph_wide:
            if self.scan.owner_of[call] is owner and not graph_with:
                raise Refusal(call, "TFG904", f"`{q.replace('tensorflow', 'tf', 1)}` reads the default graph, "
                              "which several functions of this file share")

    def _rewrite_owner(self, owner, other_owners, sessions: list) -> cst.CSTNode:
        self.taken = set(self.module_names)   # new names are local to the owner
        alias = self.alias
        if self.module_helpers is None:   # once: the module's functions that build no graph
            skip = {id(o) for o in other_owners} | {id(owner)}
            self.module_helpers = {s.name.value: s for s in self.module.body
                                   if isinstance(s, cst.FunctionDef) and id(s) not in skip}
        helpers = dict(self.module_helpers)
        body = list(owner.body.body) if isinstance(owner, cst.FunctionDef) else list(owner.body)
        helpers.update({s.name.value: s for s in body if isinstance(s, cst.FunctionDef)})
        program = ModelBuilder(self.meta, self.meta.names, self.module).build(owner, body, helpers, alias)
        if len(sessions) > 1:   # each session holds its own variable values; TF2 has one
            raise Refusal(sessions[1], "TFG905", "more than one session")
        nested = _nested_sessions(program, self.meta)
        scan = HostScan(program, self.meta, nested)
        scan.run()
        sigs = signatures(program, scan.sites)
        state = StateEmitter(program, self.code, self.meta.names.qualified)
        tape = TapeEmitter(program, self.code, self.fresh, state, self.meta)
        self._optimizers(program, tape, sigs)
        for node in program.nodes:   # a builder function: a tf.Module class, its instance the function's name
            if node.kind == "layer" and "builder" in node.info:
                helper = node.info["builder"]
                node.info["class"] = self.fresh("".join(p.capitalize() for p in helper.name.value.split("_")) or "Builder")
                gap = 2 if any(helper is stmt for stmt in self.module.body) else 1
                made = cst.FlattenSentinel(builders.class_statements(node, alias, state.builder_variable, gap))
                self.builder_edits[helper] = made
        for node in program.nodes:   # a layer's variable: its TF1 name where that is free
            if node.kind != "layer" or "builder" in node.info:
                continue
            in_loop = "sites" in node.info   # a loop's layers: a list per call site
            for layer in node.info["sites"] if in_loop else [node.info]:
                base = layer["base"]
                layer["var"] = self.fresh(base if base not in self.taken else f"{base}_layer")
                if in_loop:
                    layer["list"] = self.fresh(f"{base}_layers")
        tape.name_functions(sigs)
        helper = tape.helper(sigs)
        texts = []
        if helper[0] is not None:
            texts.append(tape.helper_text(*helper))
        texts += [tape.function_text(s, helper) for s in sigs if not s.inline]
        moved = {i for s in sigs for i in s.nodes if program.nodes[i].kind == "tensor"}
        replacements = dict(tape.call_site(site) for site in scan.sites)
        replacements.update(self.builder_edits)
        if isinstance(owner, cst.Module):
            replacements.update(self.module_edits)
        for call, text in scan.variable_lists.items():
            replacements[call] = cst.parse_expression(text)
        for node in scan.removed:
            replacements[node] = cst.RemovalSentinel.REMOVE
        for node in nested:   # a session `with` in host code: its body, dedented; `sess = tf.Session()`: gone
            replacements[node] = _FLATTEN if isinstance(node, cst.With) else cst.RemovalSentinel.REMOVE
        for feed in scan.feed_dict_nodes:   # `{x: v}` -> `{"x": v}`, passed as `f(**feed)`
            replacements[feed] = feed.with_changes(elements=[
                e.with_changes(key=cst.SimpleString(f'"{e.key.value}"')) for e in feed.elements])
        new_body = _Assembler(self, program, state, tape, replacements).body(texts, moved, owner)
        if isinstance(owner, cst.Module):
            return owner.with_changes(body=new_body)
        return owner.with_changes(body=owner.body.with_changes(body=new_body))

    def _graph_calls(self):
        self.scan = _GraphCallScan(self.meta.names)
        self.module.visit(self.scan)
        return self.scan.creations, self.scan.sessions

    def _owner(self, call: cst.Call, session: bool = False):
        """The function (or module) whose body builds the graph; a session may also sit
        in a condition such as `if __name__ == "__main__":`, never in a loop."""
        owner, between = self.scan.owner_of[call], self.scan.between[call]
        for node in between:
            if session and isinstance(node, (cst.If, cst.Else)):
                continue
            if isinstance(node, _BLOCKS):
                raise Refusal(call, "TFG904", "graph built inside a loop, condition or class")
        return owner or self.module

    def _tf_alias(self) -> str:
        """The name TF2 code is spelled with: `import tensorflow [as NAME]`, else
        `import tensorflow.compat.v1 as NAME` (then rewritten to the TF2 import)."""
        compat = None
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Import):
                for alias in stmt.body[0].names:
                    if self.code(alias.name) == "tensorflow":
                        return alias.asname.name.value if alias.asname else "tensorflow"
                    if self.code(alias.name) == "tensorflow.compat.v1" and alias.asname is not None \
                            and len(stmt.body) == 1 and len(stmt.body[0].names) == 1 and compat is None:
                        compat = stmt
        if compat is not None:
            self.compat_import = compat
            return compat.body[0].names[0].asname.name.value
        raise Refusal(self.module.body[0] if self.module.body else None, "TFG905",
                      "no `import tensorflow [as NAME]` to spell TF2 names with")

    def _optimizers(self, program, tape: TapeEmitter, sigs) -> None:
        placeholders = {n.index for n in program.nodes if n.kind == "placeholder"}
        for node in program.nodes:
            if node.kind != "optimizer":
                continue
            schedule = tape.state.scheduled_rate(node)
            if schedule is not None:   # the Keras schedule on the same step, set before each update
                item = next(it for it in program.items if it.node is schedule)
                item.stmt = schedule.stmt = tape.state.schedule(schedule)
                tape.fed_lr.add(node.index)
            computed = {d for d in node.deps if program.nodes[d].kind not in ("static", "placeholder")}
            if computed - {schedule.index if schedule else None}:
                raise Refusal(node.value, "TFG906", "an optimizer hyperparameter computed by graph ops")
            if node.deps & placeholders:
                lr = tape.state.learning_rate(node)
                others = [a for a in node.info["call"].args if a.value is not lr]
                if lr is None or any(set(loads(a.value)) & {program.nodes[i].names[0] for i in placeholders} for a in others):
                    raise Refusal(node.value, "TFG906", "an optimizer argument other than the learning rate is fed")
                tape.fed_lr.add(node.index)
            kept = tape.state.kept(node)
            if kept is not None:   # an info note, with the model's (TFG206)
                self.meta.notes = [*getattr(self.meta, "notes", ()),
                                   (*_position(self.meta, node.info["call"]), "TFG207", kept, "safe")]
            if node.info.get("inline"):
                tape.optimizer_names[node.index] = self.fresh("optimizer")
            else:
                tape.optimizer_names[node.index] = node.names[0]


class _Assembler:
    """Builds the new statement list of the graph block."""

    def __init__(self, rw: _Rewrite, program, state: StateEmitter, tape: TapeEmitter, replacements):
        self.rw, self.p, self.state, self.tape = rw, program, state, tape
        self.transformer = _Replace(replacements)
        self.targets = {id(node) for node in replacements}

    def body(self, texts: list[str], moved: set[int], owner) -> list[cst.BaseStatement]:
        items = self.p.items
        insert_at = max(pos for pos, it in enumerate(items) if it.node is not None) + 1
        self._check_moved(moved, insert_at)
        gap = 2 if isinstance(owner, cst.Module) else 1
        functions = []
        for text in texts:
            for stmt in cst.parse_module(text + "\n").body:
                functions.append(stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * gap))
        out: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        after_functions = False
        for pos, item in enumerate(items):
            if pos == insert_at and functions:
                out += functions
                after_functions = True
                pending = []   # comments of graph statements stay with the graph
            new = self._translate(item)
            rest = []
            if isinstance(new, list):   # one statement became several (a loop creating layers)
                new, rest = new[0], new[1:]
            lead = list(item.lead) + pending
            if new is None:
                pending = lead + [ln for ln in getattr(item.stmt, "leading_lines", ()) if ln.comment is not None]
                continue
            pending = []
            own = list(new.leading_lines)
            if after_functions:
                lead = [ln for ln in lead + own if ln.comment is not None or True]
                while lead and lead[0].comment is None:
                    lead.pop(0)
                lead, own = [cst.EmptyLine(indent=False)] * gap + lead, []
                after_functions = False
            out.append(new.with_changes(leading_lines=lead + own))
            out += rest
        if insert_at == len(items) and functions:
            out += functions
        if not out:
            out.append(cst.SimpleStatementLine([cst.Pass()]))
        return out

    def _translate(self, item) -> cst.BaseStatement | None:
        node = item.node
        if item.drop:
            return None
        if node is None:
            if not any(id(inner) in self.targets for inner in walk(item.stmt)):
                return item.stmt   # (nothing to replace: the transformer would only rebuild it)
            new = item.stmt.visit(self.transformer)
            if isinstance(new, cst.FlattenSentinel):
                return list(new.nodes)
            return None if isinstance(new, cst.RemovalSentinel) else new
        kind = node.kind
        if kind == "static":
            return item.stmt
        if kind == "variable":
            text = self.state.variable(node)
            return item.stmt if text is None else self._statement(text, item.stmt)
        if kind == "layer" and "loop" in node.info:
            return list(cst.parse_module("\n".join(self.state.layer_loop(node)) + "\n").body)
        if kind == "layer":
            return self._statement(self.state.layer(node), item.stmt)
        if kind == "optimizer":
            text = self.state.optimizer(node, node.names[0], node.index in self.tape.fed_lr)
            return self._statement(text, item.stmt)
        if kind in ("train", "compute_gradients"):
            opt = self.p.nodes[node.info["optimizer"]]
            if opt.info.get("inline") and opt.stmt is item.stmt:
                name = self.tape.optimizer_names[opt.index]
                return self._statement(self.state.optimizer(opt, name, opt.index in self.tape.fed_lr), item.stmt)
        return None

    @staticmethod
    def _statement(text: str, original: cst.SimpleStatementLine) -> cst.BaseStatement:
        new = cst.parse_statement(text + "\n")
        return new.with_changes(leading_lines=original.leading_lines)

    def _check_moved(self, moved: set[int], insert_at: int) -> None:
        """Moved statements read host names when called: those must not change later."""
        rebound = set()
        for item in self.p.items[insert_at:]:
            rebound |= bound_names(item.stmt)
        known = set(self.p.final) | set(self.p.helpers) | set(dir(builtins))
        for i in moved:
            node = self.p.nodes[i]
            if any(isinstance(s, cst.SimpleString) and "\n" in s.value for s in _strings(node.stmt)):
                raise Refusal(node.stmt, "TFG905", "a multi-line string in graph code")
            late = (set(loads(node.value)) - known) & rebound
            if late:
                raise Refusal(node.stmt, "TFG905", f"graph code reads `{sorted(late)[0]}`, which changes after the graph is built")


_BLOCKS = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.ClassDef, cst.Lambda)
_TRACKED = (cst.FunctionDef, cst.Else, cst.With) + _BLOCKS
# The same as exact types: each node class is final, and a set lookup costs far
# less than `isinstance` against a tuple of ABCs on every node of the module.
_TRACKED_TYPES = frozenset(_TRACKED)


class _GraphCallScan(cst.CSTVisitor):
    """One walk: the graph-building calls, the session calls, the calls that read
    graph-wide state, and for each its innermost function and the compound
    statements between them (instead of a parent table for the whole tree)."""

    def __init__(self, names):
        super().__init__()
        self.names = names
        self.creations: list[cst.Call] = []
        self.sessions: list[cst.Call] = []
        self.graph_wide: list[tuple[cst.Call, str, bool]] = []   # (call, name, inside `with tf.Graph().as_default()`)
        self.owner_of: dict[cst.Call, cst.FunctionDef | None] = {}
        self.between: dict[cst.Call, tuple] = {}
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _TRACKED_TYPES:
            self.stack.append(node)
        elif kind is cst.Call:
            self._call(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) in _TRACKED_TYPES:
            self.stack.pop()

    def _call(self, call: cst.Call) -> None:
        q = self.names.qualified(call.func)
        if q is None:
            return
        if q in _GRAPH_CALLS:
            self.creations.append(call)
        elif matches(q, "sessions"):
            self.sessions.append(call)
        elif not matches(q, "graph_wide"):
            return
        functions = [i for i, n in enumerate(self.stack) if isinstance(n, cst.FunctionDef)]
        start = functions[-1] + 1 if functions else 0
        self.owner_of[call] = self.stack[functions[-1]] if functions else None
        self.between[call] = tuple(n for n in reversed(self.stack[start:]) if not isinstance(n, cst.With))
        if matches(q, "graph_wide"):
            inside = any(isinstance(n, cst.With) and enters_new_graph(n, self.names.qualified) for n in self.stack[start:])
            self.graph_wide.append((call, q, inside))

_FLATTEN = object()   # replace a `with` by its (already rewritten) body


def _nested_sessions(program, meta) -> list[cst.CSTNode]:
    """Sessions opened inside host compound statements (`if __name__ == ...:`):
    their `with` nodes and `sess = tf.Session()` statements; names join the program's."""
    found: list[cst.CSTNode] = []
    names = meta.names

    class V(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            item = node.items[0] if len(node.items) == 1 else None
            if item is not None and isinstance(item.item, cst.Call) and matches(names.qualified(item.item.func), "sessions"):
                if item.asname is None or not isinstance(item.asname.name, cst.Name) or item.item.args:
                    raise Refusal(node, "TFG905", "a session `with` without `as NAME`, or with arguments")
                program.sessions.add(item.asname.name.value)
                found.append(node)

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            small = node.body[0] if len(node.body) == 1 else None
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) \
                    and matches(names.qualified(small.value.func), "sessions"):
                target = small.targets[0].target if len(small.targets) == 1 else None
                if not isinstance(target, cst.Name) or small.value.args:
                    raise Refusal(node, "TFG905", "a session bound to something other than a name")
                program.sessions.add(target.value)
                found.append(node)

    for item in program.items:
        if item.node is None and not item.drop and not isinstance(item.stmt, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)):
            item.stmt.visit(V())
    return found


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements):
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        result = self.replacements.get(original_node, updated_node)
        if result is _FLATTEN:
            body = list(updated_node.body.body)
            if body:
                body[0] = body[0].with_changes(leading_lines=[*updated_node.leading_lines, *body[0].leading_lines])
            return cst.FlattenSentinel(body)
        if isinstance(result, cst.SimpleStatementLine) and not result.body:
            return cst.RemovalSentinel.REMOVE
        return result


def _strings(node: cst.CSTNode) -> list[cst.SimpleString]:
    return [s for s in walk(node) if type(s) is cst.SimpleString]


