"""The shape of the rewrite engine: the package imports without cycles, graph
statements are dispatched through the construct registry, and the model is
typed (no node kind is tested by its string, no `info` dict)."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from tf1gradfix.emit.restructure import restructure
from tf1gradfix.model import nodes, registry
from tf1gradfix.run.findings import code_matches

PACKAGE = Path(__file__).resolve().parent.parent / "tf1gradfix"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph(function_level: bool) -> dict[str, set[str]]:
    """tf1gradfix module -> the tf1gradfix modules it imports. `from pkg import name` counts
    as importing `pkg.name` when that is a module, else `pkg`. With `function_level`, imports
    inside functions count too (they run later, but they are still a dependency)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        nodes_ = ast.walk(tree) if function_level else _module_level(tree.body)
        for node in nodes_:
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                for a in node.names:
                    found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _module_level(body):
    """Statements run on import: the module's own, inside top-level `if`/`try`, not in functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try)):
            for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", []),
                          *[h.body for h in getattr(stmt, "handlers", [])]):
                yield from _module_level(block)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_imports_without_cycles():
    """Module-level imports and imports inside functions alike: a function-level import
    that closes a cycle only hides it (builders <-> graph <-> var_lists did)."""
    assert cycles(import_graph(function_level=True)) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


PROGRAM = """import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.zeros([2, 1]), name="w")
h = tf.layers.dense(x, 3, name="hidden")
loss = tf.reduce_mean(tf.matmul(x, w)) + tf.reduce_mean(h)
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, value = sess.run([train, loss], {x: [[1.0, 2.0]]})
"""


def test_graph_statements_go_through_the_registry(monkeypatch):
    """Each graph statement is offered to the registry's constructs in order; the first
    that builds it ends the search (a new construct is one more entry)."""
    offered: list[tuple[str, ...]] = []

    class Spy:
        @staticmethod
        def build(builder, statement) -> bool:
            offered.append(tuple(statement.names))
            return False

    monkeypatch.setattr(registry, "REGISTRY", (Spy, *registry.REGISTRY))
    assert restructure(cst.parse_module(PROGRAM), "input.py").new_module is not None
    assert offered == [("x",), ("w",), ("h",), ("loss",), ("train",)]


def test_the_registry_ends_with_the_catch_all_and_lists_every_construct():
    names = [m.__name__.rsplit(".", 1)[1] for m in registry.REGISTRY]
    assert names[-1] == "tensors"
    building = {p.stem for p in (PACKAGE / "constructs").glob("*.py") if "\ndef build(" in p.read_text()}
    assert building == set(names)


def test_the_model_is_typed(monkeypatch):
    """The program's nodes are the model's classes, with their fields set."""
    built = []
    original = registry.REGISTRY[-1].build

    monkeypatch.setattr(registry.REGISTRY[-1], "build", lambda b, s: built.append(b.program) or original(b, s))
    restructure(cst.parse_module(PROGRAM), "input.py")
    program = built[-1]
    kinds = [type(n).__name__ for n in program.nodes]
    assert kinds == ["Placeholder", "Variable", "Layer", "LayerCall", "Tensor", "Optimizer", "TrainOp"]
    placeholder, variable, layer, call, _, optimizer, train = program.nodes
    assert (placeholder.default, placeholder.mode_flag) == (None, False)
    assert (variable.full_name, variable.trainable, variable.source) == ("w", True, "tensorflow.Variable")
    assert (layer.full_name, layer.base, layer.kind) == ("hidden", "hidden", "layer")
    assert call.layer == layer.index and call.kind == "tensor"
    assert (optimizer.cls, optimizer.inline) == ("GradientDescentOptimizer", True)
    assert (train.method, train.optimizer, train.differentiates()) == ("minimize", optimizer.index, True)
    assert [n.trained() for n in program.nodes] == [False, True, True, False, False, False, False]


def _kind_tests(path: Path) -> list[str]:
    """`x.kind == "..."`, `x.kind in (...)`, `x.info`: tests of a node by its kind string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides) and any(
                    isinstance(s, ast.Constant) and isinstance(s.value, str)
                    or isinstance(s, (ast.Tuple, ast.List, ast.Set)) for s in sides):
                found.append(f"{path.name}:{node.lineno}")
        if isinstance(node, ast.Attribute) and node.attr == "info" and isinstance(node.ctx, ast.Load) \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("logging", "logger", "log")):
            found.append(f"{path.name}:{node.lineno} .info")
    return found


def test_no_node_is_tested_by_its_kind_string():
    paths = [p for pkg in ("model", "constructs", "emit") for p in (PACKAGE / pkg).glob("*.py")]
    assert [hit for p in paths for hit in _kind_tests(p)] == []


def test_the_kind_test_finder_finds_them(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("a = n.kind == 'layer'\nb = n.kind not in ('x', 'y')\nc = n.info['cls']\nd = n.kind\n")
    assert _kind_tests(sample) == ["sample.py:1", "sample.py:2", "sample.py:3 .info"]


def test_node_fields_are_declared_and_annotated():
    """Every node class is a dataclass whose fields all have annotations (mypy reads them)."""
    import dataclasses
    classes = [c for c in vars(nodes).values() if isinstance(c, type) and issubclass(c, nodes.Node)]
    assert len(classes) >= 13
    for c in classes:
        assert dataclasses.is_dataclass(c)
        assert all(f.type not in (None, "") for f in dataclasses.fields(c)), c


REFUSED_BEFORE_WRITING = {
    "placeholder `x` without a dtype": ("x = tf.placeholder(shape=[None, 2])", "tf.reduce_mean(tf.matmul(x, w))",
                                       "GradientDescentOptimizer(0.1)", "loss"),
    "a loss that is an expression, not a name": ("x = tf.placeholder(tf.float32, [None, 2])",
                                                 "tf.reduce_mean(tf.matmul(x, w))",
                                                 "GradientDescentOptimizer(tf.constant(0.1))", "loss * 2.0"),
    "`AdagradDAOptimizer` has no TF2 rewrite": ("x = tf.placeholder(tf.float32, [None, 2])",
                                                "tf.reduce_mean(tf.matmul(x, w))",
                                                "AdagradDAOptimizer(0.1, global_step=tf.train.get_or_create_global_step())",
                                                "loss"),
}


def test_refusals_are_decided_before_any_text_is_written(monkeypatch):
    """What emit/ used to refuse while writing a function or an optimizer statement is
    refused by the model's checks first (same code, same message)."""
    from tf1gradfix.emit.state import StateEmitter
    from tf1gradfix.emit.tape import TapeEmitter

    def writing(*args, **kwargs):
        raise RuntimeError("text written")

    for cls, method in ((TapeEmitter, "function_text"), (TapeEmitter, "helper_text"), (StateEmitter, "optimizer")):
        monkeypatch.setattr(cls, method, writing)
    for message, (placeholder, loss, optimizer, minimized) in REFUSED_BEFORE_WRITING.items():
        source = (f"import tensorflow as tf\n{placeholder}\nw = tf.Variable(tf.zeros([2, 1]), name=\"w\")\n"
                  f"loss = {loss}\ntrain = tf.train.{optimizer}.minimize({minimized})\n"
                  "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                  "    sess.run(train, {x: [[1.0, 2.0]]})\n")
        result = restructure(cst.parse_module(source), "input.py")
        assert result.new_module is None
        assert [d[3] for d in result.diagnostics if code_matches(d[2], ("TFG905", "TFG906"))][0].startswith(message), result.diagnostics
