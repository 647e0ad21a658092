"""Which TensorFlow random ops ran, unaligned, while the programs trained or evaluated.

Both runners seed Python, NumPy and TensorFlow identically, and host-side
random numbers (``random``, ``np.random``) therefore agree.  TensorFlow's
own random ops do not: a TF1 graph derives each op's stream from the graph
seed and the op's seed/position, TF2 eager ops and Keras 3 layers
(``Dropout`` draws through a ``SeedGenerator`` and stateless kernels) use
other generators.  aligned_random.py replaces the common primitives
(uniform, normal, truncated normal, uniform int, categorical: dropout,
``tf.random.*``, noise layers, sampling) with one stream both sides share; this module finds the
random ops that remain (``tf.random.shuffle``, ``gamma``, ...,
and primitives left in place, e.g. in a ``tf.while_loop``); tf.data's shuffles are
seeded alike by aligned_shuffles.py, and count here only once their pipeline starts again.

The rule (README, TOLERANCES.md): such a random op that runs after the
variables are initialized, on either side, makes the pair NOT_COMPARABLE;
the verdict names the op, the side and the step.  Random ops that only
produce initial values are harmless (those values are injected from the
original) and are not counted, nor are stateless ops (pure functions of
their seed).

* Original side (graph): the ops a ``Session.run`` reaches from its fetches,
  not entering variable initializers; an op inside ``tf.cond`` branches
  counts only when the run took that branch (the branch predicates are
  fetched with the run); the uniform draw of a dropout inside a
  ``tf.while_loop`` (an RNN cell's ``DropoutWrapper``) counts only when the
  run's rate is not 0: its mask ``draw >= 0`` keeps every unit whatever the
  numbers, so the op cannot change a value (the loop-invariant rate is
  fetched with the run).
* Migrated side (eager): an op callback sees every op executed; ops run
  under an initializer (Keras ``initializers``, ``init_ops``), while a
  variable is being created, or on the line of the user's code that then
  creates a variable (``tf.Variable(tf.random.normal(...))``) are initial
  values.

No TensorFlow import at module level: the parent process uses
:func:`describe` only.
"""

from __future__ import annotations

import functools
import os
import re
import sys

import numpy as np

from tf1gradfix.verify import aligned_shuffles

_RANDOM = re.compile(r"Random|Multinomial|TruncatedNormal|StatefulUniform|StatefulStandardNormal"
                     r"|Shuffle"      # RandomShuffle, and tf.data's ShuffleDataset* (aligned_shuffles: started once)
                     r"|(?<!All)CandidateSampler")   # the negatives of nce_loss / sampled_softmax_loss (All...: every class)
# Stateless ops are pure functions of their seed input: the same seed gives the
# same numbers on both sides, a different one shows as a difference.
_NOT_RANDOM = re.compile(r"GetKeyCounter|GetAlg|Seed|^Stateless")
_INITIALIZER_FILES = re.compile(r"[/\\](initializers|init_ops(_v2)?\.py)")
_LAYER_FILES = re.compile(r"[/\\](keras|tf_keras)[/\\]")
_WALK_BUDGET = 20000
_HERE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=4096)
def is_random_op(op_type: str) -> bool:
    """True for op types whose numbers come from generator state (not stateless ops)."""
    return bool(_RANDOM.search(op_type)) and not _NOT_RANDOM.search(op_type)


def describe(events: list, role: str) -> str:
    """One line for the verdict: the first random op of a side and how many ran."""
    if not events:
        return ""
    first = events[0]
    op = first["ops"][0]
    where = f" ({op['where']})" if op.get("where") else ""
    name = f" {op['name']}" if op["name"] != op["type"] else ""
    when = (f"in training step {first['step']}" if first.get("training")
            else f"after {first['step'] - 1} training steps" if first['step'] > 1 else "before training")
    total = sum(e.get("count", len(e["ops"])) for e in events)
    return f"{role} ran {op['type']}{name}{where} {when}" + (
        f" ({total} random op executions in all)" if total > 1 else "")


# -- original side: graph walk ------------------------------------------------------

