"""Unit tests of the verifier's stages.

Comparison and reports run on synthetic traces (no TensorFlow, fast suite);
the tests marked ``tf`` start real runner subprocesses on tiny programs to
check verdicts for hangs, crashes, unmatched variables and name mapping.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fixture_patch import counterpart_text
from tf1gradfix.verify import compare, compare_output, comparison, report
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult, verify_pair
from tf1gradfix.verify.runner_common import decode_array, encode_array

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "fixtures" / "verify" / "dev_linear_sgd"


# -- synthetic traces ------------------------------------------------------------

def _compute(seq, loss, **grads):
    return {"kind": "compute", "seq": seq, "loss": loss,
            "grads": {k: encode_array(np.asarray(v, np.float32)) for k, v in grads.items()}}


def _apply(seq, **grads):
    return {"kind": "apply", "seq": seq,
            "grads": {k: encode_array(np.asarray(v, np.float32)) for k, v in grads.items()}}


def _training(steps=5, perturb_step=None, delta=0.0, order=("w", "b")):
    events, seq = [], 0
    for i in range(steps):
        g = {"w": [1.0 / (i + 1), 2.0], "b": [0.5]}
        if i + 1 == perturb_step:
            g["w"] = [g["w"][0] + delta, 2.0]
        loss = 10.0 / (i + 1)
        events.append(_compute(seq, loss, **{k: g[k] for k in order}))
        events.append(_apply(seq + 1, **{k: g[k] for k in order}))
        seq += 2
    return events


def _trace(events, stdout="", final=None):
    return {"events": events, "stdout": stdout,
            "final": final if final is not None else
            {"w": {"value": encode_array(np.array([1.0, 2.0], np.float32)), "trainable": True}}}


def test_encode_roundtrip_keeps_bits_shape_and_nan():
    for value in (np.array(3, np.int32), np.array([[1.5, np.nan]], np.float32), np.float64(-0.0)):
        back = decode_array(json.loads(json.dumps(encode_array(value))))
        assert back.shape == np.asarray(value).shape and back.dtype == np.asarray(value).dtype
        assert np.asarray(value).tobytes() == back.tobytes()


def test_check_nan_inf_and_tolerance():
    assert comparison.check([np.nan, 1.0], [np.nan, 1.0], 1e-3, 1e-6)[0]
    assert not comparison.check([np.nan], [1.0], 1e-3, 1e-6)[0]
    assert not comparison.check([1.0], [np.nan], 1e-3, 1e-6)[0]
    assert comparison.check([np.inf], [np.inf], 1e-3, 1e-6)[0]
    assert not comparison.check([np.inf], [-np.inf], 1e-3, 1e-6)[0]
    assert comparison.check([1.0], [1.0009], 1e-3, 0.0)[0]
    ok, abs_err, rel_err, index, _ = comparison.check([[1.0, 2.0]], [[1.0, 2.01]], 1e-3, 1e-6)
    assert not ok and index == [0, 1] and abs_err == pytest.approx(0.01) and rel_err == pytest.approx(0.01 / 2.01)
    ok, *_, reason = comparison.check([1.0, 2.0], [1.0], 1e-3, 1e-6)
    assert not ok and "shape" in reason


_floats = hnp.arrays(np.float32, hnp.array_shapes(max_dims=2, max_side=4),
                     elements=st.floats(width=32, allow_nan=True, allow_infinity=True))


@settings(max_examples=200, deadline=None)
@given(_floats, st.data())
def test_check_is_reflexive_and_symmetric(a, data):
    assert comparison.check(a, a.copy(), 0.0, 0.0)[0], "a value always equals itself, NaN included"
    b = data.draw(hnp.arrays(np.float32, a.shape, elements=st.floats(width=32, allow_nan=True)))
    assert comparison.check(a, b, 1e-3, 1e-6)[0] == comparison.check(b, a, 1e-3, 1e-6)[0]


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.001, max_value=1000.0), st.integers(min_value=1, max_value=50))
def test_few_ulps_pass_and_one_percent_fails(x, ulps):
    a = np.float32(x)
    b = a
    for _ in range(ulps):
        b = np.nextafter(b, np.float32(np.inf))
    assert comparison.check(a, b, comparison.DEFAULT_RTOL, comparison.DEFAULT_ATOL)[0]
    assert not comparison.check(a, a * np.float32(1.01), comparison.DEFAULT_RTOL, comparison.DEFAULT_ATOL)[0]


def test_identical_traces_are_equivalent_and_counted():
    out = "step 0 loss 10.00000\nw [1. 2.]\n"
    c = compare.compare_traces(_trace(_training(), out), _trace(_training(), out))
    assert c.equivalent and c.first is None
    assert (c.steps, c.gradients, c.variables, c.printed_numbers) == (5, 10, 1, 4)
    assert c.stats["loss"].compared == 5 and c.stats["applied update"].compared == 10
    assert c.loss_original == c.loss_migrated == [10.0, 5.0, 10 / 3, 2.5, 2.0]


def test_first_divergence_names_step_quantity_variable_and_values():
    c = compare.compare_traces(_trace(_training()), _trace(_training(perturb_step=3, delta=0.01)))
    first = c.first
    assert first.quantity == "gradient" and first.step == 3 and first.name == "w"
    assert first.original == pytest.approx(1 / 3) and first.migrated == pytest.approx(1 / 3 + 0.01, rel=1e-6)
    assert first.abs_err == pytest.approx(0.01, rel=1e-4)
    assert "step 3, gradient of w" in first.describe()
    assert c.stats["gradient"].diverged == 1 and c.stats["applied update"].diverged == 1


def test_small_float_noise_is_tolerated():
    c = compare.compare_traces(_trace(_training()), _trace(_training(perturb_step=2, delta=1e-7)))
    assert c.equivalent
    assert 0 < c.stats["gradient"].max_abs_err < 1e-6


def test_gradients_listed_in_another_order_still_match():
    c = compare.compare_traces(_trace(_training(order=("w", "b"))), _trace(_training(order=("b", "w"))))
    assert c.equivalent


def test_separate_gradient_calls_in_other_order_match_one_call():
    one = [_compute(0, 1.0, w=[1.0], b=[2.0]), _apply(1, w=[1.0], b=[2.0])]
    split = [_compute(0, 1.0, b=[2.0]), _compute(1, 1.0, w=[1.0]), _apply(2, b=[2.0], w=[1.0])]
    assert compare.compare_traces(_trace(one), _trace(split)).equivalent
    # a different loss value is a different computation, not a split one
    other = [_compute(0, 1.0, b=[2.0]), _compute(1, 1.5, w=[1.0]), _apply(2, b=[2.0], w=[1.0])]
    assert not compare.compare_traces(_trace(one), _trace(other)).equivalent


def test_repeated_observations_within_tolerance_are_one():
    # one graph run three times (bit-identical) against three TF2 functions a few ulps apart
    w, w_ulp = np.float32(0.3), np.nextafter(np.float32(0.3), np.float32(1))
    orig = [_compute(0, 1.0, w=[w]), _apply(1, w=[w])] + [_compute(2 + k, 0.5, w=[w]) for k in range(3)] \
        + [_apply(5, w=[w])]
    mig = [_compute(0, 1.0, w=[w]), _apply(1, w=[w]), _compute(2, 0.5, w=[w]), _compute(3, 0.5, w=[w_ulp]),
           _compute(4, 0.5000001, w=[w]), _apply(5, w=[w])]
    assert compare.compare_traces(_trace(orig), _trace(mig)).equivalent
    # a gradient observed past the tolerance is another computation: the steps no longer pair
    wrong = mig[:3] + [_compute(3, 0.5, w=[w * 2])] + mig[4:]
    assert not compare.compare_traces(_trace(orig), _trace(wrong)).equivalent


def test_extra_update_is_a_divergence_at_its_place():
    orig = _training(steps=3)
    mig = [_apply(-1, w=[0.1, 0.1])] + _training(steps=3)   # an update before the first step
    c = compare.compare_traces(_trace(orig), _trace(mig))
    first = c.first
    assert first.quantity == "events"
    assert "original applied updates 3 times, migrated 4 times" in first.reason


def test_widened_sources_are_reported_by_name():
    orig = [_compute(0, 1.0, w=[1.0]), _apply(1, w=[1.0])]
    mig = [_compute(0, 1.0, w=[1.0], v=[3.0]), _apply(1, w=[1.0], v=[3.0])]
    c = compare.compare_traces(_trace(orig), _trace(mig))
    assert not c.equivalent
    assert "migrated also has gradients for v" in c.first.describe()
    assert c.stats["loss"].compared == 1 and c.stats["gradient"].compared == 1   # shared parts still compared


def test_manual_updates_on_one_side_skip_applied_update_comparison():
    manual = [e for e in _training() if e["kind"] == "compute"]
    c = compare.compare_traces(_trace(_training()), _trace(manual))
    assert c.equivalent and c.stats["applied update"].compared == 0 and c.stats["gradient"].compared == 10
    assert any("applies updates through an optimizer (5 times)" in n for n in c.notes)


def test_missing_events_count_mismatch():
    c = compare.compare_traces(_trace(_training(steps=4)), _trace(_training(steps=3)))
    assert any(d.quantity == "events" and "4 times" in d.reason and "3 times" in d.reason for d in c.divergences)


def test_final_values_compared_by_name():
    fo = {"w": {"value": encode_array(np.array([1.0, 2.0], np.float32)), "trainable": True},
          "w/Adam": {"value": encode_array(np.zeros(2, np.float32)), "trainable": False}}
    fm = {"w": {"value": encode_array(np.array([1.0, 2.5], np.float32)), "trainable": True}}
    c = compare.compare_traces(_trace([], final=fo), _trace([], final=fm))
    assert c.variables == 1 and c.first.quantity == "final value" and c.first.name == "w"
    assert c.first.index == [1] and c.first.original == 2.0 and c.first.migrated == 2.5


def test_printed_numbers_allow_last_digit_rounding_only():
    ok = compare.compare_traces(_trace([], "loss 0.1235\n"), _trace([], "loss 0.1234\n"))
    assert ok.equivalent and ok.printed_numbers == 1
    bad = compare.compare_traces(_trace([], "loss 0.1240\n"), _trace([], "loss 0.1234\n"))
    assert bad.first.quantity == "printed number" and bad.first.original == "0.1240"
    step = compare.compare_traces(_trace([], "step 10\n"), _trace([], "step 11\n"))
    assert not step.equivalent, "integers must match exactly"
    sci = compare.compare_traces(_trace([], "1.23e-05\n"), _trace([], "1.24e-05\n"))
    assert sci.equivalent                               # one unit of the last digit
    nan = compare.compare_traces(_trace([], "loss nan\n"), _trace([], "loss 0.5\n"))
    assert not nan.equivalent
    assert compare.compare_traces(_trace([], "loss nan\n"), _trace([], "loss NaN\n")).equivalent


def test_printed_lines_count_and_words_with_digits():
    assert compare_output.printed_numbers("w2*w3 [ 0.5 -1.]\nno numbers\nx1=3") == [
        (1, "w2*w3 [ 0.5 -1.]", ["0.5", "-1."]), (3, "x1=3", ["3"])]
    c = compare.compare_traces(_trace([], "a 1\nb 2\n"), _trace([], "a 1\n"))
    assert "original printed 2 lines with numbers, migrated 1" in c.first.reason


# -- reports (no TensorFlow) ---------------------------------------------------------

def _result(tmp_path, verdict="DIVERGED"):
    c = compare.compare_traces(_trace(_training(), "loss 1.0\n"),
                               _trace(_training(perturb_step=2, delta=0.5), "loss 1.5\n"))
    o = SideResult("original", str(tmp_path / "original.py"), status="ok")
    m = SideResult("migrated", str(tmp_path / "migrated.py"), status="ok")
    return VerifyResult(verdict, c.first.describe(), o, m, comparison=c,
                        mapping=[{"original": "w", "migrated": "w", "shape": [2], "trainable": True}],
                        elapsed=1.0)


def test_reports_written_and_parseable(tmp_path):
    result = _result(tmp_path)
    paths = {k: tmp_path / f"out/report.{k}" for k in ("json", "xml", "md", "png")}
    report.write_reports(result, json=paths["json"], junit=paths["xml"], markdown=paths["md"], plot=paths["png"])
    data = json.loads(paths["json"].read_text())
    assert data["verdict"] == "DIVERGED" and data["exit_code"] == 1
    first = data["comparison"]["first_divergence"]
    assert (first["quantity"], first["step"], first["name"]) == ("gradient", 2, "w")
    assert data["variable_mapping"][0]["original"] == "w"
    suite = ET.parse(paths["xml"]).getroot().find("testsuite")
    names = {case.get("name") for case in suite.iter("testcase")}
    assert {"loss", "gradient", "applied update", "final value", "printed number"} <= names
    failed = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert "gradient" in failed and "final value" not in failed
    md = paths["md"].read_text()
    assert "| quantity | compared |" in md and "| gradient | 10 |" in md and "DIVERGED" in md
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reports_for_several_pairs(tmp_path):
    results = [_result(tmp_path), _result(tmp_path, verdict="EQUIVALENT")]
    report.write_reports(results, json=tmp_path / "all.json", junit=tmp_path / "all.xml",
                         markdown=tmp_path / "all.md", plot=tmp_path / "loss.png")
    assert [d["verdict"] for d in json.loads((tmp_path / "all.json").read_text())] == ["DIVERGED", "EQUIVALENT"]
    assert len(ET.parse(tmp_path / "all.xml").getroot().findall("testsuite")) == 2
    assert (tmp_path / "all.md").read_text().count("| quantity |") == 2
    assert (tmp_path / "loss-1.png").exists() and (tmp_path / "loss-2.png").exists()


def test_terminal_summary_lists_kinds_and_first_divergence(tmp_path):
    text = report.summary(_result(tmp_path))
    assert text.startswith("DIVERGED: step 2, gradient of w")
    assert "compared: 5 steps, 10 gradients, 1 variable, 1 printed number" in text
    assert "first divergence: step 2, gradient of w" in text
    assert "w -> w [2]" in text


def test_command_import_is_light():
    code = ("import sys, tf1gradfix.verify.command, tf1gradfix.verify.orchestrate, "
            "tf1gradfix.verify.report;"
            "bad = [m for m in ('tensorflow', 'matplotlib', 'keras') if m in sys.modules];"
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_missing_file_is_a_failure_without_running(tmp_path):
    result = verify_pair(tmp_path / "nope.py", DEV / "migrated.py", rtol=1e-3, atol=1e-6, timeout=5)
    assert result.verdict == "ORIGINAL_FAILED" and result.exit_code == 2 and "not found" in result.reason


# -- real runs ------------------------------------------------------------------------------

TINY_TF1 = """
import numpy as np
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.random_normal([2, 1]), name="w")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
data = np.random.RandomState(0).randn(8, 2).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(5):
        _, l = sess.run([train, loss], {x: data})
        print("loss %.5f" % l)
