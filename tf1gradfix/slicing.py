"""Execution sites and their signatures, and the backward slice each needs.

An execution site is a `sess.run(...)`, `t.eval(...)` or `op.run(...)` in the
host code. Its signature is what it fetches and which placeholders it feeds;
sites with the same signature share one TF2 function, whose body is the
backward slice of the fetches over the graph statements, in source order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from tf1gradfix import updates, var_lists
from tf1gradfix.graph_model import GraphNode, Program
from tf1gradfix.syntax import Refusal, arg, free_names, graph_ops, loads, matches
from tf1gradfix.walk import children

GRADIENT_KINDS = ("compute_gradients", "gradients", "train")


@dataclass
class Site:
    call: cst.Call
    fetches: list[str]          # graph names in fetch order
    structure: str              # single | list | tuple | init
    feed: dict[str, cst.BaseExpression] | None   # placeholder -> value (literal dict feed)
    feed_name: str | None       # a host dict holding the feed (`**name` at the call)
    fed: frozenset[str] = frozenset()
    signature: "Signature | None" = None
    parent: cst.CSTNode | None = None   # the node holding the call (its statement decides the rewrite)


@dataclass
class Signature:
    fetches: tuple[str, ...]
    fed: frozenset[str]
    sites: list[Site] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)      # slice, source order
    params: list[str] = field(default_factory=list)     # placeholders, call order
    train: GraphNode | None = None
    returns: list[str] = field(default_factory=list)    # fetched values that reach Python
    inline: bool = False       # only variables/static values: no function needed
    flags: dict[str, str] = field(default_factory=dict)   # mode flag -> "True"/"False" in this function
    name: str = ""


class HostScan:
    """Finds execution sites and every other use of graph names in host code."""

    def __init__(self, program: Program, meta, sessions_opened=()):
        self.p, self.meta = program, meta
        self.opened = set(sessions_opened)   # nested session `with`s and `sess = tf.Session()` lines
        self.sites: list[Site] = []
        self.feed_dicts: dict[str, frozenset[str]] = {}
        self.feed_dict_nodes: list[cst.Dict] = []
        self.removed: set[cst.CSTNode] = set()   # `sess.close()`, `sess.run(init)` statements
        self.variable_lists: dict[cst.Call, str] = {}   # `tf.trainable_variables()` in host code -> the list
        self.first_site_item: int | None = None
        self._parents: dict = {}
        self.inits = 0
        self.expressions: dict[str, str] = {}   # fetched expression (code) -> its model name

    def graph_names(self) -> set[str]:
        return set(self.p.final) | self.p.sessions

    def run(self) -> None:
        names = self.graph_names()
        self._feed_bindings()
        for position, item in enumerate(self.p.items):
            if item.node is not None or item.drop:
                if item.node is not None and self.first_site_item is not None:
                    raise Refusal(item.stmt, "TFG905", "graph built after the graph already ran")
                continue
            if isinstance(item.stmt, (cst.FunctionDef, cst.ClassDef)):
                self._definition(item.stmt, names)
                continue
            before = len(self.sites) + len(self.removed)
            self._item = item
            self._scan(item.stmt, names)
            if len(self.sites) + len(self.removed) > before and self.first_site_item is None:
                self.first_site_item = position

    def _definition(self, stmt, names: set[str]) -> None:
        """User functions may read variables and constants (as helpers), nothing else of the graph."""
        used = free_names(stmt) if isinstance(stmt, cst.FunctionDef) else set(loads(stmt))
        for name in sorted(used & names):
            node = self.p.node(name)
            if name in self.p.sessions or node.kind not in ("variable", "static"):
                raise Refusal(stmt, "TFG905", f"`{stmt.name.value}` uses graph value `{name}`")

    def _feed_bindings(self) -> None:
        placeholders = {n.names[0] for n in self.p.nodes if n.kind == "placeholder"}
        scan = self

        class V(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                if not isinstance(node.value, cst.Dict):
                    return
                keys = [e.key for e in node.value.elements if isinstance(e, cst.DictElement)]
                if not any(isinstance(k, cst.Name) and k.value in placeholders for k in keys):
                    return
                if len(keys) != len(node.value.elements) or not all(
                        isinstance(k, cst.Name) and k.value in placeholders for k in keys):
                    raise Refusal(node, "TFG902", "a feed dict mixing placeholders and other keys")
                if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
                    raise Refusal(node, "TFG902", "a feed dict bound to something other than a name")
                name, keyset = node.targets[0].target.value, frozenset(k.value for k in keys)
                if scan.feed_dicts.setdefault(name, keyset) != keyset:
                    raise Refusal(node, "TFG902", f"feed dict `{name}` feeds different placeholders in different places")
                scan.feed_dict_nodes.append(node.value)

        for item in self.p.items:
            if item.node is None:
                item.stmt.visit(V())

    def _scan(self, stmt: cst.CSTNode, names: set[str]) -> None:
        scan = self

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> bool:
                return not scan._site(call) and not scan._variable_list(call)

            def visit_Dict(self, node: cst.Dict) -> bool:
                if node in scan.feed_dict_nodes:
                    for e in node.elements:
                        e.value.visit(self)
                    return False
                return True

            def visit_Attribute(self, node: cst.Attribute) -> bool:
                node.value.visit(self)
                return False

            def visit_With(self, node: cst.With) -> bool:
                if node in scan.opened:
                    node.body.visit(self)
                    return False
                return True

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
                return node not in scan.opened

            def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
                return not (isinstance(node.target, cst.Name) and node.target.value in scan.feed_dicts)

            def visit_Arg(self, node: cst.Arg) -> bool:
                node.value.visit(self)
                return False

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in scan.feed_dicts:
                    raise Refusal(node, "TFG902", f"feed dict `{node.value}` used other than as a feed (dynamic feed)")
                if node.value in names:
                    kind = "session" if node.value in scan.p.sessions else scan.p.node(node.value).kind
                    if kind == "placeholder":
                        raise Refusal(node, "TFG902", f"placeholder `{node.value}` used outside a feed_dict literal (dynamic feed)")
                    raise Refusal(node, "TFG905", f"{kind} `{node.value}` used outside `sess.run`/`.eval()`")

        stmt.visit(V())

    def _variable_list(self, call: cst.Call) -> bool:
        """`len(tf.trainable_variables())` after the graph is built: the variables it
        lists, written out (var_lists reads the collection, or refuses it)."""
        qualified = self.meta.names.qualified
        q = qualified(call.func)
        if q not in graph_ops()["variable_collections"] and not matches(q, "collection_getters"):
            return False
        listed = var_lists.members(self.p, call, len(self.p.nodes), qualified)
        if listed is None:
            return False
        self.variable_lists[call] = f"[{', '.join(listed)}]"
        return True

    def _site(self, call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return False
        receiver, method = func.value.value, func.attr.value
        if receiver in self.p.sessions:
            if method == "close" and not call.args:
                self._remove_statement(call)
                return True
            if method != "run":
                raise Refusal(call, "TFG905", f"session method `{method}`")
            fetch = arg(call, 0, "fetches")
            feed = arg(call, 1, "feed_dict")
            extra = list(call.args[2:]) + [
                a for a in call.args if a.keyword is not None and a.keyword.value not in ("fetches", "feed_dict")]
            if fetch is None or extra:
                raise Refusal(call, "TFG905", "`sess.run` with options or run_metadata")
            self._add_site(call, fetch, feed)
            return True
        node = self.p.node(receiver)
        if node is None:
            return False
        if method == "eval" and node.kind in ("tensor", "static", "variable", "gradients"):
            feed = arg(call, 0, "feed_dict")
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, feed)
            return True
        if method == "run" and node.kind in ("train", "init", "update"):
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, arg(call, 0, "feed_dict"))
            return True
        return False

    def _in_loop(self, node: cst.CSTNode) -> bool:
        while node is not None and node is not self._item.stmt:
            node = self.parent(node)
            if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return True
        return False

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of a node of the host statement being scanned. Built per
        statement that holds a site, instead of a parent table of the whole module."""
        stmt = self._item.stmt
        table = self._parents.get(id(stmt))
        if table is None:
            table, stack = {}, [stmt]
            while stack:
                current = stack.pop()
                for child in children(current):   # (LibCST's `.children` rebuilds the node)
                    table[child] = current
                    stack.append(child)
            self._parents = {id(stmt): table}
        return table.get(node)

    def _check_session_kw(self, call: cst.Call, allowed) -> None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value not in allowed:
                raise Refusal(call, "TFG905", f"`{a.keyword.value}=` at an execution site")
            if a.keyword is not None and a.keyword.value == "session":
                if not (isinstance(a.value, cst.Name) and a.value.value in self.p.sessions):
                    raise Refusal(call, "TFG905", "`session=` that is not the program's session")
        if len([a for a in call.args if a.keyword is None]) > 1:
            raise Refusal(call, "TFG905", "extra positional arguments at an execution site")

    def _remove_statement(self, call: cst.Call) -> None:
        parent = self.parent(call)
        if not isinstance(parent, cst.Expr):
            raise Refusal(call, "TFG905", "a session call whose result is used")
        self.removed.add(parent)

    def _add_site(self, call: cst.Call, fetch: cst.BaseExpression, feed) -> None:
        structure, fetches = self._fetches(fetch)
        if structure == "init":
            if feed is not None:
                raise Refusal(call, "TFG905", "an initializer run with a feed")
            self._remove_statement(call)
            # TF2 initializes once, at creation: a re-initialization cannot simply go
            if self.sites or self._in_loop(call) or self.inits:
                raise Refusal(call, "TFG905", "variables initialized again, or in a loop or condition")
            self.inits += 1
            return
        site = Site(call, fetches, structure, None, None, parent=self.parent(call))
        if feed is None or (isinstance(feed, cst.Name) and feed.value == "None"):
            site.feed = {}
        elif isinstance(feed, cst.Dict):
            site.feed = {}
            for e in feed.elements:
                if not isinstance(e, cst.DictElement):
                    raise Refusal(feed, "TFG902", "a feed dict built with ** (dynamic feed)")
                key = e.key
                if isinstance(key, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                    raise Refusal(key, "TFG903", "a placeholder fed by its string name")
                node = self.p.node(key.value) if isinstance(key, cst.Name) else None
                if node is None or node.kind != "placeholder":
                    raise Refusal(key, "TFG902", "a feed key that is not a placeholder name (dynamic feed)")
                if loads(e.value) and set(loads(e.value)) & self.graph_names():
                    raise Refusal(e.value, "TFG905", "a feed value computed from graph values")
                site.feed[key.value] = e.value
        elif isinstance(feed, cst.Name) and feed.value in self.feed_dicts:
            site.feed_name = feed.value
        else:
            raise Refusal(feed, "TFG902", "a feed dict the tool cannot read statically (dynamic feed)")
        site.fed = frozenset(site.feed) if site.feed is not None else self.feed_dicts[site.feed_name]
        self.sites.append(site)

    def _fetches(self, fetch: cst.BaseExpression) -> tuple[str, list[str]]:
        if isinstance(fetch, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            raise Refusal(fetch, "TFG903", "a value fetched by its string name")
        if isinstance(fetch, cst.Call) and matches(self.meta.names.qualified(fetch.func), "initializers"):
            return "init", []
        if isinstance(fetch, cst.Name):
            node = self.p.node(fetch.value)
            if node is None:
                raise Refusal(fetch, "TFG905", f"fetch `{fetch.value}` is not a graph value the tool knows")
            if node.kind == "init":
                return "init", []
            if node.kind in ("optimizer", "compute_gradients", "varlist"):
                raise Refusal(fetch, "TFG905", f"fetching a {node.kind}")
            return "single", [fetch.value]
        if isinstance(fetch, (cst.List, cst.Tuple)) and fetch.elements:
            names = []
            for e in fetch.elements:
                if isinstance(e.value, (cst.SimpleString, cst.ConcatenatedString)):
                    raise Refusal(e.value, "TFG903", "a value fetched by its string name")
                kind, inner = self._fetches(e.value)
                if kind != "single":
                    raise Refusal(e.value, "TFG905", "a nested or initializer fetch")
                names += inner
            return ("list" if isinstance(fetch, cst.List) else "tuple"), names
        return "single", [self._fetched_expression(fetch)]

    def _fetched_expression(self, expr: cst.BaseExpression) -> str:
        """`sess.run(grads[0])`, `sess.run(tf.matmul(x, w))`: the expression becomes a
        tensor of the model under a fresh name, computed where the run asks for it."""
        code = cst.Module([]).code_for_node(expr)
        if code in self.expressions:
            return self.expressions[code]
        read = set(loads(expr))
        deps = {self.p.final[n] for n in read if n in self.p.final}
        top = self.meta.names.qualified(expr.func) if isinstance(expr, cst.Call) else None
        if not isinstance(expr, (cst.Subscript, cst.Call, cst.BinaryOperation, cst.UnaryOperation)) \
                or isinstance(expr, cst.Call) and (top is None or matches(top, "several_results")):
            raise Refusal(expr, "TFG905", "a fetch that is not a name, a list of names or an expression giving one tensor")
        if not deps or read & set(self.p.helpers) or read & self.p.sessions:
            raise Refusal(expr, "TFG905", "a fetch that is not a name, a list of names or an expression of graph values")
        for i in deps:
            if self.p.nodes[i].kind not in ("tensor", "static", "variable", "placeholder", "gradients"):
                raise Refusal(expr, "TFG905", f"a fetched expression of a {self.p.nodes[i].kind}")
        calls = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                calls.append(call)

        expr.visit(V())
        qualified = [self.meta.names.qualified(c.func) for c in calls]
        for call, q in zip(calls, qualified):
            if q is not None and (matches(q, "refuse") or matches(q, "sessions") or matches(q, "initializers")
                                  or q in ("tensorflow.gradients", "tensorflow.placeholder", "tensorflow.Variable",
                                           "tensorflow.get_variable", "tensorflow.placeholder_with_default")):
                raise Refusal(call, "TFG905", f"`{q.replace('tensorflow', 'tf', 1)}` in a fetched expression")
        taken = set(loads(self.p.owner)) | set(self.p.final) | set(self.p.helpers)
        base = _describe(expr)
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        stmt = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], expr)])
        node = GraphNode(len(self.p.nodes), "tensor", (name,), stmt, expr, frozenset(deps), {"calls": [q for q in qualified if q]})
        self.p.nodes.append(node)
        self.p.final[name] = node.index
        self.expressions[code] = name
        return name


