"""An optimizer made after runs that only read, then the initializer run again
(constructs/reinitialized.py): taken in where no variable could change; refused where
one would be drawn anew or a run changed one. The fixture optimizer_made_between_runs
proves a whole program."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

HEAD = """import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(INITIAL)
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
sess = tf.Session()
sess.run(tf.global_variables_initializer())
"""
BEFORE = 'print("before", sess.run(loss, {x: np.ones((3, 2))}))\n'
AFTER = """train = tf.train.AdamOptimizer(0.1).minimize(loss)
sess.run(tf.global_variables_initializer())
for _ in range(3):
    sess.run(train, {x: np.ones((3, 2))})
print("after", sess.run(loss, {x: np.ones((3, 2))}))
"""


def rewrite(initial: str = "tf.zeros([2, 1])", before: str = BEFORE, after: str = AFTER):
    result = restructure(cst.parse_module(HEAD.replace("INITIAL", initial) + before + after), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


def test_an_optimizer_made_after_reads_is_made_where_it_is_and_the_second_initializer_goes():
    code, messages = rewrite()
    assert code is not None, messages
    assert code.index('print("before"') < code.index("optimizer = tf.keras.optimizers.Adam(")
    assert "global_variables_initializer" not in code


def test_a_random_initial_value_drawn_again_is_refused_by_its_variable():
    code, messages = rewrite("tf.random_normal([2, 1], seed=3)")
    assert code is None
    assert any("initialized again" in m and "`w` has a random initial value" in m for m in messages), messages


def test_a_run_that_changed_a_variable_before_the_optimizer_is_refused():
    code, messages = rewrite(before='sess.run(tf.assign(w, w + 1.0))\n' + BEFORE)
    assert code is None and any("graph built after the graph already ran" in m for m in messages), messages


def test_an_initializer_run_as_a_method_after_training_is_an_initializer_run_again():
    after = AFTER.replace("sess.run(tf.global_variables_initializer())", "tf.global_variables_initializer().run(session=sess)")
    code, messages = rewrite(before="", after=after.replace('print("after"', 'tf.global_variables_initializer().run(session=sess)\nprint("after"'))
    assert code is None and any("initialized again" in m for m in messages), messages


BIAS = """b = tf.Variable(tf.zeros([1]))
scored = tf.matmul(x, w) + b
sess.run(tf.global_variables_initializer())
print("scored", sess.run(scored, {x: np.ones((3, 2))}))
"""


def test_a_variable_made_after_reads_is_made_where_it_is_and_the_second_initializer_goes():
    code, messages = rewrite(after=BIAS)
    assert code is not None, messages
    assert code.index('print("before"') < code.index("b = tf.Variable(tf.zeros([1]))") < code.index('print("scored"')
    assert "global_variables_initializer" not in code


def test_a_variable_made_after_a_run_that_changed_one_is_refused():
    code, messages = rewrite(before="sess.run(tf.assign(w, w + 1.0))\n" + BEFORE, after=BIAS)
    assert code is None and any("graph built after the graph already ran" in m for m in messages), messages


def test_an_initializer_run_again_after_a_restore_is_refused():
    saved = "saver = tf.train.Saver()\nsaver.restore(sess, 'model.ckpt')\n"
    code, messages = rewrite(before=saved + BEFORE, after="sess.run(tf.global_variables_initializer())\n" + BEFORE)
    assert code is None and any("initialized again" in m for m in messages), messages


def test_an_initializer_run_again_after_reads_only_goes_unless_a_value_is_random():
    code, messages = rewrite(after="sess.run(tf.global_variables_initializer())\n" + BEFORE)
    assert code is not None and "global_variables_initializer" not in code, messages
    code, messages = rewrite("tf.random_normal([2, 1], seed=3)", after="sess.run(tf.global_variables_initializer())\n" + BEFORE)
    assert code is None and any("`w` has a random initial value" in m for m in messages), messages


def test_a_local_initializer_beside_the_global_one_initializes_nothing_here():
    """Run after the global one and again after training, it is no initializer run again,
    even with a random initial value (which a global one run again would draw anew)."""
    for form in ("sess.run(tf.local_variables_initializer())\n", "tf.local_variables_initializer().run(session=sess)\n",
                 "sess.run(tf.initializers.local_variables())\n"):
        trained = AFTER.replace("AdamOptimizer", "GradientDescentOptimizer").replace(
            "sess.run(tf.global_variables_initializer())\n", "")   # (no slots: made after the runs as it is)
        code, messages = rewrite("tf.random_normal([2, 1], seed=3)", before=form + BEFORE, after=trained + form + BEFORE)
        assert code is not None, (form, messages)
        assert "local_variables" not in code and "variables_initializer" not in code


def test_initializers_grouped_or_listed_are_one_initializer_run():
    head = HEAD.replace("sess.run(tf.global_variables_initializer())\n", "")
    for run in ("sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])\n",
                "sess.run(tf.group(tf.global_variables_initializer(), tf.local_variables_initializer()))\n",
                "init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())\nsess.run(init)\n"):
        result = restructure(cst.parse_module(head.replace("INITIAL", "tf.zeros([2, 1])") + run + BEFORE), "input.py")
        assert result.new_module is not None and "variables_initializer" not in result.new_module.code, \
            (run, [d[3] for d in result.diagnostics])


# Runs of variables' own initializers (`w.initializer`, `tf.variables_initializer([...])`):
# a variable's first values, where TF2 makes it; one made after runs that changed others waits
# for its own (model/sites.py `_first_values`, `Pending.take`). The fixture
# variables_initialized_by_their_own proves a whole program.
TRAINED = """train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
for _ in range(3):
    sess.run(train, {x: np.ones((3, 2))})
