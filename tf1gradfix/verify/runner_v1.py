"""Run an original TF1 program under TF1 semantics and trace it.

Usage: ``python -m tf1gradfix.verify.runner_v1 TRACE_DIR SCRIPT [--cwd DIR] [-- ARGS...]``.

The program runs unmodified: ``import tensorflow as tf`` resolves to
``tensorflow.compat.v1`` with v2 behaviour disabled.  Gradients are traced
by registering the tensors that ``tf.gradients`` / ``compute_gradients`` /
``apply_gradients`` create, and adding them to the fetches of the very
``Session.run`` that executes them.  One run executes each op once, so the
extra fetches observe the program without changing what it computes.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

from tf1gradfix.verify import aligned_random, aligned_shuffles, budget, contrib_v1, lockstep_files, lockstep_v1
from tf1gradfix.verify import mnist_data
from tf1gradfix.verify import random_ops
from tf1gradfix.verify import runner_common as rc
from tf1gradfix.verify import settings, summary_values
from tf1gradfix.verify.variables_v1 import V1Variables

_WALK_BUDGET = 20000  # graph ops visited per cached ancestor walk


class V1Tracer(V1Variables):
    """Patches Session/Optimizer/tf.gradients and writes the original's trace."""

    def __init__(self, trace: rc.Trace):
        from tensorflow.python.client import session as session_lib
        from tensorflow.python.framework import errors, indexed_slices, ops
        from tensorflow.python.ops import gradients_impl, variables
        from tensorflow.python.training import optimizer as optimizer_lib
        from tensorflow.python.util import nest

        self.trace = trace
        self.session_lib, self.errors, self.ops = session_lib, errors, ops
        self.IndexedSlices = indexed_slices.IndexedSlices
        self.Variable = variables.Variable
        self.optimizer_lib, self.gradients_impl, self.nest = optimizer_lib, gradients_impl, nest
        self.local = threading.local()
        self.entries: list[dict] = []          # compute entries, in creation order
        self.by_grad: dict = {}                # tensor key -> compute entry
        self.by_op: dict = {}                  # train-op key -> apply entry
        self.walk_cache: dict = {}             # fetch key -> (computes, applies)
        self.ph_cache: dict = {}               # tensor key -> placeholder names
        self.init_done = False
        self.init_values: dict = {}            # every graph's variables, as first read (init.json)
        self.labels: dict = {}                 # (graph id, variable name) -> name in traces
        self.graphs_seen: dict = {}
        self.snapshotted: set = set()          # (graph id, variable name) already in init_values
        self.last_session = None
        self.sessions = weakref.WeakSet()
        self.run_index = 0
        self.steps = 0                         # gradient computations traced so far
        self.draws = aligned_random.GraphDraws(trace)
        self.randomness = random_ops.GraphRandomness(self, self.draws)
        self.budget = budget.StepCounter(budget.limit_from_env())   # a training step is one run
        if trace is not None:   # (the trace cap stops the side at its next step)
            trace.counter = self.budget
        self.lockstep = lockstep_v1.StateRecorder(self, float(settings.get("TF1GRADFIX_INIT_WAIT", "300"))) \
            if lockstep_files.active() else None

    # -- keys ---------------------------------------------------------
    def tkey(self, t):
        if isinstance(t, self.IndexedSlices):
            t = t.values
        return (id(t.graph), t.name)

    def okey(self, op):
        return (id(op.graph), "^" + op.name)

    # -- registration -------------------------------------------------
    def register_compute(self, ys, pairs, graph) -> None:
        """``pairs`` = [(source name, grad tensor or None)]."""
        ys = [y for y in (ys if isinstance(ys, (list, tuple)) else [ys]) if y is not None]
        entry = {"id": len(self.entries), "loss": ys,
                 "grads": [(n, g) for n, g in pairs if g is not None],
                 "none": [n for n, g in pairs if g is None]}
        self.entries.append(entry)
        for _, g in entry["grads"]:
            self.by_grad.setdefault(self.tkey(g), entry)

    def install(self) -> None:
        tracer = self
        Opt = self.optimizer_lib.Optimizer
        orig_compute, orig_apply = Opt.compute_gradients, Opt.apply_gradients

        def compute_gradients(self, loss, var_list=None, *args, **kwargs):
            tracer.enter()
            try:
                gav = orig_compute(self, loss, var_list, *args, **kwargs)
            finally:
                tracer.leave()
            if not tracer.busy() and not callable(loss):
                gav = list(gav)
                tracer.register_compute(loss, [(tracer.var_name(v, i), g) for i, (g, v) in enumerate(gav)],
                                        loss.graph)
            return gav

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            gav = list(grads_and_vars)
            tracer.enter()
            try:
                op = orig_apply(self, gav, global_step=global_step, name=name)
            finally:
                tracer.leave()
            if not tracer.busy() and op is not None and hasattr(op, "graph"):
                grads = [(tracer.var_name(v, i), g) for i, (g, v) in enumerate(gav) if g is not None]
                tracer.by_op[tracer.okey(op)] = {"grads": grads}
                if tracer.lockstep is not None:
                    tracer.lockstep.applied(self, [v for g, v in gav if g is not None])
            return op

        Opt.compute_gradients, Opt.apply_gradients = compute_gradients, apply_gradients

        orig_gradients = self.gradients_impl.gradients

        def gradients(ys, xs, *args, **kwargs):
            tracer.enter()
            try:
                grads = orig_gradients(ys, xs, *args, **kwargs)
            finally:
                tracer.leave()
            if not tracer.busy():
                xs_list = xs if isinstance(xs, (list, tuple)) else [xs]
                graph = grads[0].graph if grads and grads[0] is not None else None
                names = [tracer.var_name(x, i, graph) for i, x in enumerate(xs_list)]
                tracer.register_compute(ys, list(zip(names, grads)), graph)
            return grads

        # Public API modules only (compat.v1 is a caching wrapper around one of
        # them); TF-internal callers keep the original function.
        for name, mod in list(sys.modules.items()):
            if name.startswith(("tensorflow._api", "tensorflow.compat")) and \
                    getattr(mod, "gradients", None) is orig_gradients:
                setattr(mod, "gradients", gradients)

        Base = self.session_lib.BaseSession
        orig_run, orig_close, orig_init = Base.run, Base.close, Base.__init__
        self.orig_run = orig_run

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            tracer.sessions.add(self)

        def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
            if tracer.busy():
                return orig_run(self, fetches, feed_dict, options, run_metadata)
            tracer.enter()
            try:
                return tracer.traced_run(self, fetches, feed_dict, options, run_metadata)
            finally:
                tracer.leave()

        def close(self):
            if not getattr(self, "_closed", True) and self is tracer.last_session:
                tracer.snapshot_final(self)
                if tracer.lockstep is not None:
                    tracer.lockstep.final(self, tracer.budget.steps)
            return orig_close(self)

        Base.__init__, Base.run, Base.close = __init__, run, close

    # -- Session.run --------------------------------------------------
    def traced_run(self, sess, fetches, feed_dict, options, run_metadata):
        """The user's run plus the traced tensors; tracing trouble never breaks the run.
        The final values are read from the session that ran last, a session that only
        initialized its variables aside (its values are its own: no other run reads them)."""
        if self.last_session is None:
            self.last_session = sess
        extra, layout, checks, preds = [], [], [], []
        training, initialized = False, self.init_done
        try:
            self.maybe_snapshot_init(sess)
            fetch_ops = self.fetch_ops(sess, fetches)
            if not self.initializes_only(fetch_ops):
                self.last_session = sess
            computes, applies = self.plan(fetch_ops)
            training = bool(computes or applies)
            if (computes or applies) and not self.init_done:
                self.snapshot_init(sess, partial=True)
            fetchable = self.fetchable(sess, feed_dict)
            extra, layout = self.extra_fetches(computes, applies, fetchable)
            checks, preds = self.randomness.plan(fetch_ops, fetchable)
            sites = self.randomness.host_sites(fetch_ops)
        except Exception as exc:  # noqa: BLE001
            self.note(f"run {self.run_index}: not traced ({type(exc).__name__}: {exc})")
            extra, layout, checks, preds, sites = [], [], [], [], []
        if self.budget.due(training):
            rc.stop_here(self.trace, self.budget, self.at_exit)
        step = self.budget.steps + 1
        if training and self.lockstep is not None:
            self.lockstep.guarded(self.lockstep.before_run, sess, step)
        self.draws.begin_run(training, self.budget.steps, sites, updating=bool(applies))
        try:
            if extra or preds:
                result, values = self.orig_run(sess, (fetches, extra + preds), feed_dict, options, run_metadata)
            else:
                result, values = self.orig_run(sess, fetches, feed_dict, options, run_metadata), []
        finally:
            self.draws.end_run()
        self.run_index += 1
        self.budget.steps += training
        self.budget.calls += initialized
        try:
            if checks:
                pred_values = {p.name: v for p, v in zip(preds, values[len(extra):])}
                executed = self.randomness.executed(checks, pred_values)
                if executed:
                    self.trace.event("random", step=self.steps + 1, training=bool(layout),
                                     ops=executed[:20], count=len(executed))
            if extra:
                self.emit(layout, values[:len(extra)])
            if training and self.lockstep is not None:
                self.lockstep.guarded(self.lockstep.after_run, step, layout, values[:len(extra)])
                self.steps += sum(1 for kind, *_ in layout if kind == "compute")
            self.maybe_snapshot_init(sess)
        except Exception as exc:  # noqa: BLE001
            self.note(f"run {self.run_index - 1}: trace incomplete ({type(exc).__name__}: {exc})")
        return result

    def initializes_only(self, fetch_ops) -> bool:
        """Does the run only initialize variables (`sess.run(tf.global_variables_initializer())`)?"""
        if not fetch_ops:
            return False
        graph = fetch_ops[0].graph
        initializers = {v.initializer for key in ("variables", "local_variables") for v in graph.get_collection(key)}
        return all(op in initializers or op.type == "NoOp" and op.control_inputs
                   and all(c in initializers for c in op.control_inputs) for op in fetch_ops)

    def note(self, text: str) -> None:
        self.trace.event("note", text=text[:500])

    def ancestors_hit(self, op):
        """Compute/apply entries reachable from ``op`` (cached per op)."""
        key = self.okey(op)
        if key in self.walk_cache:
            return self.walk_cache[key]
        computes, applies, seen, stack = {}, {}, set(), [op]
        while stack and len(seen) < _WALK_BUDGET:
            cur = stack.pop()
            k = self.okey(cur)
            if k in seen:
                continue
            seen.add(k)
            if k in self.by_op:
                applies[k] = self.by_op[k]
            for out in cur.outputs:
                entry = self.by_grad.get(self.tkey(out))
                if entry is not None:
                    computes[entry["id"]] = entry
            stack.extend(t.op for t in cur.inputs)
            stack.extend(cur.control_inputs)
        self.walk_cache[key] = (computes, applies)
        return computes, applies

    def fetch_ops(self, sess, fetches) -> list:
        """The graph ops a run's fetches name (strings resolved, odd entries skipped)."""
        try:
            flat = self.nest.flatten(fetches)
        except Exception:  # noqa: BLE001
            return []
        ops = []
        for f in flat:
            el = f
            if isinstance(f, str):
                try:
                    el = sess.graph.as_graph_element(f)
                except Exception:  # noqa: BLE001
                    continue
            if isinstance(el, self.IndexedSlices):
                el = el.values
            op = el if isinstance(el, self.ops.Operation) else getattr(el, "op", None)
            if op is not None and hasattr(op, "graph"):
                ops.append(op)
        return ops

    def plan(self, fetch_ops):
        computes, applies = {}, {}
        if not self.entries and not self.by_op:
            return [], []
        for op in fetch_ops:
            c, a = self.ancestors_hit(op)
            computes.update(c)
            applies.update(a)
        return [computes[k] for k in sorted(computes)], list(applies.values())

    def placeholders(self, t):
        """Placeholders a tensor needs (so an extra fetch never breaks a run)."""
        key = self.tkey(t)
        if key not in self.ph_cache:
            base = t.values if isinstance(t, self.IndexedSlices) else t
            need, seen, stack = set(), set(), [base.op]
            while stack and len(seen) < _WALK_BUDGET:
                op = stack.pop()
                if op.name in seen:
                    continue
                seen.add(op.name)
                if op.type in ("Placeholder", "PlaceholderV2"):
                    need.add(op.name)
                stack.extend(x.op for x in op.inputs)
            self.ph_cache[key] = need
        return self.ph_cache[key]

    def fetchable(self, sess, feed_dict):
        """A test: can this tensor be added to the run's fetches (its placeholders are fed)?"""
        fed = set()
        for k in (feed_dict or {}):
            try:
                el = sess.graph.as_graph_element(k) if isinstance(k, str) else k
                fed.add(el.op.name if hasattr(el, "op") else el.name)
            except Exception:  # noqa: BLE001
                pass
        graph = sess.graph

        def ok(t):
            base = t.values if isinstance(t, self.IndexedSlices) else t
            return graph.is_fetchable(base) and self.placeholders(t) <= fed
        return ok

    def extra_fetches(self, computes, applies, ok):
        extra, layout = [], []
        for entry in computes:
            losses = [y for y in entry["loss"] if ok(y)]
            losses = losses if len(losses) == len(entry["loss"]) else []
            grads = [(n, g) for n, g in entry["grads"] if ok(g)]
            layout.append(("compute", entry, len(losses), [n for n, _ in grads]))
            extra.extend(losses)
            extra.extend(g for _, g in grads)
        for app in applies:
            grads = [(n, g) for n, g in app["grads"] if ok(g)]
            layout.append(("apply", app, 0, [n for n, _ in grads]))
            extra.extend(g for _, g in grads)
        return extra, layout

    def dense(self, value):
        if hasattr(value, "indices") and hasattr(value, "values"):
            return rc.densify_slices(value.values, value.indices, value.dense_shape)
        return value

    def emit(self, layout, values) -> None:
        pos = 0
        for kind, entry, nloss, names in layout:
            losses, pos = values[pos:pos + nloss], pos + nloss
            grads, pos = values[pos:pos + len(names)], pos + len(names)
            payload = {"run": self.run_index,
                       "grads": {n: rc.encode_array(self.dense(g)) for n, g in zip(names, grads)}}
            if kind == "compute":
                payload["loss"] = rc.loss_value(losses) if nloss else None
                payload["none"] = entry["none"]
            self.trace.event(kind, **payload)

    def at_exit(self) -> None:
        self.draws.summary()
        sess = self.last_session
        if sess is not None and not getattr(sess, "_closed", True):
            self.snapshot_final(sess)
            if self.lockstep is not None:
                self.lockstep.final(sess, self.budget.steps)
        if not self.init_done:
            self.trace.write_atomic(rc.INIT_FILE, {"variables": {}, "partial": True, "final": True,
                                                   "note": "the original never initialized its variables"})
        else:   # the migrated side stops waiting for variables of graphs not built yet
            self.trace.write_atomic(rc.INIT_FILE, {"variables": self.init_values, "partial": False, "final": True})


