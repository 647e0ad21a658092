"""Where a step function writes the variable lists its statements read.

A collection read by graph code (`params = tf.trainable_variables()`, a filter of it)
does not exist in TF2: the step function writes it as an explicit list in TF1's order
(graph_collections.list_text). Plain variables exist where the module runs, so their
list goes at the top of the function. A Keras layer's weight (`dense.kernel`) or a
layer function's (`linear.made["scope/w"]`) exists only once the layer or module has
been called: its list goes right before the first of the function's own statements
that reads it, after the forward code that built them, or right after the tape's block
where only what follows reads it (`tape.gradient(cost, params)`).
"""

from __future__ import annotations

from typing import cast

from tf1gradfix.constructs import graph_collections
from tf1gradfix.model.nodes import BuilderModule, OptimizerCall, VarList
from tf1gradfix.model.parts import Listed
from tf1gradfix.model.slicing import Signature

AFTER_TAPE = -1   # the key of the lists written after the tape's block


def placed(program, naming, sig: Signature, own: list[int], shared: set[int]) -> tuple[list[str], dict[int, list[str]]]:
    """(the lists written at the top, {index of the statement they go before (AFTER_TAPE:
    after the tape's block): lists}); `own`: the forward statements the function writes
    itself, `shared`: those a helper computes (a list they read goes at the top)."""
    read = sorted({d for i in sig.nodes if not isinstance(program.nodes[i], (OptimizerCall, VarList))
                   for d in program.nodes[i].deps if isinstance(program.nodes[d], VarList)})
    top: list[str] = []
    late: dict[int, list[str]] = {}
    for index in read:
        n = cast(VarList, program.nodes[index])
        text = f"{n.names[0]} = {graph_collections.list_expression(graph_collections.list_text(program, naming, n.members))}"
        readers = [i for i in own if index in program.nodes[i].deps]
        if not any(_made_on_call(program, e) for e in n.members) or any(index in program.nodes[i].deps for i in shared):
            top.append(text)
        else:
            late.setdefault(readers[0] if readers else AFTER_TAPE, []).append(text)
    return top, late


def _made_on_call(program, entry: Listed) -> bool:
    node = program.nodes[entry.node]
    return entry.weight is not None or isinstance(node, BuilderModule) and (
        node.scope_parameter is not None or node.lazy or node.made_on_call)
