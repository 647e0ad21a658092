"""The typed program model: one class per kind of graph statement.

Each node of ``Program.nodes`` is one statement of the graph-building block
(or a value the model made for one, such as an optimizer created in place).
Its fields are what the model learned about it; names chosen while emitting
(classes, layer instances, lists) are not here but in ``emit.naming.Naming``.
``kind`` is the node's word in messages ("rebinds a placeholder") and tables
(``host_attributes``); code tests the class, or asks the node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import libcst as cst

from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.model.parts import (Bound, BuilderLayer, BuilderVariable, CollectionRead, GroupMember, LayerSite, Listed,
                                    LoopStatement, VariableSite)


@dataclass(eq=False, kw_only=True)
class Node:
    """One statement of the graph-building block that defines graph values."""

    kind: ClassVar[str] = ""
    index: int
    names: tuple[str, ...]
    stmt: Any                     # the statement (a helper `FunctionDef` for a builder module)
    value: Any                    # the expression defining it (a loop for a layer loop), or None
    deps: frozenset[int] = frozenset()
    calls: list[str] = field(default_factory=list)   # the TensorFlow calls of what the steps compute for it
    unsupported: Refusal | None = None   # refused only if some run needs it
    steps: ClassVar[bool] = False   # computed in the step functions: the calls of its statement the construct
    #                                 does not translate itself are checked as a tensor's (constructs/nested_calls.py)

    def called(self) -> Sequence[str]:
        """TensorFlow functions the steps call for it: its own and those nested in what it reads
        (a layer's input, an RNN's), and those of the helper functions they call."""
        return self.calls

    def trained(self) -> bool:
        """Is it among what a loss trains: a trainable variable, a layer with trainable weights?"""
        return False

    def graph_input(self) -> bool:
        """A placeholder or a variable: a second one under the same name is refused."""
        return False

    def differentiates(self) -> bool:
        """Does it take gradients (`tf.gradients`, `compute_gradients`, `minimize`)?"""
        return False

    def refusal_if_run(self) -> Refusal | None:
        """Why a run that needs it cannot be rewritten (None: it can)."""
        return self.unsupported


@dataclass(eq=False, kw_only=True)
class Placeholder(Node):
    kind: ClassVar[str] = "placeholder"
    dtype: Any                    # an expression, or a dtype name read off a default literal
    shape: cst.BaseExpression | None
    default: cst.BaseExpression | None
    mode_flag: bool = False       # a bool fed True/False to `training=` (each function gets the literal)

    def graph_input(self) -> bool:
        return True


@dataclass(eq=False, kw_only=True)
class Variable(Node):
    kind: ClassVar[str] = "variable"
    source: str                   # "tensorflow.Variable" or "tensorflow.get_variable"
    bound: Bound
    full_name: str | None         # its TF1 name (scope included, made unique as TF1 does)
    trainable: bool
    unnamed: bool = False         # TF2 gives it no name: `Variable`, numbered by the verifier (variables.counted)
    alias_of: int | None = None   # `step = tf.train.get_global_step()`: the global step's node
    global_step: bool = False     # made by a global-step call
    factory: str | None = None    # made by calling this function of the module (variable_factories.py)
    resource: bool = False        # a resource variable (`use_resource=True`): TF1 reads it apart from its updates

    def trained(self) -> bool:
        return self.trainable

    def graph_input(self) -> bool:
        return True

    def tf2_name(self) -> str | None:
        """The name `v.name` reads in TF2 (`Variable:0` where TF2 gives it none)."""
        return "Variable:0" if self.unnamed else None if self.full_name is None else self.full_name + ":0"


@dataclass(eq=False, kw_only=True)
class VariableGroup(Node):
    """`weights = {'h1': tf.Variable(...), ...}` (or a list, a tuple): variables made in
    one literal, read by subscript."""

    kind: ClassVar[str] = "variable group"
    members: list[GroupMember]

    def trained(self) -> bool:
        return any(m.trainable for m in self.members)

    def graph_input(self) -> bool:
        return True

    def subscripts(self, trainable_only: bool = True) -> list[str]:
        """Its members as the program reads them (`weights['h1']`), in creation order."""
        return [f"{self.names[0]}[{m.key}]" for m in self.members if m.trainable or not trainable_only]


@dataclass(eq=False, kw_only=True)
class Saver(Node):
    """`saver = tf.train.Saver()`: what it checkpoints, the graph's saveable state when
    it was made (variables, layers, optimizers that had made their slots)."""

    kind: ClassVar[str] = "saver"
    members: list[int]
    restores: bool = False   # `saver.restore(sess, path)`: restored by TF1's names (savers.restore_text)
    own: bool = False        # ... in a program that saves with it too: its own checkpoints read back whole
    keep: cst.BaseExpression | None = None    # `max_to_keep=` (TF1's default: 5)
    hours: cst.BaseExpression | None = None   # `keep_checkpoint_every_n_hours=`
    os_alias: str | None = None   # the name the module's `import os` binds (a numbered save splits the path)
    numbered: bool = False   # `saver.save(sess, path, global_step=step)`: `SAVER_save(path, step)` (savers.numbered_text)


@dataclass(eq=False, kw_only=True)
class LayerNode(Node):
    """Weights made once where the graph was built: a `tf.layers` layer, the layers of a
    loop, a builder function's module."""

    kind: ClassVar[str] = "layer"
    weights: bool
    trainable: bool

    def trained(self) -> bool:
        return self.weights and self.trainable

    def tf1_name(self) -> str | None:
        """The TF1 name of what it makes, where the model knows one."""
        return None

    def rows(self) -> list[dict]:
        """The layers table's rows of the layers it makes (for TF1's automatic names)."""
        return []


