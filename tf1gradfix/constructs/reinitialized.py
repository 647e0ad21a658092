"""An optimizer made after runs that only read, then the initializer run again:

    sess.run(tf.global_variables_initializer())
    print("loss before", sess.run(loss, feed))        # reads only
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    sess.run(tf.global_variables_initializer())       # again: the optimizer's slots, and every variable
    for _ in range(steps): sess.run(train, feed)

The second initializer gives the optimizer's slots (or a variable made between the runs)
their first values and every other variable its initial value again. Where no run before it changed a variable (no train op,
no assignment) and every variable's initial value is the same each time it is computed
(constants, host arrays, zeros and constant initializers: no random op), that changes
nothing TF2 would not already hold: the optimizer is made where it is, its slots when it
first updates, a variable where it is, and the second initializer goes (also where nothing
waited for it: an `InteractiveSession` script running it after each part it builds). Otherwise the statement stays refused
(`graph_after_run`), and so does an initializer run again (`initializer_run_again`).

A new variable made after runs that changed others waits for the run of its own
initializer (`sess.run(tf.variables_initializer([best]))`), which gives it its first value
and no other variable a new one (`take`); the global initializer would reset the trained
variables, and is refused at the variable.
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, matches
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import OPS, Init, Layer, Optimizer, OptimizerCall, TrainGroup, Variable, VariableGroup

_KERNELS = ("kernel", "depthwise", "pointwise", "embeddings", "weights")   # weights a layer draws by default


class Pending:
    """Optimizers (and their updates) made after read-only runs, waiting for the initializer run."""

    def __init__(self) -> None:
        self.items: list = []
        self.changed = False   # a run so far changed a variable (an assignment run from host code, a train op)
        self.after_changes: list = []   # ... new variables made after such runs: their own initializer only

    def may_wait(self, program, item, sites) -> bool:
        """May `item`, made after the runs `sites`, wait for an initializer run? (An optimizer, its update or
        an initializer op, after runs that changed no variable; a new variable after any runs: the run of
        its own initializer, `tf.variables_initializer([v])`, gives it its first value and no other.)"""
        made = isinstance(item.node, Variable) and item.node.alias_of is None   # (a new variable: given its first value)
        unchanged = not self.changed and not any(
            isinstance(program.node(f), (*OPS, TrainGroup)) for site in sites for f in site.fetches)
        if made and not unchanged:
            self.after_changes.append(item)
        return made or isinstance(item.node, (Optimizer, OptimizerCall, Init)) and unchanged

    def take(self, program, names: frozenset[str], qualified) -> bool:
        """A run of the initializers of the variables `names` alone: True where each is a variable
        waiting for it, its initial value the same whenever computed (made here, earlier than TF1
        made it, it must not draw from the random sequence TF1 drew it from later)."""
        taken = [item for item in self.items if isinstance(item.node, Variable) and set(item.node.names) & names]
        if {name for item in taken for name in item.node.names} & names != names:
            return False
        for item in taken:
            given = _initial(item.node)
            if given is None or not _fixed(given, qualified):   # (reported once: what waited is dropped)
                self.items, self.after_changes = [], []
                raise Refusal.of(item.stmt, "graph_after_run")
        self.items = [item for item in self.items if item not in taken]
        self.after_changes = [item for item in self.after_changes if item not in taken]
        return True

    def run(self, changes: bool = True) -> None:
        """A run (`changes`: one that may change a variable) before the initializer: TF1 would fail on
        the uninitialized slots, or run them unmade."""
        self.changed |= changes
        if self.items:   # (reported once: what waited is dropped)
            first, self.items, self.after_changes = self.items[0], [], []
            raise Refusal.of(first.stmt, "graph_after_run")

    def initializer(self, program, call: cst.Call, qualified, again: bool = False) -> bool:
        """The initializer run again (`call`; `again`: after one that ran, outside any loop): True
        where it may go, what waited for it taken in."""
        if self.after_changes:   # (every variable initialized again, after runs that changed some)
            first, self.items, self.after_changes = self.after_changes[0], [], []
            raise Refusal.of(first.stmt, "graph_after_run")
        if not self.items and not (again and not self.changed):
            return False
        varying = _varying(program, qualified)
        self.items = []   # (taken in, or reported here and not again at the end)
        if varying is not None:
            raise Refusal.of(call, "reinitialized_random_variable", name=varying)
        return True

    def close(self) -> None:
        self.run(changes=False)


def _varying(program, qualified) -> str | None:
    """The first variable whose initial value an initializer run again would draw anew (None: none)."""
    for node in program.nodes:
        if isinstance(node, Variable) and node.alias_of is None:
            given = _initial(node)
            if given is None or not _fixed(given, qualified):
                return node.names[0]
        elif isinstance(node, VariableGroup) and not all(_fixed(m.call, qualified, inner=True) for m in node.members):
            return node.names[0]
        elif isinstance(node, Layer):
            for param in node.row.get("params", ()):
                value = node.bound.get(param)
                drawn = param.endswith("_initializer") and param.startswith(_KERNELS)
                if param.endswith("_initializer") and (value is None and drawn or value is not None and not _fixed(value, qualified)):
                    return node.names[0] if node.names else node.full_name
    return None


def _initial(node: Variable):
    """The expression giving a variable its initial value (None: a default initializer)."""
    return node.bound.get("initializer") if node.source == "tensorflow.get_variable" else node.bound.get("initial_value")


def _fixed(expr: cst.CSTNode, qualified, inner: bool = False) -> bool:
    """Is every call of `expr` (the arguments of a `tf.Variable(...)` call where `inner`) one whose
    value is the same each time: TensorFlow's of graph_ops `fixed_initial`, or a host computation
    (NumPy, a method of a host object: made once, a constant of the graph)? A function called by
    its bare name may make a random op (`xavier_init(shape)`): not fixed."""
    calls = [c for c in walk(expr) if type(c) is cst.Call and not (inner and c is expr)]
    return all(matches(q, "fixed_initial") if (q := qualified(c.func) or "").startswith("tensorflow.")
               else q.startswith("numpy.") or isinstance(c.func, cst.Attribute) for c in calls)
