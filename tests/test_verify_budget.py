"""Step budget (--steps), timeouts that keep what was compared, program
arguments, a working folder per side, and the verifier's environment hints.

The rules run on synthetic traces and temp folders (fast suite); the tests
marked ``tf`` start both runners on copies of fixtures/verify/dev_linear_sgd
whose loop is made 200,000 steps long.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tf1gradfix.verify import budget, command, compare, comparison
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult, verify_pair
from tf1gradfix.verify.runner_common import encode_array

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "fixtures" / "verify" / "dev_linear_sgd"


# -- the step counter ---------------------------------------------------------------

def test_steps_begin_at_a_gradient_after_an_update_or_of_another_loss():
    c = budget.StepCounter(2)
    # compute, apply; a second gradient of the same loss is the same step
    assert c.begins("compute", 1.0) and not c.begins("apply") and c.begins("compute", 0.5)
    assert not c.begins("compute", 0.5)
    # manual updates: every gradient of a new loss begins a step
    m = budget.StepCounter(None)
    assert m.begins("compute", 3.0) and m.begins("compute", 2.0) and not m.due(True)


def test_budget_is_due_before_step_n_plus_1_or_after_n_calls_without_training():
    c = budget.StepCounter(2)
    c.steps = 2
    assert c.due(True) and not c.due(False)      # evaluation after the last step still runs
    c.steps = 1
    assert not c.due(True)
    idle = budget.StepCounter(3)
    idle.calls = 3
    assert idle.due(False) and idle.due(True)    # a program that never trained counts calls


def test_runner_arguments():
    assert budget.runner_args(["t", "s.py"]) == ("t", "s.py", None, [])
    assert budget.runner_args(["t", "s.py", "--cwd", "/w", "--", "--epochs", "1"]) == \
        ("t", "s.py", "/w", ["--epochs", "1"])
    with pytest.raises(SystemExit):
        budget.runner_args(["t"])


# -- comparing a stopped pair ---------------------------------------------------------

def _steps(n, seq=0, loss=lambda i: 10.0 / (i + 1)):
    out = []
    for i in range(n):
        g = {"w": encode_array(np.array([1.0 / (i + 1)], np.float32))}
        out += [{"kind": "compute", "seq": seq, "loss": loss(i), "grads": g},
                {"kind": "apply", "seq": seq + 1, "grads": g}]
        seq += 2
    return out


def _final(v):
    return {"w": {"value": encode_array(np.array([v], np.float32)), "trainable": True}}


def test_events_past_a_stopped_side_are_notes_not_divergences():
    orig = {"events": _steps(8), "final": None, "stdout": "a 1\nb 2\nc 3\n"}
    mig = {"events": _steps(5), "final": None, "stdout": "a 1\nb 2\n"}
    whole = compare.compare_traces(orig, mig)
    assert any(d.quantity == "events" for d in whole.divergences)
    cut = compare.compare_traces(orig, mig, stopped={"migrated"})
    assert cut.equivalent and cut.steps == 5, [d.describe() for d in cut.divergences]
    assert any("3 more times after the other side stopped" in n for n in cut.notes)
    # a side that ran whole and did fewer steps than a stopped side is still a difference
    wrong = compare.compare_traces(orig, mig, stopped={"original"})
    assert any(d.quantity == "events" for d in wrong.divergences)
    # and a divergence inside the prefix is found
    bad = {"events": _steps(5, loss=lambda i: 10.0 / (i + 1) + (i == 3)), "final": None, "stdout": ""}
    assert compare.compare_traces(orig, bad, stopped={"migrated"}).first.step == 4


def test_finals_compared_only_when_both_stopped_at_the_same_step():
    ev = {"original": [{"kind": "cut", "steps": 5}], "migrated": []}
    traces = {"original": {"final": _final(1.0), "stdout": ""}, "migrated": {"final": _final(1.0), "stdout": ""}}
    stopped, notes = budget.prepare(traces, {"original": {"steps": 5}, "migrated": {"steps": 5}}, ev, [])
    assert stopped == {"original"} and traces["migrated"]["final"] is not None and "after 5 steps" in notes[0]
    stopped, notes = budget.prepare(traces, {"original": {"steps": 5}, "migrated": {"steps": 7}}, ev, [])
    assert traces["original"]["final"] is None and "different steps (original 5, migrated 7)" in notes[0]
    timed = {"original": {"final": None, "stdout": "x 1\nx 2"}, "migrated": {"final": _final(2.0), "stdout": ""}}
    stopped, notes = budget.prepare(timed, {"original": None, "migrated": {"steps": 9}},
                                    {"original": [], "migrated": []}, ["original"])
    assert timed["original"]["stdout"] == "x 1\n" and timed["migrated"]["final"] is None   # torn line dropped


def _side(role, status, reason="", elapsed=1.0):
    s = SideResult(role, f"{role}.py", status=status, reason=reason)
    s.elapsed = elapsed
    return s


def test_timeout_verdict_names_who_was_running_and_what_agreed():
    o, m = _side("original", "timeout", "timed out after 20 s"), _side("migrated", "timeout", "timed out after 20 s")
    ev = {"original": [], "migrated": [{"kind": "start"}, {"kind": "init_wait"}]}
    assert budget.timed_roles(o, m, ev) == ["original", "migrated"]
    assert budget.timeout_reason(["original", "migrated"], o, m, 637).startswith(
        "both timed out after 20 s; the first 637 steps agreed")
    # a migrated side still waiting for the original's values is not to blame
    assert budget.timed_roles(o, _side("migrated", "killed"), {"original": [], "migrated": [{"kind": "start"}]}) == []
    ok = _side("original", "ok", elapsed=3.0)
    mt = _side("migrated", "timeout", "timed out after 20 s")
    assert budget.timeout_reason(["migrated"], ok, mt, 0) == "migrated timed out after 20 s"
    assert "(the original finished in 3.0 s)" in budget.timeout_reason(["migrated"], ok, mt, 4)


# -- working folders, program arguments ------------------------------------------------

def test_side_folder_copies_small_files_links_big_ones_and_keeps_writes(tmp_path, monkeypatch):
    src = tmp_path / "project"
    (src / "data").mkdir(parents=True)
    (src / "data" / "small.txt").write_text("read me")
    (src / "big.bin").write_bytes(b"x" * 64)
    (src / ".a.tf1gradfix-candidate-1x.py").write_text("")
    monkeypatch.setattr(budget, "COPY_FILE_LIMIT", 32)
    view = Path(budget.side_folder(str(src), str(tmp_path / "view")))
    assert (view / "data" / "small.txt").read_text() == "read me" and not (view / "data" / "small.txt").is_symlink()
    assert (view / "big.bin").is_symlink() and not (view / ".a.tf1gradfix-candidate-1x.py").exists()
    (view / "data" / "small.txt").write_text("changed")
    (view / "checkpoint").write_text("new")
    assert (src / "data" / "small.txt").read_text() == "read me" and not (src / "checkpoint").exists()


def test_program_arguments_after_double_dash():
    assert command.split_program_args(["verify", "a.py", "b.py", "--", "--epochs", "1"]) == \
        (["verify", "a.py", "b.py"], ["--epochs", "1"])
    assert command.split_program_args(["rewrite", "--verify", "a.py", "--", "-x"]) == \
        (["rewrite", "--verify", "a.py"], ["-x"])
    # without --verify, -- ends the options of rewrite as usual
    assert command.split_program_args(["rewrite", "--", "-odd.py"]) == (["rewrite", "--", "-odd.py"], [])


def test_rewrite_verify_passes_the_default_budget_and_arguments(tmp_path, monkeypatch):
    from tf1gradfix.cli import main as cli
    from tf1gradfix.verify import orchestrate

    seen = {}

    def fake(original, migrated, **kw):
        seen.update(kw, source=Path(migrated).read_text())
        return VerifyResult("DIVERGED", "x", SideResult("original", str(original)), SideResult("migrated", str(migrated)))
    monkeypatch.setattr(orchestrate, "verify_pair", fake)
    program = tmp_path / "train.py"
    program.write_bytes((DEV / "original.py").read_bytes())
    assert cli.main(["rewrite", "--verify", "--diff", str(program), "--", "--epochs", "1"]) == 1
    assert seen["steps"] == budget.DEFAULT_REWRITE_STEPS and seen["program_args"] == ["--epochs", "1"]
    assert "tf.Session" not in seen["source"]
    cli.main(["rewrite", "--verify", "--diff", "--steps", "7", str(program)])
    assert (seen["steps"], seen["program_args"]) == (7, [])


def test_verify_cli_accepts_program_arguments_and_steps():
    from tf1gradfix.cli.main import build_parser
    from tf1gradfix.verify.command import split_program_args

    argv, rest = split_program_args(["verify", "a.py", "b.py", "--steps", "7", "--", "--epochs", "1"])
    args = build_parser().parse_args(argv)
    assert (args.steps, rest) == (7, ["--epochs", "1"])
    argv, rest = split_program_args(["rewrite", "--verify", "x.py", "--steps", "3", "--", "--lr", "2"])
    args = build_parser().parse_args(argv)
    assert (args.steps, args.paths, rest) == (3, ["x.py"], ["--lr", "2"])


# -- messages ------------------------------------------------------------------------

def test_missing_tensorflow_is_an_environment_error(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    result = verify_pair(DEV / "original.py", DEV / "migrated.py", timeout=5)
    assert result.verdict == "NOT_COMPARABLE" and result.reason == budget.missing_reason()
    assert command.main([str(DEV / "original.py"), str(DEV / "migrated.py")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "tf1gradfix: TensorFlow is not installed here: pip install 'tf1gradfix[verify]'"


def test_swapped_files_and_rewrite_candidate_names(tmp_path):
    o, m = SideResult("original", "o"), SideResult("migrated", "m")
    result = VerifyResult("ORIGINAL_FAILED", "original raised AttributeError", o, m)
    budget.after_verdict(result, DEV / "migrated.py", DEV / "original.py")
    assert result.reason.endswith(budget.SWAPPED_HINT)
    right = VerifyResult("ORIGINAL_FAILED", "x", o, m)
    budget.after_verdict(right, DEV / "original.py", DEV / "migrated.py")
    assert right.reason == "x"
    cand = tmp_path / ".train.tf1gradfix-candidate-k3_x9q.py"
    m = SideResult("migrated", str(cand), stderr_tail=f'  File "{cand}", line 12, in <module>\n')
    result = VerifyResult("MIGRATED_FAILED", "migrated raised X", SideResult("original", "o"), m)
    budget.after_verdict(result, tmp_path / "train.py", cand)
    assert f'File "{tmp_path / "train.py"} (rewritten)", line 12' in m.stderr_tail
    assert "candidate" not in m.stderr_tail


# -- real runs -------------------------------------------------------------------------

ARGV_CHECK = '''
import sys
assert sys.argv[1:] == ["--epochs", "1"], sys.argv
open("mark.txt", "x").write(open("data.txt").read())   # a shared folder would fail here on one side
'''


def _long_copy(tmp_path, steps=200000, extra=""):
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / "data.txt").write_text("relative read\n")
    for name in ("original.py", "migrated.py"):
        text = (DEV / name).read_text()
        assert "range(25)" in text
        (folder / name).write_text(extra + text.replace("range(25)", f"range({steps})"))
    return folder


@pytest.mark.tf
def test_long_program_verifies_in_seconds_with_a_budget_and_arguments(tmp_path):
    folder = _long_copy(tmp_path, extra=ARGV_CHECK)
    t0 = time.monotonic()
    result = verify_pair(folder / "original.py", folder / "migrated.py", timeout=120, steps=50,
                         program_args=["--epochs", "1"])
    elapsed = time.monotonic() - t0
    assert result.verdict == "EQUIVALENT", result.reason + result.migrated.stderr_tail[-800:]
    assert "partial: the --steps budget ended the training loop after 50 steps" in result.reason
    assert result.comparison.steps == 50 and result.headline == "EQUIVALENT within the first 50 training steps"
    assert result.budget == {"steps_compared": 50, "partial": True, "loop_cut": True, "ended_at_cut": []}
    assert result.comparison.stats["final value"].compared == 2        # values at the loop's end
    assert result.comparison.stats["printed number"].compared > 0      # the prints after the loop ran
    assert elapsed < 60
    assert sorted(p.name for p in folder.iterdir()) == ["data.txt", "migrated.py", "original.py"]


@pytest.mark.tf
def test_timeout_without_budget_keeps_the_compared_steps(tmp_path):
    folder = _long_copy(tmp_path)
    result = verify_pair(folder / "original.py", folder / "migrated.py", timeout=20)
    assert result.verdict == "NOT_COMPARABLE", result.reason
    match = re.match(r"both timed out after 20 s; the first (\d+) steps agreed", result.reason)
    assert match and int(match.group(1)) > 10 and result.comparison.steps == int(match.group(1))
    assert not result.comparison.divergences


LOOPS = """
from tf1gradfix.verify import loop_cut
log = []

