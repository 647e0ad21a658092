"""The migration's tf.function calls run as graphs that return what the verifier
records (tf1gradfix/verify/graph_calls.py), and stay eager where that would not
be the same computation.

The Plan rules run on stand-ins (fast suite); the tests marked ``tf`` verify
small program pairs, one of them both ways (graphs, and every call eager) to
show the two give the same trace.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from tf1gradfix.verify import graph_calls
from tf1gradfix.verify.runner_common import decode_array

# -- the plan of a trace (no TensorFlow) ------------------------------------------

FAKE_TF = SimpleNamespace(convert_to_tensor=lambda t: t)


def _tensor(graph, label):
    return SimpleNamespace(graph=graph, label=label)


def test_plan_keeps_events_in_order_with_their_tensors_flat():
    g = object()
    plan = graph_calls.Plan(g)
    loss, gw, gb = _tensor(g, "loss"), _tensor(g, "gw"), _tensor(g, "gb")
    plan.add(FAKE_TF, "compute", ["w", "b", "frozen"], [gw, gb, None], [loss])
    plan.add(FAKE_TF, "apply", ["w", "b"], [gw, gb])
    assert plan.invalid is None
    assert plan.events == [("compute", ["w", "b"], ["frozen"], 1), ("apply", ["w", "b"], [], 0)]
    assert [t.label for t in plan.tensors] == ["loss", "gw", "gb", "gw", "gb"]


def test_plan_refuses_a_value_of_another_graph_and_records_nothing_after():
    g, inner = object(), object()
    plan = graph_calls.Plan(g)
    plan.add(FAKE_TF, "compute", ["w"], [_tensor(inner, "gw")], [_tensor(inner, "loss")])
    assert plan.invalid == "a traced value inside control flow or a nested function"
    plan.add(FAKE_TF, "apply", ["w"], [_tensor(g, "gw")])
    assert plan.events == [] and plan.tensors == []


def test_plan_refuses_what_is_not_a_tensor():
    def no(_):
        raise TypeError("not convertible")
    plan = graph_calls.Plan(object())
    plan.add(SimpleNamespace(convert_to_tensor=no), "apply", ["w"], [object()])
    assert plan.invalid.startswith("a traced value is not a tensor")


# -- whole verifications -------------------------------------------------------------

NOISY_ORIGINAL = 'import numpy as np\nimport tensorflow as tf\n\ndata = np.random.RandomState(4).randn(48, 5).astype(np.float32)\nlabels = (data[:, :2].sum(axis=1, keepdims=True) > 0).astype(np.float32)\ninputs = tf.placeholder(tf.float32, [None, 5])\ntruth = tf.placeholder(tf.float32, [None, 1])\nnoisy = inputs + tf.random_normal(tf.shape(inputs), stddev=0.2)\nkernel = tf.Variable(tf.zeros([5, 1]), name="kernel")\noffset = tf.Variable(tf.constant([0.1]), name="offset")\nlogits = tf.matmul(noisy, kernel) + offset\ncost = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=truth, logits=logits))\nclean = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=truth, logits=tf.matmul(inputs, kernel) + offset))\nstep = tf.train.AdamOptimizer(0.05).minimize(cost)\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    for i in range(9):\n        part = slice(i % 3 * 16, i % 3 * 16 + 16)\n        c, _ = sess.run([cost, step], {inputs: data[part], truth: labels[part]})\n        print("step", i, "cost %.5f" % c, "clean %.5f" % sess.run(clean, {inputs: data, truth: labels}))\n'
NOISY_MIGRATED = 'import numpy as np\nimport tensorflow as tf\n\ndata = np.random.RandomState(4).randn(48, 5).astype(np.float32)\nlabels = (data[:, :2].sum(axis=1, keepdims=True) > 0).astype(np.float32)\nkernel = tf.Variable(tf.zeros([5, 1]), name="kernel")\noffset = tf.Variable(tf.constant([0.1]), name="offset")\noptimizer = tf.keras.optimizers.Adam(0.05)\n\n\ndef loss_of(x, y):\n    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, kernel) + offset))\n\n\n@tf.function\ndef train(x, y):\n    with tf.GradientTape() as tape:\n        cost = loss_of(x + tf.random.normal(tf.shape(x), stddev=0.2), y)\n    grads = tape.gradient(cost, [kernel, offset])\n    optimizer.apply_gradients(zip(grads, [kernel, offset]))\n    return cost\n\n\n@tf.function\ndef evaluate(x, y):\n    return loss_of(x, y)\n\n\nfor i in range(9):\n    part = slice(i % 3 * 16, i % 3 * 16 + 16)\n    c = train(data[part], labels[part])\n    print("step", i, "cost %.5f" % c.numpy(), "clean %.5f" % evaluate(data, labels).numpy())\n'
TWICE_ORIGINAL = 'import numpy as np\nimport tensorflow as tf\n\ndata = np.random.RandomState(5).randn(30, 2).astype(np.float64)\ntarget = data @ np.array([[0.5], [-1.0]]) + 0.25\nx = tf.placeholder(tf.float64, [None, 2])\ny = tf.placeholder(tf.float64, [None, 1])\nw = tf.Variable(np.zeros((2, 1)), name="w")\nc = tf.Variable(np.zeros(1), name="c")\nerr = tf.reduce_mean(tf.square(tf.matmul(x, w) + c - y))\nopt = tf.train.MomentumOptimizer(0.1, 0.5).minimize(err)\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    for epoch in range(6):\n        for _ in range(2):\n            e, _ = sess.run([err, opt], {x: data, y: target})\n        print(epoch, e)\n'
TWICE_IN_A_LOOP = 'import numpy as np\nimport tensorflow as tf\n\ndata = np.random.RandomState(5).randn(30, 2).astype(np.float64)\ntarget = data @ np.array([[0.5], [-1.0]]) + 0.25\nw = tf.Variable(np.zeros((2, 1)), name="w")\nc = tf.Variable(np.zeros(1), name="c")\nopt = tf.keras.optimizers.SGD(0.1, momentum=0.5)\n\n\n@tf.function\ndef two_steps(x, y):\n    e = tf.constant(0.0, tf.float64)\n    for _ in tf.range(2):\n        with tf.GradientTape() as tape:\n            e = tf.reduce_mean(tf.square(tf.matmul(x, w) + c - y))\n        opt.apply_gradients(zip(tape.gradient(e, [w, c]), [w, c]))\n    return e\n\n\nfor epoch in range(6):\n    print(epoch, two_steps(data, target).numpy())\n'
TWICE_CALLED = 'import numpy as np\nimport tensorflow as tf\n\ndata = np.random.RandomState(5).randn(30, 2).astype(np.float64)\ntarget = data @ np.array([[0.5], [-1.0]]) + 0.25\nw = tf.Variable(np.zeros((2, 1)), name="w")\nc = tf.Variable(np.zeros(1), name="c")\nopt = tf.keras.optimizers.SGD(0.1, momentum=0.5)\n\n\n@tf.function\ndef step(x, y):\n    with tf.GradientTape() as tape:\n        e = tf.reduce_mean(tf.square(tf.matmul(x, w) + c - y))\n    opt.apply_gradients(zip(tape.gradient(e, [w, c]), [w, c]))\n    return e\n\n\nfor epoch in range(6):\n    for _ in range(2):\n        e = step(data, target)\n    print(epoch, e.numpy())\n'


def _pair(tmp_path, name, original, migrated):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "original.py").write_text(original, encoding="utf-8")
    (folder / "migrated.py").write_text(migrated, encoding="utf-8")
    return folder / "original.py", folder / "migrated.py"


def _computes(trace_dir):
    events = [json.loads(line) for line in (trace_dir / "migrated.events.jsonl").read_text().splitlines()]
    return [(e["loss"], {n: decode_array(g) for n, g in e["grads"].items()}) for e in events if e["kind"] == "compute"]


@pytest.mark.tf
def test_graph_calls_are_proven_like_eager_ones(tmp_path, monkeypatch):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    # a training function without randomness: every call after the first runs as a graph
    original, migrated = _pair(tmp_path, "called", TWICE_ORIGINAL, TWICE_CALLED)
    graphs = verify_pair(original, migrated, keep_trace=tmp_path / "graphs")
    assert graphs.verdict == EQUIVALENT, graphs.reason
    assert graphs.functions == {"graph_calls": 11, "eager_calls": 1, "kept_eager": {}}
    # the same pair with every call eager records the same steps
    monkeypatch.setenv(graph_calls.EAGER_ENV, "1")
    eager = verify_pair(original, migrated, keep_trace=tmp_path / "eager")
    monkeypatch.delenv(graph_calls.EAGER_ENV)
    assert eager.verdict == EQUIVALENT and eager.functions["graph_calls"] == 0
    a, b = _computes(tmp_path / "graphs"), _computes(tmp_path / "eager")
    assert len(a) == len(b) == 12
    for (loss_a, grads_a), (loss_b, grads_b) in zip(a, b):
        assert loss_a == pytest.approx(loss_b, rel=1e-12)
        assert grads_a.keys() == grads_b.keys() == {"w", "c"}
        for n in grads_a:
            np.testing.assert_allclose(grads_a[n], grads_b[n], rtol=1e-12)

    # random draws are aligned eagerly: that function stays eager, the evaluation runs as a graph
    original, migrated = _pair(tmp_path, "noisy", NOISY_ORIGINAL, NOISY_MIGRATED)
    noisy = verify_pair(original, migrated)
    assert noisy.verdict == EQUIVALENT, noisy.reason
    assert noisy.functions == {"graph_calls": 8, "eager_calls": 10,
                               "kept_eager": {"train": "it draws random numbers (aligned only eagerly)"}}

    # gradients inside a tf.range loop belong to the loop's graph: eager, and still proven
    original, migrated = _pair(tmp_path, "loop", TWICE_ORIGINAL, TWICE_IN_A_LOOP)
    loop = verify_pair(original, migrated)
    assert loop.verdict == EQUIVALENT, loop.reason
    assert loop.functions["kept_eager"] == {"two_steps": "a traced value inside control flow or a nested function"}
    assert loop.to_json()["functions"] == loop.functions


@pytest.mark.tf
def test_gradients_of_gradients_stay_eager():
    """A gradient penalty (a tape inside the tape the loss is differentiated with)."""
    from pathlib import Path

    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    scenario = Path(__file__).resolve().parent.parent / "fixtures" / "verify" / "gradient_penalty_nested"
    result = verify_pair(scenario / "original.py", scenario / "migrated.py")
    assert result.verdict == EQUIVALENT, result.reason
    assert result.functions["kept_eager"] == {
        "critic_train": "it computes gradients under another tape (higher-order gradients)"}


UNTRACEABLE_ONCE = TWICE_CALLED.replace(
    "for epoch in range(6):",
    "@tf.function\ndef report(x, y):\n    e = tf.reduce_mean(tf.square(tf.matmul(x, w) + c - y))\n"
    "    return e if float(e.numpy()) > 0 else -e   # a value no trace has\n\n\nfor epoch in range(6):",
).replace("    print(epoch, e.numpy())\n", "    print(epoch, e.numpy())\nprint('final', report(data, target).numpy())\n")
ONCE_ORIGINAL = TWICE_ORIGINAL + "    print('final', sess.run(err, {x: data, y: target}))\n"


@pytest.mark.tf
def test_a_function_tf2_cannot_trace_fails_the_migration_at_its_first_call(tmp_path):
    """Its only call ran eagerly, where `.numpy()` works; TF2 traces it at that call and fails."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, MIGRATED_FAILED, verify_pair

    original, migrated = _pair(tmp_path, "untraceable", ONCE_ORIGINAL, UNTRACEABLE_ONCE)
    result = verify_pair(original, migrated)
    assert result.verdict == MIGRATED_FAILED, result.reason
    assert "report" in result.migrated.stderr_tail and "numpy" in result.migrated.stderr_tail, result.migrated.stderr_tail
    # traced without `.numpy()`, the same function is proven
    fixed = UNTRACEABLE_ONCE.replace("return e if float(e.numpy()) > 0 else -e   # a value no trace has", "return e")
    original, migrated = _pair(tmp_path, "traceable", ONCE_ORIGINAL, fixed)
    assert verify_pair(original, migrated).verdict == EQUIVALENT


@pytest.mark.tf
def test_a_program_that_runs_its_functions_eagerly_is_not_traced(tmp_path):
    """`tf.config.run_functions_eagerly(True)`: TF2 never traces, so neither does the check."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    eager = UNTRACEABLE_ONCE.replace("import tensorflow as tf\n", "import tensorflow as tf\n\ntf.config.run_functions_eagerly(True)\n", 1)
    original, migrated = _pair(tmp_path, "eager", ONCE_ORIGINAL, eager)
    result = verify_pair(original, migrated)
    assert result.verdict == EQUIVALENT, result.reason
