"""Jupyter notebooks: code cells checked in order as one program, safe fixes written back
into their cells, everything else in the file kept byte for byte."""

from __future__ import annotations

import json

import pytest

from tf1gradfix.cli.main import main


def notebook(*cells, **dump) -> str:
    doc = {"cells": [
        {"cell_type": kind, "metadata": {}, "source": source,
         **({"execution_count": None, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["é 1\n"]}]}
            if kind == "code" else {})}
        for kind, source in cells],
        "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    settings = dict(indent=1, sort_keys=True, ensure_ascii=False)
    settings.update(dump)
    return json.dumps(doc, **settings) + "\n"


CELLS = [
    ("markdown", ["# Training\n", "tf.log is mentioned here, in prose"]),
    ("code", ["%matplotlib inline\n", "import tensorflow as tf"]),
    ("code", "%%time\nx = tf.log(1.0)\n"),   # a cell magic that runs its body as Python
    ("code", ["!pip list\n", "y = tf.log(2.0)\n", "z = tf.placeholder(tf.float32)"]),
]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_name_the_cell_and_its_line(folder, capsys):
    (folder / "train.ipynb").write_text(notebook(*CELLS))
    code, out, _ = run(capsys, "check", ".")   # found in a folder, as .py files are
    # (cells counted among the code cells, as ruff counts them: the markdown cell is not one)
    lines = [line for line in out.splitlines() if "TFG" in line and "not restructured" not in line]
    assert lines == [
        "train.ipynb:cell 2:2:5: TFG401 [*safe] `tf.log` is `tf.math.log` in TF2",
        "train.ipynb:cell 3:2:5: TFG401 [*safe] `tf.log` is `tf.math.log` in TF2",
        "train.ipynb:cell 3:3:5: TFG101 [manual] `tf.placeholder` does not exist in TF2; "
        "the fed value becomes a parameter of the function that computes the fetches",
        "train.ipynb:cell 3:3:5: TFG916 [manual] graph code at module level, and no session of this file runs it: "
        "the rewrite starts from the runs of a `tf.Session` the file opens",
    ]
    assert code == 1


def test_rewrite_changes_only_the_fixed_line(folder, capsys):
    before = notebook(*CELLS)
    (folder / "train.ipynb").write_text(before)
    run(capsys, "rewrite", "train.ipynb")
    after = (folder / "train.ipynb").read_text()
    assert after == before.replace("= tf.log(", "= tf.math.log(")
    assert after != before


@pytest.mark.parametrize("dump", [dict(indent=2, sort_keys=False), dict(indent=1, ensure_ascii=True)])
def test_the_layout_it_was_saved_in_is_kept(folder, capsys, dump):
    before = notebook(*CELLS, **dump)
    (folder / "train.ipynb").write_text(before)
    run(capsys, "rewrite", "train.ipynb")
    assert (folder / "train.ipynb").read_text() == before.replace("= tf.log(", "= tf.math.log(")


def test_a_layout_that_cannot_be_reproduced_is_left_as_it_is(folder, capsys):
    before = notebook(*CELLS).replace('\n "metadata"', '\n  "metadata"', 1)   # hand-edited whitespace
    (folder / "train.ipynb").write_text(before)
    code, out, _ = run(capsys, "rewrite", "train.ipynb")
    assert (folder / "train.ipynb").read_text() == before
    assert "notebook not rewritten: its JSON layout cannot be written back exactly" in out and code == 2


def test_a_file_that_is_not_a_notebook_is_an_error(folder, capsys):
    (folder / "broken.ipynb").write_text("{ not json")
    code, out, _ = run(capsys, "check", "broken.ipynb")
    assert code == 2 and "broken.ipynb: error: not a Jupyter notebook" in out


@pytest.mark.parametrize("verdict", ["EQUIVALENT", "DIVERGED"])
def test_verify_runs_the_code_cells_in_order_and_writes_only_a_proven_notebook(folder, capsys, monkeypatch, verdict):
    from tf1gradfix.verify import orchestrate
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    before = notebook(*CELLS)
    (folder / "train.ipynb").write_text(before)
    ran = {}

    def verified(original, candidate, **_):
        ran.update(original=original.read_text(), candidate=candidate.read_text(), folder=candidate.parent)
        return VerifyResult(verdict, "compared", SideResult("original", str(original)), SideResult("migrated", str(candidate)))

    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    code, out, _ = run(capsys, "rewrite", "--verify", "train.ipynb")
    code_cells = "pass\nimport tensorflow as tf\npass\nx = tf.log(1.0)\npass\ny = tf.log(2.0)\nz = tf.placeholder(tf.float32)\n"
    assert ran["original"] == code_cells and ran["candidate"] == code_cells.replace("tf.log", "tf.math.log")
    assert ran["folder"] == folder and sorted(p.name for p in folder.iterdir()) == ["train.ipynb"]   # (run beside it, removed)
    after = (folder / "train.ipynb").read_text()
    assert after == (before.replace("= tf.log(", "= tf.math.log(") if verdict == "EQUIVALENT" else before)
    assert f"train.ipynb: {verdict} ({'written' if verdict == 'EQUIVALENT' else 'left unchanged'})" in out