class GraphRandomness:
    """Random ops a TF1 run executes; ``tracer`` is the V1Tracer (keys, placeholders)."""

    def __init__(self, tracer, draws=None):
        self.tracer = tracer
        self.draws = draws          # aligned_random.GraphDraws: its host-drawn ops are found too
        self.cache: dict = {}
        self.starts = aligned_shuffles.GraphStarts()   # (a shuffled pipeline started again)

    def reached(self, op) -> list:
        """Random ops reachable from ``op``, not through variable initializers (cached)."""
        return self.walk(op)[0]

    def host_sites(self, fetch_ops) -> list:
        """The aligned (host-drawn) random ops a run with these fetches reaches."""
        return [s for op in fetch_ops for s in self.walk(op)[1]]

    def walk(self, op) -> tuple:
        key = self.tracer.okey(op)
        if key in self.cache:
            return self.cache[key]
        graph = op.graph
        initializers = {getattr(v.initializer, "name", None) for v in graph.get_collection("variables")}
        found, hosts, seen, stack = [], [], set(), [op]
        while stack and len(seen) < _WALK_BUDGET:
            cur = stack.pop()
            if cur.name in seen or cur.name in initializers:
                continue
            seen.add(cur.name)
            if is_random_op(cur.type):
                found.append(cur)
            elif cur.type == "PyFunc" and self.draws is not None and self.draws.site_of(cur) is not None:
                hosts.append(self.draws.site_of(cur))
            stack.extend(t.op for t in cur.inputs)
            stack.extend(cur.control_inputs)
        self.cache[key] = found, hosts
        return found, hosts

    @staticmethod
    def conditions(op) -> list:
        """(predicate tensor, branch) of every tf.cond (v1 control flow) around ``op``."""
        out, ctx = [], getattr(op, "_control_flow_context", None)
        while ctx is not None:
            pred, branch = getattr(ctx, "pred", None), getattr(ctx, "branch", None)
            if pred is not None and branch is not None:
                out.append((pred, branch))
            ctx = getattr(ctx, "outer_context", None)
        return out

    def plan(self, fetch_ops, fetchable) -> tuple:
        """Random ops of this run and the predicates to fetch: ``(ops, [(op, [(pred, branch)])], preds)``.

        A predicate that cannot be fetched (it needs an unfed placeholder)
        leaves the op counted as executed.
        """
        ops, seen = [], set()
        for op in fetch_ops:
            for r in self.starts.unaligned(op, self.reached(op)):
                if r.name not in seen:
                    seen.add(r.name)
                    ops.append(r)
        checks, preds = [], []
        for r in ops:
            conds = []
            for pred, branch in self.conditions(r):
                # tf.cond marks its pred_id (an Identity of the predicate) unfetchable
                options = [pred] + ([pred.op.inputs[0]] if pred.op.type == "Identity" and pred.op.inputs else [])
                usable = [p for p in options if fetchable(p)]
                if not usable:
                    conds = []              # cannot tell: counted as executed
                    break
                conds.append((usable[0], branch))
            rate = dropout_rate(r)
            if rate is not None and fetchable(rate[0]):
                conds.append(rate)
            checks.append((r, conds))
            preds.extend(p for p, _ in conds)
        return checks, preds

    @staticmethod
    def executed(checks, pred_values: dict) -> list:
        """The random ops whose enclosing branches were all taken (and, a dropout's, whose rate was not 0)."""
        return [{"type": r.type, "name": r.name} for r, conds in checks
                if all(b(pred_values[p.name]) if callable(b) else bool(pred_values[p.name]) == bool(b)
                       for p, b in conds)]


_PASSING = ("Identity", "Cast", "Enter")


def dropout_rate(op):
    """(a tensor outside the loop, its value -> "the draw matters") for the uniform draw of a
    dropout in a ``tf.while_loop`` (``draw >= rate``, the rate ``1 - keep_prob`` of a value
    from outside the loop, as nn_ops._dropout builds it), else None."""
    if op.type != "RandomUniform" or getattr(op, "_control_flow_context", None) is None:
        return None
    consumers = [c for t in op.outputs for c in t.consumers()]
    if len(consumers) != 1 or consumers[0].type != "GreaterEqual" or consumers[0].inputs[0].op is not op:
        return None
    tensor, offset, sign = consumers[0].inputs[1], 0.0, 1.0   # rate = offset + sign * value
    for _ in range(8):
        kind = tensor.op.type
        if kind == "Enter":
            outside = tensor.op.inputs[0]
            if getattr(outside.op, "_control_flow_context", None) is not None:
                return None
            return outside, lambda v, o=offset, s=sign: bool(np.any(o + s * np.asarray(v, np.float64) != 0))
        if kind in _PASSING:
            tensor = tensor.op.inputs[0]
        elif kind == "Sub" and tensor.op.inputs[0].op.type == "Const":
            from tensorflow.python.framework import tensor_util   # (the graph side has TensorFlow)

            constant = tensor_util.MakeNdarray(tensor.op.inputs[0].op.get_attr("value"))
            if constant.size != 1:
                return None
            offset += sign * float(constant.reshape(-1)[0])
            sign, tensor = -sign, tensor.op.inputs[1]
        else:
            return None
    return None


