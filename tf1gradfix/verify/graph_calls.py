"""Outermost `tf.function` calls of the migrated side run as graphs, their
traced quantities returned as extra outputs.

Running every `tf.function` body eagerly, so that each gradient is a concrete
value the moment it is computed, costs a long program ten to thirty times its
plain run (the eager Keras optimizer alone is milliseconds per step). Instead:

* a function's first call runs eagerly, as before: its layers and optimizer
  slots are created then, and take the original's initial values; then it is
  traced with the same arguments, as TF2 traces it at that call (nothing runs):
  a function TF2 cannot trace fails the program there (`check_trace`);
* later calls run a traced copy of it whose outputs are the function's own
  results plus the tensors the verifier records (each gradient computation's
  targets and gradients, each update's gradients, in the order the body made
  them). After the call the runner writes those events as if it had seen them
  eagerly, so a trace reads the same either way.

A function stays eager when its trace would not be the computation the
verifier aligns or could not return what it records: a random op (aligned
draws are made eagerly), a variable created while tracing, a traced quantity
inside control flow or a nested function (its tensors belong to another graph),
gradients taken under another tape (higher-order gradients, whose graph runs
were seen to differ from run to run in the last digits a sqrt amplifies), or a
trace that fails. Each copy is traced before it runs
(`get_concrete_function`), so a refused trace has run nothing.
`TF1GRADFIX_EAGER_FUNCTIONS=1` keeps every call eager, as does a program that calls
`tf.config.run_functions_eagerly(True)` (it never traces in TF2 either).
"""

from __future__ import annotations

import contextlib
import functools
import os

from tf1gradfix.verify import settings

EAGER_ENV = "TF1GRADFIX_EAGER_FUNCTIONS"
_FIRST, _EAGER = "first", "eager"


class TraceFailed(Exception):
    """A function of the program that TF2 could not trace at its first call."""


