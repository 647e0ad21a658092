"""Aligned random numbers: both programs draw TensorFlow's random numbers from one stream.

A TF1 graph and TF2 eager code draw different numbers from the same seed,
and ``DeterministicRandomTestTool`` does not make them agree over a run: its
``constant`` mode gives every draw the same value, its ``num_random_ops``
mode seeds each op by the number of ops *created*, but a TF1 op is created
once and then draws anew in every ``Session.run``, while TF2 makes an op per
eager call (or per trace, an evaluation function being traced apart).

So both runners replace TensorFlow's random primitives (the ``gen_*`` op
wrappers in :data:`PRIMITIVES` that ``tf.random.*``, ``tf.nn.dropout``,
``tf.layers`` and Keras go through) before the program runs with a host-side
draw whose numbers are a function of where the draw sits in the run, not of
seeds or op creation:

    key = (segment, index), numbers = NumPy PCG64(hash(key, kind, shape, dtype))

(a categorical draw, ``tf.multinomial``/``tf.random.categorical``, takes the
Gumbel-max argmax of its logits plus noise made from such uniform numbers: the
same distribution, and the same samples for the same logits on both sides)

* the *segment* is ``("train", n)`` for the draws of training step n+1 (a
  ``Session.run`` that trains; an eager op run under a ``GradientTape``) and
  ``("other", n)`` for draws outside training after n steps (evaluation,
  sampling); steps are budget.py's;
* the *index* numbers the draws within a segment: on the original side by
  graph creation order of the random ops the run reaches (ops run in
  parallel in a graph, so not by execution order), on the migrated side by
  execution order.  For a program whose layers run in the order they are
  built, the two agree.

Left as TensorFlow made them (so an execution after initialization still
makes the pair NOT_COMPARABLE, random_ops.py): initial values (draws under an
initializer, or while a variable is created), ops inside ``tf.while_loop`` or
a function graph (``tf.data``, ``defun``), the migrated side's graph code,
stateless draws the program seeds itself (pure functions of their seed, the
same on both sides; only a Keras layer's own seed stream is replaced), and
the other random ops (``tf.random.shuffle``, ``gamma``,
``poisson``, ``tf.random.Generator``, dataset shuffles).  Where the orders
differ (a graph built in another order than the TF2 code runs, a
``tf.cond`` branch not taken ahead of one taken), the numbers differ and the
pair comes out DIVERGED, never falsely EQUIVALENT.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import linecache
import sys
import threading

import numpy as np

from tf1gradfix.verify import random_ops

# (gen module, function) -> kind of numbers
PRIMITIVES = {
    ("gen_random_ops", "random_uniform"): "uniform",
    ("gen_random_ops", "random_standard_normal"): "normal",
    ("gen_random_ops", "truncated_normal"): "truncated_normal",
    ("gen_random_ops", "random_uniform_int"): "uniform_int",
    ("gen_stateless_random_ops_v2", "stateless_random_uniform_v2"): "uniform",
    ("gen_stateless_random_ops_v2", "stateless_random_normal_v2"): "normal",
    ("gen_stateless_random_ops_v2", "stateless_truncated_normal_v2"): "truncated_normal",
    ("gen_stateless_random_ops_v2", "stateless_random_uniform_int_v2"): "uniform_int",
    ("gen_random_ops", "multinomial"): "categorical",   # tf.multinomial, tf.random.categorical
}
MAX_SITES = 200          # random ops reported one by one


def values(kind: str, shape, dtype, key: tuple, low=None, high=None) -> np.ndarray:
    """The numbers of one draw: a function of its key, kind, shape and dtype only."""
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    dtype = np.dtype(dtype)
    seed = hashlib.blake2b(repr((key, kind, shape, dtype.name)).encode(), digest_size=8).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(seed, "little")))
    if kind == "uniform_int":
        return rng.integers(np.asarray(low).item(), np.asarray(high).item(), shape, dtype=dtype)
    work = np.float32 if dtype == np.float32 else np.float64
    if kind == "uniform":
        out = rng.random(shape, dtype=work).astype(dtype)
        out[out >= 1] = 0          # a float16 rounding up to 1 is outside [0, 1)
        return out
    out = rng.standard_normal(shape, dtype=work)
    if kind == "truncated_normal":   # TensorFlow's: resampled outside two standard deviations
        while True:
            bad = np.abs(out) > 2
            if not bad.any():
                break
            out[bad] = rng.standard_normal(int(bad.sum()), dtype=work)
    return out.astype(dtype)


def categorical(logits, num_samples, dtype, key: tuple) -> np.ndarray:
    """Samples of each row's categorical distribution (``tf.random.categorical``) drawn
    from the key's uniform numbers U by the Gumbel-max rule: argmax over the classes of
    logits - log(-log U), which picks class k with probability softmax(logits)[k]. Both
    sides draw so, so a sample depends on the row's logits and its place in the run only."""
    logits = np.asarray(logits, np.float64)
    rows, classes = logits.shape
    count = int(np.asarray(num_samples))
    uniform = values("uniform", (rows, count, classes), np.float64, key)
    with np.errstate(divide="ignore"):
        gumbel = -np.log(-np.log(uniform))
    return np.argmax(logits[:, None, :] + gumbel, axis=-1).astype(dtype)


