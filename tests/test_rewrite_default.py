"""A plain `rewrite` writes a whole-program restructuring only once it is proven.

Safe fixes (renames proven by identity) are always written. A restructuring
is written when the verifier finds it EQUIVALENT; otherwise, or without
TensorFlow to prove it, the file gets its safe fixes alone and the run says
how to prove or force it. `--no-verify` writes restructurings unproven.
"""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET

import pytest

from tf1gradfix.cli import rewrite_verify
from tf1gradfix.cli.main import main

PROGRAM = """\
import tensorflow as tf

tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
y = tf.log(tf.matmul(x, w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(y, feed_dict={x: [[1.0, 2.0]]}))
"""
SAFE_ONLY = PROGRAM.replace("tf.set_random_seed", "tf.compat.v1.set_random_seed").replace("tf.log", "tf.math.log")


@pytest.fixture
def program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "train.py"
    path.write_text(PROGRAM)
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_tensorflow_a_restructuring_is_not_written_but_the_safe_fixes_are(program, capsys, monkeypatch):
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: True)
    code, out, err = run(capsys, "rewrite", "train.py")
    assert program.read_text() == SAFE_ONLY
    assert "1 file can be restructured into TF2 but got only the safe fixes" in err
    assert "pip install 'tf1gradfix[verify]'" in err and "--no-verify" in err
    assert "TFG401 [*safe]" in out and "TFG103 [proven]" in out
    assert "fixable with proof, not written" in out.splitlines()[-1] and "need manual work" not in out
    assert code == 1   # the session still needs work


def test_a_restructuring_the_proof_rejects_is_not_written(program, capsys, monkeypatch):
    proven = []

    def diverged(changed, **_):
        proven.extend(path for path, _ in changed)
        return [rewrite_verify.ProofRow(path, "DIVERGED", "loss differs at step 1", False) for path, _ in changed]

    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    monkeypatch.setattr(rewrite_verify, "prove_and_write", diverged)
    code, out, _ = run(capsys, "rewrite", "train.py")
    assert proven == ["train.py"]
    assert program.read_text() == SAFE_ONLY
    assert "train.py: DIVERGED (left unchanged)" in out and code == 1


def test_a_rename_only_file_is_written_without_a_proof(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text("import tensorflow as tf\nprint(tf.log(2.0))\n")
    monkeypatch.setattr(rewrite_verify, "prove_and_write", lambda *a, **k: pytest.fail("a rename needs no proof"))
    code, _, _ = run(capsys, "rewrite", "ops.py")
    assert (tmp_path / "ops.py").read_text() == "import tensorflow as tf\nprint(tf.math.log(2.0))\n" and code == 0


def test_no_verify_writes_the_restructuring_unproven(program, capsys, monkeypatch):
    monkeypatch.setattr(rewrite_verify, "prove_and_write", lambda *a, **k: pytest.fail("--no-verify proves nothing"))
    code, out, _ = run(capsys, "rewrite", "--no-verify", "train.py")
    assert "tf.Session" not in program.read_text() and code == 0
    assert out.splitlines()[-1].endswith("; 1 file rewritten; 1 file restructured unproven (--no-verify; "
                                         "`tf1gradfix verify --base REF` proves them against a committed version).")
    program.write_text(PROGRAM)
    code, out, _ = run(capsys, "rewrite", "--no-verify", "--format", "json", "train.py")
    assert json.loads(out)["summary"]["unproven"] == 1


def test_the_stdin_filter_prints_the_safe_fixes_only(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": io.BytesIO(PROGRAM.encode())})())
    code = main(["rewrite", "-"])
    assert capsys.readouterr().out == SAFE_ONLY and code == 1


@pytest.mark.tf
def test_with_tensorflow_a_proven_restructuring_is_written(program, capsys):
    code, out, _ = run(capsys, "rewrite", "--steps", "3", "train.py")
    assert "train.py: EQUIVALENT (written)" in out, out
    assert "tf.Session" not in program.read_text() and code == 0


@pytest.mark.parametrize("argv", [("rewrite",), ("rewrite", "--verify"), ("rewrite", "--verify", "--diff")])
def test_a_structured_format_keeps_the_proofs_off_stdout(program, capsys, monkeypatch, argv):
    """The verifier's lines go to stderr; JSON carries the verdicts as `"proofs"`."""
    def proven(changed, **_):
        print("EQUIVALENT: train.py (rewritten) matches train.py")   # (what the verifier prints per pair)
        return [rewrite_verify.ProofRow(path, "DIVERGED", "loss differs at step 1", False) for path, _ in changed]

    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    monkeypatch.setattr(rewrite_verify, "prove_and_write", proven)
    code, out, err = run(capsys, *argv, "--format", "json", "train.py")
    document = json.loads(out)
    assert document["proofs"] == [{"path": "train.py", "verdict": "DIVERGED", "reason": "loss differs at step 1",
                                   "written": False, "budget": None}]
    assert "EQUIVALENT: train.py" in err and code == 1
    code, out, err = run(capsys, *argv, "--format", "sarif", "train.py")
    assert json.loads(out)["version"] == "2.1.0" and "EQUIVALENT: train.py" in err


REFUSED = PROGRAM.replace("feed_dict={x: [[1.0, 2.0]]}", "feed_dict=make_feed()")


def test_the_summary_reports_list_the_refused_files_and_a_file_without_loss_has_no_plot(program, capsys, monkeypatch):
    from tf1gradfix.verify import orchestrate
    from tf1gradfix.verify.comparison import Comparison
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    (program.parent / "refused.py").write_text(REFUSED)

    def verified(original, candidate, **_):   # (a pair that prints numbers and records no loss)
        return VerifyResult("EQUIVALENT", "equal", SideResult("original", str(original)),
                            SideResult("migrated", str(candidate)), comparison=Comparison())

    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    code, _, err = run(capsys, "rewrite", "--verify", "--check", "--report-dir", "proof", "train.py", "refused.py")
    proof = program.parent / "proof"
    summary = {row["path"]: row for row in json.loads((proof / "summary.json").read_text())}
    assert summary["train.py"]["verdict"] == "EQUIVALENT" and summary["refused.py"]["verdict"] == "NOT_RESTRUCTURED"
    assert summary["refused.py"]["written"] is False and "line 9: TFG902" in summary["refused.py"]["reason"]
    assert "- `refused.py`: line 9: TFG902" in (proof / "summary.md").read_text()
    cases = {c.get("name"): c for c in ET.parse(proof / "junit.xml").iter("testcase")}
    assert cases["refused.py"].find("skipped").get("message").startswith("not restructured (left unchanged): line 9")
    assert {p.name for p in proof.iterdir()} >= {"train.py.json", "train.py.md"} and not list(proof.glob("*.png"))
    assert "No artists" not in err