"""
LATER = """best = tf.Variable(INIT_OF_BEST)
keep = tf.assign(best, tf.minimum(best, loss))
sess.run(RUN_OF_BEST)
now, kept = sess.run([loss, keep], {x: np.ones((3, 2))})
print("kept", now, kept)
"""


def later(initial: str = "5.0", run: str = "tf.variables_initializer([best])") -> str:
    return LATER.replace("INIT_OF_BEST", initial).replace("RUN_OF_BEST", run)


def test_a_variable_made_after_training_is_given_its_first_value_by_its_own_initializer():
    for run in ("tf.variables_initializer([best])", "best.initializer", "[best.initializer]"):
        code, messages = rewrite(before="", after=TRAINED + later(run=run))
        assert code is not None, (run, messages)
        assert code.index("best = tf.Variable(5.0)") < code.index('print("kept"')
        assert "initializer" not in code, run


def test_a_variable_made_after_training_and_every_variable_initialized_again_is_refused():
    code, messages = rewrite(before="", after=TRAINED + later(run="tf.global_variables_initializer()"))
    assert code is None and messages.count("graph built after the graph already ran") == 1, messages


def test_a_variable_made_after_training_with_a_random_initial_value_is_refused():
    code, messages = rewrite(before="", after=TRAINED + later(initial="tf.random_normal([], seed=2)"))
    assert code is None and messages.count("graph built after the graph already ran") == 1, messages


def test_a_trained_variable_given_its_initial_value_again_by_its_own_initializer_is_refused():
    code, messages = rewrite(before="", after=TRAINED + "sess.run(w.initializer)\n" + BEFORE)
    assert code is None and any("initialized again" in m for m in messages), messages


def test_the_variables_own_initializers_in_place_of_the_global_one_go():
    head_runs = "sess.run(tf.global_variables_initializer())\n"
    source = HEAD.replace("INITIAL", "tf.zeros([2, 1])").replace(head_runs, "sess.run(w.initializer)\n") + BEFORE
    result = restructure(cst.parse_module(source), "input.py")
    assert result.new_module is not None, result.diagnostics
    assert "initializer" not in result.new_module.code
