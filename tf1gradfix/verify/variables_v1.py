"""The original's variables as the traces name them, and their values read at the start
and at the end.

A variable is named by its graph's name, made unique across graphs the way the TF2
program's single namespace does (w, w_1, ...). Its initial value is read right after
its initializer ran, before any update, and written to ``init.json``, which the
migrated side waits for (variables_v2.py); a program building several graphs adds to
it graph by graph. Part of the original side's tracer (runner_v1.V1Tracer), whose
state these methods share.
"""

from __future__ import annotations

import re

from tf1gradfix.verify import initial_values
from tf1gradfix.verify import runner_common as rc


class V1Variables(rc.Reentrancy):
    """Names and snapshots of the original's variables (the tracer's fields: labels,
    graphs_seen, snapshotted, init_values, init_done, orig_run, budget...)."""

    # -- names ----------------------------------------------------------
    def var_name(self, v, index: int, graph=None) -> str:
        if isinstance(v, self.Variable):
            return self.label(v.graph, v.name)
        name = getattr(v, "name", None)
        if graph is not None and name is not None:
            for var in graph.get_collection("variables"):
                if var.name == name:
                    return self.label(graph, name)
        return f"source[{index}]"

    def label(self, graph, name: str) -> str:
        """A variable's name in the traces: the graph's name, made unique across
        graphs the way the TF2 program's single namespace does (w, w_1, ...)."""
        key = (id(graph), name)
        if key not in self.labels:
            self.graphs_seen[id(graph)] = graph   # keeps ids from being reused
            base = rc.strip_name(name)
            taken = set(self.labels.values())
            if base in taken:   # (a later graph: TF2 uniquifies what this graph named by its own count)
                base = _graph_base(graph, name)
            label, i = base, 0
            while label in taken:   # (lazily: each candidate is made only when the last is taken)
                i += 1
                label = f"{base}_{i}"
            self.labels[key] = label
        return self.labels[key]

    # -- snapshots ------------------------------------------------------
    def read_variables(self, sess, partial: bool, only=None, initial: bool = False):
        gvars = [v for v in sess.graph.get_collection("variables") if only is None or v in only]
        trainable = {v.name for v in sess.graph.get_collection("trainable_variables")}
        if not gvars:
            return {}
        pairs = []
        try:
            pairs = list(zip(gvars, self.orig_run(sess, gvars)))
        except Exception:  # noqa: BLE001
            if not partial:
                return None
            for v in gvars:
                try:
                    pairs.append((v, self.orig_run(sess, v)))
                except Exception:  # noqa: BLE001
                    pass
        return {self.label(sess.graph, v.name): {"value": rc.encode_array(val), "trainable": v.name in trainable,
                                                 **({"random": initial_values.drawn(v)} if initial else {})}
                for v, val in pairs}

    def new_variables(self, sess) -> list:
        """Variables of this session's graph not read yet: a program may build
        several graphs (one per function) and initialize each in turn."""
        gid = id(sess.graph)
        return [v for v in sess.graph.get_collection("variables") if (gid, v.name) not in self.snapshotted]

    def maybe_snapshot_init(self, sess) -> None:
        """Before and after every run until new variables can be read: right
        after their initializer ran, before any update."""
        fresh = self.new_variables(sess)
        if fresh:
            self.snapshot_init(sess, partial=False, only=fresh)

    def snapshot_init(self, sess, partial: bool, only=None) -> bool:
        only = self.new_variables(sess) if only is None and sess is not None else only
        values = self.read_variables(sess, partial, only, initial=True) if sess is not None else {}
        if values is None:
            return False
        gid = id(sess.graph) if sess is not None else None
        self.snapshotted |= {(gid, v.name) for v in only or ()}
        self.init_values.update(values)
        self.init_done = True
        self.trace.write_atomic(rc.INIT_FILE, {"variables": self.init_values, "partial": partial, "final": False})
        self.trace.event("init", count=len(values), partial=partial)
        return True

    def snapshot_final(self, sess) -> None:
        try:
            values = self.read_variables(sess, partial=True)
        except Exception:  # noqa: BLE001
            return
        if values:
            self.trace.write_atomic("original.final.json", {"variables": values, "steps": self.budget.steps})


def _graph_base(graph, name: str) -> str:
    """The name a variable was asked for, where its graph made it unique: `w_2` is `w`
    when `w` (and `w_1`) came before it in the same graph. TF2 does not uniquify
    names, and the migrated side numbers them over the whole program; so a second
    graph's `Variable_1` is the program's third `Variable`, not a clash."""
    stripped = rc.strip_name(name)
    found = re.fullmatch(r"(.+)_([1-9][0-9]*)", stripped)
    if found is None:
        return stripped
    earlier = set()
    for var in graph.get_collection("variables"):
        if var.name == name:
            break
        earlier.add(rc.strip_name(var.name))
    base, count = found.group(1), int(found.group(2))
    wanted = {base} | {f"{base}_{k}" for k in range(1, count)}
    return base if wanted <= earlier else stripped
