"""Run a migrated TF2 program and trace it.

Usage: ``python -m tf1gradfix.verify.runner_v2 TRACE_DIR SCRIPT [--cwd DIR] [-- ARGS...]``.

An outermost ``tf.function``'s first call runs eagerly, so every traced
quantity is a concrete value and its variables are made outside any graph;
later calls run as graphs that also return what the verifier records
(graph_calls.py).  Variables are created normally and then overwritten with the
original program's initial values of the same name (read from
``init.json``), so both programs start from the same point instead of from
two different random draws.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import threading

from tf1gradfix.verify import aligned_random, aligned_shuffles, budget, cell_weights, graph_calls, lockstep_files
from tf1gradfix.verify import lockstep_v2, mnist_data
from tf1gradfix.verify import random_ops
from tf1gradfix.verify import runner_common as rc
from tf1gradfix.verify import settings, summary_values
from tf1gradfix.verify.variables_v2 import V2Variables

KERAS_OPTIMIZER_MODULE = "keras.src.optimizers.base_optimizer"


class PostImportHook(importlib.abc.MetaPathFinder):
    """Call ``callback(module)`` right after a named module is executed.

    Keras is imported lazily by TensorFlow; importing it ourselves would cost
    every run a second or two, so its optimizer is patched only if the
    program actually loads it.
    """

    def __init__(self, targets: dict):
        self.targets = dict(targets)

    def find_spec(self, name, path, target=None):
        if name not in self.targets:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        callback = self.targets.pop(name)
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            callback(module)

        loader.exec_module = exec_module
        return spec


class V2Tracer(V2Variables):
    """Creator scope + GradientTape/optimizer patches for the migrated side."""

    def __init__(self, tf, trace: rc.Trace, wait: float):
        self.tf, self.trace, self.wait = tf, trace, wait
        self.local = threading.local()
        self.init = None                  # name -> {"value", "trainable"}
        self.init_final = False           # the original will read no more variables
        self.init_stamp = 0
        self.created: list = []           # (name, tf.Variable)
        self.names: dict = {}             # id(tf.Variable) -> mapped name
        self.mapped: set = set()          # id(tf.Variable) of those given an original's value
        self.used: set = set()
        self.taken: set = set()           # original names already mapped
        self.layer_pairs: dict = {}       # migrated layer prefix -> original prefix (matched by order)
        self.own_draws: list = []         # (original name, own value, original's value, random) of random ones
        self.steps = 0                    # gradient computations recorded so far
        self.randomness = random_ops.EagerRandomness(self)
        self.draws = aligned_random.EagerDraws(trace, self)
        self.budget = budget.StepCounter(budget.limit_from_env())
        if trace is not None:   # (the trace cap stops the side at its next step)
            trace.counter = self.budget
        self.cells = cell_weights.CellWeights()   # Keras RNN cells <-> the original cells
        self.unit = None                  # within an outermost tf.function call: has it trained yet?
        self.graph_calls = graph_calls.GraphCalls(tf, self)
        self.lockstep = lockstep_v2.Lockstep(self, wait) if lockstep_files.active() else None

    # -- naming sources ---------------------------------------------------
    def source_name(self, src, index: int) -> str:
        for obj in (src, getattr(src, "_value", None)):
            if obj is not None and id(obj) in self.names:
                return self.names[id(obj)]
        if isinstance(src, self.tf.Variable):
            return rc.strip_name(src.name)
        return f"source[{index}]"

    def value(self, g):
        if isinstance(g, self.tf.IndexedSlices):
            g = self.tf.convert_to_tensor(g)
        return g.numpy() if hasattr(g, "numpy") else g

    # -- patches ------------------------------------------------------------
    def install(self) -> None:
        tf, tracer = self.tf, self
        orig_gradient = tf.GradientTape.gradient

        def gradient(self, target, sources, *args, **kwargs):
            grads = orig_gradient(self, target, sources, *args, **kwargs)
            if not tracer.busy() and (tf.executing_eagerly() or tracer.graph_calls.tracing()):
                tracer.enter()
                try:
                    tracer.record_compute(target, sources, grads)
                except Exception as exc:  # noqa: BLE001 - tracing must never break the program
                    tracer.trace.event("note", text=f"gradient not traced: {type(exc).__name__}: {exc}"[:500])
                finally:
                    tracer.leave()
            return grads

        tf.GradientTape.gradient = gradient
        self.randomness.install()
        self.draws.install(self.draws.make)
        self.patch_function_arguments()

        from tensorflow.python.training import optimizer as v1_optimizer
        orig_v1_apply = v1_optimizer.Optimizer.apply_gradients

        def v1_apply(self, grads_and_vars, *args, **kwargs):
            gav = list(grads_and_vars)
            tracer.record_apply([g for g, _ in gav], [v for _, v in gav])
            lockstep = tracer.lockstep_update()
            if lockstep is not None:
                gav = list(zip(lockstep.substitute(self, [g for g, _ in gav], [v for _, v in gav]), [v for _, v in gav]))
            tracer.enter()
            try:
                return orig_v1_apply(self, gav, *args, **kwargs)
            finally:
                tracer.leave()
                if lockstep is not None:
                    lockstep.after_apply(self, [v for _, v in gav])

        v1_optimizer.Optimizer.apply_gradients = v1_apply
        if KERAS_OPTIMIZER_MODULE in sys.modules:
            self.patch_keras(sys.modules[KERAS_OPTIMIZER_MODULE])
        else:
            sys.meta_path.insert(0, PostImportHook({KERAS_OPTIMIZER_MODULE: self.patch_keras}))

    def patch_function_arguments(self) -> None:
        """Keep tf.function's argument conversion when its body runs eagerly.

        A traced ``tf.function`` receives NumPy arrays as tensors, converted to
        its ``input_signature``'s dtypes (a float64 array bound to a float32
        spec arrives as float32); run eagerly it would receive the arrays
        themselves, and code such as ``tape.watch(x)`` or ``x.shape.rank`` would
        fail or behave differently.  Convert them as tracing would: to the
        spec's dtype where the signature gives one, else with their own dtype.
        """
        from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
        import numpy as np
        tf, orig_call, tracer = self.tf, pf.Function.__call__, self

        def convert(x, dtype=None):
            if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc":
                return tf.constant(x, dtype=dtype)
            if dtype is not None and isinstance(x, (list, tuple, int, float)):
                return tf.constant(x, dtype=dtype)
            return x

        def converted(fn, args, kwds):
            for attempt in (lambda: _bound_to_signature(fn, args, kwds, convert, tf),
                            lambda: tf.nest.map_structure(convert, (args, kwds))):
                try:
                    return attempt()
                except Exception:  # noqa: BLE001 - an odd structure: the next way, else unchanged
                    pass
            return args, kwds

        def __call__(self, *args, **kwds):
            if tracer.unit is None and not tracer.busy():
                return tracer.unit_call(orig_call, self, args, kwds)
            if self._run_functions_eagerly:
                args, kwds = converted(self, args, kwds)
            return orig_call(self, *args, **kwds)

        pf.Function.__call__ = __call__
        self.converted = converted

    def unit_call(self, orig_call, fn, args, kwds):
        """An outermost tf.function call: one step if it trains, one call (see budget.py)."""
        if self.budget.due(False):
            rc.stop_here(self.trace, self.budget, self.at_exit)
        if self.lockstep is not None:
            self.lockstep.before_call(fn)
        steps = self.budget.steps
        self.unit = False
        try:
            return self.graph_calls.call(orig_call, fn, args, kwds, lambda: self.eager_call(orig_call, fn, args, kwds))
        finally:
            self.unit = None
            self.budget.calls += 1
            if self.lockstep is not None:
                self.lockstep.after_call(fn, steps)

    def eager_call(self, orig_call, fn, args, kwds):
        """`fn`'s body run eagerly (functions it calls too), its arguments converted as a trace would."""
        config = self.tf.config
        was = config.functions_run_eagerly()
        config.run_functions_eagerly(True)
        try:
            args, kwds = self.converted(fn, args, kwds)
            return orig_call(fn, *args, **kwds)
        finally:
            config.run_functions_eagerly(was)

    def before_graph_call(self, trains: bool) -> None:
        """A graph call that trains begins a step: stop first if the budget is spent."""
        if trains and self.budget.due(True):
            rc.stop_here(self.trace, self.budget, self.at_exit)

    def after_graph_call(self, plan, values: list) -> None:
        """Write the events a graph call recorded, as an eager call would have."""
        at = 0
        for kind, names, none, n_targets in plan.events:
            targets, grads = values[at:at + n_targets], values[at + n_targets:at + n_targets + len(names)]
            at += n_targets + len(names)
            if kind == "compute":
                self.emit_compute(targets, names, grads, none)
            else:
                self.emit_apply(names, grads)

    def step_event(self, kind: str, loss=None) -> None:
        """Before a traced event: count the step it may begin; stop if the budget is spent."""
        if self.unit is None:
            begins = self.budget.begins(kind, loss)
            if begins and self.lockstep is not None:
                self.lockstep.step_outside_function()
        else:
            begins, self.unit = not self.unit, True
            self.budget.last = (kind, loss)
        if begins:
            if self.budget.due(True):
                rc.stop_here(self.trace, self.budget, self.at_exit)
            self.budget.steps += 1

    def patch_keras(self, module) -> None:
        tracer, Base = self, module.BaseOptimizer
        orig_apply = Base.apply

        def apply(self, grads, trainable_variables=None):
            grads = list(grads)
            variables = list(trainable_variables) if trainable_variables is not None \
                else list(getattr(self, "_trainable_variables", []))
            tracer.record_apply(grads, variables)
            lockstep = tracer.lockstep_update()
            if lockstep is not None:
                grads = lockstep.substitute(self, grads, variables)
            tracer.enter()
            try:
                return orig_apply(self, grads, trainable_variables)
            finally:
                tracer.leave()
                if lockstep is not None:
                    lockstep.after_apply(self, variables)

        Base.apply = apply

    def lockstep_update(self):
        """The lockstep run when this update is the program's own (not one inside another), else None."""
        if self.lockstep is None or self.busy() or not self.tf.executing_eagerly():
            return None
        return self.lockstep

    def record_compute(self, target, sources, grads) -> None:
        nest = self.tf.nest
        flat_src, flat_grads, flat_targets = nest.flatten(sources), nest.flatten(grads), nest.flatten(target)
        names = [self.source_name(s, i) for i, s in enumerate(flat_src)]
        if self.graph_calls.tracing():
            from tensorflow.python.eager import record
            if record.could_possibly_record():   # under another tape: a gradient of gradients
                self.graph_calls.refuse("it computes gradients under another tape (higher-order gradients)")
            self.graph_calls.record("compute", names, flat_grads, flat_targets)
            return
        pairs = [(n, self.value(g)) for n, g in zip(names, flat_grads) if g is not None]
        self.emit_compute([self.value(t) for t in flat_targets], [n for n, _ in pairs], [g for _, g in pairs],
                          [n for n, g in zip(names, flat_grads) if g is None])

    def emit_compute(self, targets: list, names: list, grads: list, none: list) -> None:
        self.randomness.flush()
        self.steps += 1
        loss = rc.loss_value(targets)
        self.step_event("compute", loss)
        folded = self.cells.fold(dict(zip(names, grads)), False)
        self.trace.event("compute", loss=loss, grads={n: rc.encode_array(g) for n, g in folded.items()},
                         none=none)

    def record_apply(self, grads, variables) -> None:
        if self.busy():
            return
        try:
            names = [self.source_name(v, i) for i, v in enumerate(variables)]
            if self.graph_calls.tracing():
                self.graph_calls.record("apply", names, list(grads))
                return
            if not self.tf.executing_eagerly():
                return
            pairs = [(n, self.value(g)) for n, g in zip(names, grads) if g is not None]
            self.emit_apply([n for n, _ in pairs], [g for _, g in pairs])
        except Exception as exc:  # noqa: BLE001 - tracing must never break the program
            self.trace.event("note", text=f"update not traced: {type(exc).__name__}: {exc}"[:500])

    def emit_apply(self, names: list, grads: list) -> None:
        self.randomness.flush()
        self.step_event("apply")
        folded = self.cells.fold(dict(zip(names, grads)), False)
        self.trace.event("apply", grads={n: rc.encode_array(g) for n, g in folded.items()})

    def at_exit(self) -> None:
        if self.lockstep is not None:
            self.lockstep.at_exit()
        self.randomness.flush()
        self.draws.summary()
        self.trace.event("functions", **self.graph_calls.summary())
        values = {}
        for name, var in self.created:
            try:
                values[name] = {"value": rc.encode_array(var.numpy()), "trainable": bool(var.trainable)}
            except Exception:  # noqa: BLE001 - a deleted or uninitialized variable
                pass
        folded = self.cells.fold({n: v["value"] for n, v in values.items()}, True, rc.encode_array, rc.decode_array)
        values = {n: values.get(n) or {"value": v, "trainable": True} for n, v in folded.items()}
        self.trace.write_atomic("migrated.final.json", {"variables": values, "steps": self.budget.steps})


