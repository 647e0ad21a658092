"""What a reviewer reads in a rewrite (issue: output a reviewer accepts), on every
restructured fixture (fixtures/rewrite/*/input.py and the verifier's originals):
no cast that the input signature already does, a learning-rate schedule given to
the optimizer where that is the same schedule, the user's blank lines and
statement order kept, and generated code as black writes it. Nothing here starts
TensorFlow (the rewrites themselves are proven by the verifier in
tests/test_restructure_fixtures.py and tests/test_rewrite_of_verify_originals.py).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from functools import lru_cache
from pathlib import Path

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from black_outputs import black as _black, black_changes  # noqa: E402  (the same check on a corpus)

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
INPUTS = sorted(ROOT.glob("rewrite/*/input.py")) + sorted(ROOT.glob("verify/*/original*.py"))


@lru_cache(maxsize=None)
def _rewrite(source: str) -> str | None:
    result = process_source("input.py", source.encode(), CodeFilter())
    return None if result.new_source is None else result.new_source.decode()


def _pairs():
    for path in INPUTS:
        source = path.read_text(encoding="utf-8")
        out = _rewrite(source)
        if out is not None and "@tf.function" in out:
            yield path, source, out


PAIRS = list(_pairs())
IDS = [f"{p.parent.name}/{p.stem}" for p, _, _ in PAIRS]


def test_there_are_restructured_programs():
    assert len(PAIRS) > 40


# -- 1. no cast the input signature already does --------------------------------

def _redundant_casts(out: str) -> list[str]:
    """`x = tf.cast(x, D)` in a function whose input_signature gives `x` the dtype D."""
    found = []
    for fn in ast.walk(ast.parse(out)):
        if not isinstance(fn, ast.FunctionDef):
            continue
        specs = {}
        for deco in fn.decorator_list:
            sig = next((k.value for k in getattr(deco, "keywords", ()) if k.arg == "input_signature"), None)
            if isinstance(sig, ast.List):
                params = [a.arg for a in fn.args.args if a.arg != "self"]
                for name, spec in zip(params, sig.elts):
                    dtype = next((k.value for k in getattr(spec, "keywords", ()) if k.arg == "dtype"), None)
                    specs[name] = ast.unparse(dtype) if dtype is not None else None
        for stmt in fn.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) \
                    and ast.unparse(stmt.value.func).endswith(".cast") and len(stmt.value.args) == 2:
                target, (value, dtype) = ast.unparse(stmt.targets[0]), stmt.value.args
                if target in specs and ast.unparse(value) == target and specs[target] == ast.unparse(dtype):
                    found.append(ast.unparse(stmt))
    return found


@pytest.mark.parametrize("path,source,out", PAIRS, ids=IDS)
def test_no_cast_of_an_argument_the_signature_already_converts(path, source, out):
    assert _redundant_casts(out) == []


def test_the_cast_check_finds_one():
    out = textwrap.dedent("""\
        @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float32)])
        def f(x):
            x = tf.cast(x, tf.float32)
            return x
        """)
    assert _redundant_casts(out) == ["x = tf.cast(x, tf.float32)"]


# -- 3. blank lines and statement order kept -----------------------------------

def _blank_after_imports(source: str) -> bool | None:
    """Whether a blank line follows the file's first run of imports (None: no such run)."""
    lines = source.splitlines()
    seen = False
    for k, line in enumerate(lines):
        if line.startswith(("import ", "from ")):
            seen = True
        elif seen:
            return line.strip() == ""
    return None


def _order(source: str, kept: set[str] | None = None) -> list[str]:
    """The statements in source order, each as what it binds (renames aside), or its
    kind and first line; `kept`: the functions the output still defines (the statements of
    one it read where it is called, and dropped, are where the calls were)."""
    keys: list[str] = []

    def visit(body):
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef) and kept is not None and stmt.name not in kept:
                continue
            if isinstance(stmt, ast.Assign):
                keys.append(" ".join(n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)))
            elif not isinstance(stmt, (ast.With, ast.FunctionDef)):   # (session blocks go, functions come)
                keys.append(ast.unparse(stmt).splitlines()[0])
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(stmt, field, []))

    visit(ast.parse(source).body)
    return keys


