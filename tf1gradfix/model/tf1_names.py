"""TF1's names, as a TF1 graph gives them: the one place the rewrite computes them.

Two counters decide every name (tensorflow/python/framework/ops.py `Graph.unique_name`,
tensorflow/python/ops/variable_scope.py `_VariableScopeStore`):

- the graph's names in use, compared in lower case: an op, a name scope, a variable
  (`tf.Variable` under the name scopes, `tf.get_variable` at the top with its variable
  scopes) takes `name`, or `name_1`, `name_2`... where the name is taken in any case
  (`Embedding` after a name scope `embedding` is `Embedding_1`);
- the variable scopes opened so far, compared exactly, under each variable scope: a
  scope made unique (`tf.layers` and contrib layers: `dense`, `dense_1`... in each
  variable scope) takes the first of `name`, `name_1`... not opened in the current
  variable scope since it was last entered.
"""

from __future__ import annotations

import functools

from tf1gradfix.rules.catalog import _read


@functools.lru_cache(maxsize=None)
def op_names() -> dict[str, dict]:
    """TF1 function -> its row of rules/op_names.toml: the functions whose result's op
    takes the name the call gives (`name_at`: its position, where it may be given so)."""
    return _read("op_names.toml")["op"]


def numbered(base: str, k: int) -> str:
    """`base`, `base_1`, `base_2`...: the k-th of a name TF1 numbers."""
    return base if k == 0 else f"{base}_{k}"


class GraphNames:
    """The names a TF1 graph has given so far (`Graph._names_in_use`)."""

    def __init__(self) -> None:
        self.in_use: dict[str, int] = {}

    def unique(self, name: str) -> str:
        """The name TF1 gives an op, scope or variable asking for `name` (a full name),
        marked as used: `Graph.unique_name` in lower case, the asked case kept."""
        key = name.lower()
        i = self.in_use.get(key, 0)
        self.in_use[key] = i + 1
        if i == 0:
            return name
        base = key
        while key in self.in_use:
            key = f"{base}_{i}"
            i += 1
        self.in_use[key] = 1
        return f"{name}_{i - 1}"

    def taken(self, name: str) -> bool:
        """Has the graph given `name` (in any case)?"""
        return self.in_use.get(name.lower(), 0) > 0


class VariableScopes:
    """The variable scopes opened so far (`_VariableScopeStore.variable_scopes_count`)."""

    def __init__(self) -> None:
        self.opened: dict[str, int] = {}

    def unique(self, current: str, prefix: str) -> str:
        """The scope TF1 opens for `prefix` made unique in the variable scope `current`
        (`""` at the top, else `a/b/`): `_get_unique_variable_scope`, opened. Returns
        the full scope name, without the trailing `/`."""
        name = current + prefix
        k = 0
        while self.opened.get(numbered(name, k), 0) > 0:
            k += 1
        full = numbered(name, k)
        self.open(full)
        return full

    def open(self, full: str) -> None:
        self.opened[full] = self.opened.get(full, 0) + 1

    def close(self, full: str) -> None:
        """Leaving the variable scope `full` (entered by its name): the scopes under it
        are counted afresh when it is entered again."""
        for name in self.opened:
            if name.startswith(full + "/"):
                self.opened[name] = 0
