"""Lockstep (tf1gradfix/verify/lockstep*.py): drift told from a wrong migration.

Without TensorFlow: the exchange files, the comparison of one step's change,
which plain divergences are retried, and the verdicts a lockstep run gives.
With TensorFlow (marked `tf`): the fixtures whose plain run drifts are proven
only in lockstep, and every row of rules/optimizer_state.toml is
proven on the program of tests/test_optimizer_table.py (a wrong mapping of
the slots diverges).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tf1gradfix.verify import compare, lockstep, lockstep_files, lockstep_v2
from tf1gradfix.verify.comparison import Comparison, Divergence

ROOT = Path(__file__).resolve().parent.parent
KERAS_OPTIMIZERS = Path(__import__("importlib").util.find_spec("keras").origin).parent / "src" / "optimizers" \
    if __import__("importlib").util.find_spec("keras") else None


# -- the files the original hands on ------------------------------------------------

def test_state_files_keep_values_bit_for_bit(tmp_path):
    arrays = {"dense/kernel": np.array([[1.5, np.nan], [-0.0, 1e-45]], np.float32),
              "global_step": np.array(7, np.int64), "rnn/cell/bias": np.arange(3, dtype=np.float64) / 3}
    path = lockstep_files.state_path(str(tmp_path), 4)
    lockstep_files.write(path, arrays, {"step": 4, "final": False, "optimizers": [{"class": "AdamOptimizer"}]})
    back, meta = lockstep_files.read(path)
    assert list(back) == list(arrays) and meta["step"] == 4 and meta["optimizers"][0]["class"] == "AdamOptimizer"
    for name, value in arrays.items():
        assert back[name].dtype == value.dtype and back[name].tobytes() == value.tobytes()
    assert not list(tmp_path.glob("*.tmp*"))


def test_the_original_waits_for_room_only_while_the_migration_reads(tmp_path):
    import time

    where = str(tmp_path)
    for step in range(1, lockstep_files.WINDOW + 1):
        lockstep_files.write(lockstep_files.state_path(where, step), {}, {"step": step})
    (tmp_path / lockstep_files.MIGRATED_DONE).touch()
    assert not lockstep_files.wait_for_room(where, time.monotonic() + 5)   # nobody reads: nothing more is written


def test_a_migration_that_stays_behind_ends_lockstep_instead_of_piling_states(tmp_path):
    import time

    where = str(tmp_path)
    for step in range(1, lockstep_files.WINDOW + 1):
        lockstep_files.write(lockstep_files.state_path(where, step), {}, {"step": step})
    start = time.monotonic()
    assert not lockstep_files.wait_for_room(where, time.monotonic() + 0.2)   # full until the deadline: no more states
    assert time.monotonic() - start >= 0.2
    refusal = lockstep_files.refusal(where)
    assert refusal is not None and refusal["side"] == "original" and "behind" in refusal["reason"]
    assert lockstep_files.stopped(where)
    assert len([n for n in (tmp_path).iterdir() if n.name.startswith("state-")]) == lockstep_files.WINDOW


# -- one step's change ---------------------------------------------------------------

def test_a_change_is_compared_relative_to_itself_not_to_the_value():
    before = np.full(4, 10.0, np.float32)
    after = before - np.float32(1e-3)
    # 10 % of a change of 1e-3 on values of 10: 1e-5 of the value, far under rtol of the value
    wrong = before - np.float32(1.1e-3)
    c = lockstep_v2.compare_change(before, after, wrong, 1e-3, 1e-6)
    assert not c["ok"] and abs(c["rel_err"] - 0.0909) < 0.01
    assert c["original"] == pytest.approx(-1e-3, rel=1e-3) and c["migrated"] == pytest.approx(-1.1e-3, rel=1e-3)
    assert lockstep_v2.compare_change(before, after, after.copy(), 1e-3, 1e-6)["ok"]


def test_a_change_is_known_to_the_precision_of_the_value():
    """A tiny update of a large weight: the two sides may round the new value to neighbouring
    floats; one unit in the last place of the value is allowed, no more."""
    before = np.array([1000.0], np.float32)
    after = before + np.float32(0.001)
    next_float = np.nextafter(after, np.float32(np.inf))
    assert lockstep_v2.compare_change(before, after, next_float, 1e-3, 1e-6)["ok"]
    two_up = np.nextafter(next_float, np.float32(np.inf))
    assert not lockstep_v2.compare_change(before, after, two_up, 1e-3, 1e-6)["ok"]


def test_a_change_of_another_shape_diverges():
    c = lockstep_v2.compare_change(np.zeros(3), np.ones(3), np.ones(4), 1e-3, 1e-6)
    assert not c["ok"] and "shape" in c["reason"]


# -- which plain divergences are retried ------------------------------------------------

class _Result:
    def __init__(self, divergences, functions=None, applied=3, verdict="DIVERGED"):
        self.verdict, self.reason, self.rtol, self.atol = verdict, "plain", 1e-3, 1e-6
        self.comparison = Comparison(divergences=divergences, steps=20)
        self.comparison.stats["applied update"].compared = applied
        self.functions = {"graph_calls": 19, "eager_calls": 1} if functions is None else functions
        self.lockstep = None
        self.original = self.migrated = type("Side", (), {"status": "ok"})()


def _div(quantity, step, name="w", rel=2e-3, reason=""):
    return Divergence(quantity, step, name, 1.0, 1.002, 2e-3, rel, [0], reason, (step or 99, 0))


def test_drift_after_step_one_is_retried():
    assert lockstep.not_eligible(_Result([_div("gradient", 6), _div("loss", 9, None), _div("final value", None)])) \
        is None


def test_a_shown_number_that_drifted_with_the_training_is_retried():
    """Computed from the drifted state, as a final value is; the lockstep run shows it again."""
    for shown in (_div("printed number", None, "line 3: accuracy 0.9712"), _div("plotted value", None, "drawing 1")):
        assert lockstep.not_eligible(_Result([_div("gradient", 5), shown])) is None
        assert lockstep.not_eligible(_Result([_div("final value", None), shown])) is None


@pytest.mark.parametrize("divergence, said", [
    (_div("gradient", 1), False),
    (_div("applied update", 1), False),
    (_div("printed text", None, "line 3: done"), True),
    (_div("printed number", None, "line 3", reason="original printed 4 numbers, migrated 3"), True),
    (_div("gradient", 4, reason="sources differ in 3 of 20 events"), False),
    (Divergence("events", 3, "compute [w]", reason="original computed gradients 20 times, migrated 21 times"), False),
])
def test_what_drift_cannot_explain_is_not_retried(divergence, said):
    why = lockstep.not_eligible(_Result([_div("gradient", 5), divergence]))
    assert why is not None and why[1] == said


def test_a_shown_number_that_differs_while_the_training_agreed_is_not_retried():
    why = lockstep.not_eligible(_Result([_div("printed number", None, "line 3: loss 0.52")]))
    assert why is not None and why[1] and "training agreed" in why[0]


def test_programs_lockstep_cannot_follow_are_not_retried():
    eager = lockstep.not_eligible(_Result([_div("gradient", 5)], functions={"graph_calls": 0, "eager_calls": 0}))
    assert eager is not None and "outside any tf.function" in eager[0] and eager[1]
    no_optimizer = lockstep.not_eligible(_Result([_div("gradient", 5)], applied=0))
    assert no_optimizer is not None and "optimizer" in no_optimizer[0]


def _changes(ok: bool) -> list:
    result = {"ok": ok, "abs_err": 1e-7 if ok else 3e-4, "rel_err": 1e-5 if ok else 0.035, "index": [2],
              "reason": "", "max_abs_err": 1e-7 if ok else 3e-4, "max_rel_err": 1e-5 if ok else 0.035,
              "max_index": [2], "max_ok": ok, "rel_beyond_atol": 0.0 if ok else 0.035, "elements": 12,
              "original": -0.00996, "migrated": -0.00961}
    return [{"kind": "step_change", "seq": 5, "step": 1, "left": ["beta1_power"], "results": {"bn/beta": result}}]


def test_agreement_in_lockstep_clears_drift_and_says_so():
    result = _Result([_div("gradient", 6, rel=0.0089), _div("final value", None, "b", rel=0.6)])
    cmp = Comparison()
    lockstep.record_changes(cmp, _changes(True))
    outcome = lockstep.LockstepResult("agreed", "", cmp, lockstep.drift(result.comparison))
    lockstep.conclude(result, outcome)
    assert result.verdict == "EQUIVALENT" and lockstep.proved_by(result) == "lockstep"
    assert result.reason.startswith("lockstep: 1 of 20 steps and 1 final value drifted past tolerance")
    assert "largest drift 0.6 relative" in result.reason and "every step agrees from the same state" in result.reason
    assert cmp.stats["step change"].compared == 1 and "beta1_power" in cmp.notes[0]


def test_a_divergence_in_lockstep_is_diverged_at_its_step():
    result = _Result([_div("gradient", 2, rel=0.0037)])
    cmp = Comparison()
    lockstep.record_changes(cmp, _changes(False))
    lockstep.conclude(result, lockstep.LockstepResult("diverged", "", cmp, lockstep.drift(result.comparison)))
    assert result.verdict == "DIVERGED"
    assert result.reason.startswith("lockstep: step 1, step change of bn/beta: original -0.00996 vs migrated -0.00961")
    assert "the plain run first diverged at step 2, gradient of w" in result.reason


@pytest.mark.parametrize("status", ["refused", "failed"])
def test_a_lockstep_run_that_could_not_follow_leaves_the_plain_verdict(status):
    result = _Result([_div("gradient", 2)])
    lockstep.conclude(result, lockstep.LockstepResult(status, "no lockstep mapping of the state of v1 X", None,
                                                     lockstep.drift(result.comparison)))
    assert result.verdict == "DIVERGED" and result.reason.startswith("plain; lockstep ")
    assert lockstep.proved_by(result) == "plain"


def test_an_unknown_lockstep_mode_is_refused(tmp_path):
    from tf1gradfix.verify.orchestrate import verify_pair

    with pytest.raises(ValueError, match="lockstep must be one of"):
        verify_pair(tmp_path / "a.py", tmp_path / "b.py", lockstep_mode="sometimes")


# -- the mapping table ----------------------------------------------------------------

STATE_ROWS = tomllib.loads((ROOT / "rules/optimizer_state.toml").read_text())["state"]


def test_mapping_rows_name_real_slots():
    import importlib.util

    spec = importlib.util.find_spec("tensorflow")
    training = Path(spec.origin).parent / "python" / "training" if spec and spec.origin else None
    v1_rows = {row["v1"] for row in tomllib.loads((ROOT / "rules/optimizers.toml").read_text())["optimizer"]}
    for row in STATE_ROWS:
        assert row["v1"] in v1_rows and row["why"] and row["cases"]
        assert set(row.get("scale", {})) <= set(row["slots"])
        if training is not None and training.is_dir():
            module = {"GradientDescentOptimizer": "gradient_descent"}.get(row["v1"], re.sub(
                r"(?<!^)(?=[A-Z])", "_", row["v1"].removesuffix("Optimizer")).lower())
            source = (training / f"{module}.py").read_text()
            made = set(re.findall(r'_zeros_slot\(\s*v,\s*"(\w+)"', source)) | {
                re.search(r'"(\w+)"', source[m.end():m.end() + 200]).group(1)
                for m in re.finditer(r"_get_or_make_slot_with_initializer\(", source)}
            assert made == set(row["slots"]), (row["v1"], made)
        if KERAS_OPTIMIZERS is not None:
            source = (KERAS_OPTIMIZERS / f"{row['keras'].lower()}.py").read_text()
            for attr in row["slots"].values():
                assert re.search(rf"self\.{attr}\b.*=|self\.{attr}\s*=", source) or f"self.{attr}," in source, attr


# -- with TensorFlow ------------------------------------------------------------------

@pytest.mark.tf
@pytest.mark.parametrize("scenario", ["lockstep_adam_bn_mlp", "lockstep_adam_lstm_clipped", "lockstep_adam_bn_printed"])
def test_a_rewrite_whose_plain_run_drifts_is_proven_in_lockstep(scenario):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    folder = ROOT / "fixtures" / "rewrite" / scenario
    result = verify_pair(folder / "input.py", folder / "expected.py")
    assert result.verdict == EQUIVALENT and lockstep.proved_by(result) == "lockstep", result.reason
    plain, ls = result.comparison, result.lockstep
    assert plain.divergences and min(d.step or 99 for d in plain.divergences) > 1   # the plain run drifted
    if scenario == "lockstep_adam_bn_printed":   # in the number it prints too, which lockstep prints again
        assert any(d.quantity == "printed number" for d in plain.divergences), plain.divergences
        assert ls.comparison.stats["printed number"].compared == 1
        assert "1 printed or plotted number drifted" in result.reason, result.reason
    assert ls.status == "agreed" and not ls.comparison.divergences
    changes = ls.comparison.stats["step change"]
    assert changes.compared >= plain.steps * 4 and changes.max_abs_err < 1e-6
    assert result.to_json()["proved_by"] == "lockstep"


@pytest.mark.tf
def test_overlapping_var_lists_map_each_optimizer_to_its_own_slots():
    """Three Adams, one over the others' variables and one it gets no gradient for
    (fixtures/rewrite/infogan_overlapping_var_lists): each Keras optimizer's slots are its
    own original's (`w/Adam_2`), not the first original holding a slot of the variable."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    folder = ROOT / "fixtures" / "rewrite" / "infogan_overlapping_var_lists"
    result = verify_pair(folder / "input.py", folder / "expected.py", lockstep_mode="always")
    assert result.verdict == EQUIVALENT and result.lockstep.status == "agreed", result.reason
    assert result.lockstep.comparison.stats["step change"].compared >= 15 * 4


