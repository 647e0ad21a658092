"""The original's side of a lockstep run: its state before every training step.

Before each training ``Session.run`` the recorder reads every variable of the
graph in a run of its own (a run that fetches variables executes nothing
else, so the training run after it computes what it would have computed) and
writes them with a map of the optimizers' slots (lockstep_files.py). After
the run it writes the gradients each optimizer applied, which the migration
applies in their place (lockstep_v2.py). A program that trains its graphs one
after the other (a fresh default graph per experiment) is followed graph by
graph: each state names its graph's index, the variables of the graphs before
it (the migration keeps them as they are) and every variable the original has
made so far. Where the last graph's end state took a step's name, the next
graph's first state is written beside it (`state-K-graphN`), for the migration
to read at its first update there. A program that goes back to a graph it left
is refused (the plain run's verdict stands).
"""

from __future__ import annotations

import time

from tf1gradfix.verify import lockstep_files as files


class StateRecorder:
    """Writes the original's state before each training run and the gradients it applied."""

    def __init__(self, tracer, wait: float):
        self.tracer = tracer
        self.folder = files.folder(tracer.trace.dir)
        self.wait = wait
        self.optimizers: list = []      # (v1 optimizer, [variables it applies to])
        self.graph = None               # the graph whose training runs are followed now
        self.session = None             # the session of the last training run
        self.left: list = []            # the graphs trained before it, in order
        self.off = False
        self.written = 0                # the step of the final state written

    def refuse(self, why: str) -> None:
        if not self.off:
            self.off = True
            files.refuse(self.folder, "original", why)
            self.tracer.trace.event("lockstep", status="refused", side="original", reason=why)

    def applied(self, optimizer, variables: list) -> None:
        """An `apply_gradients` of the program (graph construction)."""
        self.optimizers.append((optimizer, list(variables)))

    def slot_map(self, graph) -> list:
        """[{class, slots: {variable: {slot name: slot variable}}}] of the optimizers of `graph`."""
        label, out = self.tracer.label, []
        for opt, variables in self.optimizers:
            slots: dict = {}
            for v in variables:
                if getattr(v, "graph", None) is not graph:
                    continue
                names = {}
                for slot in opt.get_slot_names():
                    var = opt.get_slot(v, slot)
                    if var is not None:
                        names[slot] = label(graph, var.name)
                slots[label(graph, v.name)] = names
            if slots:
                out.append({"class": type(opt).__name__, "slots": slots})
        return out

    def state(self, sess) -> dict:
        gvars = sess.graph.get_collection("variables")
        values = self.tracer.orig_run(sess, gvars) if gvars else []
        return {self.tracer.label(sess.graph, v.name): value for v, value in zip(gvars, values)}

    def guarded(self, what, *args) -> None:
        """A fault of the recorder refuses lockstep; the program's run goes on as it would."""
        if self.off or files.stopped(self.folder):
            return
        try:
            what(*args)
        except Exception as exc:  # noqa: BLE001
            self.refuse(f"the original's state could not be recorded ({type(exc).__name__}: {exc})"[:400])

    def before_run(self, sess, step: int) -> None:
        """Before training run `step` (1-based): write the state it starts from."""
        self.session = sess
        if self.graph is None:
            self.graph = sess.graph
        elif sess.graph is not self.graph:
            if any(g is sess.graph for g in self.left):
                self.refuse("the original trains a graph again after training another")
                return
            self.left.append(self.graph)
            self.graph = sess.graph
        if not files.wait_for_room(self.folder, time.monotonic() + self.wait):
            return
        graph = len(self.left) if self.written == step else None   # (the last graph's end holds this step's name)
        files.write(files.state_path(self.folder, step, graph), self.state(sess), self.meta(sess.graph, step, False))

    def meta(self, graph, step: int, final: bool) -> dict:
        """A state's description: its step, its graph's optimizers, the variables of the graphs
        trained before (the migration does not look for them in it) and all it has named."""
        left = {id(g) for g in self.left}
        earlier = sorted(label for (gid, _), label in self.tracer.labels.items() if gid in left)
        return {"step": step, "final": final, "optimizers": self.slot_map(graph), "graph": len(self.left),
                "earlier": earlier, "known": sorted(self.tracer.labels.values())}

    def after_run(self, step: int, layout: list, values: list) -> None:
        """The gradients each optimizer applied in training run `step` (layout: V1Tracer.extra_fetches)."""
        arrays, applies, pos = {}, [], 0   # type: ignore[var-annotated]
        for kind, _entry, nloss, names in layout:
            pos += nloss
            grads, pos = values[pos:pos + len(names)], pos + len(names)
            if kind != "apply":
                continue
            for name, grad in zip(names, grads):
                arrays[f"{len(applies)}:{name}"] = self.tracer.dense(grad)
            applies.append(list(names))
        files.write(files.grads_path(self.folder, step), arrays, {"step": step, "applies": applies})

    def final(self, sess, steps: int) -> None:
        """The state the program ended with (its session closing, its end, or the --steps cut):
        the end of its last step, written once, from the session that trained (a session
        closed before any training run, one that only initialized its own copy of the
        variables, holds no state of the training)."""
        if self.off or files.stopped(self.folder) or sess is None or getattr(sess, "_closed", True):
            return
        if sess is not self.session:
            return
        if (self.graph is not None and sess.graph is not self.graph) or self.written == steps + 1:
            return
        try:
            state = self.state(sess)
        except Exception:  # noqa: BLE001 - a broken session: the migration stops waiting when this side ends
            return
        self.written = steps + 1
        files.write(files.state_path(self.folder, steps + 1), state, self.meta(sess.graph, steps + 1, True))