@dataclass(eq=False, kw_only=True)
class Layer(LayerNode):
    """`h = tf.layers.dense(x, ...)`: the Keras layer (the call is a ``LayerCall``)."""

    row: dict
    symbol: str
    bound: Bound
    base: str                     # the name its instance is given where that is free
    full_name: str
    helper: str | None = None     # the class of rules/helpers.toml it becomes instead of the row's target

    def tf1_name(self) -> str | None:
        return self.full_name

    def rows(self) -> list[dict]:
        return [self.row]


@dataclass(eq=False, kw_only=True)
class RnnCell(Layer):
    """`cell = tf.nn.rnn_cell.LSTMCell(n)`: its Keras cell in a Keras RNN layer (rnn_cells.toml);
    `tf.nn.dynamic_rnn(cell, ...)` is an ``RnnRun``, `cell.zero_state(...)` a ``ZeroState``."""

    units: cst.BaseExpression
    masked: bool = False          # a dynamic_rnn of it takes sequence_length
    backward: bool | None = None  # run over the reversed sequences (bidirectional_dynamic_rnn's bw), once run
    made: tuple[int, int] | None = None   # (the run that made TF1's weights, its place among that run's cells)
    tf1_scope: str | None = None  # ... their TF1 scope (`bidirectional_rnn/fw/basic_lstm_cell`), None if not known


@dataclass(eq=False, kw_only=True)
class RnnStack(Node):
    """`d = DropoutWrapper(cell, output_keep_prob=k)`, `m = MultiRNNCell([a, b])`: cells as a run
    uses them (constructs/rnn_stacks.py); made nowhere itself, written where the run is."""

    steps: ClassVar[bool] = True   # (its keep probabilities: a dropout where the run is)
    layers: list[tuple[int, cst.BaseExpression | None, cst.BaseExpression | None]]   # (RnnCell, input, output keep)
    multi: bool                   # a MultiRNNCell: the state is one per layer, stacked


@dataclass(eq=False, kw_only=True)
class LayerLoop(LayerNode):
    """A host `for` loop creating layers or variables: a list of layers per call site, a list of
    variables per variable statement."""

    loop: cst.For
    sites: list[LayerSite]
    statements: list[LoopStatement]
    variables: list[VariableSite] = field(default_factory=list)
    runs: int | None = None       # how many times it runs, where the file fixes it (variable_loops)

    def rows(self) -> list[dict]:
        return [site.row for site in self.sites]

    def made(self) -> list[LayerSite | VariableSite]:
        """Its layer and variable sites, in the order each iteration makes them."""
        return [s.site for s in self.statements if s.site is not None]


