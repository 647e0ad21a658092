"""Magics whose body is Python (`%%time`, `%time`, `%timeit`, `%%capture`): read,
migrated and run as the Python they contain; other magics that use a name the
rewrite removes refuse the notebook."""

from __future__ import annotations

import json

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.run import notebook_magics, notebooks

GRAPH = [
    ("code", ["import numpy as np\n", "import tensorflow as tf"]),
    ("code", ["rng = np.random.RandomState(3)\n", "feats = rng.randn(24, 4).astype(np.float32)\n",
              "target = (feats @ np.arange(1.0, 5.0, dtype=np.float32)).reshape(-1, 1)"]),
    ("code", ["inp = tf.placeholder(tf.float32, [None, 4])\n", "out = tf.placeholder(tf.float32, [None, 1])\n",
              'kernel = tf.Variable(tf.zeros([4, 1]), name="kernel")\n',
              "cost = tf.reduce_mean(tf.square(tf.matmul(inp, kernel) - out))\n",
              "step_op = tf.train.GradientDescentOptimizer(0.05).minimize(cost)"]),
    ("code", ["sess = tf.Session()\n", "sess.run(tf.global_variables_initializer())"]),
]
TRAINING = ("code", ["%%time\n", "for epoch in range(12):\n",
                     "    _, seen = sess.run([step_op, cost], feed_dict={inp: feats, out: target})\n",
                     "    print(epoch, seen)"])
EVALUATION = ("code", ["%time print(sess.run(cost, feed_dict={inp: feats, out: target}))"])


def notebook(cells) -> str:
    doc = {"cells": [{"cell_type": kind, "metadata": {}, "source": source, "execution_count": None, "outputs": []}
                     for kind, source in cells],
           "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def sources(text: str) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(text)["cells"]]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_python_of_time_magics_is_part_of_the_program():
    joined = notebook_magics.join([
        ["%%time\n", "a = f(1)\n"], ["%time b = g(a)\n", "    %timeit -n 3 -r1 -q h(b)\n", "%timeit\n"],
        ["%%capture --no-stderr captured\n", "c = 1\n"], ["%%timeit setup()\n", "d = 2\n"], ["%%bash\n", "ls $a\n"],
        ["%matplotlib inline\n", "!pip list\n", "%prun sess.run(x)\n"]])
    assert joined.text.splitlines() == ["pass", "a = f(1)", "b = g(a)", "    h(b)", "pass", "pass", "c = 1",
                                        "pass", "pass", "pass", "pass", "pass", "pass", "pass"]
    assert joined.prefix == {2: "%time ", 3: "%timeit -n 3 -r1 -q "}
    assert sorted(joined.opaque) == [4, 7, 8, 9, 10, 11, 12, 13] and sorted(joined.held) == [0, 4, 5, 7, 8, 9, 10, 11, 12, 13]


def test_check_reports_tf1_code_inside_a_time_cell(folder, capsys):
    """A notebook whose only TF1 code sits in a `%%time` cell is not clean."""
    (folder / "only.ipynb").write_text(notebook([("code", ["import tensorflow as tf"]),
                                                 ("code", ["%%time\n", "x = tf.log(2.0)"]),
                                                 ("code", ["%time y = tf.log(x)"])]))
    code, out, _ = run(capsys, "check", "only.ipynb")
    assert code == 1
    assert "only.ipynb:cell 2:2:5: TFG401 [*safe] `tf.log` is `tf.math.log` in TF2" in out
    assert "only.ipynb:cell 3:1:11: TFG401" in out   # (the line magic's Python, its column in the cell)
    assert run(capsys, "rewrite", "--no-verify", "only.ipynb")[0] == 0
    after = sources((folder / "only.ipynb").read_text())
    assert after[1] == "%%time\nx = tf.math.log(2.0)" and after[2] == "%time y = tf.math.log(x)"


def test_a_training_loop_in_a_time_cell_is_migrated_in_its_cell(folder, capsys):
    before = notebook([*GRAPH, TRAINING, EVALUATION])
    (folder / "train.ipynb").write_text(before)
    code, out, _ = run(capsys, "rewrite", "--no-verify", "train.ipynb")
    assert code == 0, out
    after = sources((folder / "train.ipynb").read_text())
    assert len(after) == 5   # (the session's cell, emptied, is removed)
    assert after[3] == ("%%time\nfor epoch in range(12):\n    seen = train_step(feats, target).numpy()\n"
                        "    print(epoch, seen)")
    assert after[4] == "%time print(compute_cost(feats, target).numpy())"
    script = notebooks.script((folder / "train.ipynb").read_bytes()).decode()
    assert "sess" not in script and "    seen = train_step(feats, target).numpy()" in script
    assert "print(compute_cost(feats, target).numpy())" in script


def test_another_magic_that_uses_a_removed_name_refuses_the_notebook(folder, capsys):
    before = notebook([*GRAPH, TRAINING, ("code", ["%prun sess.run(cost, feed_dict={inp: feats, out: target})"])])
    (folder / "train.ipynb").write_text(before)
    code, out, _ = run(capsys, "rewrite", "--no-verify", "train.ipynb")
    assert (folder / "train.ipynb").read_text() == before and code == 1
    assert "because of cell 6 line 1: TFG905" in out and "`%prun sess.run(" in out and "uses `sess`" in out


def test_a_line_magic_rewritten_into_several_lines_refuses_the_notebook():
    from tf1gradfix.run.notebook_cells import split

    old = ["a = 1\n", "b = a\n"]
    assert split(old, [0, 1], set(), ["a = 1\n", "b = (a +\n", "     0)\n"], [1, 2], {1: "%time "}) == (
        1, "the Python of a line magic (`%time`) would be rewritten into more than one line")
    assert split(old, [0, 1], set(), ["a = 1\n", "b = a + 0\n"], [1, 2], {1: "%time "}) == [
        [("a = 1\n", 0)], [("%time b = a + 0\n", None)]]


@pytest.mark.tf
def test_training_in_a_time_cell_is_proven_and_a_wrong_one_diverges(folder, capsys):
    """Real training runs in the `%%time` cell on both sides: the rewrite is proven, and a
    migration whose `%%time` cell trains with another learning rate is DIVERGED."""
    (folder / "train.ipynb").write_text(notebook([*GRAPH, TRAINING, EVALUATION]))
    (folder / "original.ipynb").write_text(notebook([*GRAPH, TRAINING, EVALUATION]))
    code, out, _ = run(capsys, "rewrite", "train.ipynb")
    assert "train.ipynb: EQUIVALENT (written)" in out and code == 0, out
    migrated = (folder / "train.ipynb").read_text()
    assert "%%time" in migrated and "train_step(feats, target)" in migrated
    wrong = migrated.replace("SGD(learning_rate=0.05)", "SGD(learning_rate=0.07)")
    assert wrong != migrated
    (folder / "wrong.ipynb").write_text(wrong)
    code, out, _ = run(capsys, "verify", "original.ipynb", "wrong.ipynb")
    assert code == 1 and "DIVERGED" in out, out
    assert sorted(p.name for p in folder.iterdir()) == ["original.ipynb", "train.ipynb", "wrong.ipynb"]


def test_notebooks_that_hold_no_python_cell_text_or_long_outputs(folder, capsys):
    """A cell source that is no text is an error naming the cell; an R notebook holds no
    Python; a long image output is no long line of code."""
    def doc(source, language="python", outputs=()):
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": source, "execution_count": None,
                                      "outputs": list(outputs)}],
                           "metadata": {"kernelspec": {"name": language, "language": language}},
                           "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    (folder / "odd.ipynb").write_text(doc(["x = 1\n", 7]))
    code, out, _ = run(capsys, "check", "odd.ipynb")
    assert code == 2 and "odd.ipynb:cell 1: error: not a Jupyter notebook (nbformat 4 JSON): a code cell's source is not text" in out
    assert "Traceback" not in out and "internal error" not in out
    (folder / "odd.ipynb").unlink()
    (folder / "r.ipynb").write_text(doc("library(tensorflow)\nx <- tf$log(1)\n", language="R"))
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo" * 6000}}
    (folder / "plot.ipynb").write_text(doc("import tensorflow as tf\nx = tf.log(1.0)\n", outputs=[image]))
    code, out, _ = run(capsys, "check", ".")
    assert "r.ipynb" not in out and "plot.ipynb:cell 1:2:5: TFG401" in out and "bytes long" not in out