"""

TINY_TF2 = """
import numpy as np
import tensorflow as tf
w = tf.Variable(tf.random.normal([2, 1]), name="w")
opt = tf.keras.optimizers.SGD(0.1)
data = np.random.RandomState(0).randn(8, 2).astype(np.float32)
for i in range(5):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(data, w) - 1.0))
    opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    print("loss %.5f" % loss.numpy())
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.tf
def test_tiny_pair_equivalent_and_import_styles(tmp_path):
    styles = TINY_TF1.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf\nfrom tensorflow import Session")
    styles = styles.replace("tf.Session()", "Session()")
    result = verify_pair(_write(tmp_path, "o.py", styles), _write(tmp_path, "m.py", TINY_TF2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "EQUIVALENT", report.summary(result)
    # tf.random.normal on the line that creates w is its initial value, not a random op of the run
    assert result.mapping == [{"original": "w", "migrated": "w", "shape": [2, 1], "trainable": True,
                               "matched_by": "name"}]
    c = result.comparison
    assert (c.steps, c.gradients, c.printed_numbers) == (5, 5, 5)


@pytest.mark.tf
def test_hanging_migration_times_out(tmp_path):
    hang = "import time\nprint('started', flush=True)\ntime.sleep(600)\n"
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", hang),
                         rtol=1e-3, atol=1e-6, timeout=25)
    assert result.verdict == "MIGRATED_FAILED", report.summary(result)
    assert result.reason == "migrated timed out after 25 s"
    assert result.elapsed < 60 and result.exit_code == 2


@pytest.mark.tf
def test_hanging_original_stops_both(tmp_path):
    hang = "import time\ntime.sleep(600)\n" + TINY_TF1
    result = verify_pair(_write(tmp_path, "o.py", hang), _write(tmp_path, "m.py", TINY_TF2),
                         rtol=1e-3, atol=1e-6, timeout=20)
    assert result.verdict == "ORIGINAL_FAILED", report.summary(result)
    assert result.reason == "original timed out after 20 s"
    assert result.migrated.status in ("killed", "timeout")   # it waited for the original's values
    assert result.elapsed < 50


@pytest.mark.tf
def test_crashing_migration(tmp_path):
    crash = TINY_TF2.replace('print("loss %.5f" % loss.numpy())',
                             'raise ValueError("shapes do not line up in step %d" % i)')
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", crash),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "MIGRATED_FAILED"
    assert "ValueError: shapes do not line up in step 0" in result.reason
    assert "shapes do not line up" in result.migrated.stderr_tail
    assert "migrated raised ValueError" in report.summary(result)


@pytest.mark.tf
def test_os_exit_and_broken_original(tmp_path):
    exits = TINY_TF2.replace('print("loss %.5f" % loss.numpy())', 'import os; os._exit(3)')
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", exits),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "MIGRATED_FAILED" and "exited with code 3" in result.reason
    broken = TINY_TF1.replace("sess.run(tf.global_variables_initializer())", "1 / 0")
    result = verify_pair(_write(tmp_path, "b.py", broken), _write(tmp_path, "m2.py", TINY_TF2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "ORIGINAL_FAILED" and "ZeroDivisionError" in result.reason
    assert result.migrated.status in ("killed", "ok")


@pytest.mark.tf
def test_unmatched_trainable_variable_is_not_comparable(tmp_path):
    renamed = TINY_TF2.replace('name="w"', 'name="weights"')
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", renamed),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "NOT_COMPARABLE", report.summary(result)
    assert "weights [2, 1]" in result.reason
    reshaped = TINY_TF2.replace("tf.random.normal([2, 1])", "tf.random.normal([1, 2])")
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m2.py", reshaped),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "NOT_COMPARABLE" and "shape [1, 2]" in result.reason


@pytest.mark.tf
def test_duplicate_names_map_like_tf1(tmp_path):
    tf1 = """
    import tensorflow as tf
    a = tf.Variable(1.0, name="w")
    b = tf.Variable(2.0, name="w")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(a), sess.run(b))
    """
    tf2 = """
    import tensorflow as tf
    a = tf.Variable(1.0, name="w")
    b = tf.Variable(2.0, name="w")
    print(a.numpy(), b.numpy())
    """
    result = verify_pair(_write(tmp_path, "o.py", tf1), _write(tmp_path, "m.py", tf2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "EQUIVALENT", report.summary(result)
    assert [(m["original"], m["migrated"]) for m in result.mapping] == [("w", "w"), ("w_1", "w_1")]
    assert result.comparison.printed_numbers == 2


@pytest.mark.tf
def test_cli_reports_on_a_divergence(tmp_path):
    out = tmp_path / "r"
    wrong = tmp_path / "wrong_learning_rate.py"
    wrong.write_text(counterpart_text(DEV, "wrong_learning_rate"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "tf1gradfix.verify", str(DEV / "original.py"), str(wrong),
         "--json", str(out / "v.json"), "--junit", str(out / "v.xml"), "--markdown", str(out / "v.md"),
         "--plot", str(out / "v.png"), "--timeout", "120"],
        cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the plain run shows the wrong rate from step 2 on, as drift would look (losses, and the loss
    # it prints); lockstep shows the step it matters: step 1's change from the original's state
    assert proc.stdout.startswith("DIVERGED: lockstep: step 1, step change of"), proc.stdout
    assert "the plain run first diverged at step 2, loss" in proc.stdout
    data = json.loads((out / "v.json").read_text())
    assert data["proved_by"] == "lockstep"
    first = data["comparison"]["first_divergence"]
    assert first["quantity"] == "loss" and first["step"] == 2
    assert data["comparison"]["by_kind"]["applied update"]["diverged"] >= 20
    assert math.isclose(data["tolerances"]["rtol"], 1e-3)
    ET.parse(out / "v.xml")
    assert "| loss |" in (out / "v.md").read_text()
    assert (out / "v.png").stat().st_size > 1000


@pytest.mark.tf
def test_tf_function_bodies_get_tensors_when_run_eagerly(tmp_path):
    # the body relies on tracing semantics: a NumPy argument arrives as a tensor
    tf2 = TINY_TF2.replace("for i in range(5):", """@tf.function
def step(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    grad_w = tape.gradient(loss, w)
    opt.apply_gradients([(grad_w, w)])
    return loss


for i in range(5):
    print("loss %.5f" % step(data).numpy())
    continue""")
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", tf2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "EQUIVALENT", report.summary(result)
    assert result.comparison.steps == 5


# -- variable mapping (runner_v2.V2Tracer.match, no TensorFlow needed) ---------------

def _matcher():
    from tf1gradfix.verify.runner_v2 import V2Tracer

    return V2Tracer(tf=None, trace=None, wait=0)


def _init(*items):
    return {n: {"value": {"dtype": "<f4", "shape": list(shape), "b64": ""}, "trainable": True}
            for n, shape in items}


def _match_all(names_shapes, init):
    tracer, out = _matcher(), []
    for name, shape in names_shapes:
        original, how = tracer.match(name, list(shape), init)
        if original is not None:
            tracer.taken.add(original)
        out.append((original, how))
    return out


def test_mapping_by_name_then_scope_prefix():
    init = _init(("dense/kernel", (3, 2)), ("dense/bias", (2,)), ("model/out/kernel", (2, 1)))
    got = _match_all([("dense/kernel", (3, 2)), ("small_cnn/dense/bias", (2,)), ("out/kernel", (2, 1))], init)
    assert got == [("dense/kernel", "name"), ("dense/bias", "scope"), ("model/out/kernel", "scope")]


def test_mapping_pairs_renamed_layers_in_creation_order():
    init = _init(("conv2d/kernel", (3, 3, 1, 4)), ("conv2d/bias", (4,)),
                 ("dense/kernel", (8, 2)), ("dense/bias", (2,)))
    got = _match_all([("m/conv1/kernel", (3, 3, 1, 4)), ("m/conv1/bias", (4,)),
                      ("m/logits/kernel", (8, 2)), ("m/logits/bias", (2,))], init)
    assert got == [("conv2d/kernel", "layer order"), ("conv2d/bias", "layer order"),
                   ("dense/kernel", "layer order"), ("dense/bias", "layer order")]


def test_mapping_never_pairs_layers_out_of_order_or_by_a_lone_bias():
    init = _init(("layer0/kernel", (5, 8)), ("layer0/bias", (8,)),
                 ("layer1/kernel", (8, 1)), ("layer1/bias", (1,)))
    # the migration skipped layer0: its first layer fits layer1 by shape but not by order,
    # and its bias must not be paired alone once the kernel was refused
    got = _match_all([("out/kernel", (8, 1)), ("out/bias", (1,))], init)
    assert got == [(None, None), (None, None)]


def test_mapping_needs_the_same_last_name_component():
    init = _init(("encoder/w1", (4, 6)))
    assert _match_all([("encoder/w1_1", (4, 6)), ("other/kernel", (4, 6))], init) == [(None, None)] * 2


# -- TensorFlow random ops -------------------------------------------------------------

def test_random_op_types():
    from tf1gradfix.verify.random_ops import is_random_op

    for t in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal",
              "StatefulUniform", "Multinomial", "RandomShuffle", "RandomGamma", "ShuffleDatasetV3",
              "LogUniformCandidateSampler", "UniformCandidateSampler", "FixedUnigramCandidateSampler"):
        assert is_random_op(t), t
    # stateless ops are pure functions of their seed: compared like any other op
    for t in ("StatelessRandomGetKeyCounter", "StatelessRandomUniformV2", "StatelessMultinomial",
              "MatMul", "Shape", "RngReadAndSkip", "Dropout", "AllCandidateSampler"):
        assert not is_random_op(t), t


def test_random_reason_names_op_side_and_step():
    from tf1gradfix.verify.orchestrate import _random_reason

    ev = {"original": [{"kind": "random", "step": 3, "training": True, "count": 2,
                        "ops": [{"type": "RandomUniform", "name": "dropout/random_uniform/RandomUniform"}]}],
          "migrated": []}
    text = _random_reason(ev)
    assert "original ran RandomUniform dropout/random_uniform/RandomUniform in training step 3" in text
    assert "the migrated program ran none" in text


NOISY_TF1 = TINY_TF1.replace("loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))",
                             "noisy = x + tf.random_normal(tf.shape(x), stddev=0.1)\n"
                             "loss = tf.reduce_mean(tf.square(tf.matmul(noisy, w) - 1.0))")
NOISY_TF2 = TINY_TF2.replace("loss = tf.reduce_mean(tf.square(tf.matmul(data, w) - 1.0))",
                             "noisy = data + tf.random.normal(data.shape, stddev=0.1)\n"
                             "        loss = tf.reduce_mean(tf.square(tf.matmul(noisy, w) - 1.0))")


SHUFFLED_TF1 = NOISY_TF1.replace("noisy = x + tf.random_normal(tf.shape(x), stddev=0.1)",
                                  "noisy = tf.random.shuffle(x)")
SHUFFLED_TF2 = NOISY_TF2.replace("noisy = data + tf.random.normal(data.shape, stddev=0.1)",
                                  "noisy = tf.random.shuffle(data)")


@pytest.mark.tf
def test_random_noise_in_training_is_aligned(tmp_path):
    """Noise drawn in every step is the same on both sides; an op that is not aligned stays NOT_COMPARABLE."""
    assert NOISY_TF1 != TINY_TF1 and NOISY_TF2 != TINY_TF2
    result = verify_pair(_write(tmp_path, "o.py", NOISY_TF1), _write(tmp_path, "m.py", NOISY_TF2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "EQUIVALENT", report.summary(result)
    # w's tf.random_normal is its initial value: left to TensorFlow and not counted
    assert result.random_numbers == {"original": {"ops": 1, "draws": 5, "training": 5},
                                     "migrated": {"ops": 1, "draws": 5, "training": 5}}
    assert "random numbers: aligned" in report.summary(result)
    assert result.to_json()["random_numbers"] == result.random_numbers
    # one side only: the noise is a difference
    result = verify_pair(_write(tmp_path, "o.py", TINY_TF1), _write(tmp_path, "m.py", NOISY_TF2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "DIVERGED", report.summary(result)
    assert result.comparison.first.step == 1
    # tf.random.shuffle is not aligned: the rule names the op, side and step
    assert SHUFFLED_TF1 != NOISY_TF1 and SHUFFLED_TF2 != NOISY_TF2
    result = verify_pair(_write(tmp_path, "o.py", SHUFFLED_TF1), _write(tmp_path, "m.py", SHUFFLED_TF2),
                         rtol=1e-3, atol=1e-6, timeout=120)
    assert result.verdict == "NOT_COMPARABLE", report.summary(result)
    assert "original ran RandomShuffle" in result.reason and "in training step 1" in result.reason
    assert "migrated ran RandomShuffle (m.py:" in result.reason, result.reason


def test_statement_of_a_call_spread_over_lines(tmp_path):
    """Random initial values written over two lines still belong to the variable's statement."""
    import runpy

    script = _write(tmp_path, "stmt.py", """
    import sys
    from tf1gradfix.verify.random_ops import _statement
    def where():
        return _statement(sys._getframe(1))
    pair = (where(),
            where())
    first = where()
    second = where()
    """)
    ns = runpy.run_path(str(script))
    assert ns["pair"][0] == ns["pair"][1] == (str(script), 6)
    assert ns["first"] != ns["second"]


def test_graph_random_op_counts_only_in_taken_branches():
    from types import SimpleNamespace as NS

    from tf1gradfix.verify.random_ops import GraphRandomness

    pred = NS(name="is_training:0")
    in_branch, outside = NS(type="RandomUniform", name="cond/r"), NS(type="RandomUniform", name="r")
    checks = [(in_branch, [(pred, 1)]), (outside, [])]
    assert GraphRandomness.executed(checks, {"is_training:0": False}) == [{"type": "RandomUniform", "name": "r"}]
    assert len(GraphRandomness.executed(checks, {"is_training:0": True})) == 2


def test_graph_dropout_draw_in_a_loop_counts_only_with_a_rate():
    from types import SimpleNamespace as NS

    from tf1gradfix.verify.random_ops import GraphRandomness

    keep = NS(name="keep_prob:0")
    draw = NS(type="RandomUniform", name="rnn/while/dropout/random_uniform/RandomUniform")
    checks = [(draw, [(keep, lambda v: bool(1.0 - v != 0))])]   # (random_ops.dropout_rate: rate = 1 - keep)
    assert GraphRandomness.executed(checks, {"keep_prob:0": 1.0}) == []
    assert GraphRandomness.executed(checks, {"keep_prob:0": 0.5}) == [{"type": draw.type, "name": draw.name}]