# -- migrated side: eager op callback -------------------------------------------------

def _user_frame():
    """Innermost frame of the user's program (not TensorFlow, Keras, NumPy or this package)."""
    frame = sys._getframe(2)
    while frame is not None:
        fn = frame.f_code.co_filename
        if not (fn.startswith("<") or "site-packages" in fn or "dist-packages" in fn
                or fn.startswith(_HERE) or fn.startswith(os.path.dirname(os.__file__))):
            return frame
        frame = frame.f_back
    return None


_STATEMENTS: dict = {}


def _statement(frame):
    """(file, first line) of the innermost statement holding the frame's current line.

    A call spread over several lines reports different lines for its parts
    (``tf.Variable(`` on one, ``tf.random.normal(...)`` on the next), so
    "the same line" means the same statement.
    """
    if frame is None:
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    if filename not in _STATEMENTS:
        starts = {}
        try:
            import ast
            import linecache

            tree = ast.parse("".join(linecache.getlines(filename)))
            stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
            for n in sorted(stmts, key=lambda n: n.end_lineno - n.lineno, reverse=True):
                for i in range(n.lineno, n.end_lineno + 1):
                    starts[i] = n.lineno
        except Exception:  # noqa: BLE001 - no source: lines stand for statements
            pass
        _STATEMENTS[filename] = starts
    return filename, _STATEMENTS[filename].get(line, line)


def _in_initializer() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if _INITIALIZER_FILES.search(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


class EagerRandomness:
    """Records random ops executed eagerly in the migrated program."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.pending: list = []     # [(frame, statement, op dict, training)] maybe initial values
        self.creating = 0           # depth of variable creation in progress

    def install(self) -> None:
        from tensorflow.python.eager import record
        from tensorflow.python.framework import op_callbacks

        self.could_record = record.could_possibly_record
        op_callbacks.add_op_callback(self.callback)

    def callback(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is not None:
            calls = self.tracer.graph_calls
            if calls.tracing() and is_random_op(op_type.decode("utf-8", "replace") if isinstance(op_type, bytes) else op_type):
                calls.refuse("it draws random numbers (aligned only eagerly)")
            return None
        if self.creating or self.tracer.busy():
            return None
        try:
            if isinstance(op_type, bytes):       # eager ops report their type as bytes
                op_type = op_type.decode("utf-8", "replace")
            if isinstance(op_name, bytes):
                op_name = op_name.decode("utf-8", "replace")
            if not is_random_op(op_type) or aligned_shuffles.is_aligned(op_type) or _in_initializer():
                return None   # (a dataset shuffle: seeded alike on both sides, its restarts counted below)
            frame = _user_frame()
            where = (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                     if frame is not None else "")
            op = {"type": op_type, "name": op_name or op_type, "where": where}
            training = bool(self.could_record())
            if self.pending and (self.pending[-1][0] is not frame or len(self.pending) >= 1000):
                self.flush()
            self.pending.append((frame, _statement(frame), op, training))
        except Exception:  # noqa: BLE001 - observing must never break the program
            pass
        return None

    def restarted(self, dataset) -> None:
        """A dataset holding a shuffle iterated again: TF2 reshuffles, TF1's seeded order repeats."""
        try:
            frame = _user_frame()
            where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""
            self.flush()
            self.pending.append((frame, _statement(frame), {"type": "ShuffleDatasetV3", "where": where,
                                                            "name": "for a shuffled dataset iterated again"}, False))
            self.flush()
        except Exception:  # noqa: BLE001 - observing must never break the program
            pass

    def variable_created(self) -> None:
        """A variable was created: random ops pending on the same line were its initial value.

        Not when a layer created it (a Keras frame between the user's line
        and the variable): a lazily built layer creates its weights on the
        line that also runs, say, a dropout before it.
        """
        if not self.pending:
            return
        frame = _user_frame()
        by_layer = False
        f = sys._getframe(1)
        while f is not None and f is not frame:
            by_layer = by_layer or bool(_LAYER_FILES.search(f.f_code.co_filename))
            f = f.f_back
        here = _statement(frame)
        if frame is not None and not by_layer and all(
                f is frame and stmt == here for f, stmt, _, _ in self.pending):
            self.pending = []
        else:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        training = any(t for *_, t in pending)
        self.tracer.trace.event("random", step=self.tracer.steps + 1, training=training,
                                ops=[op for _, _, op, _ in pending][:20], count=len(pending))