def _keras_frame() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if random_ops._LAYER_FILES.search(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith, ast.For,
             ast.AsyncFor, ast.While, ast.If, ast.Try)
_CREATES = ("Variable", "get_variable", "add_weight")
_VARIABLE_STATEMENTS: dict = {}     # file -> first lines of its statements that create a variable


def _initial_value() -> bool:
    """Is this draw on a statement of the user's that creates a variable (``tf.Variable(tf.random.normal(..))``)?

    Such a draw is an initial value (injected from the original anyway): it
    stays TensorFlow's, as under an initializer (random_ops.py's rule).
    """
    where = random_ops._statement(random_ops._user_frame())
    if where is None:
        return False
    filename, start = where
    if filename not in _VARIABLE_STATEMENTS:
        found = set()
        try:
            for node in ast.walk(ast.parse("".join(linecache.getlines(filename)))):
                if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and any(
                        isinstance(c, ast.Call) and getattr(c.func, "attr", getattr(c.func, "id", "")) in _CREATES
                        for c in ast.walk(node)):
                    found.add(node.lineno)
        except (SyntaxError, ValueError):
            pass
        _VARIABLE_STATEMENTS[filename] = found
    return start in _VARIABLE_STATEMENTS[filename]


@functools.lru_cache(maxsize=None)
def _signature(orig):
    return inspect.signature(orig)


def _arguments(orig, args, kwargs) -> dict:
    bound = _signature(orig).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


class Stream:
    """The draws of one side, counted for the report (event ``aligned``)."""

    def __init__(self, trace):
        self.trace = trace
        self.lock = threading.Lock()
        self.draws = 0
        self.training = 0              # draws in training steps
        self.sites: dict = {}          # site -> draws
        self.updating = True           # the run drawing now updates variables (the original side says which)
        self.evaluating = 0            # draws in runs that update none (a gradient probe, a metric)
        self.segment, self.next_index = None, 0

    def index(self, segment) -> int:
        """The next index of ``segment`` (draws numbered in execution order)."""
        if segment != self.segment:
            self.segment, self.next_index = segment, 0
        self.next_index += 1
        return self.next_index - 1

    def count(self, site, what: dict, segment) -> None:
        self.draws += 1
        self.training += segment[0] == "train"
        self.evaluating += not self.updating
        if site not in self.sites:
            self.sites[site] = 0
            if len(self.sites) <= MAX_SITES:
                self.trace.event("aligned_op", **what)
        self.sites[site] += 1

    def summary(self) -> None:
        self.trace.event("aligned", ops=len(self.sites), draws=self.draws, training=self.training,
                         evaluating=self.evaluating)

    def install(self, make) -> None:
        """Replace every primitive by ``make(kind, orig, stateless)``."""
        import importlib

        for (module, name), kind in PRIMITIVES.items():
            mod = importlib.import_module(f"tensorflow.python.ops.{module}")
            orig = getattr(mod, name)
            setattr(mod, name, make(kind, orig, module.startswith("gen_stateless")))


