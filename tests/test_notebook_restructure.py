"""A session notebook restructured as one program and written back cell by cell:
every statement stays in its cell, outputs, metadata and the JSON layout are kept,
and a restructuring that would move code between cells leaves the notebook intact."""

from __future__ import annotations

import ast
import copy
import json

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.run import notebooks
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

CELLS = [
    ("markdown", ["# Linear regression in TF1\n", "Trained with a session."]),
    ("code", ["%matplotlib inline\n", "import numpy as np\n", "import tensorflow as tf"]),
    ("code", ["np.random.seed(0)\n", "tf.set_random_seed(0)\n",
              "data_x = np.random.randn(32, 3).astype(np.float32)\n", "data_y = data_x.sum(axis=1, keepdims=True)"]),
    ("code", ["x = tf.placeholder(tf.float32, [None, 3])\n", "y = tf.placeholder(tf.float32, [None, 1])\n",
              'w = tf.Variable(tf.zeros([3, 1]), name="w")\n', "loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))\n",
              "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)"]),
    ("code", ["sess = tf.Session()\n", "sess.run(tf.global_variables_initializer())"]),
    ("code", ["for step in range(20):\n",
              "    _, value = sess.run([train_op, loss], feed_dict={x: data_x, y: data_y})\n", "print(value)"]),
    ("code", ["print(sess.run(loss, feed_dict={x: data_x, y: data_y}))"]),
]


def notebook(cells=CELLS, **dump) -> str:
    doc = {"cells": [{"cell_type": kind, "metadata": {"id": f"c{n}"}, "source": source,
                      **({"execution_count": n, "outputs": [{"output_type": "stream", "name": "stdout",
                                                             "text": [f"out {n} é\n"]}]} if kind == "code" else {})}
                     for n, (kind, source) in enumerate(cells)],
           "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    settings = dict(indent=1, sort_keys=True, ensure_ascii=False)
    settings.update(dump)
    return json.dumps(doc, **settings) + "\n"


def moved_across_cells() -> list:
    """The graph built in two cells with host code between: the loss of cell 4 would
    move into a step function written after the optimizer of cell 6."""
    cells = copy.deepcopy(CELLS)
    graph = cells[3][1]
    return [*cells[:3], ("code", graph[:3] + [graph[3].rstrip("\n")]), ("code", ['print("graph built")']),
            ("code", [graph[4]]), *cells[4:]]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def sources(text: str) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(text)["cells"]]


def without_sources(text: str) -> dict:
    doc = json.loads(text)
    for cell in doc["cells"]:
        cell.pop("source")
    return doc


@pytest.mark.parametrize("dump", [{}, dict(indent=2, sort_keys=False)], ids=["indent1", "indent2"])
def test_a_session_notebook_is_restructured_cell_by_cell(folder, capsys, dump):
    before = notebook(**dump)
    (folder / "train.ipynb").write_text(before)
    code, out, _ = run(capsys, "rewrite", "--no-verify", "train.ipynb")
    after = (folder / "train.ipynb").read_text()
    assert code == 0 and "1 file restructured unproven" in out
    settings = dict(indent=1, sort_keys=True, ensure_ascii=False)
    settings.update(dump)
    assert json.dumps(json.loads(after), **settings) + "\n" == after   # (the layout it was saved in)
    kept = without_sources(before)
    del kept["cells"][4]   # (the session and its initializer: the cell, emptied, is removed with its outputs)
    assert without_sources(after) == kept                              # outputs, metadata, markdown
    cells = sources(after)
    assert cells[:2] == sources(before)[:2]   # (the markdown, and the imports with their magic line)
    assert cells[2] == sources(before)[2].replace("tf.set_random_seed", "tf.random.set_seed")
    assert cells[3].startswith('w = tf.Variable(') and "def train_step(x, y):" in cells[3]
    assert cells[4].startswith("for step in range(20):\n    value = train_step(data_x, data_y).numpy()")
    assert cells[5] == "print(compute_loss(data_x, data_y).numpy())"
    for cell in cells[2:]:
        ast.parse(cell)   # each cell runs alone, as whole statements
    script = process_source("t.py", notebooks.script(before.encode()), CodeFilter()).new_source.decode()
    joined = notebooks.script(after.encode()).decode()
    assert [line for line in joined.splitlines() if line] == [line for line in script.splitlines() if line]
    assert run(capsys, "rewrite", "--check", "train.ipynb")[0] == 0   # TF2 now: nothing left


def test_a_notebook_whose_statements_would_move_across_cells_is_left_intact(folder, capsys):
    before = notebook(moved_across_cells())
    (folder / "train.ipynb").write_bytes(before.encode())
    code, out, _ = run(capsys, "rewrite", "--no-verify", "train.ipynb")
    assert (folder / "train.ipynb").read_bytes() == before.encode() and code == 1
    assert ("train.ipynb: not restructured (still TF1 graph code) because of cell 3 line 1: TFG905 the restructured "
            "program does not map back onto the notebook's cells: a statement of this cell would move below cell 5"
            in out)
    assert "TFG101 [manual]" in out and "[*" not in out
    _, out, _ = run(capsys, "rewrite", "--check", "--format", "json", "train.ipynb")
    assert [(b["cell"], b["code"]) for b in json.loads(out)["not_restructured"]["train.ipynb"]] == [(3, "TFG905")]