@pytest.mark.tf
def test_a_session_that_only_initialized_before_training_gives_no_state():
    """fixtures/rewrite/abandoned_init_sessions opens a session that only initializes, and
    closes it before training in another: its close once wrote the end state (step 1,
    its own fresh values), the original's first step went to another name, and each side
    waited for the other until the original's timeout."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    folder = ROOT / "fixtures" / "rewrite" / "abandoned_init_sessions"
    result = verify_pair(folder / "input.py", folder / "expected.py", lockstep_mode="always", timeout=60)
    assert result.verdict == EQUIVALENT and result.lockstep.status == "agreed", result.reason
    assert result.lockstep.comparison.stats["step change"].compared >= 8 * 2


def test_an_optimizer_is_matched_to_the_original_with_its_variables():
    entries = [{"slots": {"c/h": {"m": "c/h/Adam_2"}, "c/o": {}, "g/w": {"m": "g/w/Adam"}}},   # c/o: no gradient
               {"slots": {"c/h": {"m": "c/h/Adam"}, "c/o": {"m": "c/o/Adam"}}},
               {"slots": {"c/h": {"m": "c/h/Adam_4"}, "c/o": {"m": "c/o/Adam_2"}}}]
    step = lockstep_v2.Lockstep.__new__(lockstep_v2.Lockstep)
    step.originals = {}
    first, second, wide = object(), object(), object()
    assert step.original_of(wide, entries, {"c/h", "g/w"}) == 0
    step.originals[id(first)] = step.original_of(first, entries, {"c/h", "c/o"})
    assert step.originals[id(first)] == 1   # (not 0, which lists c/o without a slot)
    assert step.original_of(second, entries, {"c/h", "c/o"}) == 2   # (the next one not taken)
    assert step.slot_label({"optimizers": entries}, "c/h", "m", first) == "c/h/Adam"


def _proof_cases():
    from test_optimizer_table import ROWS

    cases = [pytest.param(row["v1"], case["args"], case["lockstep_max_rel"],
                          id=f"{row['v1']}-{row['keras']}({case['args']})")
             for row in STATE_ROWS for case in row["cases"]]
    kept = [pytest.param(row["v1"], row["cases"][0]["args"], 0.0, id=f"{row['v1']}-kept({row['cases'][0]['args']})")
            for row in ROWS if row["status"] == "not_equivalent" and row["cases"]]
    return cases + kept


def _verify(tmp_path, original: str, migrated: str):
    from tf1gradfix.verify.orchestrate import verify_pair

    (tmp_path / "original.py").write_text(original)
    (tmp_path / "migrated.py").write_text(migrated)
    return verify_pair(tmp_path / "original.py", tmp_path / "migrated.py", lockstep_mode="always")


@pytest.mark.tf
@pytest.mark.parametrize("v1, args, figure", _proof_cases())
def test_each_optimizer_state_mapping_is_proven(v1, args, figure, tmp_path):
    """The table's program (8 steps), rewritten: in lockstep every step's change agrees with the
    original's, the slots overwritten with the original's from step 2 on."""
    from test_optimizer_table import STEPS, program, rewritten

    original = program(v1, args)
    result = _verify(tmp_path, original, rewritten(original))
    ls = result.lockstep
    assert result.verdict == "EQUIVALENT" and ls is not None and ls.status == "agreed", (result.reason, ls)
    changes = ls.comparison.stats["step change"]
    assert changes.compared >= 2 * STEPS and changes.max_rel_beyond_atol < 1e-3
    assert changes.max_rel_err <= 10 * figure, f"the table records {figure}, measured {changes.max_rel_err}"
    assert "lockstep: every step agrees from the same state" in result.reason


WRONG_MAPPINGS = {
    "AdamOptimizer": ("0.01", {"m": "_velocities", "v": "_momentums"}, {}),
    "MomentumOptimizer": ("0.05, momentum=0.9", {"momentum": "momentums"}, {"momentum": "learning_rate"}),
    "AdagradOptimizer": ("0.3", {"accumulator": "_accumulators"}, {"accumulator": "learning_rate"}),
}


@pytest.mark.tf
@pytest.mark.parametrize("v1", sorted(WRONG_MAPPINGS))
def test_a_wrong_slot_mapping_diverges(v1, tmp_path, monkeypatch):
    """The proof can fail: slots mapped wrongly are read back wrongly (the change of step 1)
    and overwritten wrongly from step 2 on."""
    from test_optimizer_table import program, rewritten

    args, slots, scale = WRONG_MAPPINGS[v1]
    rows = [r for r in STATE_ROWS if r["v1"] != v1]
    row = next(r for r in STATE_ROWS if r["v1"] == v1)
    table = tmp_path / "state.toml"
    lines = [_toml_row(r) for r in rows] + [_toml_row({**row, "slots": slots, "scale": scale})]
    table.write_text("\n".join(lines))
    monkeypatch.setenv(lockstep_v2.TABLE_ENV, str(table))
    original = program(v1, args)
    result = _verify(tmp_path, original, rewritten(original))
    # (the mapping reads the migration's slots back too: the first step's change already differs)
    assert result.verdict == "DIVERGED" and re.match(r"lockstep: step [12], step change of \S+/", result.reason), \
        result.reason


def _toml_row(row: dict) -> str:
    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return f'"{v}"' if isinstance(v, str) else repr(v)
    return "[[state]]\n" + "\n".join(f"{k} = {value(v)}" for k, v in row.items()) + "\n"


def test_reports_say_which_check_proved_the_verdict():
    from tf1gradfix.verify import report
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    plain = Comparison(divergences=[_div("gradient", 6, rel=0.002)], steps=20)
    plain.stats["gradient"].compared = 40
    result = VerifyResult("DIVERGED", "plain", SideResult("original", "a.py", "ok"), SideResult("migrated", "b.py", "ok"),
                          plain)
    cmp = Comparison()
    lockstep.record_changes(cmp, _changes(True))
    lockstep.conclude(result, lockstep.LockstepResult("agreed", "", cmp, lockstep.drift(plain), 1.5))
    text = report.summary(result)
    assert text.startswith("EQUIVALENT: lockstep: 1 of 20 steps drifted past tolerance in the plain run")
    assert "first divergence of the plain run (drift: every step agrees in lockstep): step 6" in text
    assert "  lockstep: agreed, 1.5 s (each step from the original's state" in text
    assert "step change          1 compared" in text
    markdown = report.to_markdown(result)
    assert "Lockstep: agreed." in markdown and "| step change | 1 |" in markdown
    junit = report.to_junit(result).getroot().find("testsuite")
    assert [c.get("name") for c in junit.findall("testcase")][-1] == "lockstep"
    data = result.to_json()
    assert data["proved_by"] == "lockstep" and data["lockstep"]["status"] == "agreed"
    assert data["lockstep"]["comparison"]["by_kind"]["step change"]["compared"] == 1