def _bound_to_signature(fn, args, kwds, convert, tf):
    """(args, kwds) of a call of `fn` converted as its traced call would bind them:
    each argument an `input_signature` spec covers takes the spec's dtype."""
    import inspect

    signature = getattr(fn, "input_signature", None)
    python = getattr(fn, "python_function", None)
    if not signature or python is None:
        return tf.nest.map_structure(convert, (args, kwds))
    names = [p.name for p in inspect.signature(python).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    specs = dict(zip(names, signature))

    def one(name, value):
        spec = specs.get(name)
        if isinstance(spec, tf.TensorSpec):
            return convert(value, spec.dtype)
        if spec is not None:   # a nested signature: its specs, element by element
            return tf.nest.map_structure(lambda s, v: convert(v, getattr(s, "dtype", None)), spec, value)
        return tf.nest.map_structure(convert, value)

    new_args = tuple(one(name, value) for name, value in zip(names, args)) + \
        tuple(tf.nest.map_structure(convert, v) for v in args[len(names):])
    return new_args, {k: one(k, v) for k, v in kwds.items()}


def main(argv: list[str]) -> int:
    trace_dir, script, cwd, args = budget.runner_args(argv)
    os.environ.pop("TF_USE_LEGACY_KERAS", None)
    rc.quiet_tensorflow_env()
    rc.seed_python()
    import tensorflow as tf

    tf.random.set_seed(rc.SEED)
    mnist_data.install_v2(tf)   # (the synthetic MNIST the original reads)
    if settings.get(graph_calls.EAGER_ENV) == "1":
        tf.config.run_functions_eagerly(True)
    trace = rc.Trace(trace_dir, "migrated")
    tracer = V2Tracer(tf, trace, wait=float(settings.get("TF1GRADFIX_INIT_WAIT", "300")))
    tracer.install()
    aligned_shuffles.install(tracer.randomness.restarted)   # (as the original side seeds them)
    summary_values.install_v2(tf, trace)
    trace.event("start", side="migrated", script=os.path.abspath(script))
    with tf.variable_creator_scope(tracer.creator):
        return rc.run_user_script(script, trace, before_exit=tracer.at_exit, argv=args, cwd=cwd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
