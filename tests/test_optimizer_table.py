"""Every row of rules/optimizers.toml is backed by a verification.

For each verified case of a row a small TF1 training program is generated
with that optimizer, rewritten by the real rewrite and proven with the
verifier: EQUIVALENT, with a max relative difference that agrees with the
row's status (exact: 0; otherwise at most 10x the recorded figure). A
`not_equivalent` row's Keras candidate is emitted by the same rewrite (the
row pointed at it) and must come out DIVERGED, so that claim is backed too.
The rows of rules/schedules.toml get the same treatment with a program whose
learning rate is that schedule of the global step. Each optimizer row is also
proven on float64 variables and losses and, where its target takes a changing
rate, on a scheduled one (float32 and float64); other rows must refuse a
changing rate with their own reason.
"""

from __future__ import annotations

import importlib.util
import math
import re
from typing import cast
from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.emit import state as emit_state
from tf1gradfix.cst import layout
from tf1gradfix.emit.state import FED_LR_STATUSES, optimizer_table, schedule_table
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter
from tf1gradfix.emit.restructure import restructure

STATUSES = ("exact", "within_tolerance", "constant_lr", "not_equivalent", "manual")
_TF_SPEC = importlib.util.find_spec("tensorflow")   # finds the installed sources without importing them
TF_SOURCES = Path(_TF_SPEC.origin).parent / "python" if _TF_SPEC and _TF_SPEC.origin else Path("/nonexistent")
V1_SOURCES = TF_SOURCES / "training"

PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
xs = rng.randn({steps}, 6, 3).astype(np.float32)
ys = (xs @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32) + 0.3).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.constant([[0.1], [0.2], [-0.1]]), name="w")
b = tf.Variable(tf.constant([0.05]), name="b")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
optimizer = tf.train.{v1}({args})
train_op = optimizer.minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range({steps}):
        _, value = sess.run([train_op, loss], feed_dict={{x: xs[step], y: ys[step]}})
        print("step", step, "loss %.6f" % value)
    print("w", sess.run(w).ravel(), "b", sess.run(b))
"""
STEPS = 8

# An embedding table read by a gather: its gradient is an IndexedSlices. Each
# batch repeats some rows (where Keras's arithmetic on slices differs) and
# misses others (where a lazy v1 update differs from a dense one).
SPARSE_PROGRAM = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(1)
ids = rng.randint(0, 7, size=({steps}, 3, 2))
ys = rng.randn({steps}, 3, 1).astype(np.float32)

table = tf.Variable(tf.constant(rng.randn(7, 2).astype(np.float32)), name="table")
head = tf.Variable(tf.constant([[0.4], [-0.3]]), name="head")
x = tf.placeholder(tf.int32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
pooled = tf.reduce_sum(tf.gather(table, x), axis=1)
loss = tf.reduce_mean(tf.square(tf.matmul(pooled, head) - y))
optimizer = tf.train.{v1}({args})
train_op = optimizer.minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range({steps}):
        _, value = sess.run([train_op, loss], feed_dict={{x: ids[step], y: ys[step]}})
        print("step", step, "loss %.6f" % value)
    print("table", sess.run(table).ravel())
"""


def program(v1: str, args: str) -> str:
    return PROGRAM.format(v1=v1, args=args, steps=STEPS)


def rewritten(source: str) -> str | None:
    """What the rewrite stage emits (the engine writes exactly this: see
    test_the_engine_writes_what_the_rewrite_emits)."""
    module = restructure(cst.parse_module(source), "original.py").new_module
    return None if module is None else module.code


def keras_candidate(row: dict) -> dict:
    """The row as it would read if its Keras candidate were trusted."""
    return {**row, "target": row["keras"], "map": row["keras_map"], "defaults": row["keras_defaults"],
            "status": "within_tolerance"}