class GraphDraws(Stream):
    """Original side: each replaced op is a ``numpy_function``; ``begin_run`` ranks a run's ops."""

    def __init__(self, trace):
        super().__init__(trace)
        self.by_op: dict = {}          # (graph id, op name) -> site
        self.created: list = []        # site -> op creation id
        self.ranks: dict = {}          # site -> index in this run
        self.calls: dict = {}          # site -> draws outside a ranked run
        self.names: dict = {}          # site -> op name

    def make(self, kind, orig, stateless):
        def primitive(*args, **kwargs):
            from tensorflow.python.framework import ops
            graph = ops.get_default_graph()
            if not self.alignable(graph, stateless):
                return orig(*args, **kwargs)
            return self.host_op(kind, orig, graph, _arguments(orig, args, kwargs))
        return primitive

    @staticmethod
    def alignable(graph, stateless) -> bool:
        from tensorflow.python.eager import context
        from tensorflow.python.framework import func_graph

        if context.executing_eagerly() or isinstance(graph, func_graph.FuncGraph):
            return False
        ctx = graph._get_control_flow_context()  # noqa: SLF001 - v1 control flow has no public accessor
        while ctx is not None:
            if ctx.IsWhileContext():
                return False
            ctx = ctx.outer_context
        return (not random_ops._in_initializer() and (not stateless or _keras_frame())
                and not _initial_value())

    def host_op(self, kind, orig, graph, a):
        from tensorflow.python.framework import dtypes, ops, tensor_util
        from tensorflow.python.ops import script_ops

        if kind == "categorical":   # (inputs: the logits and the sample count; the draw: categorical)
            logits = ops.convert_to_tensor(a["logits"])
            count = ops.convert_to_tensor(a["num_samples"], dtype=dtypes.int32)
            shape = count   # (unused for the shape; set from the logits below)
            dtype, inputs = dtypes.as_dtype(a["output_dtype"]), [logits, count]
        elif kind == "uniform_int":
            shape = ops.convert_to_tensor(a["shape"])
            low = ops.convert_to_tensor(a["minval"])
            high = ops.convert_to_tensor(a["maxval"], dtype=low.dtype)
            dtype, inputs = low.dtype, [shape, low, high]
        else:
            shape = ops.convert_to_tensor(a["shape"])
            dtype, inputs = dtypes.as_dtype(a["dtype"]), [shape]
        site = len(self.created)
        np_dtype = dtype.as_numpy_dtype

        def draw(shape_value, *bounds):
            return self.draw(site, kind, shape_value, np_dtype, *bounds)

        out = script_ops.numpy_function(draw, inputs, dtype, stateful=True, name=a.get("name"))
        try:
            if kind == "categorical":
                out.set_shape([inputs[0].shape[0], tensor_util.constant_value(inputs[1])])
            else:
                out.set_shape(tensor_util.constant_value_as_shape(shape))
        except (ValueError, TypeError):
            pass
        self.created.append(out.op._id)  # noqa: SLF001 - creation order
        self.by_op[(id(graph), out.op.name)] = site
        self.names[site] = out.op.name
        return out

    def site_of(self, op):
        return self.by_op.get((id(op.graph), op.name))

    def begin_run(self, training: bool, steps: int, sites, updating: bool = True) -> None:
        """A traced run is about to start: the ``sites`` it reaches, in creation order, get indices.
        `updating`: it applies updates (a run computing gradients only is training here too)."""
        segment = ("train" if training else "other", steps)
        with self.lock:
            self.updating = updating
            base = self.next_index if segment == self.segment else 0
            ordered = sorted(set(sites), key=lambda s: self.created[s])
            self.segment, self.next_index = segment, base + len(ordered)
            self.ranks = {s: base + i for i, s in enumerate(ordered)}

    def end_run(self) -> None:
        with self.lock:
            self.ranks, self.updating = {}, True

    def draw(self, site, kind, shape, dtype, *bounds):
        with self.lock:
            index = self.ranks.get(site)
            if index is None:       # a run not traced (an initializer's): the op's own count
                index = self.calls.get(site, 0)
                self.calls[site] = index + 1
                segment = ("op", site)
                key = ("op", site, index)
            else:
                segment = self.segment
                key = (segment, index)
            self.count(site, {"kind_of": kind, "name": self.names.get(site, "")}, segment)
        if kind == "categorical":   # (`shape`: the logits, `bounds`: the sample count)
            return categorical(shape, bounds[0], dtype, key)
        return values(kind, shape, dtype, key, *bounds)


