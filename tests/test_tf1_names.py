"""TF1's names (tf1gradfix/model/tf1_names.py and where the model asks for them), against
names measured from real TF1 graphs.

Every expected name below was measured by running the same calls under TF1 semantics in
the project's virtualenv (TensorFlow 2.21 with `tensorflow.compat.v1`,
`disable_v2_behavior()`, `TF_USE_LEGACY_KERAS=1` for `tf.layers`), each case in a fresh
`tf.Graph()`, printing `[v.name for v in tf.global_variables()]` (`:0` left out here).
"""

from __future__ import annotations

import re

import pytest

from tf1gradfix.model.tf1_names import GraphNames, VariableScopes, numbered
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter


def test_numbered():
    assert [numbered("dense", k) for k in range(3)] == ["dense", "dense_1", "dense_2"]


def test_unnamed_variables_in_name_and_variable_scopes():
    # a = tf.Variable(tf.ones([2])); b = tf.Variable(tf.ones([2]) / 10)
    # with tf.name_scope("s"): c = tf.Variable(1.0); d = tf.Variable(1.0)
    # with tf.variable_scope("vs"): e = tf.Variable(1.0)
    # f = tf.Variable(1.0, name="variable"); h = tf.Variable(1.0, name="Variable")
    # measured: Variable, Variable_1, s/Variable, s/Variable_1, vs/Variable, variable_2, Variable_3
    g = GraphNames()
    got = [g.unique("Variable"), g.unique("Variable")]
    scope = g.unique("s") + "/"
    got += [g.unique(scope + "Variable"), g.unique(scope + "Variable")]
    scope = g.unique("vs") + "/"
    got += [g.unique(scope + "Variable"), g.unique("variable"), g.unique("Variable")]
    assert got == ["Variable", "Variable_1", "s/Variable", "s/Variable_1", "vs/Variable", "variable_2", "Variable_3"]


def test_names_are_unique_ignoring_case():
    # with tf.name_scope("embedding"): E = tf.get_variable("Embedding", [3, 2])
    # measured: Embedding_1 (get_variable names at the top, its variable scope only)
    g = GraphNames()
    g.unique("embedding")
    assert g.unique("Embedding") == "Embedding_1"
    assert g.taken("EMBEDDING_1") and not g.taken("embedding_2")


def test_a_numbered_name_asked_for_is_skipped():
    # TF1's Graph.unique_name marks `name_1` in use when it gives it, so asking for
    # `w_1` and then `w` twice gives w_1, w, w_2
    g = GraphNames()
    assert [g.unique("w_1"), g.unique("w"), g.unique("w")] == ["w_1", "w", "w_2"]


def test_layers_are_numbered_in_each_variable_scope():
    # with tf.variable_scope("a"): dense; dense     with tf.variable_scope("b"): dense
    # dense (at the top)     with tf.variable_scope("c"): dense(name="Dense"); dense
    # measured: a/dense, a/dense_1, b/dense, dense, c/Dense, c/dense (its kernel c/dense/kernel_1)
    s = VariableScopes()
    got = []
    for scope, layers in (("a", ["dense", "dense"]), ("b", ["dense"]), ("", ["dense"]), ("c", ["Dense", "dense"])):
        if scope:
            s.open(scope)
        for base in layers:
            full = s.unique(scope + "/" if scope else "", base)
            s.close(full)
            got.append(full)
        if scope:
            s.close(scope)
    assert got == ["a/dense", "a/dense_1", "b/dense", "dense", "c/Dense", "c/dense"]


def test_a_variable_scope_entered_again_counts_afresh():
    # with tf.variable_scope("a"): dense     with tf.variable_scope("a"): dense
    # measured: TF1 names the second `a/dense` too (and fails: a/dense/kernel already exists)
    s = VariableScopes()
    firsts = []
    for _ in range(2):
        s.open("a")
        firsts.append(s.unique("a/", "dense"))
        s.close(firsts[-1])
        s.close("a")
    assert firsts == ["a/dense", "a/dense"]


def _names(body: str) -> list[str]:
    source = ("import numpy as np\nimport tensorflow as tf\n" + body +
              "loss = tf.add_n([tf.reduce_sum(v) for v in tf.trainable_variables()])\n"
              "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
              "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
              "    print(sess.run([train_op, loss])[1])\n")
    result = process_source("f.py", source.encode(), CodeFilter())
    text = (result.new_source or b"").decode()
    assert "Session" not in text, [f.message for f in result.findings if f.code.startswith("TFG9")]
    return re.findall(r'name="([^"]+)"', text)


def test_the_rewrite_writes_the_names_tf1_gives():
    # measured as in test_unnamed_variables_in_name_and_variable_scopes and test_names_are_unique_ignoring_case
    names = _names('with tf.name_scope("embedding"):\n'
                   '    e = tf.get_variable("Embedding", [3, 2])\n'
                   '    f = tf.Variable(tf.ones([2]))\n'
                   'g = tf.Variable(1.0)\n'
                   'h = tf.Variable(1.0, name="variable")\n'
                   'k = tf.Variable(1.0)\n'
                   'with tf.variable_scope("vs"):\n'
                   '    m = tf.Variable(1.0)\n')
    # `g` is TF1's `Variable` and stays unnamed: TF2 names it `Variable`, the first unnamed one
    assert names == ["Embedding_1", "embedding/Variable", "variable_1", "Variable_2", "vs/Variable"]


@pytest.mark.parametrize("body", [
    # two statements enter one name scope: TF1 numbers the second (measured: s/Variable, s_1/Variable)
    'with tf.name_scope("s"):\n    a = tf.Variable(1.0)\nwith tf.name_scope("s"):\n    b = tf.Variable(2.0)\n',
])
def test_a_name_scope_entered_twice_is_numbered(body):
    assert _names(body) == ["s/Variable", "s_1/Variable"]


def test_a_variable_named_like_a_later_scope_takes_the_name_first():
    # w = tf.Variable(1.0, name="model"); with tf.name_scope("model"): v = tf.Variable(2.0)
    # measured: model, model_1/Variable (the scope is numbered where TF1 enters it)
    assert _names('w = tf.Variable(1.0, name="model")\nwith tf.name_scope("model"):\n    v = tf.Variable(2.0)\n') \
        == ["model", "model_1/Variable"]
