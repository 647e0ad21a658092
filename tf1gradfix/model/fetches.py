"""What a run fetches and which placeholders it feeds: the fetch's form and graph names (an
expression fetched becomes a tensor of the model under a fresh name), a feed dict's keys,
and the dicts of placeholders bound to a name before the runs that take them.

Part of the host scan (sites.py's HostScan, whose fields these methods fill and read:
they are declared here).
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.constructs import datasets, dropout, fed_tensors, initializers
from tf1gradfix.cst.syntax import Refusal, bound_args, fresh_name, loads, matches, outer_reads
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import ComputeGradients, Gradients, Init, Optimizer, Placeholder, Static, Tensor, Variable, VariableGroup, VarList


class FetchesAndFeeds:
    """The fetches and feeds of the runs (a base of HostScan)."""

    p: Program
    meta: Any
    host: Any
    attributes: dict[str, str]
    _receiver: str | None
    expressions: dict[str, str]
    feed_dicts: dict[str, frozenset[str]]
    feed_dict_nodes: dict[cst.Dict, list[str]]
    feed_receivers: dict[str, str | None]
    feed_key_stores: dict[cst.BaseExpression, str]
    feed_returns: set[cst.Name]
    fed_keys: dict[str, cst.BaseExpression]   # computed values among named feed dicts' keys -> a key naming it

    def _feed_bindings(self, statements) -> None:
        """`feed = {x: ..., y: ...}` (or `{model.x: ...}`): dicts of placeholders bound to a name;
        and a function that returns one (`return feed`, `return {x: ...}`), whose calls
        bound to a name (`feed = feed_data(batch)`) are feed dicts of the same placeholders."""
        placeholders = {n.names[0] for n in self.p.nodes if isinstance(n, Placeholder)}
        scan = self
        made: dict[str, tuple] = {}   # function -> the keys of the dict it returns, their instance, the function

        def placeholder(key: cst.BaseExpression) -> str | None:
            name = scan._graph_name(key)
            return name if name in placeholders else None

        def fed_value(key: cst.BaseExpression) -> str | None:
            """A computed value fed with the placeholders (an RNN's `initial_state: state`)."""
            name = scan._graph_name(key)
            return name if name is not None and fed_tensors.can_feed(scan.p.node(name)) else None

        def keys_of(node: cst.CSTNode, value: cst.Dict) -> frozenset[str] | None:
            scan._receiver = None
            keys = [e.key for e in value.elements if isinstance(e, cst.DictElement)]
            found = [placeholder(k) for k in keys]
            if not any(found):
                return None
            names = [p if p is not None else fed_value(k) for p, k in zip(found, keys)]
            if len(keys) != len(value.elements) or not all(names):
                raise Refusal.of(node, "feed_mixed_keys")
            for key, name in zip(keys, names):
                if name not in placeholders:
                    scan.fed_keys[cast(str, name)] = key
            scan.feed_dict_nodes[value] = cast("list[str]", names)
            return frozenset(cast("list[str]", names))

        def bind(node: cst.Assign, keyset: frozenset[str], receiver: str | None) -> None:
            if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
                raise Refusal.of(node, "feed_target")
            name = node.targets[0].target.value
            if scan.feed_receivers.get(name) is None:   # (not yet known, or a parameter of the function making it)
                scan.feed_receivers[name] = receiver
            if scan.feed_dicts.setdefault(name, keyset) != keyset or scan.feed_receivers[name] != receiver:
                raise Refusal.of(node, "feed_dict_varies", name=name)

        class V(cst.CSTVisitor):
            def __init__(self) -> None:
                super().__init__()
                self.functions: list[cst.FunctionDef] = []

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.append(node)

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                self.functions.pop()

            def visit_Assign(self, node: cst.Assign) -> None:
                if isinstance(node.value, cst.Dict) and (keyset := keys_of(node, node.value)) is not None:
                    bind(node, keyset, scan._receiver)

            def visit_Return(self, node: cst.Return) -> None:
                if len(self.functions) != 1:   # (a function's own, not a nested function's)
                    return
                value, keyset = node.value, None
                if isinstance(value, cst.Dict):
                    keyset = keys_of(node, value)
                    receiver = scan._receiver
                elif isinstance(value, cst.Name) and value.value in scan.feed_dicts:
                    keyset, receiver = scan.feed_dicts[value.value], scan.feed_receivers.get(value.value)
                    scan.feed_returns.add(value)
                    if receiver in _parameters(self.functions[-1]):   # (the instance each call passes: _passed)
                        scan.feed_receivers[value.value] = None
                function = self.functions[-1]
                if keyset is not None and made.setdefault(function.name.value, (keyset, receiver, function)) \
                        != (keyset, receiver, function):
                    raise Refusal.of(node, "feed_dict_varies", name=function.name.value)

        class Calls(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                call = node.value
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in made:
                    keyset, receiver, function = made[call.func.value]
                    bind(node, keyset, _passed(function, call, receiver))

        for stmt in statements:
            stmt.visit(V())
        if made:
            for stmt in statements:
                stmt.visit(Calls())

    def feed_replacements(self) -> dict:
        """The named feed dicts' keys written as strings (`{x: v}` -> `{"x": v}`, `feed[x] = v`
        -> `feed["x"] = v`): the runs take the dict as `f(**feed)`."""
        out: dict = {key: cst.SimpleString(f'"{name}"') for key, name in self.feed_key_stores.items()}
        for feed, names in self.feed_dict_nodes.items():
            out[feed] = feed.with_changes(elements=[
                e.with_changes(key=cst.SimpleString(f'"{name}"')) for e, name in zip(feed.elements, names)])
        return out

    def feed_key_store(self, target: cst.BaseExpression) -> bool:
        """`feed[x] = value` for a named feed dict and a placeholder among its keys: a new
        value under a key it has (the keys stay one set), the key written as the dict
        writes it (a string); a placeholder it lacks is refused. False for other targets."""
        index = target.slice[0].slice if isinstance(target, cst.Subscript) and len(target.slice) == 1 else None
        if not (isinstance(index, cst.Index) and isinstance(target, cst.Subscript)
                and isinstance(target.value, cst.Name) and target.value.value in self.feed_dicts):
            return False
        held, self._receiver = self._receiver, self.feed_receivers.get(target.value.value)
        name = self._graph_name(index.value)
        self._receiver = held
        if name is None or name not in self.feed_dicts[target.value.value]:
            raise Refusal.of(target, "feed_dict_new_key", name=target.value.value,
                             key=cst.Module([]).code_for_node(index.value))
        self.feed_key_stores[index.value] = name
        return True

    def _fetches(self, fetch: cst.BaseExpression) -> tuple[str, list[str]]:
        if isinstance(fetch, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            raise Refusal.of(fetch, "fetch_by_name")
        if isinstance(fetch, (cst.Call, cst.List, cst.Tuple, cst.Attribute)) \
                and initializers.kind_of(self.p, fetch, self.meta.names.qualified):
            return "init", []   # (`tf.global_variables_initializer()`, `w.initializer`, a list or group of initializers)
        name = self._graph_name(fetch)
        if name is not None or isinstance(fetch, cst.Name):
            node = self.p.node(name) if name is not None else None
            if node is None:
                raise Refusal.of(fetch, "fetch_unknown", code=cst.Module([]).code_for_node(fetch))
            if isinstance(node, Init):
                return "init", []
            if isinstance(node, (Optimizer, VarList)):
                raise Refusal.of(fetch, "fetch_kind", kind=node.kind)
            return "single", [cast(str, name)]
        if isinstance(fetch, (cst.List, cst.Tuple)) and fetch.elements:
            names = []
            for e in fetch.elements:
                if isinstance(e.value, (cst.SimpleString, cst.ConcatenatedString)):
                    raise Refusal.of(e.value, "fetch_by_name")
                kind, inner = self._fetches(e.value)
                if kind != "single":
                    raise Refusal.of(e.value, "fetch_nested")
                names += inner
            return ("list" if isinstance(fetch, cst.List) else "tuple"), names
        return "single", [self._fetched_expression(fetch)]

    def _graph_name(self, expr: cst.BaseExpression) -> str | None:
        """The graph name a fetch or feed key names: a name, or with a model class,
        `<instance>.<attribute>` (one instance per run)."""
        if self.host is None:
            return expr.value if isinstance(expr, cst.Name) else None
        if not isinstance(expr, cst.Attribute) or expr.attr.value not in self.attributes:
            return None
        receiver = cst.Module([]).code_for_node(expr.value)
        if self._receiver not in (None, receiver):
            raise Refusal.of(expr, "run_two_instances", first=self._receiver, second=receiver)
        if set(loads(expr.value)) & self.p.sessions or not isinstance(expr.value, (cst.Name, cst.Attribute)):
            raise Refusal.of(expr, "run_instance_form")
        self._receiver = receiver
        return self.attributes[expr.attr.value]

    def _made_by(self, name: str) -> str | None:
        """How the program binds `name`, said for a refusal where it may be an instance of a
        model class: `made by `TextNet`` (a call of a class-like name, not TensorFlow's, not
        a method of a value: `ds.make_initializable_iterator()`), or bound otherwise; None
        where it is made another way."""
        for node in walk(self.p.owner):
            if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                    for t in node.targets):
                func = node.value.func if isinstance(node.value, cst.Call) else None
                made = func and (self.meta.names.qualified(func) or (func.value if isinstance(func, cst.Name) else None))
                return f"made by `{made}`" if made and not made.startswith("tensorflow") else None
        return "bound otherwise: a parameter, a global, a loop's name"

    def _fetched_expression(self, expr: cst.BaseExpression) -> str:
        """`sess.run(grads[0])`, `sess.run(tf.matmul(x, w))`: the expression becomes a
        tensor of the model under a fresh name, computed where the run asks for it."""
        code = cst.Module([]).code_for_node(expr)
        if code in self.expressions:
            return self.expressions[code]
        read = outer_reads(expr)   # (`[g for g, v in pairs]`: a list of the gradients, read off `pairs`)
        deps = {self.p.final[n] for n in read if n in self.p.final}
        top = self.meta.names.qualified(expr.func) if isinstance(expr, cst.Call) else None
        drawn = isinstance(expr, cst.Call) and datasets.drawn(self.p, expr)   # (`sess.run(it.get_next())`)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and self.host is None:
            owner = expr.value.value   # (`model.loss` of an instance the rewrite does not read)
            if owner not in self.p.final and owner not in self.p.sessions and (made := self._made_by(owner)):
                raise Refusal.of(expr, "fetch_instance_attribute", code=code, name=owner, made=made)
        if not isinstance(expr, (cst.Subscript, cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.ListComp)) \
                or isinstance(expr, cst.Call) and not drawn and (top is None or matches(top, "several_results")):
            raise Refusal.of(expr, "fetch_form")
        if not deps or read & set(self.p.helpers) or read & self.p.sessions:
            raise Refusal.of(expr, "fetch_form")
        kinds = (Tensor, Static, Variable, VariableGroup, VarList, Placeholder, Gradients)   # (an iterator: Static)
        for i in deps:   # (a comprehension over `compute_gradients`' pairs: their gradients or variables)
            if not isinstance(self.p.nodes[i], (*kinds, ComputeGradients) if isinstance(expr, cst.ListComp) else kinds):
                raise Refusal.of(expr, "fetch_expression_kind", kind=self.p.nodes[i].kind)
        calls = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                calls.append(call)

        expr.visit(V())
        qualified = [self.meta.names.qualified(c.func) for c in calls]
        for call, q in zip(calls, qualified):
            if q is not None and (matches(q, "refuse") or matches(q, "aligned_random") or q == dropout.SYMBOL
                                  or matches(q, "sessions") or matches(q, "initializers")
                                  or q in ("tensorflow.gradients", "tensorflow.placeholder", "tensorflow.Variable",
                                           "tensorflow.get_variable", "tensorflow.placeholder_with_default")):
                raise Refusal.of(call, "fetch_expression_api", api=q)
        self.p.checked.update(id(c) for c in calls)   # (as a tensor's, more strictly: constructs/nested_calls.py)
        taken = set(loads(self.p.owner)) | set(self.p.final) | set(self.p.helpers)
        name = fresh_name(_describe(expr), taken)
        stmt = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], expr)])
        node = Tensor(index=len(self.p.nodes), names=(name,), stmt=stmt, value=expr, deps=frozenset(deps),
                      calls=[q for q in qualified if q])
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


def _passed(function: cst.FunctionDef, call: cst.Call, receiver: str | None) -> str | None:
    """The instance a feed dict's keys name at a call of the function that makes it: the
    argument given for the parameter they name (`make_feed(net, ...)`), else as written."""
    if receiver not in _parameters(function):
        return receiver
    given = bound_args(call, _parameters(function), call).get(receiver)
    return cst.Module([]).code_for_node(given) if isinstance(given, (cst.Name, cst.Attribute)) else "?"


def _parameters(function: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*function.params.posonly_params, *function.params.params)]