@dataclass(eq=False, kw_only=True)
class BuilderModule(LayerNode):
    """A builder function (`tf.get_variable` under one `tf.variable_scope`): a `tf.Module`."""

    builder: cst.FunctionDef
    scope: str | None             # its scope's name; None for a layer function (scope_parameter) or none at all
    scope_parameter: str | None   # a layer function: the parameter holding the scope
    scope_default: str | None = None   # ... the scope of `tf.variable_scope(scope or "Linear")` when none is given
    variables: list[BuilderVariable]
    inner: list[cst.BaseStatement]
    var: str                      # the instance's name: the function's
    layers: list[BuilderLayer] = field(default_factory=list)   # its `tf.layers` calls, in call order
    dropped: list[cst.BaseStatement] = field(default_factory=list)   # `scope.reuse_variables()` statements
    method_of: str | None = None  # a model class's layer method: the class's `self` (layer_methods.py)
    single: bool = True           # ... the class's only one making variables
    method_calls: list[tuple[int, str, cst.Call]] = field(default_factory=list)   # ... (node index, scope, call)
    made_on_call: bool = False    # its layers are made on the call reaching them (builder_loops.py)
    lazy: bool = False            # its variables (of its one fixed scope) made on its first call: TF1's
    shaping: tuple[str, ...] = ()   # ... the parameters their number and settings come from
    call_sites: list[cst.Call] = field(default_factory=list)   # its calls so far (builder_loops.check_call)
    scoped: list[tuple[float, str | None]] = field(default_factory=list)   # a layer function: (when, scope) per call
    call_texts: tuple[str | None, ...] | None = None   # ... the first one's arguments for `shaping`


@dataclass(eq=False, kw_only=True)
class Computed(Node):
    """A statement computing values from graph values (in the steps, or once if static)."""

    steps: ClassVar[bool] = True
    collections: list[CollectionRead] = field(default_factory=list)   # variable collections it reads
    op_name: str | None = None    # TF1's name of its op, where the call names it (rules/op_names.toml)


@dataclass(eq=False, kw_only=True)
class Tensor(Computed):
    kind: ClassVar[str] = "tensor"


@dataclass(eq=False, kw_only=True)
class Static(Computed):
    """Computed from constants only: the same in TF2, where the graph was built."""

    kind: ClassVar[str] = "static"


@dataclass(eq=False, kw_only=True)
class Summary(Tensor):
    """A summary op or a merge: the list of the values it summarizes."""

    summary: list[tuple[str, str, cst.BaseExpression]]   # (TF2 op, tag, value) per value
    member: bool                  # a summary op (what `merge_all` collects), not a merge


@dataclass(eq=False, kw_only=True)
class ZeroState(Tensor):
    """`s = cell.zero_state(batch, dtype)`: zeros of the cell's state (an LSTM's c and h stacked)."""

    cell: int
    batch: cst.BaseExpression
    dtype: cst.BaseExpression


@dataclass(eq=False, kw_only=True)
class StateTuple(Tensor):
    """`s = tf.nn.rnn_cell.LSTMStateTuple(c, h)`: an LSTM state of its two parts (stacked)."""

    parts: tuple[cst.BaseExpression, cst.BaseExpression]
    layers: cst.BaseSimpleComp | None = None   # `tuple([LSTMStateTuple(c, h) for ...])`: one per layer


@dataclass(eq=False, kw_only=True)
class RnnRun(Tensor):
    """`outputs, state = tf.nn.dynamic_rnn(cell, inputs, ...)`: the call of the cell's RNN layer."""

    cell: int                     # an RnnCell or an RnnStack
    source: cst.BaseExpression
    initial: cst.BaseExpression | None
    lengths: cst.BaseExpression | None   # sequence_length
    backward: int | None = None   # bidirectional_dynamic_rnn: the backward cell (`cell` the forward one)
    initial_backward: cst.BaseExpression | None = None
    pairs: tuple[tuple[str, str] | None, tuple[str, str] | None] = (None, None)   # (fw, bw) names of outputs, states