def schedule_program(function: str, args: str) -> str:
    """The program with a GradientDescent rate that is a schedule of the global step (fetched, printed)."""
    call = f"tf.train.{function}({args.format(step='global_step')})"
    return program("GradientDescentOptimizer", "lr") \
        .replace("optimizer = ", f'global_step = tf.Variable(0, trainable=False, name="global_step")\nlr = {call}\noptimizer = ') \
        .replace("optimizer.minimize(loss)", "optimizer.minimize(loss, global_step=global_step)") \
        .replace("_, value = sess.run([train_op, loss]", "_, value, rate = sess.run([train_op, loss, lr]") \
        .replace('"loss %.6f" % value)', '"loss %.6f" % value, "lr %.6f" % rate)')


def sparse_program(v1: str, args: str) -> str:
    return SPARSE_PROGRAM.format(v1=v1, args=args, steps=STEPS)


def float64_program(source: str) -> str:
    """The program with float64 data, placeholders, variables and loss."""
    typed = source.replace("float32", "float64").replace("tf.constant([[0.1], [0.2], [-0.1]])", "tf.constant([[0.1], [0.2], [-0.1]], dtype=tf.float64)") \
        .replace("tf.constant([0.05])", "tf.constant([0.05], dtype=tf.float64)")
    assert typed.count("dtype=tf.float64") == 2 and "float32" not in typed
    return typed


def scheduled_program(v1: str, args: str, dtype: str = "float32") -> str:
    """The program whose rate is exponential_decay(<first argument>, global_step, 3, 0.5)."""
    first, _, rest = args.partition(",")
    source = program(v1, "lr" + ("," + rest if rest else "")) \
        .replace("optimizer = ", 'global_step = tf.Variable(0, trainable=False, name="global_step")\n'
                 f"lr = tf.train.exponential_decay({first}, global_step, 3, 0.5)\noptimizer = ") \
        .replace("optimizer.minimize(loss)", "optimizer.minimize(loss, global_step=global_step)")
    return float64_program(source) if dtype == "float64" else source


ROWS = list(optimizer_table().values())
SPARSE_CASES = [pytest.param(row, case, id=f"{row['v1']}({case['args']})")
                for row in ROWS for case in row.get("sparse_cases", ())]
SCHEDULE_ROWS = list({id(row): row for row in schedule_table().values()}.values())
SCHEDULES = [pytest.param(row, case, id=f"{row['v1'][0].rsplit('.', 1)[1]}({case['args']})")
             for row in SCHEDULE_ROWS for case in row["cases"]]
CASES = [pytest.param(row, case, id=f"{row['v1']}({case['args']})") for row in ROWS for case in row["cases"]]
# float64 programs and scheduled rates, one program each: (row, case, source)
KIND_CASES = [pytest.param(row, case, float64_program(program(row["v1"], case["args"])), id=f"float64-{row['v1']}")
              for row in ROWS for case in row.get("float64_cases", ())] + [
    pytest.param(row, case, scheduled_program(row["v1"], case["args"], case.get("dtype", "float32")),
                 id=f"schedule-{case.get('dtype', 'float32')}-{row['v1']}")
    for row in ROWS for case in row.get("schedule_cases", ())]


# -- the table itself (no TensorFlow) ---------------------------------------------

