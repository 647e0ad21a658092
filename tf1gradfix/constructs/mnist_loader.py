"""TF1's MNIST tutorial loader, `input_data.read_data_sets` (tensorflow/examples/tutorials/
mnist). It is host code (it reads files into NumPy arrays: kinds.toml `host`), but TF2
ships no `tensorflow.examples`. The rewrite defines a helper with the loader's API and
numbers over `tf.keras.datasets.mnist.load_data()` after the imports (rules/helpers.toml
`mnist_data_sets`), calls it where the program called the loader, and drops the
tutorial's imports.

Refused, with the line: what the helper does not reproduce (fake data, another source,
a dtype other than float32 or uint8, an argument the loader does not take), a program
that sets a graph-level seed without passing `seed=` (TF1's loader reseeded NumPy from
it), the tutorial module imported in another form or used for anything else, and a
loader call inside graph code (its statement would not be host code the rewrite keeps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, name_nodes
from tf1gradfix.cst.walk import walk

HELPER = "mnist_data_sets"   # its row in rules/helpers.toml
LOADERS = frozenset({"tensorflow.examples.tutorials.mnist.input_data.read_data_sets"})   # what the helper replaces
TUTORIALS = "tensorflow.examples"
PARAMS = ("train_dir", "fake_data", "one_hot", "dtype", "reshape", "validation_size", "seed", "source_url")
DTYPES = frozenset({"tensorflow.float32", "tensorflow.uint8", "tensorflow.dtypes.float32", "tensorflow.dtypes.uint8"})
# Calls that set the graph-level seed TF1's loader reseeded NumPy with when given no `seed=`.
GRAPH_SEEDS = frozenset({"tensorflow.set_random_seed", "tensorflow.random.set_random_seed", "tensorflow.random.set_seed"})



@dataclass
class Loader:
    """The loader calls of a module, the import statements that go, and what is refused."""

    calls: list[cst.Call]
    imports: list[cst.SimpleStatementLine] = field(default_factory=list)
    kept_name: str | None = None   # `from ...input_data import read_data_sets`: the helper takes that name
    refused: list[Refusal] = field(default_factory=list)

    def edits(self, helper: str) -> dict:
        """Each call calls the helper; the tutorial's imports go."""
        out: dict = {stmt: cst.RemovalSentinel.REMOVE for stmt in self.imports}
        out.update({call.func: cst.Name(helper) for call in self.calls
                    if not (isinstance(call.func, cst.Name) and call.func.value == helper)})
        return out


def plan(module: cst.Module, calls: list[cst.Call], seeds: list[cst.Call], qualified) -> Loader | None:
    """The module's loader, read from its calls (`calls`, found by the graph-call scan with
    the calls setting a graph-level seed, `seeds`); None where the module calls none."""
    if not calls:
        return None
    loader = Loader(calls)
    bound = _imports(module, loader)
    heads = {id(_head(call.func)) for call in calls}
    for call in calls:
        head = _head(call.func)
        if not isinstance(head, cst.Name) or head.value not in bound:   # (an import inside a function...)
            loader.refused.append(Refusal.of(call, "mnist_import_form"))
        loader.refused += _arguments(call, bool(seeds), qualified)
    imported = {id(n) for stmt in loader.imports for n in name_nodes(stmt)}
    for node in name_nodes(module):   # the tutorial module's every other use
        if node.value in bound and id(node) not in heads and id(node) not in imported \
                and (qualified(node) or "").startswith(TUTORIALS):
            loader.refused.append(Refusal.of(node, "mnist_module_other_use", name=node.value))
    for found in walk(module):   # `next_batch(..., fake_data=...)`: the helper has no fake data
        if isinstance(found, cst.Call) and isinstance(found.func, cst.Attribute) and found.func.attr.value == "next_batch":
            fake = arg(found, 1, "fake_data")
            if fake is not None and not (isinstance(fake, cst.Name) and fake.value == "False"):
                loader.refused.append(Refusal.of(found, "mnist_fake_data", api="next_batch"))
    return loader


def check_replaced(new: cst.Module, loader: Loader, edits: dict) -> None:
    """A loader call the rewrite kept as it was (in code it rewrote otherwise), still
    naming the tutorial module: refused."""
    kept = {id(call.func): call for call in loader.calls if call.func in edits}
    left = next((n for n in walk(new) if id(n) in kept), None)
    if left is not None:
        raise Refusal.of(kept[id(left)], "mnist_loader_in_graph")


def _imports(module: cst.Module, loader: Loader) -> dict[str, str]:
    """Local name -> the tutorial module or function a top-level import binds it to; the
    statements go (`loader.imports`), other forms are refused."""
    bound: dict[str, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            names = _tutorial_names(small)
            if names is None:
                continue
            if len(stmt.body) != 1 or not names:
                loader.refused.append(Refusal.of(small, "mnist_import_form"))
                continue
            loader.imports.append(stmt)
            bound.update(names)
    for local, full in bound.items():
        if full in LOADERS:
            loader.kept_name = local
    return bound


def _tutorial_names(small: cst.BaseSmallStatement) -> dict[str, str] | None:
    """The names an import of `tensorflow.examples...` binds ({} for a form the rewrite does
    not read: `*`, a bare `import tensorflow.examples...`); None for any other statement."""
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        path = cst.Module([]).code_for_node(small.module)
        if not (path == TUTORIALS or path.startswith(TUTORIALS + ".")):
            return None
        if isinstance(small.names, cst.ImportStar):
            return {}
        return {cst.ensure_type((a.asname.name if a.asname else a.name), cst.Name).value:
                f"{path}.{cst.Module([]).code_for_node(a.name)}" for a in small.names}
    if isinstance(small, cst.Import):
        paths = [cst.Module([]).code_for_node(a.name) for a in small.names]
        if not any(p == TUTORIALS or p.startswith(TUTORIALS + ".") for p in paths):
            return None
        if len(small.names) != 1 or small.names[0].asname is None:
            return {}
        return {cst.ensure_type(small.names[0].asname.name, cst.Name).value: paths[0]}
    return None


def _arguments(call: cst.Call, graph_seed: bool, qualified) -> list[Refusal]:
    """What the helper does not take, each with its reason."""
    given: dict[str, cst.BaseExpression] = {}
    for position, a in enumerate(call.args):
        keyword = a.keyword.value if a.keyword is not None else None
        if a.star or (keyword or "") not in ("", *PARAMS) or keyword is None and position >= len(PARAMS):
            return [Refusal.of(call, "mnist_loader_arguments")]
        given[keyword or PARAMS[position]] = a.value
    refused = []
    fake = given.get("fake_data")
    if fake is not None and not (isinstance(fake, cst.Name) and fake.value == "False"):
        refused.append(Refusal.of(fake, "mnist_fake_data", api="read_data_sets"))
    if "source_url" in given:
        refused.append(Refusal.of(given["source_url"], "mnist_source_url"))
    if "dtype" in given and qualified(given["dtype"]) not in DTYPES:
        refused.append(Refusal.of(given["dtype"], "mnist_dtype"))
    seed = given.get("seed")
    if graph_seed and not (isinstance(seed, cst.Integer) and int(seed.value, 0) != 0):
        refused.append(Refusal.of(call, "mnist_graph_seed"))
    return refused


def _head(func: cst.BaseExpression) -> cst.BaseExpression:
    """`input_data` of `input_data.read_data_sets`, `mnist` of `mnist.input_data.read_data_sets`."""
    while isinstance(func, cst.Attribute):
        func = func.value
    return func
