"""The records the program model's nodes hold: the parts of a node, not nodes themselves.

A variable group's members, the layer and variable sites of a loop creating them and
its statements, a builder function's layers and variables, the variables of a
collection as TF1 listed them and a statement's read of one. Each is made by the
construct that recognizes its node (nodes.py) and read by the emitters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


Bound = dict[str, cst.BaseExpression]   # argument name -> expression, as bound_args gives them


@dataclass(eq=False, kw_only=True)
class GroupMember:
    """One `tf.Variable(...)` of a ``VariableGroup``, under its key (the key's source text)."""

    key: str
    call: cst.Call
    full_name: str | None
    trainable: bool


@dataclass(eq=False)
class LayerSite:
    """One `tf.layers` call in a loop that creates layers."""

    call: cst.Call
    row: dict
    bound: Bound
    source: cst.BaseExpression
    base: str
    trainable: bool
    call_args: list[tuple[str, cst.BaseExpression]] = field(default_factory=list)   # (`training=`, a literal or a mode flag)
    helper: str | None = None     # the class of rules/helpers.toml it becomes instead of the row's target
    scopes: tuple[str | cst.BaseExpression, ...] = ()   # the variable scopes TF1 named it under, entered as Keras
    #                               name scopes where it is called (a scope's name, or the loop's expression); ()
    #                               where it keeps Keras's name (no variable scope of the loop around it)
    name: str | None = None       # `name=` the creation loop writes where TF1's differs from Keras's (`"dense"`)
    tf1_names: tuple[str, ...] = ()   # TF1's name of it in each iteration (`block-0/dense`), where the loop names it


@dataclass(eq=False)
class VariableSite:
    """One `tf.Variable` / `tf.get_variable` in a loop that creates variables: a list of
    variables, one per iteration, each under the name TF1 gave it (constructs/variable_loops.py)."""

    call: cst.Call
    local: str                    # the name the loop binds it to
    source: str                   # "tensorflow.Variable" or "tensorflow.get_variable"
    bound: Bound
    name: str                     # its TF1 name as TF2 writes it: an expression of the loop's values
    tf1_names: tuple[str, ...]    # ... as each iteration makes it, in order
    trainable: bool


@dataclass(eq=False)
class LoopStatement:
    """A statement of a loop creating layers or variables (its `with` scopes read as if unindented).
    role: "host" (run in both loops), "graph" and "fill" (the steps' loop only: a graph value,
    a list filled), "layer" and "variable" (made by the creation loop, read by the steps' one)."""

    role: str
    stmt: cst.BaseSmallStatement
    name: str | None = None       # the one name it binds (a host, graph, layer or variable statement)
    value: cst.BaseExpression | None = None
    site: LayerSite | VariableSite | None = None
    column: int = 0               # where it starts in the source (its layout is kept, or laid out again)
    steps: bool = True            # a host statement: run in the steps' loop too (a graph value there reads it)


BuilderVariable = tuple[str, str, cst.Call, Bound, cst.SimpleStatementLine]   # (local, label, call, bound, statement)


@dataclass(eq=False)
class BuilderLayer:
    """A `tf.layers` call in a builder function: a Keras layer of its module."""

    attribute: str                # the module attribute holding the layer
    label: str                    # TF1's name for it under the builder's scope (dense, dense_1, ...)
    call: cst.Call
    row: dict
    bound: Bound
    source: cst.BaseExpression
    call_args: list[tuple[str, cst.BaseExpression]]   # (`training=`, its literal or the builder's parameter)
    at: int = 0                   # the index of its statement in the builder's scope block
    looped: bool = False          # called in a loop of the builder (made on the call: builder_loops)
    reads: frozenset[str] = frozenset()   # the names its settings (and its loops) read that a call may change
    helper: str | None = None     # the class of rules/helpers.toml it becomes instead of the row's target


@dataclass(frozen=True)
class Listed:
    """One variable of a collection, as TF1 listed it (constructs/var_lists.py)."""

    node: int                     # the Variable, Layer or BuilderModule node that made it
    weight: str | None = None     # a layer's weight (`kernel`): the Keras layer's attribute
    tf1: str | None = None        # TF1's `v.name` (`dense/kernel:0`), None where not known
    tf2: str | None = None        # TF2's `v.name` of what the rewrite makes (Keras: `kernel`)
    text: str | None = None       # how TF2 code names it, where no layer's name decides it
    parts: tuple[str, ...] = ()   # an RNN cell's Keras weight: the TF1 variables it holds blocks of (cell_collections)
    shifted: bool = False         # ... holding a constant more than TF1's (an LSTM's forget bias)
    site: LayerSite | VariableSite | None = None   # a loop's variable or layer (`node`: the LayerLoop) ...
    iteration: int = 0            # ... made in this iteration (the index into its list)

    def key(self) -> object:
        """What tells one listed variable from another (an explicit list's `w` is a collection's `w`)."""
        return self.text if self.text is not None else (self.node, self.weight, id(self.site), self.iteration, self.parts)


@dataclass(eq=False)
class CollectionRead:
    """A variable collection a graph statement reads (`tf.trainable_variables()` in an L2
    sum): the list TF1 held at that statement, written out (constructs/graph_collections.py)."""

    source: cst.BaseExpression    # the collection call (or the name of a listed collection) iterated
    written: list[Listed]         # what the TF2 list names, in TF1's order
    comp: cst.CompFor | None = None   # the comprehension `for` over it whose filter TF2 could not keep
    chosen: list[Listed] = field(default_factory=list)   # ... what the filter selected on TF1's names