@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["v1"])
def test_row_is_complete(row):
    assert row["status"] in STATUSES
    assert set(row["map"]) <= set(row["params"]) and row["params"][0] == "learning_rate"
    if row["status"] == "manual":
        assert not row["cases"] and row["why"]
        return
    assert row["cases"], "a row without a verified case is a guess"
    figures = [case["max_rel"] for case in row["cases"]]
    if row["status"] == "exact":
        assert figures == [0.0] * len(figures)
    elif row["status"] in ("within_tolerance", "constant_lr"):
        assert all(0.0 < f < 1e-3 for f in figures), "a measured figure belongs in every case"
    if row["status"] == "not_equivalent":
        assert row["target"] == f"compat.v1.train.{row['v1']}" and row["map"] == {p: p for p in row["map"]}
        assert set(row["keras_map"]) <= set(row["params"])
        assert all(case["keras_max_rel"] > 1e-3 for case in row["cases"])


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_sparse_gradients_are_densified_refused_or_left_to_the_v1_optimizer(row):
    """`sparse` says how a gather's IndexedSlices gradient is applied; each row has its proof case."""
    mode = row.get("sparse")
    assert mode in (None, "densify", False)
    assert row.get("sparse_cases"), "a sparse claim without a verified case is a guess"
    assert (mode is None) == row["target"].startswith("compat.v1."), "Keras targets must say how slices are applied"
    result = restructure(cst.parse_module(sparse_program(row["v1"], row["sparse_cases"][0]["args"])), "original.py")
    if mode is False:
        assert result.new_module is None and [d[2] for d in result.diagnostics] == ["TFG906"]
        assert "only the looked-up rows" in result.diagnostics[0][3]
        return
    assert result.new_module is not None, result.diagnostics
    densified = "tf.convert_to_tensor(g)" in result.new_module.code
    assert densified == (mode == "densify")
    # a dense program's gradients are applied as they are
    dense = restructure(cst.parse_module(program(row["v1"], row["cases"][0]["args"])), "original.py").new_module
    assert "convert_to_tensor" not in dense.code


def test_every_v1_optimizer_of_the_installed_tensorflow_has_a_row():
    if not V1_SOURCES.is_dir():
        pytest.skip("TensorFlow sources not installed")
    exported = {m for path in V1_SOURCES.glob("*.py")
                for m in re.findall(r'tf_export\(v1=\["train\.(\w+Optimizer)"\]', path.read_text())}
    # the base class, and a wrapper around another optimizer: no rows of their own
    assert exported - {"Optimizer", "SyncReplicasOptimizer"} == {row["v1"] for row in ROWS}


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_rewrite_writes_the_target_with_every_differing_default(row):
    module = restructure(cst.parse_module(program(row["v1"], row["cases"][0]["args"])), "original.py").new_module
    assert module is not None
    line = next(layout.one_line(module.code_for_node(st).strip()) for st in module.body
                if module.code_for_node(st).startswith("optimizer = "))
    assert line.startswith(f"optimizer = tf.{row['target']}(")
    for keyword, value in row["defaults"].items():
        assert f"{keyword}=" in line and (value in line or keyword in ("learning_rate",))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["v1"])
def test_a_fed_learning_rate_is_taken_only_where_the_target_allows_it(row):
    """The rewrite sets a fed rate on the optimizer before each update: right only where
    the target reads its rate at every step (not Keras SGD's velocity, not a kept v1)."""
    others = row["cases"][0]["args"].partition(",")[2] if row["cases"] else ""
    source = program(row["v1"], "lr" + (", " + others.strip() if others.strip() else "")) \
        .replace("y = tf.placeholder(", "lr = tf.placeholder(tf.float32, [])\ny = tf.placeholder(") \
        .replace("y: ys[step]}", "y: ys[step], lr: 0.1}")
    result = restructure(cst.parse_module(source), "original.py")
    if row["status"] in FED_LR_STATUSES:
        assert result.new_module is not None, result.diagnostics
        assert "optimizer.learning_rate = lr" in result.new_module.code
    else:
        assert result.new_module is None and [d[2] for d in result.diagnostics] == ["TFG906"]


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_row_is_proven_for_float64_and_for_a_changing_rate(row):
    """Besides dense and sparse gradients, the input kinds a mapping meets: float64
    variables and losses, and a rate that changes (a schedule): proven, or refused
    with the row's reason."""
    assert row.get("float64_cases") and all(c["max_rel"] < 1e-3 for c in row["float64_cases"])
    if row["status"] in FED_LR_STATUSES:
        assert "changing_lr_why" not in row
        assert {c.get("dtype", "float32") for c in row["schedule_cases"]} == {"float32", "float64"}
        assert all(c["max_rel"] < 1e-3 for c in row["schedule_cases"])
    else:
        assert "schedule_cases" not in row and row["changing_lr_why"]


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_a_scheduled_rate_is_rewritten_or_refused_with_the_rows_reason(row):
    result = restructure(cst.parse_module(scheduled_program(row["v1"], row["cases"][0]["args"])), "original.py")
    if row["status"] in FED_LR_STATUSES:
        assert result.new_module is not None, result.diagnostics
        code = result.new_module.code
        if row["status"] == "not_equivalent":   # a kept v1 optimizer: the rate set before each update
            assert "lr = tf.keras.optimizers.schedules.ExponentialDecay(" in code and "optimizer.learning_rate = lr" in code
        else:   # the Keras optimizer's own schedule (constructs/schedules.py)
            assert "learning_rate=tf.keras.optimizers.schedules.ExponentialDecay(" in code
            assert "optimizer.learning_rate = lr" not in code and "ExponentialDecay(" not in code.split("def ")[-1]
        return
    assert result.new_module is None and [d[2] for d in result.diagnostics] == ["TFG906"]
    assert result.diagnostics[0][3].endswith(f"(fed or scheduled): {row['changing_lr_why']}")


