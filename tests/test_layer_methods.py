"""Layer methods of model classes (tf1gradfix/constructs/layer_methods.py): a method
`__init__` calls with arguments and for its result. Their meaning is proven by the
verifier through fixtures/rewrite/model_class_layer_methods and
model_class_result_methods; these tests pin the text where a mistake would be
quiet (the order of listed variables, the names read back as attributes) and the
refusals a real file meets first."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

PROGRAM = '''\
import numpy as np
import tensorflow as tf

SCALE = 2.0


class Net:
    def __init__(self, width):
        self.width = width
        self.x = tf.placeholder(tf.float32, [None, 3])
{init}
        self.loss = tf.reduce_mean(tf.square(self.main))
        self.train_op = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)

    def _head(self, inputs, scope, units):
        with tf.variable_scope(scope):
            w = tf.get_variable("w", [self.width, units], initializer=tf.ones_initializer())
            return tf.matmul(inputs, w) * SCALE
{methods}

net = Net(3)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        print(sess.run([net.train_op, net.loss], feed_dict={{net.x: np.ones((2, 3))}})[1])
{host}'''
TWO_HEADS = '''\
        self.main = self._head(self.x, "main", 3)
        self.extra = tf.Variable(tf.zeros([3]), name="main_extra")
        self.aside = self._head(self.x, "main_aside", 3)'''


def rewrite(init=TWO_HEADS, methods="", host=""):
    shaped = restructure(cst.parse_module(PROGRAM.format(init=init, methods=methods, host=host)), "net.py")
    return shaped


def test_a_scoped_collection_lists_each_scope_in_the_order_tf1_made_the_variables():
    shaped = rewrite(TWO_HEADS + '\n        listed = tf.global_variables("main")'
                     '\n        self.sync = [tf.assign(v, tf.zeros_like(v)) for v in listed]',
                     host="    sess.run(net.sync)\n")
    code = shaped.new_module.code
    listed = code[code.index("def sync"):]
    assert listed.index('self.made["main/w"]') < listed.index("self.extra") < listed.index('self.made["main_aside/w"]')
    assert code.index('self._head_variables("main", 3)') < code.index("self.extra = ") \
        < code.index('self._head_variables("main_aside", 3)')


def test_each_call_makes_its_scope_in_init_and_the_method_reads_it_back():
    code = rewrite().new_module.code
    assert 'self.made[f"{scope}/w"] = tf.Variable(' in code and "[self.width, units]" in code
    assert 'w = self.made[f"{scope}/w"]' in code and "tf.variable_scope" not in code
    assert "* SCALE" in code   # (a global the method reads stays a global)


def test_a_method_parameter_named_like_an_attribute_stays_the_parameter():
    methods = '''
    def _scaled(self, x):
        return x * self.width'''
    init = '''\
        self.main = self._scaled(self._head(self.x, "main", 3))'''
    code = rewrite(init, methods).new_module.code
    assert "return x * self.width" in code


def test_a_layer_method_called_again_by_host_code_is_refused():
    shaped = rewrite(host='    print(sess.run(net._head(net.x, "again", 3), {net.x: np.ones((1, 3))}))\n')
    assert shaped.new_module is None
    assert any("`_head` builds the graph in `__init__` and is used again" in d[3] for d in shaped.diagnostics)


def test_a_builder_called_in_a_loop_of_init_is_refused_not_dropped():
    init = '''\
        heads = []
        for scope in ["a", "b"]:
            heads.append(self._head(self.x, scope, 3))
        self.main = heads[0] + heads[1]'''
    shaped = rewrite(init)
    assert shaped.new_module is None
    assert any("graph built inside a compound statement (`_head`)" in d[3] for d in shaped.diagnostics)


def test_a_method_run_for_what_it_adds_to_the_graph_is_refused_not_kept_as_host_code():
    methods = '''
    def _log(self, value, tag):
        tf.summary.scalar(tag, value * self.width)'''
    shaped = rewrite(TWO_HEADS + '\n        self._log(self.main, "main")', methods)
    assert shaped.new_module is None
    assert any("graph statement `_log(...)` with no result" in d[3] for d in shaped.diagnostics)


def test_a_method_making_graph_values_of_its_own_is_refused_for_them_not_as_graph_outside_the_class():
    methods = '''
    def _plain(self, inputs, scope):
        with tf.variable_scope(scope):
            w = tf.Variable(tf.ones([3, 3]), name="w")
            return tf.matmul(inputs, w)'''
    shaped = rewrite(TWO_HEADS + '\n        self.other = self._plain(self.x, "plain")', methods)
    assert shaped.new_module is None
    messages = [d[3] for d in shaped.diagnostics]
    assert any("`_plain` creates weights (`tf.Variable`) when called" in m for m in messages), messages
    assert not any("outside model class" in m for m in messages)
