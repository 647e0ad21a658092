"""Model classes: `__init__` builds the graph into attributes, other code runs
it through `sess.run(model.<attr>, feed_dict={model.<placeholder>: ...})`.
The meaning of the rewrite is proven by the verifier through the
`model_class_*` fixtures (tests/test_restructure_fixtures.py); these tests pin
the shapes it accepts and refuses, and where a refusal points."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.run.findings import code_matches

from tf1gradfix.emit.restructure import restructure

PROGRAM = '''\
import numpy as np
import tensorflow as tf


class Model{bases}:
    def __init__(self, n):
{init}


def train(model, sess):
{train}


model = Model(3)
{session}{main}
'''
SESSION = "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
INIT = '''\
        self.x = tf.placeholder(tf.float32, [None, n])
        self.w = tf.Variable(tf.zeros([n, 1]), name="w")
        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))
        self.train_op = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)'''
TRAIN = '''\
    for _ in range(3):
        print(sess.run([model.train_op, model.loss], feed_dict={model.x: np.ones((2, 3))})[1])'''
MAIN = "    train(model, sess)"


def rewrite(init=INIT, train=TRAIN, main=MAIN, bases="", session=SESSION):
    source = PROGRAM.format(init=init, train=train, main=main, bases=bases, session=session)
    return restructure(cst.parse_module(source), "original.py"), source


def refusal(**parts) -> tuple[int, str]:
    shaped, source = rewrite(**parts)
    assert shaped.new_module is None
    (line, _, code, message, safety), = shaped.diagnostics
    assert safety == "manual" and (code == "TFG904" or code_matches(code, ("TFG905",)))
    return line, message, source.splitlines()[line - 1]


def test_the_class_becomes_a_module_with_methods_and_the_session_goes():
    shaped, _ = rewrite()
    code = shaped.new_module.code
    assert "class Model(tf.Module):" in code
    assert "def train(model):" in code and "train(model)\n" in code
    assert "    def train_step(self, x):" in code
    assert "model.train_step(np.ones((2, 3))).numpy()" in code
    assert "self.w = tf.Variable(" in code and "sess" not in code
    compile(code, "rewritten.py", "exec")


def test_the_session_is_found_through_keywords_and_calls_of_calls():
    shaped, _ = rewrite(train="    report(session=sess, model=model)\n\n\ndef report(model, session):\n"
                              "    print(session.run(model.loss, {model.x: np.ones((1, 3))}))",
                        main="    train(model=model, sess=sess)")
    code = shaped.new_module.code
    assert "def report(model):" in code and "report(model=model)" in code
    assert "train(model=model)" in code and "sess" not in code and "session" not in code


def test_an_attribute_named_like_a_local_of_init_stays_apart_from_it():
    init = INIT.replace("self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))",
                        "hidden = tf.matmul(self.x, self.w)\n        self.hidden = tf.nn.relu(hidden)\n"
                        "        self.loss = tf.reduce_mean(tf.square(self.hidden - 1.0))")
    shaped, _ = rewrite(init=init, main="    train(model, sess)\n    print(sess.run(model.hidden, {model.x: np.ones((1, 3))}))")
    code = shaped.new_module.code
    assert "hidden = tf.matmul(x, self.w)\n" in code and "hidden_2 = tf.nn.relu(hidden)\n" in code
    assert "return hidden_2\n" in code
    compile(code, "rewritten.py", "exec")


def test_a_refusal_inside_init_names_its_line():
    line, message, text = refusal(init=INIT + "\n        self.u = tf.Variable(1.0, collections=['mine'])")
    assert "collections" in message and "self.u = tf.Variable" in text


@pytest.mark.parametrize("parts, expected, where", [
    (dict(train="    print(model.loss.shape)"), "used outside `sess.run`", "model.loss.shape"),
    (dict(train="    print(sess.run([model.loss, other.loss]))", main="    other = model\n    train(model, sess)"),
     "two instances", "other.loss"),
    (dict(main="    jobs = [train]\n    train(model, sess)"), "used other than by a call", "jobs = [train]"),
    (dict(main="    train(model, sess)\n    train(model, None)"), "called without the session", "train(model, None)"),
    (dict(bases="(Base)"), "base class of its own", "class Model(Base):"),
    (dict(init=INIT + "\n        self.finish()"), "does not set, used while the graph is built", "def __init__"),
    (dict(init=INIT + "\n        register(self)"), "other than to set or read an attribute", "def __init__"),
    (dict(init=INIT + "\n        for _ in range(2):\n            self.loss = self.loss * 2.0"), "used outside `sess.run`",
     "self.loss = self.loss * 2.0"),
])
def test_refused_with_the_line(parts, expected, where):
    if parts.get("bases") == "(Base)":
        parts["init"] = INIT
    if "self.finish()" in parts.get("init", ""):   # (a module function of that name is not the method)
        parts["train"] = TRAIN + "\n\n\ndef finish():\n    pass"
    line, message, text = refusal(**parts)
    assert expected in message
    assert where in text


BUILT_BY_METHODS = INIT.replace("        self.loss", "        self.build()\n\n    def build(self):\n        self.loss")


def test_methods_init_builds_the_graph_with_are_read_where_they_are_called():
    shaped, _ = rewrite(init=BUILT_BY_METHODS)
    code = shaped.new_module.code
    assert "def build" not in code and "self.build()" not in code
    assert "loss = tf.reduce_mean(tf.square(tf.matmul(x, self.w) - 1.0))" in code
    compile(code, "rewritten.py", "exec")


@pytest.mark.parametrize("init, main, expected", [
    (BUILT_BY_METHODS.replace("def build(self):", "def build(self, *scales):"), MAIN, "takes arguments"),
    (BUILT_BY_METHODS.replace("self.build()", "self.build()\n        self.build()"), MAIN, "called twice"),
    (BUILT_BY_METHODS, "    model.build()\n    train(model, sess)", "is used again"),
])
def test_methods_that_build_the_graph_are_refused_unless_plain(init, main, expected):
    shaped, _ = rewrite(init=init, main=main)
    assert shaped.new_module is None and expected in shaped.diagnostics[0][3]


def test_a_build_method_s_parameter_named_like_a_name_of_init_is_renamed_apart():
    init = BUILT_BY_METHODS.replace("def build(self):", "def build(self, n=1.0):").replace("- 1.0))", "- n))")
    shaped, _ = rewrite(init=init)
    code = shaped.new_module.code
    assert "self.w = tf.Variable(tf.zeros([n, 1])" in code and "self.n_2 = 1.0" in code and "- self.n_2))" in code
    compile(code, "rewritten.py", "exec")


def test_a_build_method_s_literal_defaults_are_bound_where_it_is_called():
    init = BUILT_BY_METHODS.replace("def build(self):", "def build(self, target=1.0):").replace("- 1.0))", "- target))")
    shaped, _ = rewrite(init=init)
    code = shaped.new_module.code
    assert "self.target = 1.0" in code and "- self.target))" in code and "def build" not in code
    compile(code, "rewritten.py", "exec")


BRANCHED = INIT.replace("        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))\n", """\
        self.wide = n > 2
        if not self.wide:
            self.loss = tf.reduce_mean(tf.abs(tf.matmul(self.x, self.w)))
        elif n == 3 and self.x is not None:
            self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))
        else:
            self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w)))
        if n < 3:
            return