@pytest.mark.parametrize("path,source,out", PAIRS, ids=IDS)
def test_blank_lines_and_order_kept(path, source, out):
    # the blank line under the imports stays, also when the statement after it goes
    assert _blank_after_imports(out) == _blank_after_imports(source)
    # no function of the rewrite starts with a blank line unless one of the input did
    if not re.search(r"def .*:\n\s*\n", source):
        assert not re.search(r"def .*:\n\s*\n", out)
    # no double blank line inside a function (black's limit, a dropped statement's and the next one's)
    assert not re.search(r"\n\n\n+[ ]+\S", out.replace("\n\n\n    @", "").replace("\n\n\n    def ", "")) or \
        re.search(r"\n\n\n+[ ]+\S", source)
    # statements the rewrite keeps outside its functions stay in their order
    defined = {n.name for n in ast.walk(ast.parse(out)) if isinstance(n, ast.FunctionDef)}
    before, after = _order(source, defined), _order(out)
    common = [k for k in before if before.count(k) == 1 and after.count(k) == 1]
    positions = [after.index(k) for k in common]
    moved = [(common[i], common[i + 1]) for i in range(len(common) - 1) if positions[i] > positions[i + 1]]
    assert all(_moved_into_function(a, out) or _moved_into_function(b, out) for a, b in moved), moved


def _moved_into_function(key: str, out: str) -> bool:
    """A graph statement now in a step function."""
    first = key.split(" ")[0]
    return bool(re.search(rf"\n[ ]{{4,}}[(\[]?{re.escape(first)}\b[^=\n]*= ", out))


def test_a_dropped_statement_leaves_its_blank_line():
    out = _rewrite(textwrap.dedent("""\
        import numpy as np
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [None, 2])
        w = tf.Variable(tf.zeros([2, 1]), name="w")
        data = np.ones([3, 2], np.float32)

        y = tf.matmul(x, w)
        sess = tf.Session()
        print(sess.run(y, {x: data}))
        """))
    assert out.startswith("import numpy as np\nimport tensorflow as tf\n\nw = tf.Variable(")
    assert 'data = np.ones([3, 2], np.float32)\n\n\n@tf.function' in out


# -- 2. a schedule given to the optimizer where it is the same schedule ------------

SCHEDULED = (ROOT / "rewrite" / "lr_schedule_global_step" / "input.py").read_text(encoding="utf-8")
FETCHED = "_, now, lr = sess.run([fit, loss, rate], feed_dict={inputs: features, targets: labels})"
ON_OPTIMIZER = "optimizer=tf.keras.optimizers.Adam(learning_rate=tf.keras.optimizers.schedules.ExponentialDecay("
SET_EACH_STEP = "optimizer.learning_rate = rate"


def _scheduled(*edits: tuple[str, str]) -> str:
    source = SCHEDULED
    for old, new in edits:
        assert old in source
        source = source.replace(old, new)
    out = _rewrite(source)
    assert out is not None
    return out


def _joined(out: str) -> str:
    """`out` without white space (the layout aside)."""
    return re.sub(r"\s+", "", out)


def test_a_fetched_schedule_is_the_optimizers_and_read_from_it():
    out = _scheduled()
    assert ON_OPTIMIZER in _joined(out) and "rate = optimizer.learning_rate" in out
    assert SET_EACH_STEP not in out and out.count("ExponentialDecay(") == 1


def test_a_schedule_read_by_the_optimizer_alone_leaves_no_statement():
    out = _scheduled((FETCHED, "_, now = sess.run([fit, loss], feed_dict={inputs: features, targets: labels})"),
                     ('lr %.5f" % (sess.run(global_step), now, lr)', '" % (sess.run(global_step), now)'))
    assert ON_OPTIMIZER in _joined(out) and "rate" not in out.split("def train_step")[1].split("for features")[0]


@pytest.mark.parametrize("edits", [
    # the update does not count the step: the rate stays the schedule of 0
    [("minimize(loss, global_step=global_step)", "minimize(loss)")],
    # a step that does not start at 0, as the optimizer's iterations do
    [("global_step = tf.train.get_or_create_global_step()", 'global_step = tf.Variable(4, trainable=False, name="step")')],
    # a second update of the same optimizer counts its iterations twice per step
    [("fit = tf.train.AdamOptimizer(rate).minimize(loss, global_step=global_step)",
      "adam = tf.train.AdamOptimizer(rate)\n    fit = adam.minimize(loss, global_step=global_step)\n"
      "    doubled = 2.0 * loss\n    again = adam.minimize(doubled)"),
     (FETCHED, FETCHED + "\n            sess.run(again, feed_dict={inputs: features, targets: labels})")],
    # the step is also set by an assignment
    [("    with tf.Session() as sess:", "    reset = tf.assign(global_step, 0)\n    with tf.Session() as sess:"),
     ("        print(sess.run(kernel).ravel())", "        sess.run(reset)\n        print(sess.run(kernel).ravel())")],
], ids=["step_not_counted", "step_from_four", "two_updates", "step_assigned"])
def test_a_schedule_not_the_same_on_iterations_stays_set_before_each_update(edits):
    out = _scheduled(*edits)
    assert "learning_rate=tf.keras.optimizers.schedules" not in _joined(out)
    assert re.search(r"\w+\.learning_rate = rate\n", out) and ".schedules.ExponentialDecay(" in out