def _describe(expr: cst.BaseExpression) -> str:
    """A name for a fetched expression: `grads[0]` -> grads_0, `tf.matmul(...)` -> matmul."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1 \
            and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.Integer):
        return f"{expr.value.value}_{expr.slice[0].slice.value.value}"
    if isinstance(expr, cst.Call):
        func = expr.func.attr if isinstance(expr.func, cst.Attribute) else expr.func
        if isinstance(func, cst.Name):
            return func.value
    return "fetched"


def signatures(program: Program, sites: list[Site]) -> list[Signature]:
    """Groups sites by (fetches, fed placeholders) and slices each group."""
    groups: dict[tuple, Signature] = {}
    flags = {n.names[0] for n in program.nodes if n.kind == "placeholder" and n.info.get("mode_flag")}
    for site in sites:
        values = _flag_values(program, site, flags)
        fed = site.fed - flags
        key = (tuple(site.fetches), fed, tuple(sorted(values.items())))
        sig = groups.get(key)
        if sig is None:
            sig = groups[key] = Signature(tuple(site.fetches), fed, flags=values)
            _slice(program, sig, site)
            _check_statistics(program, sig, site)
        sig.sites.append(site)
        site.signature = sig
    return list(groups.values())


def _flag_values(program: Program, site: Site, flags: set[str]) -> dict[str, str]:
    """The literal each mode flag of the run's slice has: fed True/False, or its default.
    Runs with other values of a flag become another function."""
    members = closure(program, [program.final[f] for f in site.fetches])
    out = {}
    for name in sorted(flags):
        if program.final[name] not in members:
            continue
        value = (site.feed or {}).get(name)
        if value is None and site.feed_name is not None:
            raise Refusal(site.call, "TFG905", f"the mode flag `{name}` fed through a dict built elsewhere")
        value = value if value is not None else program.node(name).info["default"]
        if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
            raise Refusal(value if value is not None else site.call, "TFG905",
                          f"the mode flag `{name}` fed with something other than True or False")
        out[name] = value.value
    return out


def _check_statistics(program: Program, sig: "Signature", site: Site) -> None:
    """Keras batch normalization updates its moving statistics whenever it is called
    with training=True; TF1 only in runs of a train op under the UPDATE_OPS dependency."""
    for i in sig.nodes:
        node = program.nodes[i]
        if "layer" not in node.info or not program.nodes[node.info["layer"]].info["row"].get("statistics"):
            continue
        training = dict(node.info["call_args"]).get("training")
        value = training.value if isinstance(training, cst.Name) else None
        value = sig.flags.get(value, value)
        if value == "True" and not (sig.train is not None and sig.train.info.get("stats")):
            raise Refusal(site.call, "TFG905", "a run with batch normalization in training mode that does not run a "
                          "train op under `tf.control_dependencies(UPDATE_OPS)`: TF1 leaves the moving statistics, "
                          "Keras would update them")


def closure(program: Program, roots) -> set[int]:
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(program.nodes[i].deps)
    return seen


def _slice(program: Program, sig: Signature, site: Site) -> None:
    fetched = [program.node(n) for n in sig.fetches]
    members = closure(program, [n.index for n in fetched])
    for i in members:
        if "unsupported" in program.nodes[i].info:
            raise program.nodes[i].info["unsupported"]
    sig.nodes = sorted(members)
    updates.check_run(program, site.call, fetched)
    trains = [n for n in fetched if n.kind == "train"]
    if len(trains) > 1:
        raise Refusal(site.call, "TFG905", "two train ops in one run")
    sig.train = trains[0] if trains else None
    if sig.train is not None and any(n.kind == "variable" for n in fetched):
        raise Refusal(site.call, "TFG905", "a variable fetched in the same run as its update (order undefined)")
    sig.returns = [name for name, n in zip(sig.fetches, fetched) if n.kind not in ("train", "update")]
    sig.inline = all(n.kind in ("variable", "static") for n in fetched) and not sig.fed
    placeholders = [program.nodes[i] for i in sig.nodes if program.nodes[i].kind == "placeholder"
                    and not program.nodes[i].info.get("mode_flag")]   # (a flag is a literal in each function)
    for ph in placeholders:
        if ph.names[0] not in sig.fed and ph.info["default"] is None:
            raise Refusal(site.call, "TFG905", f"placeholder `{ph.names[0]}` is needed but not fed")
    order = [n.names[0] for n in program.nodes if n.kind == "placeholder" and not n.info.get("mode_flag")]
    plain = [p for p in order if p in sig.fed and program.node(p).info["default"] is None]
    defaults = [p for p in order if program.node(p).info["default"] is not None
                and (p in sig.fed or any(ph.names[0] == p for ph in placeholders))]
    sig.params = plain + defaults


def gradient_dependent(program: Program, members: list[int]) -> set[int]:
    """Nodes of a slice computed from gradients (they run after the tape)."""
    out: set[int] = set()
    for i in members:
        node = program.nodes[i]
        if node.kind in GRADIENT_KINDS or any(d in out for d in node.deps):
            out.add(i)
    return out


def reached_variables(program: Program, root: int) -> list[GraphNode]:
    """Trainable variables (and layers with trainable weights) a loss reads through
    the forward statements, creation order."""
    members = closure(program, [root])
    return [n for n in program.trainable() if n.index in members]


def variable_text(node: GraphNode) -> str:
    """How a trained variable is listed: its name, or a layer's weights unpacked."""
    if node.kind == "layer" and "sites" in node.info:   # the layers a loop created
        return ", ".join(f"*[w for layer in {site['list']} for w in layer.trainable_variables]"
                         for site in node.info["sites"] if site["row"]["weights"])
    if node.kind == "layer":
        return f"*{node.info['var']}.trainable_variables"
    return node.names[0]