def test_check_leaves_a_session_notebook_to_rewrite(folder, capsys):
    (folder / "train.ipynb").write_text(notebook())
    code, out, _ = run(capsys, "check", "train.ipynb")
    assert code == 1 and "train.ipynb:cell 3:1:5: TFG101 [rewrite decides] " in out and "[*" not in out
    assert "in session programs" in out.splitlines()[-1]


def test_without_tensorflow_a_notebook_gets_its_safe_fixes_only(folder, capsys, monkeypatch):
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: True)
    before = notebook()
    (folder / "train.ipynb").write_text(before)
    code, out, err = run(capsys, "rewrite", "train.ipynb")
    assert (folder / "train.ipynb").read_text() == before.replace('"tf.set_random_seed(0)\\n"', '"tf.compat.v1.set_random_seed(0)\\n"')
    assert "1 file can be restructured into TF2 but got only the safe fixes" in err
    assert "TFG101 [proven]" in out and code == 1


@pytest.mark.parametrize("verdict", ["EQUIVALENT", "DIVERGED"])
def test_rewrite_writes_a_restructured_notebook_only_once_proven(folder, capsys, monkeypatch, verdict):
    """What is proven is what is written: the verifier runs the new notebook's code cells."""
    from tf1gradfix.verify import orchestrate
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    before = notebook()
    (folder / "train.ipynb").write_text(before)
    ran = {}

    def verified(original, candidate, **_):
        ran.update(original=original.read_text(), candidate=candidate.read_text())
        return VerifyResult(verdict, "compared", SideResult("original", str(original)), SideResult("migrated", str(candidate)))

    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    run(capsys, "rewrite", "train.ipynb")
    after = (folder / "train.ipynb").read_text()
    assert ran["original"] == notebooks.script(before.encode()).decode()
    if verdict == "EQUIVALENT":
        assert ran["candidate"] == notebooks.script(after.encode()).decode() and "def train_step" in after
    else:   # (the safe fix alone, as for a script whose restructuring is not proven)
        assert "def train_step" in ran["candidate"] and "def train_step" not in after
        assert after == before.replace('"tf.set_random_seed(0)\\n"', '"tf.compat.v1.set_random_seed(0)\\n"')


@pytest.mark.tf
def test_a_restructured_notebook_is_proven_equivalent(folder, capsys):
    (folder / "train.ipynb").write_text(notebook())
    code, out, _ = run(capsys, "rewrite", "train.ipynb")   # (the default: proven before it is written)
    assert "train.ipynb: EQUIVALENT (written)" in out, out
    assert "def train_step" in (folder / "train.ipynb").read_text() and code == 0


def test_a_cell_that_would_not_be_whole_statements_or_would_lose_its_ipython_line_is_refused():
    from tf1gradfix.run.notebook_cells import split

    old, cell_of = ["a = 1\n", "b = 2\n"], [0, 1]
    assert split(old, cell_of, set(), ["if a:\n", "    b = 2\n"], [2, 3]) == (
        0, "a statement of the rewrite would be split between this cell and the next")
    assert split(["pass\n", "x = 1\n"], [0, 1], {0}, ["x = 1\n"], [2, 3]) == (
        0, "an IPython line (`%`, `!`) of the cell would not stay where it was")
    assert split(old, cell_of, set(), ["def f():\n", "    return 1\n", "b = 2\n"], [2, 3]) == [
        [("def f():\n", None), ("    return 1\n", None)], [("b = 2\n", 1)]]


def test_a_session_block_in_its_own_cell_is_flattened_in_that_cell(folder, capsys):
    """`with tf.Session() as sess:` around the training loop: the loop, dedented, stays in
    its cell; the tape (`with tf.GradientTape()`, alike in text) goes with the graph code."""
    cells = [*CELLS[:4], ("code", ["with tf.Session() as sess:\n", "    sess.run(tf.global_variables_initializer())\n",
                                   "    for step in range(5):\n",
                                   "        _, value = sess.run([train_op, loss], feed_dict={x: data_x, y: data_y})\n",
                                   "        print(step, value)\n", "    print(sess.run(w))"])]
    (folder / "train.ipynb").write_text(notebook(cells))
    assert run(capsys, "rewrite", "--no-verify", "train.ipynb")[0] == 0
    after = sources((folder / "train.ipynb").read_text())
    assert "with tf.GradientTape() as tape:" in after[3] and "def train_step(x, y):" in after[3]
    assert after[4] == ("for step in range(5):\n    value = train_step(data_x, data_y).numpy()\n"
                        "    print(step, value)\nprint(w.numpy())")


def test_diff_of_a_notebook_is_python_per_code_cell_numbered_as_ruff(folder, capsys):
    (folder / "train.ipynb").write_text(notebook())
    code, out, _ = run(capsys, "rewrite", "--diff", "--no-verify", "train.ipynb")
    assert '"cell_type"' not in out and '"source"' not in out   # (no JSON)
    heads = [line for line in out.splitlines() if line.startswith("--- a/")]
    # code cells 2..6 of 6 changed (the markdown cell is not counted); cell 4, emptied, diffs to nothing
    assert heads == [f"--- a/train.ipynb:cell {n}" for n in (2, 3, 4, 5, 6)]
    assert "-tf.set_random_seed(0)\n+tf.random.set_seed(0)" in out
    assert "-sess = tf.Session()" in out