def alias_tensorflow(v1, script: str) -> None:
    """Make ``import tensorflow as tf`` in the user's file mean compat.v1."""
    try:
        with open(script, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        text = ""
    if "layers" in text or "keras" in text:
        for attr in ("layers", "keras"):  # load lazily imported parts while names are real
            try:
                getattr(v1, attr)
            except Exception:  # noqa: BLE001
                pass
    sys.modules["tensorflow"] = v1


def main(argv: list[str]) -> int:
    trace_dir, script, cwd, args = budget.runner_args(argv)
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    rc.quiet_tensorflow_env()
    rc.seed_python()
    import tensorflow.compat.v1 as v1

    verbosity = v1.logging.get_verbosity()
    v1.logging.set_verbosity(v1.logging.ERROR)   # our own call's deprecation notice is noise
    v1.disable_v2_behavior()
    v1.logging.set_verbosity(verbosity)
    v1.set_random_seed(rc.SEED)
    aligned_shuffles.install()   # (tf.data shuffles seeded by call order, as the migrated side seeds them)
    contrib_v1.install(v1)   # (TF2 has no tf.contrib: the rows the rewrite maps, modelled)
    mnist_data.install_v1(v1)   # (nor tensorflow.examples: its MNIST loader, modelled, on synthetic data)
    trace = rc.Trace(trace_dir, "original")
    tracer = V1Tracer(trace)
    tracer.install()
    tracer.draws.install(tracer.draws.make)
    summary_values.install_v1(v1, trace)
    alias_tensorflow(v1, script)
    trace.event("start", side="original", script=os.path.abspath(script))
    return rc.run_user_script(script, trace, before_exit=tracer.at_exit, argv=args, cwd=cwd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