def run(i):
    if len(log) == 3 and loop_cut.cut(3):
        raise loop_cut.Cut
    log.append(i)

def epoch():
    for i in range(5):
        try:
            run(i)
        except Exception:      # the user's catch-all does not swallow the cut
            log.append("caught")
    log.append("epoch end")

for e in range(4):
    epoch()
    log.append(f"after epoch {e}")
while len(log) < 12:           # a loop after the cut runs whole
    log.append("later")
log.append("after")
"""


def test_the_budget_ends_the_loops_around_the_run_and_the_program_goes_on(tmp_path):
    from tf1gradfix.verify import loop_cut

    script = tmp_path / "loops.py"
    script.write_text(LOOPS)
    code = loop_cut.compile_script(str(script))
    assert code is not None and len(loop_cut._LOOPS[str(script)]) == 3
    import sys
    main = sys.modules["__main__"]
    log = loop_cut.run_as_main(code, str(script))["log"]
    assert sys.modules["__main__"] is main
    # the inner loop ended at the cut, the outer one at its next iteration; what follows ran
    assert log == [0, 1, 2, "epoch end", "after epoch 0", *["later"] * 7, "after"]
    assert loop_cut.CUTS[-1] == (3, str(script), LOOPS.splitlines().index("    for i in range(5):") + 1)


def test_a_script_that_does_not_parse_is_run_as_it_is(tmp_path):
    from tf1gradfix.verify import loop_cut

    script = tmp_path / "broken.py"
    script.write_text("for x in :\n")
    assert loop_cut.compile_script(str(script)) is None


def test_a_partial_verdict_is_labelled_in_every_report():
    from tf1gradfix.cli.rewrite_verify import ProofRow, render_rows
    from tf1gradfix.verify import report
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    about = budget.of_run({"original": [{"kind": "cut", "steps": 40, "loop": 12}],
                           "migrated": [{"kind": "cut", "steps": 40, "loop": 9}]})
    assert about == {"steps_compared": 40, "partial": True, "loop_cut": True, "ended_at_cut": []}
    result = VerifyResult("EQUIVALENT", "12 quantities agree" + budget.cut_reason(about),
                          SideResult("original", "a.py", status="ok"), SideResult("migrated", "b.py", status="ok"),
                          comparison=comparison.Comparison(), budget=about)
    assert report.summary(result).startswith("EQUIVALENT within the first 40 training steps: 12 quantities agree; "
                                             "partial: the --steps budget ended the training loop after 40 steps")
    assert report.to_markdown(result).splitlines()[0].startswith("### ✅ EQUIVALENT within the first 40 training steps")
    assert result.to_json()["budget"] == about and result.to_json()["headline"].endswith("40 training steps")
    junit = report.to_junit(result).getroot()
    assert {p.get("name"): p.get("value") for p in junit.iter("property")}["budget.steps_compared"] == "40"
    assert any(c.get("name") == "budget" for c in junit.iter("testcase"))
    rows = [ProofRow("a.py", "EQUIVALENT", "", True, budget=about), ProofRow("b.py", "EQUIVALENT", "", True)]
    text = render_rows(rows)
    assert "a.py: EQUIVALENT within the first 40 training steps (written)" in text and "b.py: EQUIVALENT (written)" in text
    assert "2 EQUIVALENT (1 within a step budget)" in text
    whole = VerifyResult("DIVERGED", "x", result.original, result.migrated, budget=about)
    assert whole.headline == "DIVERGED" and budget.headline("EQUIVALENT", None) == "EQUIVALENT"
    ended = budget.of_run({"original": [{"kind": "cut", "steps": 5}], "migrated": []})
    assert ended["ended_at_cut"] == ["original"] and "what the program does after that was not run" in \
        budget.cut_reason(ended)


def test_the_loops_of_the_folders_modules_are_guarded_too(tmp_path, monkeypatch):
    """A project trains in a module of its folder: the budget ends that loop, the script goes on."""
    import sys

    from tf1gradfix.verify import loop_cut

    (tmp_path / "trainer_mod_x.py").write_text(
        "from tf1gradfix.verify import loop_cut\n"
        "def train(log):\n"
        "    for i in range(10):\n"
        "        if len(log) == 4 and loop_cut.cut(4):\n"
        "            raise loop_cut.Cut\n"
        "        log.append(i)\n"
        "    log.append('trained')\n")
    script = tmp_path / "main_x.py"
    script.write_text("import trainer_mod_x\nlog = []\ntrainer_mod_x.train(log)\nlog.append('evaluated')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    hook = loop_cut.GuardImports(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [hook, *sys.meta_path])
    try:
        log = loop_cut.run_as_main(loop_cut.compile_script(str(script)), str(script))["log"]
    finally:
        sys.modules.pop("trainer_mod_x", None)
    assert log == [0, 1, 2, 3, "trained", "evaluated"]
    assert not list(tmp_path.glob("__pycache__/trainer_mod_x*"))    # guarded code is never cached
    assert hook.find_spec("json", None) is None                      # the standard library is left alone