@dataclass(eq=False, kw_only=True)
class LayerCall(Tensor):
    """`h = <layer>(x)`: the call of a ``Layer``, in the steps."""

    layer: int
    source: cst.BaseExpression
    call_args: list[tuple[str, cst.BaseExpression]]


@dataclass(eq=False, kw_only=True)
class LayerLoopCall(Tensor):
    """The loop of a ``LayerLoop`` again in the steps, calling its layers."""

    layer_loop: int


@dataclass(eq=False, kw_only=True)
class Update(Computed):
    """An assignment to variables (`tf.assign(v, x)`, a group of them)."""

    kind: ClassVar[str] = "update"


@dataclass(eq=False, kw_only=True)
class Optimizer(Node):
    kind: ClassVar[str] = "optimizer"
    cls: str
    call: cst.Call
    inline: bool = False          # created inside the `minimize(...)` call: it gets a name when emitted


@dataclass(eq=False, kw_only=True)
class OptimizerCall(Node):
    """`opt.minimize/compute_gradients/apply_gradients(...)`."""

    steps: ClassVar[bool] = True
    method: str
    optimizer: int
    bound: Bound
    call: cst.Call
    step: str | None              # the global step `minimize(global_step=...)` counts
    stats: bool                   # under `tf.control_dependencies(<UPDATE_OPS>)`

    def differentiates(self) -> bool:
        return self.method != "apply_gradients"


@dataclass(eq=False, kw_only=True)
class TrainOp(OptimizerCall):
    kind: ClassVar[str] = "train"
    # contrib's optimize_loss (constructs/optimize_loss.py):
    clip: cst.BaseExpression | None = None   # the global norm its gradients are clipped to
    result: str | None = None     # the loss a fetch of it gives (computed in the run, before the update)
    summarized: tuple[str, ...] = ()   # the summaries it added to what `merge_all` collects
    rate_variable: bool = False   # its float rate was a variable `OptimizeLoss/learning_rate`


@dataclass(eq=False, kw_only=True)
class ComputeGradients(OptimizerCall):
    kind: ClassVar[str] = "compute_gradients"


@dataclass(eq=False, kw_only=True)
class Gradients(Node):
    """`tf.gradients(ys, xs, ...)`."""

    kind: ClassVar[str] = "gradients"
    steps: ClassVar[bool] = True
    ys: cst.BaseExpression
    xs: list[str]
    single: bool
    target: cst.BaseAssignTargetExpression
    grad_ys: cst.BaseExpression | None
    stops: list[str]
    unconnected: str | None
    listed: str | None = None     # xs is a name bound to a list of variables (`params`): written as that name

    def differentiates(self) -> bool:
        return True


@dataclass(eq=False, kw_only=True)
class Init(Node):
    kind: ClassVar[str] = "init"


@dataclass(eq=False, kw_only=True)
class VarList(Node):
    """A list of variables (a collection read, an explicit list)."""

    kind: ClassVar[str] = "varlist"
    members: list[Listed]


# what a graph value cannot be computed from, summarized, or rebound over
OPS = (TrainOp, Init, Optimizer, Update)
@dataclass(eq=False, kw_only=True)
class TrainGroup(Node):
    """`tf.group(opt.apply_gradients(...), ...)` of train ops: a run of it runs them
    together (constructs/train_together.py)."""

    kind: ClassVar[str] = "train_group"
    steps: ClassVar[bool] = True
    members: tuple[int, ...]      # the train ops, in the group's order


GRADIENT_NODES = (ComputeGradients, Gradients, TrainOp)


@dataclass(eq=False)
class Statement:
    """A graph statement `names = value` as the constructs of the registry see it."""

    item: Any                     # program.Item: the statement's place in the block
    small: cst.Assign
    names: tuple[str, ...]
    value: cst.BaseExpression
    deps: set[int]                # nodes the value reads
    tf_calls: list[tuple[cst.Call, str]]   # its TensorFlow calls, with their names
    call: cst.Call | None         # the value, when it is a call
    q: str | None                 # that call's TensorFlow name

    @property
    def one(self) -> str | None:
        """The one name bound, or None when it binds several."""
        return self.names[0] if len(self.names) == 1 else None
