"""The calls that replace `sess.run` / `.eval()` / `.run()`: each execution site becomes a
call of its step function, its values converted to what TF1 gave the host (`.numpy()`).

Part of the tape emitter (tape.py's TapeEmitter, which writes the functions these
call); the fields and methods of it that the calls read are declared here.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import datasets
from tf1gradfix.cst.syntax import literal_index
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import ComputeGradients, Gradients, Node, Summary, Tensor, TrainGroup, TrainOp, Update
from tf1gradfix.model.sites import Site
from tf1gradfix.model.slicing import Signature


class RunCalls:
    """The call sites of the step functions (a base of TapeEmitter)."""

    p: Program
    tf: str
    attributes: dict[str, str]

    def code(self, node: cst.CSTNode) -> str:
        raise NotImplementedError   # (TapeEmitter.code)

    def _default(self, p: str) -> cst.BaseExpression | None:
        raise NotImplementedError   # (TapeEmitter._default)

    def call_site(self, site: Site) -> tuple[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]:
        """(original node, replacement) for one execution site."""
        sig = cast(Signature, site.signature)   # (set for every site once the runs are sliced)
        values = self._values(site)
        parent = site.parent
        has_op = len(sig.returns) != len(site.fetches)
        if isinstance(parent, cst.Expr) and sig.train is not None and sig.train.result is not None:
            return site.call, cst.parse_expression(self._invoke(site))   # (its loss, unread)
        if not has_op:
            return site.call, cst.parse_expression(values)
        if isinstance(parent, cst.Expr):
            return site.call, cst.parse_expression(self._invoke(site))
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and site.structure != "single":
            target = parent.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(site.fetches):
                kept = []
                for element, fetch in zip(target.elements, site.fetches):
                    node = self.p.node(fetch)   # (a train op's is unread: model.checks; an assignment's, if returned)
                    if not isinstance(node, (TrainOp, TrainGroup, Update)) or isinstance(node, Update) and fetch in sig.returns:
                        kept.append(self.code(element.value))
                if not kept:
                    return parent, cst.Expr(cst.parse_expression(self._invoke(site)))
                left = kept[0] if len(kept) == 1 else ", ".join(kept)
                return parent, cast(cst.SimpleStatementLine, cst.parse_statement(f"{left} = {values}\n")).body[0]
        if isinstance(parent, cst.Subscript) and parent.value is site.call and site.structure != "single":
            index = literal_index(parent)
            if index is not None and -len(site.fetches) <= index < len(site.fetches) \
                    and not isinstance(self.p.node(site.fetches[index]), (TrainOp, TrainGroup, Update)):
                position = sig.returns.index(site.fetches[index])   # `sess.run([op, t])[1]`: t's value
                call = self._invoke(site)
                value = f"{call}.numpy()" if len(sig.returns) == 1 else f"{call}[{position}].numpy()"
                return parent, cst.parse_expression(value)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return parent, cst.Expr(cst.parse_expression(self._invoke(site)))   # (`_ = ...`, unread: model.checks)
        raise AssertionError("a train op's result read: refused by model.checks.check_results")

    def _invoke(self, site: Site) -> str:
        sig = cast(Signature, site.signature)   # (set for every site once the runs are sliced)
        if site.feed_name is not None:
            return f"{self._on(site, sig.name)}(**{site.feed_name})"
        feed = cast("dict[str, cst.BaseExpression]", site.feed)   # (a literal feed dict when no name holds it)
        args = []
        for p in sig.params:
            if p not in feed:
                continue
            value = self.code(feed[p])
            args.append(value if self._default(p) is None else f"{p}={value}")
        return f"{self._on(site, sig.name)}({', '.join(args)})"

    @staticmethod
    def _on(site: Site, name: str) -> str:
        """`name`, or the attribute of the model instance the run named."""
        return name if site.receiver is None else f"{site.receiver}.{name}"

    def _values(self, site: Site) -> str:
        sig = cast(Signature, site.signature)   # (set for every site once the runs are sliced)
        if sig.inline:
            items = [f"{self._on(site, self.attributes.get(f, f))}.numpy()" for f in site.fetches]
            return _structure(site.structure, items)
        lists = [r for r in sig.returns if _list_valued(self.p, self.p.node(r))]
        call = self._invoke(site)
        count = len(sig.returns)
        if count == 0:
            return call
        if lists and count == 1:   # `sess.run(grads)`: a list of arrays, like TF1's
            single = f"[g.numpy() for g in {call}]"   # (`_, s = sess.run([train, merged])`: the one kept value)
            node = self.p.node(lists[0])   # (pairs: a list of (gradient, value) tuples; an element: its structure)
            if isinstance(node, ComputeGradients) or isinstance(node, Tensor) and datasets.drawn(self.p, node.value):
                single = f"{self.tf}.nest.map_structure(lambda g: g.numpy(), {call})"
            return single if site.structure == "single" or len(site.fetches) > 1 else _structure(site.structure, [single])
        if lists:   # a list among other values: each value converted where it is
            each = f"{self.tf}.nest.map_structure(lambda g: g.numpy(), t) for t in {call}"
            return f"tuple({each})" if site.structure == "tuple" else f"[{each}]"
        if count == 1:
            single = f"{call}.numpy()"
            if site.structure == "single" or len(site.fetches) > 1:
                return single
            return _structure(site.structure, [single])
        if site.structure == "tuple":
            return f"tuple(t.numpy() for t in {call})"
        return f"[t.numpy() for t in {call}]"


def _list_valued(program, node: Node | None) -> bool:
    """A fetched value that is a list in TF1 too: a gradient list, a summary's values, the
    (gradient, variable) pairs of `compute_gradients` (TF1 gave the variables' values), a
    list of graph values the program made (`norms = [tf.norm(w) for w in ws]`)."""
    return isinstance(node, Gradients) and not node.single or isinstance(node, (Summary, ComputeGradients)) \
        or type(node) is Tensor and (isinstance(node.value, (cst.List, cst.ListComp)) or datasets.drawn(program, node.value))


def _structure(structure: str, items: list[str]) -> str:
    if structure == "single":
        return items[0]
    if structure == "tuple":
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    return f"[{', '.join(items)}]"