@pytest.mark.parametrize("row", SCHEDULE_ROWS, ids=lambda r: r["v1"][0])
def test_schedule_row_is_complete(row):
    assert row["step"] in row["params"] and set(row["map"]) <= set(row["params"]) - {row["step"]}
    assert row["cases"] and all("{step}" in case["args"] and case["max_rel"] < 1e-3 for case in row["cases"])
    sources = TF_SOURCES / "keras/optimizer_v2/legacy_learning_rate_decay.py"
    if sources.is_file():
        exported = set(re.findall(r'"train\.(\w+)"', sources.read_text()))
        assert {name.rsplit(".", 1)[1] for name in row["v1"]} <= exported


@pytest.mark.parametrize("row, case", SCHEDULES)
def test_a_schedule_feeding_an_optimizer_is_rewritten(row, case):
    migrated = rewritten(schedule_program(row["v1"][0].rsplit(".", 1)[1], case["args"]))
    assert migrated is not None
    assert f"learning_rate=tf.{row['target']}(" in migrated and "lr = optimizer.learning_rate" in migrated


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_a_kept_v1_optimizer_is_noted_with_its_reason(row):
    source = program(row["v1"], row["cases"][0]["args"])
    result = restructure(cst.parse_module(source), "original.py")
    notes = [d for d in result.diagnostics if d[2] == "TFG207"]
    if row["status"] != "not_equivalent":
        assert notes == []
        return
    line = 1 + next(i for i, ln in enumerate(source.splitlines()) if ln.startswith("optimizer = "))
    assert [(d[0], d[4]) for d in notes] == [(line, "safe")] and row["why"] in notes[0][3]
    assert f"optimizer = tf.{row['target']}(" in result.new_module.code and "# tf1gradfix: ignore[TFG205] kept: " in result.new_module.code


@pytest.mark.parametrize("row", [r for r in ROWS if r["cases"]], ids=lambda r: r["v1"])
def test_the_engine_writes_what_the_rewrite_emits(row):
    source = program(row["v1"], row["cases"][0]["args"])
    result = process_source("original.py", source.encode(), CodeFilter())
    assert result.new_source is not None, [f.message for f in result.findings if not f.fixed]
    assert result.new_source.decode() == rewritten(source)
    # nothing left for the user to do, and `check` of the written file is quiet
    assert all(f.fixed for f in result.findings), [f.code for f in result.findings if not f.fixed]
    again = process_source("original.py", result.new_source, CodeFilter())
    assert again.findings == [] and again.new_source is None


# -- verification (TensorFlow in subprocesses) -------------------------------------

def max_relative_difference(result) -> float:
    return max(st.max_rel_err for st in result.comparison.stats.values())


def verify(tmp_path: Path, original: str, migrated: str, name: str):
    from tf1gradfix.verify.orchestrate import verify_pair

    (tmp_path / "original.py").write_text(original)
    (tmp_path / f"{name}.py").write_text(migrated)
    return verify_pair(tmp_path / "original.py", tmp_path / f"{name}.py")


