"""The program model's records: the statements of the graph-building block as read
(`Item`, with the scope `with`s they run under), and the `Program` the model builder
(graph.py) makes of them: its nodes, the names they bind, its sessions and helpers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tf1gradfix.model.nodes import Node


@dataclass
class Item:
    """A statement of the flattened block (scope and session `with`s removed)."""

    stmt: cst.BaseStatement
    prefix: str = ""
    node: Node | None = None
    drop: bool = False          # graph plumbing that disappears (session, init, close)
    initializer: bool = False   # dropped as `tf.global_variables_initializer().run()`: an initializer run all the same
    lead: tuple = ()            # leading lines inherited from a removed `with`
    stats: bool = False         # under `tf.control_dependencies(<UPDATE_OPS>)`: runs the batch-norm updates
    scope: str = ""             # the name scope (`tf.name_scope`, variable scopes): prefixes `tf.Variable` names
    collects: bool = False      # `update_ops = tf.get_collection(UPDATE_OPS)`: what is collected so far
    entries: tuple[ScopeEntry, ...] = ()   # the scope `with`s it runs under, outermost first (`scope` from them)
    reused: bool = False        # after `scope.reuse_variables()` in a `with` it runs under (scope_reuse.py)


@dataclass(eq=False)
class ScopeEntry:
    """A `with tf.name_scope(...)` or `tf.variable_scope(...)` of the block: its name scope is
    made unique in the graph when TF1 enters it, in the order of the statements."""

    variable: bool              # a variable scope (else a name scope)
    label: str
    prefix: str                 # the variable scope inside it (`a/b/`)
    scope: str | None = None    # the name scope inside it (`a_1/`), once entered
    reuse: str | None = None    # a variable scope's `reuse=` (constructs/scope_reuse.py)


@dataclass
class Program:
    owner: cst.Module | cst.FunctionDef
    items: list[Item]
    nodes: list[Node]
    final: dict[str, int]                 # name -> index of the node that last binds it
    sessions: set[str]
    helpers: dict[str, cst.FunctionDef]   # user functions graph code calls
    tf_alias: str
    refused: list | None = None   # build(collect=True): the statements' refusals, in order
    poisoned: set[str] | None = None   # names bound by refused statements, and by those that read them
    collected: list[int] = field(default_factory=list)   # node counts where `UPDATE_OPS` was read into a name
    owned: set[int] = field(default_factory=set)     # ids of what constructs translate or check themselves (`own`)
    checked: set[int] = field(default_factory=set)   # ids of calls (and helper names) checked as a tensor's (nested_calls)
    invented: set[str] = field(default_factory=set)  # names the model gave values the program does not name
    as_written: dict[int, cst.CSTNode] = field(default_factory=dict)   # id of a line the model wrote anew -> the user's
    state_fields: dict[int, int] = field(default_factory=dict)   # id of `state.c`/`state.h` of a stacked LSTM state -> index
    # node of a function the graph code calls -> its replacement (constructs: a summary statement
    # removed, an outer variable scope's `with` flattened), written into the function (emit)
    edits: dict = field(default_factory=dict)
    # a scope string of a graph statement -> the one the rewrite writes (constructs/scoped_calls.py)
    labels: dict = field(default_factory=dict)
    # a graph name rebound to a host value once the runs are done -> (item position, statement)
    # (constructs/retired_names.py)
    retired: dict = field(default_factory=dict)

    def node(self, name: str) -> Node | None:
        i = self.final.get(name)
        return None if i is None else self.nodes[i]

    def trainable(self) -> list[Node]:
        """Trainable variables, and layers whose weights are trainable, in creation order."""
        return [n for n in self.nodes if n.trained()]