# -- 4. generated code as black writes it ------------------------------------------

def _rewritten_lines_black_changes(source: str) -> list[str] | None:
    """The rewrite's lines black would change (benchmarks/black_outputs.py), with this module's cached rewrite."""
    return black_changes(source, _rewrite)


@pytest.mark.parametrize("path,source,out", PAIRS, ids=IDS)
def test_black_changes_nothing_the_rewrite_wrote(path, source, out):
    changed = _rewritten_lines_black_changes(source)
    assert changed is None or changed == []


# A call black split over lines that a keyword rename makes short enough to fit on one
# (absl's `name=` for `flag_name=`), and a statement black split whose nested layer call
# moved to a line of its own (constructs/layer_hoist.py): joined again, as black joins them.
@pytest.mark.parametrize("scenario,joined", [
    ("flags_read_at_import", 'absl.flags.DEFINE_float(name="init_scale", default=0.25, help="initial weight")\n'),
    ("nested_layer_calls", "    hidden = tf.nn.elu(hidden_batch_normalization)\n"),
])
def test_a_statement_black_split_that_the_rewrite_shortened_is_joined(scenario, joined):
    source = _black((ROOT / "rewrite" / scenario / "input.py").read_text(encoding="utf-8"))
    out = _rewrite(source)
    assert joined in out and _black(out) == out


def test_a_long_generated_statement_is_split_as_black_splits_it():
    source = (ROOT / "rewrite" / "lr_schedule_global_step" / "input.py").read_text(encoding="utf-8")
    out = _rewrite(source)
    assert "    optimizer = tf.keras.optimizers.Adam(\n        learning_rate=tf.keras.optimizers.schedules" in out
    assert "    @tf.function(\n        input_signature=[\n            tf.TensorSpec(" in out


# -- 5. nothing in a tape's block the tape need not record ------------------------

def _taped_containers(out: str) -> list[str]:
    """`edited = []` inside `with tf.GradientTape() as tape:`: an empty list, dict, tuple or set."""
    found = []
    for block in ast.walk(ast.parse(out)):
        if isinstance(block, ast.With) and "GradientTape" in ast.unparse(block.items[0].context_expr):
            found += [ast.unparse(stmt) for stmt in block.body if isinstance(stmt, ast.Assign)
                      and isinstance(stmt.value, (ast.List, ast.Dict, ast.Tuple, ast.Set))
                      and not getattr(stmt.value, "elts", getattr(stmt.value, "keys", None))]
    return found


@pytest.mark.parametrize("path,source,out", PAIRS, ids=IDS)
def test_no_empty_container_is_made_in_a_tapes_block(path, source, out):
    assert _taped_containers(out) == []


def test_the_taped_container_check_finds_one():
    assert _taped_containers("with tf.GradientTape() as tape:\n    edited = []\n    y = f(x)\n") == ["edited = []"]


# -- 6. no tf.function traced for a single evaluation ------------------------------