def test_a_line_separator_inside_a_string_is_no_line_break(folder, capsys):
    """U+2028 in a cell's string: Python reads one line, and so does the notebook's program."""
    text = notebook([("code", ['import tensorflow as tf\n', 'label = "a\u2028b"\n', 'x = tf.log(1.0)'])])
    (folder / "sep.ipynb").write_text(text)
    code, out, _ = run(capsys, "check", "sep.ipynb")
    assert code == 1 and "sep.ipynb:cell 1:3:5: TFG401" in out and "syntax" not in out, out
    assert run(capsys, "rewrite", "--no-verify", "sep.ipynb")[0] == 0
    assert sources((folder / "sep.ipynb").read_text()) == ['import tensorflow as tf\nlabel = "a\u2028b"\nx = tf.math.log(1.0)']


def test_a_percent_that_continues_a_statement_is_python():
    """`% 3` continuing `x = 10 \\`, or a `%` line inside a string, is no magic."""
    joined = notebook_magics.join([["x = 10 \\\n", "% 3\n", "%time y = x\n", "y?\n"],
                                   ['doc = """\n', "%d items\n", '"""\n', "%matplotlib inline\n"],
                                   ["z = (1,\n", "     2)\n", "!ls\n"]])
    assert joined.text.splitlines() == ["x = 10 \\", "% 3", "y = x", "pass", 'doc = """', "%d items", '"""', "pass",
                                        "z = (1,", "     2)", "pass"]
    assert sorted(joined.held) == [3, 7, 10] and joined.prefix == {2: "%time "}