class EagerDraws(Stream):
    """Migrated side: eager draws numbered in execution order within their segment."""

    def __init__(self, trace, tracer):
        super().__init__(trace)
        self.tracer = tracer

    def make(self, kind, orig, stateless):
        from tensorflow.python.eager import context, record
        from tensorflow.python.framework import constant_op, dtypes

        def primitive(*args, **kwargs):
            eager = context.executing_eagerly()
            if not eager and not self.tracer.graph_calls.tracing():
                return orig(*args, **kwargs)
            if (self.tracer.randomness.creating or random_ops._in_initializer()
                    or (stateless and not _keras_frame()) or _initial_value()):
                return orig(*args, **kwargs)
            if not eager:   # a draw this side aligns, in a function traced to run as a graph
                self.tracer.graph_calls.refuse("it draws random numbers (aligned only eagerly)")
                return orig(*args, **kwargs)
            a = _arguments(orig, args, kwargs)
            if kind == "categorical":
                dtype = dtypes.as_dtype(a["output_dtype"]).as_numpy_dtype
            else:
                bounds = (np.asarray(a["minval"]), np.asarray(a["maxval"])) if kind == "uniform_int" else ()
                dtype = bounds[0].dtype if bounds else dtypes.as_dtype(a["dtype"]).as_numpy_dtype
            segment = ("train" if record.could_possibly_record() else "other", self.tracer.budget.steps)
            frame = random_ops._user_frame()
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""
            with self.lock:
                key = (segment, self.index(segment))
                self.count((kind, where), {"kind_of": kind, "where": where.rpartition("/")[2]}, segment)
            if kind == "categorical":
                return constant_op.constant(categorical(np.asarray(a["logits"]), a["num_samples"], dtype, key))
            return constant_op.constant(values(kind, np.asarray(a["shape"]), dtype, key, *bounds))
        return primitive


# -- parent side: what the traces say (no TensorFlow) ------------------------------

def tally(events: list) -> dict:
    """``{"ops", "draws"}`` of one side's aligned draws (draws None if it ended without a summary)."""
    ops = [e for e in events if e["kind"] == "aligned_op"]
    last = next((e for e in reversed(events) if e["kind"] == "aligned"), None)
    if last is not None:
        return {"ops": last["ops"], "draws": last["draws"], "training": last.get("training")}
    return {"ops": len(ops), "draws": None} if ops else {"ops": 0, "draws": 0}


def describe(tallies: dict) -> str:
    """One line for the report, or "" when neither side drew aligned numbers."""
    if not any(t["ops"] for t in tallies.values()):
        return ""
    parts = []
    for role, t in tallies.items():
        if not t["ops"]:
            parts.append(f"{role} none")
            continue
        draws = "an unknown number of" if t["draws"] is None else str(t["draws"])
        train = f" ({t['training']} in training steps)" if t.get("training") is not None else ""
        parts.append(f"{role} {draws} draw{'s' * (t['draws'] != 1)}{train} by {t['ops']} random op"
                     f"{'s' * (t['ops'] != 1)}")
    return "aligned (both sides draw from one shared stream, TOLERANCES.md): " + ", ".join(parts)