_REPEATING = (ast.For, ast.While, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _one_off_traced(out: str) -> list[str]:
    """Functions decorated `tf.function(input_signature=[])` (nothing fed) that run once: called
    once, outside any loop or comprehension, at the top or in a function that itself runs
    once so (a program's `main()`); a graph traced for one call."""
    tree = ast.parse(out)
    calls: dict[str, list[bool]] = {}

    def walk(node: ast.AST, repeated: bool) -> None:   # (a function's body: read apart, below)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                calls.setdefault(child.func.id, []).append(repeated)
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, repeated or isinstance(child, _REPEATING))

    walk(tree, False)
    functions = [fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    top = {fn.name for fn in tree.body if isinstance(fn, ast.FunctionDef) and calls.get(fn.name) == [False]}
    for fn in functions:
        walk(fn, fn.name not in top)
    traced = {fn.name for fn in functions if any(
        isinstance(d, ast.Call) and any(k.arg == "input_signature" and isinstance(k.value, ast.List)
                                        and not k.value.elts for k in d.keywords) for d in fn.decorator_list)}
    return sorted(name for name in traced if calls.get(name) == [False])


@pytest.mark.parametrize("path,source,out", PAIRS, ids=IDS)
def test_no_tf_function_is_traced_for_a_single_evaluation(path, source, out):
    assert _one_off_traced(out) == []


def test_the_one_off_check_finds_one():
    out = ("@tf.function(input_signature=[])\ndef compute_total():\n    return total\n\n\n"
           "@tf.function(input_signature=[])\ndef step():\n    return total\n\n\n"
           "for _ in range(3):\n    step()\nprint(compute_total().numpy())\n")
    assert _one_off_traced(out) == ["compute_total"]


def test_a_single_evaluation_is_a_plain_function_and_a_repeated_one_stays_traced():
    out = _rewrite(textwrap.dedent("""\
        import tensorflow as tf
        total = tf.Variable(tf.zeros([2]))
        grow = total.assign_add(tf.ones([2]))
        halved = total / 2.0
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(grow)
            print(sess.run(halved))
        """))
    assert "@tf.function(input_signature=[])\ndef grow():" in out
    assert "\ndef compute_halved():" in out and "@tf.function(input_signature=[])\ndef compute_halved" not in out


# Generated lines and statements the rewrite changed, as black lays them out, on programs
# of the shapes where they were not: a summaries helper with long scope names, and an
# operation black put in parentheses of its own whose filtered collection became a list.
SUMMARY_SCOPES = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    with tf.name_scope("encoder_recurrent_weights_of_the_first_layer"):
        with tf.name_scope("statistics_kept_for_every_step"):
            weights = tf.Variable(tf.ones([3, 2]), name="weights")
            tf.summary.scalar("mean_of_all_weights", tf.reduce_mean(weights))
    inputs = tf.placeholder(tf.float32, [None, 3])
    loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights)))
    fit = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        writer = tf.summary.FileWriter("/tmp/summaries-layout")
        for step in range(2):
            _, summary = sess.run([fit, merged], {inputs: np.ones((2, 3), np.float32)})
            writer.add_summary(summary, step)
    """)

PENALTY_IN_PARENTHESES = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    features = tf.placeholder(tf.float32, [None, 4])
    first_projection_kernel = tf.Variable(tf.ones([4, 3]) * 0.1, name="first_projection_kernel")
    second_projection_kernel = tf.Variable(tf.ones([3, 1]) * 0.1, name="second_projection_kernel")
    output_bias = tf.Variable(tf.zeros([1]), name="output_bias")
    hidden = tf.matmul(features, first_projection_kernel)
    scores = tf.matmul(hidden, second_projection_kernel) + output_bias
    penalty_weight = 0.01
    penalty = (
        tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "bias" not in v.name])
        * penalty_weight
    )
    loss = tf.reduce_mean(tf.square(scores)) + penalty
    fit = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(2):
            _, now = sess.run([fit, loss], {features: np.ones((2, 4), np.float32)})
            print(step, now)
    """)


SHORTER_WITHOUT_SELF = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf


    class Regressor:
        def __init__(self, width):
            self.inputs = tf.placeholder(tf.float32, [None, 4], name="inputs")
            self.targets = tf.placeholder(tf.float32, [None, 1], name="targets")
            self.hidden_layer_output = tf.layers.dense(self.inputs, width, activation=tf.nn.relu, name="hidden")
            self.prediction_of_model = tf.layers.dense(self.hidden_layer_output, 1, name="head")
            self.sq_loss = tf.reduce_mean(tf.square(self.prediction_of_model - self.targets))
            self.train_operation = tf.train.GradientDescentOptimizer(0.05).minimize(self.sq_loss)


    model = Regressor(8)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            feed = {model.inputs: np.ones((2, 4), np.float32), model.targets: np.zeros((2, 1), np.float32)}
            _, now = sess.run([model.train_operation, model.sq_loss], feed)
            print(step, now)
    """)


@pytest.mark.parametrize("source", [SUMMARY_SCOPES, PENALTY_IN_PARENTHESES, SHORTER_WITHOUT_SELF],
                         ids=["summary_helper", "penalty", "shorter_without_self"])
def test_what_the_rewrite_wrote_black_leaves_as_it_is(source):
    out = _rewrite(_black(source))
    assert out is not None and "GradientTape" in out
    assert _rewritten_lines_black_changes(source) == []
    too_long = [line for line in out.splitlines() if len(line) > 88]
    assert all(re.fullmatch(r'\s*(name=)?"[^"]*",?', line) for line in too_long)   # (a string black cannot split)
