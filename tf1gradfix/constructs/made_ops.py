"""The ops a graph statement makes, named in the graph's order: what later names are made
unique against (model/tf1_names.py).

A summary's tag is its name made unique in the graph, compared in lower case, so an
unnamed `tf.reduce_max(v)` made first (op `Max`) turns the summary `max` into `max_1`.
Every call of rules/op_names.toml takes its name as Python makes it: the arguments'
ops first, left to right, then the call's own, named as given or by its default.
Calls of other functions name nothing here (their ops' names are not known).
"""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import arg, literal_string
from tf1gradfix.model.tf1_names import op_names

# (made a number of times the code does not show, or not when the statement runs)
_NOT_NOW = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def name_ops(builder, expr: cst.CSTNode, scope: str) -> str | None:
    """Gives each op of rules/op_names.toml that `expr` makes its TF1 name under the name
    scope `scope` (`a/b/`), in Python's order; returns the name of `expr`'s own op where
    `expr` is such a call given its name as a string (None otherwise: an op named by its
    default may have been preceded by ops of that name the rewrite does not see)."""
    own = None
    for call in _calls_in_order(expr):
        row = op_names().get(builder.qualified(call.func) or "")
        if row is None:
            continue
        given = arg(call, row.get("name_at", -1), "name")
        unnamed = given is None or isinstance(given, cst.Name) and given.value == "None"
        label = row.get("default") if unnamed else literal_string(given)
        if label:   # (a name computed at run time is not known: it names nothing here)
            named = builder.unique_name(scope + label)
            if call is expr and not unnamed:
                own = named
    return own


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    """The calls under `node` in the order Python completes them (arguments first)."""
    if isinstance(node, _NOT_NOW):
        return []
    found = [call for child in node.children for call in _calls_in_order(child)]
    return found + [node] if isinstance(node, cst.Call) else found
