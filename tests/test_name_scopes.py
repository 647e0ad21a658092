"""Adjacent Keras name scopes the rewrite writes around scoped layer calls are one block
(tf1gradfix/emit/name_scopes.py); the fixture layers_per_variable_scope proves the program."""

from __future__ import annotations

from tf1gradfix.emit.name_scopes import joined

TRUNK = 'with tf.keras.name_scope("trunk"):\n    a = dense(x)'
TRUNK_AGAIN = 'with tf.keras.name_scope("trunk"):\n    a = dense_1(a)'
BRANCH = 'with tf.keras.name_scope("branch"):\n    b = dense_2(a)'


def test_the_same_scope_twice_in_a_row_is_one_block():
    assert joined([TRUNK, TRUNK_AGAIN, BRANCH], "tf") == [
        'with tf.keras.name_scope("trunk"):\n    a = dense(x)\n    a = dense_1(a)', BRANCH]


def test_scopes_apart_or_other_statements_stay_as_they_are():
    between = "a = tf.nn.relu(a)"
    assert joined([TRUNK, between, TRUNK_AGAIN], "tf") == [TRUNK, between, TRUNK_AGAIN]
    assert joined([TRUNK, BRANCH, TRUNK_AGAIN], "tf") == [TRUNK, BRANCH, TRUNK_AGAIN]
    other_alias = TRUNK.replace("tf.", "tensorflow.")
    assert joined([other_alias, other_alias], "tf") == [other_alias, other_alias]