@pytest.mark.tf
@pytest.mark.parametrize("row, case", CASES)
def test_row_is_backed_by_the_verifier(row, case, tmp_path, monkeypatch):
    from tf1gradfix.verify.orchestrate import DIVERGED, EQUIVALENT

    original = program(row["v1"], case["args"])
    migrated = rewritten(original)
    assert migrated is not None and f"tf.{row['target']}(" in migrated
    result = verify(tmp_path, original, migrated, "migrated")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    figure = max_relative_difference(result)
    if case["max_rel"] == 0.0:   # exact rows, and kept v1 optimizers
        assert figure == 0.0
    else:
        assert figure <= 10 * case["max_rel"], figure
    if row["status"] == "not_equivalent":
        table = {**optimizer_table(), row["v1"]: keras_candidate(row)}
        monkeypatch.setattr(emit_state, "optimizer_table", lambda: table)
        keras = rewritten(original)
        assert keras is not None and f"tf.{row['keras']}(" in keras
        wrong = verify(tmp_path, original, keras, "keras_candidate")
        assert wrong.verdict == DIVERGED, (wrong.verdict, wrong.reason)
        assert math.isinf(max_relative_difference(wrong)) or max_relative_difference(wrong) >= case["keras_max_rel"] / 10


@pytest.mark.tf
@pytest.mark.parametrize("row, case", SCHEDULES)
def test_schedule_row_is_backed_by_the_verifier(row, case, tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT

    original = schedule_program(row["v1"][0].rsplit(".", 1)[1], case["args"])
    migrated = rewritten(original)
    assert migrated is not None
    result = verify(tmp_path, original, migrated, "migrated")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    figure = max_relative_difference(result)
    assert figure == 0.0 if case["max_rel"] == 0.0 else figure <= 10 * case["max_rel"], figure


@pytest.mark.tf
@pytest.mark.parametrize("row, case", SPARSE_CASES)
def test_sparse_claim_is_backed_by_the_verifier(row, case, tmp_path, monkeypatch):
    """Densified (or kept v1) updates of repeated rows are EQUIVALENT; a lazy v1 update is refused
    because the densified Keras update really differs (DIVERGED)."""
    from tf1gradfix.verify.orchestrate import DIVERGED, EQUIVALENT

    original = sparse_program(row["v1"], case["args"])
    if row.get("sparse") is False:
        table = {**optimizer_table(), row["v1"]: {**row, "sparse": "densify"}}
        monkeypatch.setattr(emit_state, "optimizer_table", lambda: table)
        import tf1gradfix.emit.tape_updates as emit_tape_updates
        monkeypatch.setattr(emit_tape_updates, "optimizer_table", lambda: table)
        import tf1gradfix.constructs.optimizers as optimizers   # (model.checks refuses the lazy update)
        monkeypatch.setattr(optimizers, "optimizer_table", lambda: table)
        candidate = rewritten(original)
        assert candidate is not None and "tf.convert_to_tensor(g)" in candidate
        wrong = verify(tmp_path, original, candidate, "densified")
        assert wrong.verdict == DIVERGED, (wrong.verdict, wrong.reason)
        assert math.isinf(max_relative_difference(wrong)) or max_relative_difference(wrong) >= case["keras_max_rel"] / 10
        return
    migrated = rewritten(original)
    result = verify(tmp_path, original, migrated, "migrated")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    figure = max_relative_difference(result)
    assert figure == 0.0 if case["max_rel"] == 0.0 else figure <= 10 * case["max_rel"], figure


@pytest.mark.tf
@pytest.mark.parametrize("row, case, original", KIND_CASES)
def test_float64_and_schedule_cases_are_backed_by_the_verifier(row, case, original, tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT

    migrated = rewritten(original)
    assert migrated is not None and f"tf.{row['target']}(" in migrated
    result = verify(tmp_path, original, migrated, "migrated")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    figure = max_relative_difference(result)
    assert figure == 0.0 if case["max_rel"] == 0.0 else figure <= 10 * case["max_rel"], figure


@pytest.mark.tf
@pytest.mark.parametrize("row", [r for r in ROWS if "float64_why" in r], ids=lambda r: r["v1"])
def test_float64_why_the_v1_optimizer_needs_float64_hyperparameters(row, tmp_path):
    """With plain float arguments the TF1 program itself fails on float64 variables."""
    from tf1gradfix.verify.orchestrate import ORIGINAL_FAILED

    original = float64_program(program(row["v1"], row["cases"][0]["args"]))
    result = verify(tmp_path, original, rewritten(original), "migrated")
    assert result.verdict == ORIGINAL_FAILED and "TypeError" in result.reason, (result.verdict, result.reason)


KERAS_WEIGHT = "v.value if isinstance(v, tf.keras.Variable) else v"


def _with_dense_layer(row: dict) -> str:
    return program(row["v1"], row["cases"][0]["args"]).replace(
        "loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))",
        "head = tf.layers.dense(x, 1, name='head')\nloss = tf.reduce_mean(tf.square(head + tf.matmul(x, w) + b - y))")


@pytest.mark.parametrize("row", [r for r in ROWS if r["status"] == "not_equivalent"], ids=lambda r: r["v1"])
def test_a_kept_v1_optimizer_with_slots_trains_keras_weights_through_their_variables(row):
    """A kept v1 optimizer makes its slots from the variables it trains; Keras 3 layer weights have
    no get_shape (fixtures/fuzz_regressions/verify_v1_slot_optimizer_on_dense.py was MIGRATED_FAILED),
    so the update is applied to the tf.Variable under each weight. Rows without slots keep `v`."""
    migrated = rewritten(_with_dense_layer(row))
    assert migrated is not None
    assert (KERAS_WEIGHT in migrated) == bool(row.get("v1_slots"))


@pytest.mark.tf
@pytest.mark.parametrize("row", [r for r in ROWS if r.get("v1_slots")], ids=lambda r: r["v1"])
def test_a_kept_v1_optimizer_on_keras_weights_is_proven(row, tmp_path):
    from tf1gradfix.verify.orchestrate import EQUIVALENT

    original = _with_dense_layer(row)
    result = verify(tmp_path, original, cast(str, rewritten(original)), "migrated")
    assert result.verdict == EQUIVALENT, (result.verdict, result.reason)
    assert max_relative_difference(result) <= 1e-5   # (float32 rounding of Keras Dense's matmul, measured 4e-7)


def _v1_class_source(v1: str) -> str | None:
    for path in sorted(V1_SOURCES.glob("*.py")):
        text = path.read_text()
        match = re.search(rf"^class {v1}\(.*?(?=^class |\Z)", text, re.M | re.S)
        if match:
            return match.group(0)
    return None


@pytest.mark.parametrize("row", [r for r in ROWS if r["status"] == "not_equivalent"], ids=lambda r: r["v1"])
def test_v1_slots_says_whether_the_kept_optimizer_makes_slot_variables(row):
    """Read off the installed v1 class: one that makes slots cannot train Keras 3 layer weights."""
    if not V1_SOURCES.is_dir():
        pytest.skip("TensorFlow sources not installed")
    source = _v1_class_source(row["v1"])
    assert source is not None
    makes_slots = bool(re.search(r"_zeros_slot\(|_get_or_make_slot|create_slot", source))
    assert bool(row.get("v1_slots")) == makes_slots


def test_the_fuzzing_campaigns_kept_optimizer_on_a_dense_layer_is_written():
    path = Path(__file__).resolve().parent.parent / "fixtures" / "fuzz_regressions" / "verify_v1_slot_optimizer_on_dense.py"
    result = process_source(path.name, path.read_bytes(), CodeFilter())
    assert result.new_source is not None and KERAS_WEIGHT in result.new_source.decode()
    assert not [f for f in result.findings if f.code == "TFG906"]