""")


def test_the_branch_the_construction_takes_is_built_alone():
    shaped, _ = rewrite(init=BRANCHED)   # (`Model(3)`: n == 3)
    code = shaped.new_module.code
    assert "tf.square(tf.matmul(x, self.w) - 1.0)" in code and "tf.abs" not in code and "if " not in code.split("def train")[0]
    assert "self.wide = n > 2" in code and "return\n" not in code
    compile(code, "rewritten.py", "exec")


@pytest.mark.parametrize("main, expected", [
    ("    other = Model(4)\n    train(model, sess)", "`if n < 3:` in `Model` decides what the graph holds, and `Model` is made with `n=3` at line 26 but `n=4` at line 29"),
    ("    other = Model(int(np.sqrt(9)))\n    train(model, sess)", "passes `n` as `int(np.sqrt(9))` at line 29, known only when the program runs"),
])
def test_a_branch_on_a_setting_the_file_does_not_fix_is_refused(main, expected):
    shaped, _ = rewrite(init=BRANCHED, main=main)
    assert shaped.new_module is None
    assert any(d[0] == 16 and expected in d[3] for d in shaped.diagnostics), shaped.diagnostics


OWN_SESSION = INIT + "\n        self.sess = tf.Session()\n        self.sess.run(tf.global_variables_initializer())"


def test_a_session_the_instance_keeps_goes_with_its_runs():
    shaped, _ = rewrite(init=OWN_SESSION + "\n\n    def fit(self):\n        return self.sess.run(self.loss, {self.x: np.ones((1, 3))})",
                        train="    print(model.fit())", main="train(model, None)", session="")
    code = shaped.new_module.code
    assert "self.sess" not in code and "return self.compute_loss(np.ones((1, 3))).numpy()" in code


def test_a_session_the_instance_keeps_used_otherwise_is_refused():
    shaped, _ = rewrite(init=OWN_SESSION + "\n\n    def graph(self):\n        return self.sess.graph",
                        train="    print(model.graph())", main="train(model, None)", session="")
    assert shaped.new_module is None and "`self.sess` used outside" in shaped.diagnostics[0][3]


def test_a_parameter_named_like_the_session_is_not_the_session():
    shaped, _ = rewrite(train="    sess = 3\n    print(sess, sess.run)", main="    train(model, 0)")
    assert shaped.new_module is not None and "print(sess, sess.run)" in shaped.new_module.code


def test_a_graph_also_built_outside_the_class_is_refused():
    line, message, text = refusal(main="    bias = tf.Variable(0.0)\n    train(model, sess)")
    assert "outside model class" in message or "compound statement" in message


def test_step_methods_convert_fed_values_with_what_the_class_definition_can_read():
    """A dimension `__init__` knows is None in the input signature (the dtype converts the
    fed value as TF1's feed did), and the step methods name the instance `self`, which
    tf.function leaves out of the signature (an instance called `me` would be an input)."""
    shaped, _ = rewrite()
    signature = "    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])\n"
    assert signature + "    def train_step(self, x):" in shaped.new_module.code
    assert "ensure_shape" not in shaped.new_module.code   # (a matmul needs no static width)
    source = PROGRAM.format(init=INIT, train=TRAIN, main=MAIN, bases="", session=SESSION).replace("self", "me")
    code = restructure(cst.parse_module(source), "original.py").new_module.code
    assert signature + "    def train_step(self, x):" in code and "me.w = tf.Variable" in code


def test_a_width_a_layer_reads_is_restored_in_the_step_method():
    init = INIT.replace("        self.loss", "        out = tf.layers.dense(self.x, 1, name='out')\n        self.loss").replace(
        "tf.matmul(self.x, self.w)", "out + tf.reduce_sum(self.w)")
    code = rewrite(init=init)[0].new_module.code
    assert "        x = tf.ensure_shape(x, [None, self.n])\n" in code and "        self.n = n\n" in code


def test_a_dtype_only_init_knows_is_refused():
    line, message, text = refusal(init=INIT.replace("tf.float32", "self.kind").replace(
        "        self.x =", "        self.kind = tf.float32\n        self.x ="))
    assert "dtype of placeholder `x`" in message and "self.kind" in text


UNBUILT = INIT + '''

    def old_update(self):
        return tf.contrib.layers.optimize_loss(self.loss, None, 0.1, "SGD")

    def deeper(self):
        for k in range(2):
            self.extra = tf.Variable(tf.zeros([1]), name="extra_%d" % k)'''


def test_build_methods_nothing_runs_are_dropped_with_a_note():
    shaped, _ = rewrite(init=UNBUILT)
    code = shaped.new_module.code
    assert "old_update" not in code and "deeper" not in code and "contrib" not in code
    notes = [(d[0], d[2], d[3]) for d in shaped.diagnostics if d[2] == "TFG208"]
    assert [n[2].split("`")[1] for n in notes] == ["old_update", "deeper"]


@pytest.mark.parametrize("train", [
    TRAIN + "\n    model.old_update()",
    TRAIN + "\n    getattr(model, \"old_update\")",
    TRAIN + "\n    print(getattr(model, \"old_\" + \"update\"))",   # (a name known when it runs: any method)
])
def test_a_method_the_program_names_is_not_dropped(train):
    shaped, _ = rewrite(init=UNBUILT, train=train)
    assert shaped.new_module is None or "old_update" in shaped.new_module.code
    assert not any(d[2] == "TFG208" and "old_update" in d[3] for d in shaped.diagnostics)


BRANCH_ON_SETTING = INIT.replace("self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))", """\
if n > 2:
            self.loss = self.square_loss()
        else:
            self.loss = self.labelled_loss()""") + '''

    def square_loss(self):
        return tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))

    def labelled_loss(self):
        return tf.reduce_mean(tf.abs(tf.matmul(self.x, self.w) - self.labels))'''


def test_what_a_branch_decided_against_reads_and_calls_does_not_count():
    """`self.labels` is never set: TF1 never builds the branch that reads it."""
    shaped, _ = rewrite(init=BRANCH_ON_SETTING)
    code = shaped.new_module.code
    assert "labelled_loss" not in code and "labels" not in code and "square_loss" not in code
    assert "loss = tf.reduce_mean(tf.square(tf.matmul(x, self.w) - 1.0))" in code
    shaped, _ = rewrite(init=BRANCH_ON_SETTING.replace("if n > 2:", "if n < 2:"))
    assert shaped.new_module is None and "`self.labels`, a method or an attribute" in shaped.diagnostics[0][3]


SHADOWING = INIT.replace("        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))", """\
        h = self.x * 2.0
        with tf.name_scope("net"):
            self.out = self.forward()
        self.loss = tf.reduce_mean(tf.square(self.out - tf.reduce_sum(h)))""") + '''

    def forward(self):
        h = tf.matmul(self.x, self.w)
        return tf.nn.tanh(h)'''


def test_an_inlined_method_s_local_read_after_its_call_inside_a_with_is_renamed_apart():
    shaped, _ = rewrite(init=SHADOWING)
    code = shaped.new_module.code
    assert "h_2 = tf.matmul(x, self.w)\n" in code and "out = tf.nn.tanh(h_2)\n" in code
    assert "h = x * 2.0\n" in code and "tf.reduce_sum(h)" in code


def test_a_return_inside_a_with_ends_the_build():
    init = INIT.replace("        self.train_op", "        with tf.name_scope(\"head\"):\n            if n > 2:\n"
                                                  "                return\n        self.train_op")
    shaped, _ = rewrite(init=init, train="    for _ in range(3):\n        print(sess.run(model.loss, feed_dict={model.x: np.ones((2, 3))}))")
    code = shaped.new_module.code
    assert "optimizer" not in code and "return\n" not in code.split("def compute_loss")[0]


NESTED = INIT.replace("        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w) - 1.0))", """\
        self.out = self.forward()
        self.loss = tf.reduce_mean(tf.square(self.out - 1.0))""") + '''

    def forward(self):
        h = tf.matmul(self.x, self.w)
        s = self.shortcut()
        return h + s

    def shortcut(self):
        h = tf.reduce_sum(self.x, axis=1, keepdims=True)
        return tf.nn.tanh(h)'''


def test_a_method_s_local_its_caller_returns_after_a_nested_call_is_renamed_apart():
    shaped, _ = rewrite(init=NESTED)
    code = shaped.new_module.code
    assert "h = tf.matmul(x, self.w)\n" in code and "h_2 = tf.reduce_sum(x, axis=1, keepdims=True)\n" in code
    assert "s = tf.nn.tanh(h_2)\n" in code and "out = h + s\n" in code


def test_an_optimizer_whose_rate_a_step_sets_is_an_attribute():
    """`optimizer.learning_rate = rate` in a step method reads the optimizer `__init__` made."""
    init = INIT.replace("        self.train_op = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)", """\
        self.rate = tf.Variable(0.1, trainable=False, name="rate")
        self.step = tf.Variable(0, trainable=False, name="step")
        self.train_op = self.update()

    def update(self):
        rate = tf.train.exponential_decay(self.rate, self.step, 2, 0.5, staircase=True)
        optimizer = tf.train.GradientDescentOptimizer(rate)
        grads, variables = zip(*optimizer.compute_gradients(self.loss))
        return optimizer.apply_gradients(zip(grads, variables))""")
    code = rewrite(init=init)[0].new_module.code
    assert "self.optimizer = tf.keras.optimizers.SGD(" in code and "self.optimizer.learning_rate = rate" in code
    compile(code, "rewritten.py", "exec")
