"""Execution sites: every `sess.run(...)`, `t.eval(...)` or `op.run(...)` in
the host code, what each fetches and which placeholders it feeds, and every
other use of graph values there (refused: they have no value outside a run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import libcst as cst
from tf1gradfix.constructs import (fed_tensors, graph_extensions, host_lists, initializers, reinitialized,
                                   restarted_iterators, retired_names, savers, session_functions, updates)
from tf1gradfix.model.program import Item, Program
from tf1gradfix.model.nodes import (OPS, Gradients, Init, Node, Placeholder, Static, Tensor, TrainGroup, TrainOp, Saver,
                                    Update, Variable, VariableGroup, VarList)
from tf1gradfix.cst.syntax import Refusal, arg, bound_names, free_names, loads, matches
from tf1gradfix.cst.walk import children, walk
from tf1gradfix.model.fetches import FetchesAndFeeds
from tf1gradfix.model.host_reads import HostReads

@dataclass
class Site:
    call: cst.Call
    fetches: list[str]          # graph names in fetch order
    structure: str              # single | list | tuple | init
    feed: dict[str, cst.BaseExpression] | None   # placeholder -> value (literal dict feed)
    feed_name: str | None       # a host dict holding the feed (`**name` at the call)
    fed: frozenset[str] = frozenset()
    signature: Any = None   # its slicing.Signature once the runs are sliced (slicing imports this module)
    parent: cst.CSTNode | None = None   # the node holding the call (its statement decides the rewrite)
    receiver: str | None = None   # a model class's instance whose attributes the run names (`model`)
    fed_dtypes: dict[str, Any] = field(default_factory=dict)   # fed computed value -> its dtype (fed_tensors.py)
    once: bool = False   # a run of the program's own statements outside any loop (slicing.Signature.one_off)


class HostScan(FetchesAndFeeds):
    """Finds execution sites and every other use of graph names in host code."""

    def __init__(self, program: Program, meta, sessions_opened=(), host=None, received=None):
        """`host`: a model class's host code (model_classes.ClassHost): where its graph runs;
        `received`: a script's functions given the session (session_params.SessionParameters)."""
        self.p, self.meta = program, meta
        self.host = host
        self.attributes = host.attributes if host else {}
        self.session_params = host.session_params if host else received
        self.session_args = self.session_params.session_arguments() if self.session_params else set()
        self._receiver: str | None = None
        self._top = False   # scanning one of the program's own statements (not a function's)
        self._sessions = program.sessions   # the session names where the scan is
        self.opened = dict(sessions_opened)   # nested session `with`s and `sess = tf.Session()` lines -> name
        self.sites: list[Site] = []
        self.feed_dicts: dict[str, frozenset[str]] = {}
        self.feed_dict_nodes: dict[cst.Dict, list[str]] = {}   # a feed dict bound to a name -> its placeholders
        self.feed_receivers: dict[str, str | None] = {}   # (a model class: the instance its keys name)
        self.feed_key_stores: dict[cst.BaseExpression, str] = {}   # `feed[x] = v`: the key -> its placeholder
        self.feed_returns: set[cst.Name] = set()   # `return feed` of a function making a feed dict (fetches.py)
        self.fed_keys: dict[str, cst.BaseExpression] = {}   # computed values a named feed dict feeds (fetches.py)
        self.removed: set[cst.CSTNode] = set()   # `sess.close()`, `sess.run(init)` statements
        self.starts: dict[cst.Expr, str] = {}   # `sess.run(batches.initializer)` -> `batches = iter(pairs)`
        self.variable_lists: dict[cst.Call, Any] = {}   # `tf.trainable_variables()` in host code -> the list (or a function of the naming)
        self.first_site_item: int | None = None
        self.unrun: list[cst.BaseStatement] = []   # graph statements after the last run, dropped: never run
        self.unrun_done: set[cst.BaseStatement] = set()   # (dropped by an earlier scan of the same program)
        self.rescan = False   # one of them rebound a graph name: scan again with the name's earlier binding
        self._parents: dict[int, dict[cst.CSTNode, cst.CSTNode]] = {}
        self.inits = 0
        self.initialized: frozenset[str] = frozenset()   # variables whose own initializers ran (_first_values)
        self.covered: set[int] | None = None   # items of the variables a first initializer of all of them covered
        self._position = 0
        self.called_later: set[int] = set()   # ids of the sites of helpers the script calls after the graph is built
        self.waiting = reinitialized.Pending()   # optimizers made after read-only runs, before an initializer run
        self.expressions: dict[str, str] = {}   # fetched expression (code) -> its model name
        self.skip: set[cst.CSTNode] = set()   # statements rewritten elsewhere (summary writers)
        self.overwritten: set[int] = set()   # ids of a later session's initializer runs its restore overwrites
        self._in_init = False   # scanning a model class's `__init__`
        self.first_step_item: int | None = None   # the item of the first run calling a step function
        self.retiring: list = []   # `w = sess.run(w)` stores: (name node, statement, sites before) (retired_names)

    def graph_names(self) -> set[str]:
        if self.host is not None:   # host code reaches a model class's graph values as attributes only
            return set(self.p.sessions)
        return set(self.p.final) | self.p.sessions

    def run(self) -> None:
        names = self.graph_names()
        # A name is a graph value from the statement that first binds it to one: before
        # it, the same name holds a host value (data the graph is then built from).
        first_bound = {name: position for position, item in reversed(list(enumerate(self.p.items)))
                       if item.node is not None for name in item.node.names}
        if self.host is not None:
            self._feed_bindings(self.host.statements + self.host.init_statements)
            self._in_init = True   # (`__init__`'s own runs: updates.in_place)
            self._init_host(first_bound)
            self._in_init = False
            self._host(self.host.statements, self._opened_in(self.host.statements))
            return
        self._feed_bindings([item.stmt for item in self.p.items if item.node is None])
        poisoned = set(self.p.poisoned or ())   # (names of refused graph statements: see ModelBuilder.build)
        unrun = graph_extensions.Unrun()   # graph statements after a run, refused if a later run follows
        for position, item in enumerate(self.p.items):
            self._position = position
            if item.initializer:   # `tf.global_variables_initializer().run()`: an initializer run like another
                self._item = item
                run = cast(cst.Call, cast(cst.Expr, cast(cst.SimpleStatementLine, item.stmt).body[0]).value)
                self._initializer_run(run, cast(cst.Attribute, run.func).value)
            if item.node is not None or item.drop:
                if item.node is not None and item.stmt not in self.unrun_done and self.first_site_item is not None and not savers.made_after_runs(item.node) \
                        and not graph_extensions.extends(self.p, position) \
                        and not graph_extensions.before_steps(self.p, item, self.sites):
                    if self.waiting.may_wait(self.p, item, self.sites):   # (an initializer run may follow)
                        self.waiting.items.append(item)
                    else:
                        unrun.built(item)
                continue
            if poisoned and not poisoned.isdisjoint(loads(item.stmt)):
                continue   # (it reads what a refused statement would have bound: a blocker already)
            before = len(self.sites) + len(self.removed)
            try:
                self._host_item(item, position, names - retired_names.after(self, position), first_bound)
            except Refusal as refusal:
                if self.p.refused is None:
                    raise
                self.p.refused.append(refusal)   # (collected: the next statements are scanned on)
                poisoned |= bound_names(item.stmt)
            unrun.host(item, len(self.sites) + len(self.removed) > before, self.p)
        self.waiting.close()
        try:
            retired_names.check_runs(self)
        except Refusal as refusal:
            if self.p.refused is None:
                raise
            self.p.refused.append(refusal)
        self.unrun, self.rescan = unrun.close(self.p)   # (noted by the restructuring; rescan: names rebound)

    def _init_host(self, first_bound: dict[str, int]) -> None:
        """A model class's `__init__`'s own host statements: like a graph block's, they may
        not read a graph value `__init__` bound before them (an `if` or loop over tensors
        would be left in `__init__`, apart from the values it reads)."""
        host = cast(Any, self.host)
        for position, item in enumerate(self.p.items):
            if item.node is not None or item.drop:
                continue
            if isinstance(item.stmt, cst.FunctionDef):
                self._host([item.stmt], host.init_sessions)
                continue
            self._item = item
            self._sessions = host.init_sessions
            self._scan(item.stmt, host.init_sessions | {name for name, first in first_bound.items() if first < position})

    def _host_item(self, item, position: int, names: set[str], first_bound: dict[str, int]) -> None:
        self._top = False
        given = self.session_params.removed_params.get(item.stmt) if self.session_params else None
        if isinstance(item.stmt, cst.FunctionDef) and session_functions.runs_session(self.p, item.stmt, position, given):
            local = session_functions.local_names(item.stmt)
            before = len(self.sites)
            for stmt in cast(cst.IndentedBlock, item.stmt.body).body:   # its runs: sites, as the loop's that calls it
                self._item, self._sessions = Item(stmt), (self.p.sessions - local) | ({given} if given else set())
                self._scan(stmt, names - local)
            self.called_later |= {id(site) for site in self.sites[before:]}
            return
        if given is not None:   # (its parameter goes at every call: only a helper read as host code may lose it)
            raise Refusal.of(item.stmt, "session_param_function_not_host", function=item.stmt.name.value)
        if isinstance(item.stmt, (cst.FunctionDef, cst.ClassDef)):
            self._definition(item.stmt, names)
            return
        before, sites_before = len(self.sites) + len(self.removed), len(self.sites)
        self._item, self._top = item, True
        self._scan(item.stmt, names - {name for name, first in first_bound.items() if first > position})
        if len(self.sites) + len(self.removed) > before and self.first_site_item is None:
            self.first_site_item = position
        if self.first_step_item is None and any(graph_extensions.calls_step(self.p, s) for s in self.sites[sites_before:]):
            self.first_step_item = position   # (the step functions are written before it)

    def _host(self, statements, sessions: set[str]) -> None:
        """Every statement of the host code; a function's statements one by one (a run
        inside a function is not in a loop for being there). `sessions`: the names that
        hold the session there; a function's own names hide the outer ones."""
        for stmt in statements:
            if isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock):
                params = stmt.params
                local = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
                local |= set().union(*(bound_names(s) for s in stmt.body.body))
                inner = (sessions - local) | self._opened_in(stmt.body.body)
                received = self.session_params.removed_params.get(stmt) if self.session_params else None
                self._host(stmt.body.body, inner | ({received} if received else set()))
            else:
                self._item = Item(stmt)
                self._sessions = sessions
                self._scan(stmt, sessions)

    def _opened_in(self, statements) -> set[str]:
        """Names of the sessions `statements` open (not those of the functions they define)."""
        if not self.opened:
            return set()
        return {self.opened[node] for stmt in statements for node in walk(stmt, skip=(cst.FunctionDef, cst.ClassDef))
                if node in self.opened}

    def _definition(self, stmt, names: set[str]) -> None:
        """User functions may read variables and constants (as helpers), nothing else of the graph."""
        used = free_names(stmt) if isinstance(stmt, cst.FunctionDef) else set(loads(stmt))
        for name in sorted(used & names):
            node = self.p.node(name)
            if name in self.p.sessions or not isinstance(node, (Variable, VariableGroup, Static)):
                raise Refusal.of(stmt, "function_uses_graph_value", function=stmt.name.value, name=name)


    def _scan(self, stmt: cst.CSTNode, names: set[str]) -> None:
        stmt.visit(HostReads(self, names))

    def _variable_list(self, call: cst.Call) -> bool:
        """`len(tf.trainable_variables())` after the graph is built: the variables it lists (host_lists)."""
        text = host_lists.collection_text(self.p, call, self.meta.names.qualified, self.host is not None)
        if text is not None:
            self.variable_lists[call] = text
        return text is not None

    def _initializer_run(self, call: cst.Call, fetch: cst.BaseExpression) -> None:
        """TF2 initializes once, at creation: a re-initialization cannot simply go (functions of
        host code run in an order the scan does not know), but where it changes nothing (reinitialized)."""
        if self._first_values(call, fetch):
            return
        # (the variables made so far: a later run of their own initializers initializes them again)
        self.covered = (self.covered or set()) | {k for k, item in enumerate(self.p.items)
                                                  if k < self._position and isinstance(item.node, Variable)}
        if self.waiting.initializer(self.p, call, self.meta.names.qualified, self.inits > 0 and not self._in_loop(call)):
            self.inits += 1
            return
        ran = any(id(site) not in self.called_later for site in self.sites)   # (a helper's runs: when called)
        if ran and self.host is None or self._in_loop(call) or self.inits:
            raise Refusal.of(call, "initializer_run_again")
        self.inits += 1

    def _first_values(self, call: cst.Call, fetch: cst.BaseExpression) -> bool:
        """A run of some variables' own initializers (`sess.run(w.initializer)`,
        `tf.variables_initializer([w, b])`) in the program's code, outside loops, where no
        initializer ran for any of them before: it gives them their first values, which TF2
        gives them where they are made. Variables made after runs wait for it (reinitialized)."""
        some = initializers.listed(self.p, fetch, self.meta.names.qualified)
        if some is None or self.host is not None or self._in_loop(call) or some & self.initialized:
            return False
        made = {name: k for k, item in enumerate(self.p.items) if isinstance(item.node, Variable)
                for name in item.node.names if name in some}
        if any(k in (self.covered or ()) for k in made.values()):
            return False
        waiting = {name for item in self.waiting.items if isinstance(item.node, Variable) for name in item.node.names}
        if not self.waiting.take(self.p, some & waiting, self.meta.names.qualified):
            return False
        self.initialized |= some
        self.inits += 1
        return True

    def _site(self, call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        if func.attr.value == "run" and isinstance(func.value, cst.Call) \
                and initializers.kind_of(self.p, func.value, self.meta.names.qualified) is not None:
            # `tf.global_variables_initializer().run()` in host code: the default session's run of it
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, arg(call, 0, "feed_dict"))
            return True
        if func.attr.value == "eval" and self.host is None and isinstance(func.value, _EXPRESSIONS) \
                and set(loads(func.value)) & set(self.p.final):   # `tf.trace(m).eval()`: a fetched expression
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, arg(call, 0, "feed_dict"))
            return True
        held = self.host is not None and isinstance(func.value, cst.Attribute) \
            and func.value.attr.value in self.host.session_attributes   # `self.sess.run(...)`
        named = self._graph_name(func.value) if self.host is not None and func.attr.value == "eval" else None
        if self.host is not None and func.attr.value == "save" and isinstance(func.value, cst.Attribute) \
                and isinstance(saver := self.p.node(self.attributes.get(func.value.attr.value, "")), Saver):
            self.variable_lists[call] = savers.save_text(   # (`model.saver.save(sess, path)` of the class's Saver)
                saver, cst.Module([]).code_for_node(func.value), call, self._sessions, self.graph_names(),
                cst.Module([]).code_for_node, set(), self.p, self.attributes, in_place=True)
            return True
        if not isinstance(func.value, cst.Name) and not held and named is None:   # (`self.loss.eval(feed)`: named)
            return False
        receiver, method = None if held else named or cast(cst.Name, func.value).value, func.attr.value
        if held or receiver in self._sessions:
            if method == "close" and not call.args:
                self._remove_statement(call)
                return True
            if method == "as_default" and not call.args and isinstance(item := self.parent(call), cst.WithItem) \
                    and self.parent(item) in self.opened:
                return True   # (a nested session's `with sess.as_default():`, flattened with it)
            if method != "run":
                raise Refusal.of(call, "session_method", method=method)
            fetch = arg(call, 0, "fetches")
            feed = arg(call, 1, "feed_dict")
            extra = list(call.args[2:]) + [
                a for a in call.args if a.keyword is not None and a.keyword.value not in ("fetches", "feed_dict")]
            if fetch is None or extra:
                raise Refusal.of(call, "run_options")
            self._add_site(call, fetch, feed)
            return True
        node = self.p.node(receiver) if (self.host is None or named) and receiver is not None else None   # (host names are not)
        if node is None:
            return False
        if method == "eval" and isinstance(node, (Tensor, Static, Variable, Gradients)):
            feed = arg(call, 0, "feed_dict")
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, feed)
            return True
        if isinstance(node, Saver) and method == "restore":
            self.waiting.run()   # (it changes variables: an initializer after it is TF1's reset)
            self.variable_lists[call] = savers.restore_text(self.p, node, cast(str, receiver), call, self._sessions,
                                                            self.graph_names(), cst.Module([]).code_for_node)
            return True
        if isinstance(node, Saver):
            if method != "save":
                raise Refusal.of(call, "saver_method", name=receiver, method=method)
            taken = {n for stmt in walk(self.p.owner) if isinstance(stmt, cst.BaseStatement) for n in bound_names(stmt)}
            self.variable_lists[call] = savers.save_text(node, cast(str, receiver), call, self._sessions,
                                                         self.graph_names(), cst.Module([]).code_for_node, taken,
                                                         self.p, self.attributes)
            return True
        if method == "run" and isinstance(node, (TrainOp, TrainGroup, Init, Update)):
            self._check_session_kw(call, ("feed_dict", "session"))
            self._add_site(call, func.value, arg(call, 0, "feed_dict"))
            return True
        return False

    def _in_loop(self, node: cst.CSTNode | None, kinds: tuple = (cst.For, cst.While)) -> bool:
        """Whether `node` is in a loop (or one of `kinds`) or a definition of the statement scanned."""
        while node is not None and node is not self._item.stmt:
            node = self.parent(node)
            if isinstance(node, (*kinds, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return True
        return False

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of a node of the host statement being scanned. Built per
        statement that holds a site, instead of a parent table of the whole module."""
        stmt = self._item.stmt
        found = self._parents.get(id(stmt))
        table: dict[cst.CSTNode, cst.CSTNode] = {} if found is None else found
        if found is None:
            stack: list[cst.CSTNode] = [stmt]
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
                raise Refusal.of(call, "run_keyword", param=a.keyword.value)
            if a.keyword is not None and a.keyword.value == "session":
                if not (isinstance(a.value, cst.Name) and a.value.value in self.p.sessions):
                    raise Refusal.of(call, "run_other_session")
        if len([a for a in call.args if a.keyword is None]) > 1:
            raise Refusal.of(call, "run_extra_positional")

    def _remove_statement(self, call: cst.Call) -> None:
        parent = self.parent(call)
        if not isinstance(parent, cst.Expr):
            raise Refusal.of(call, "session_call_result_used")
        self.removed.add(parent)

    def _add_site(self, call: cst.Call, fetch: cst.BaseExpression, feed) -> None:
        self._receiver = None
        done = updates.in_place(self.p, fetch, feed) if self._in_init and not self._in_loop(call) else None
        if done is not None:   # `__init__` copying a target network: the assignments, in place
            self.variable_lists[call] = done
            return
        assigned = updates.host_assign(self.p, fetch, feed, self.meta.names.qualified,
                                       self.attributes if self.host is not None else None)
        if assigned is not None:   # `sess.run(tf.assign(lr, value))`: the assignment, where TF1 ran it
            self.waiting.run()
            self.variable_lists[call] = assigned if isinstance(self.parent(call), cst.Expr) else f"{assigned}.numpy()"
            return
        listed = self.p.node(fetch.value) if isinstance(fetch, cst.Name) and self.host is None else None
        if isinstance(listed, VarList) and feed is None:
            # `sess.run(g_vars)`: the values of the variables it lists, in its order
            self.variable_lists[call] = host_lists.values(self.p, listed.members, call, self.first_step_item is not None)
            return
        nested = self._in_loop(call, ()) or not self._top or self.host is not None   # (not the program's own code)
        start = restarted_iterators.run_text(self, call, fetch, feed, self.parent(call), nested)
        if start is not None:   # `sess.run(batches.initializer)` -> `batches = iter(pairs)`, where TF1 ran it
            self.starts[cast(cst.Expr, self.parent(call))] = start
            return
        structure, fetches = self._fetches(fetch)
        if structure == "init":
            if feed is not None and not initializers.feed_unread(self.p, feed):
                raise Refusal.of(call, "initializer_run_fed")
            self._remove_statement(call)
            if id(call) in self.overwritten or initializers.kind_of(self.p, fetch, self.meta.names.qualified) == "local":
                return   # (a later session's, before its restore: later_sessions.py; local variables', none here)
            self._initializer_run(call, fetch)
            return
        self.waiting.run(any(isinstance(self.p.node(f), (*OPS, TrainGroup)) for f in fetches))
        site = Site(call, fetches, structure, None, None, parent=self.parent(call),
                    once=self._top and self.host is None and not self._in_loop(call))
        if feed is None or (isinstance(feed, cst.Name) and feed.value == "None"):
            site.feed = {}
        elif isinstance(feed, cst.Dict):
            site.feed = {}
            for e in feed.elements:
                if not isinstance(e, cst.DictElement):
                    raise Refusal.of(feed, "feed_double_star")
                key = e.key
                if isinstance(key, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                    raise Refusal.of(key, "feed_by_name")
                name = self._graph_name(key)
                node = self.p.node(name) if name is not None else None
                if fed_tensors.can_feed(node) and self.host is None:
                    site.fed_dtypes[cast(str, name)] = fed_tensors.checked_dtype(cast(Node, node), key,
                                                                                 self.meta.names.qualified)
                elif not isinstance(node, Placeholder):
                    raise Refusal.of(key, "feed_key_not_placeholder")
                if loads(e.value) and set(loads(e.value)) & self.graph_names():
                    raise Refusal.of(e.value, "feed_value_from_graph")
                site.feed[cast(str, name)] = e.value
        elif isinstance(feed, cst.Name) and feed.value in self.feed_dicts:
            site.feed_name = feed.value
            for name in sorted(self.feed_dicts[feed.value] & set(self.fed_keys)):   # (fed computed values)
                if self.host is not None:
                    raise Refusal.of(self.fed_keys[name], "feed_key_not_placeholder")
                site.fed_dtypes[name] = fed_tensors.checked_dtype(cast(Node, self.p.node(name)), self.fed_keys[name],
                                                                  self.meta.names.qualified)
            receiver = self.feed_receivers[feed.value]
            if self._receiver not in (None, receiver):
                raise Refusal.of(call, "run_two_instances", first=self._receiver, second=receiver)
            self._receiver = receiver
        else:
            raise Refusal.of(feed, "feed_unreadable")
        site.fed = frozenset(site.feed) if site.feed is not None else self.feed_dicts[cast(str, site.feed_name)]
        site.receiver = self._receiver
        self.sites.append(site)


_EXPRESSIONS = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)   # (`.eval()` of one: fetches.py)