@contextlib.contextmanager
def _quiet():
    """Python output of a check trace dropped (the eager call printed what the call prints)."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


class Plan:
    """What one trace of a copy records, in order: the events and their tensors."""

    def __init__(self, graph):
        self.graph = graph
        self.events: list = []      # (kind, names, none, number of targets)
        self.tensors: list = []     # targets then gradients of each event, flat
        self.invalid: str | None = None

    def add(self, tf, kind: str, names: list, grads: list, targets=()) -> None:
        if self.invalid:
            return
        try:
            values = [tf.convert_to_tensor(t) for t in targets]
            pairs = [(n, tf.convert_to_tensor(g)) for n, g in zip(names, grads) if g is not None]
        except Exception as exc:  # noqa: BLE001 - something a graph cannot return
            self.invalid = f"a traced value is not a tensor ({type(exc).__name__})"
            return
        if any(getattr(t, "graph", None) is not self.graph for t in values + [g for _, g in pairs]):
            self.invalid = "a traced value inside control flow or a nested function"
            return
        none = [n for n, g in zip(names, grads) if g is None]
        self.events.append((kind, [n for n, _ in pairs], none, len(values)))
        self.tensors.extend(values + [g for _, g in pairs])


class GraphCalls:
    """The mode of each outermost function, its traced copy, and the plans of its traces."""

    def __init__(self, tf, tracer):
        self.tf, self.tracer = tf, tracer
        self.states: dict = {}      # id(Function) -> (Function, _FIRST | _EAGER | copy)
        self.plans: dict = {}       # FuncGraph -> Plan
        self.plan: Plan | None = None   # the trace in progress
        self.counts = {"graph": 0, "eager": 0}
        self.kept_eager: dict = {}  # function name -> why
        self.off = settings.get(EAGER_ENV) == "1"

    # -- recording while a copy is traced ------------------------------------
    def tracing(self) -> bool:
        return self.plan is not None

    def refuse(self, why: str) -> None:
        if self.plan is not None and not self.plan.invalid:
            self.plan.invalid = why

    def record(self, kind: str, names: list, grads: list, targets=()) -> None:
        assert self.plan is not None
        self.plan.add(self.tf, kind, names, grads, targets)

    # -- calls ------------------------------------------------------------------
    def call(self, orig_call, fn, args, kwds, eager_call):
        """Run one outermost call of `fn`; `eager_call()` runs it eagerly."""
        key = id(fn)
        entry = self.states.get(key)
        off = self.off or self.tf.config.functions_run_eagerly()   # (the program's own choice: TF2 never traces)
        if off or entry is None or entry[1] == _EAGER:
            if entry is None:
                self.states[key] = (fn, _FIRST)
            self.counts["eager"] += 1
            result = eager_call()
            if entry is None and not off:
                self.check_trace(fn, args, kwds)
            return result
        copy = entry[1]
        if copy == _FIRST:
            copy = self.copy_of(fn)
            if copy is None:
                return self.keep_eager(fn, "it cannot be copied", eager_call)
            self.states[key] = (fn, copy)
        try:
            concrete = copy.get_concrete_function(*args, **kwds)
        except Exception as exc:  # noqa: BLE001 - the eager run reports the program's own errors
            return self.keep_eager(fn, f"its trace failed ({type(exc).__name__})", eager_call)
        plan = self.plans.get(concrete.graph)
        if plan is None or plan.invalid:
            return self.keep_eager(fn, plan.invalid if plan is not None else "its trace was not seen", eager_call)
        self.tracer.before_graph_call(bool(plan.events))
        result, extras = orig_call(copy, *args, **kwds)
        self.counts["graph"] += 1
        self.tracer.after_graph_call(plan, [t.numpy() for t in extras])
        return result

    def check_trace(self, fn, args, kwds) -> None:
        """TF2 traces a function at its first call, which here ran eagerly: trace it now with the
        same arguments (its layers and slots exist; nothing runs), so an error only a trace
        raises (Python control flow on a tensor, a shape the signature leaves unknown, `.numpy()`)
        fails the program at that call, as it would in TF2. The copy traced here is the one later
        calls run; only if its trace fails is the function's own trace the judge (the copy also
        returns what the verifier records). Output printed while tracing is not the program's."""
        copy = self.copy_of(fn)
        if copy is not None:
            self.states[id(fn)] = (fn, copy)
            try:
                with _quiet():
                    copy.get_concrete_function(*args, **kwds)
                return
            except Exception:  # noqa: BLE001 - the function's own trace decides
                pass
        try:
            with _quiet():
                fn.get_concrete_function(*args, **kwds)
        except Exception as exc:
            raise TraceFailed(f"{getattr(fn, '__name__', 'function')}: {type(exc).__name__}: {exc}") from exc

    def keep_eager(self, fn, why: str, eager_call):
        self.states[id(fn)] = (fn, _EAGER)
        self.kept_eager[getattr(fn, "__name__", "function")] = why
        self.counts["eager"] += 1
        return eager_call()

    def copy_of(self, fn):
        """A Function like `fn` whose body also returns what its trace recorded."""
        from tensorflow.python.eager.polymorphic_function import autograph_util
        from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
        from tensorflow.python.framework import ops

        from tensorflow.python.autograph.core import ag_ctx

        python = getattr(fn, "_python_function", None)
        if python is None:
            return None
        body = autograph_util.py_func_from_autograph(python, fn._experimental_autograph_options) \
            if fn._autograph else python
        status = ag_ctx.Status.ENABLED if fn._autograph else ag_ctx.Status.DISABLED
        calls = self

        @functools.wraps(python)
        def traced(*args, **kwargs):
            # (the copy itself is not converted: its body is, as tf.function would convert it)
            plan = Plan(ops.get_default_graph())
            calls.plans[plan.graph] = plan
            outer, calls.plan = calls.plan, plan
            try:
                with ag_ctx.ControlStatusCtx(status=status, options=fn._experimental_autograph_options):
                    result = body(*args, **kwargs)
            finally:
                calls.plan = outer
            return result, list(plan.tensors)

        try:
            return pf.Function(traced, name=f"{fn.name}_traced", input_signature=fn.input_signature,
                               autograph=False, jit_compile=fn._jit_compile,
                               reduce_retracing=fn._reduce_retracing)
        except Exception:  # noqa: BLE001 - an unusual Function: it stays eager
            return None

    def summary(self) -> dict:
        return {"graph_calls": self.counts["graph"], "eager_calls": self.counts["eager"],
                "kept_eager": dict(self.kept_eager)}
