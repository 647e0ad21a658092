"""How real TF1 scripts are written: session options, graph resets at the top,
`tf.get_variable` with its defaults spelled out, constant-only graphs, scripts
in sections. Each mechanism's rewrite is proven by a fixture (fixtures/rewrite/);
here, without TensorFlow, the cases around it: what is accepted, what is refused
and why.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from tf1gradfix.emit.restructure import restructure


def _shaped(source: str):
    return restructure(cst.parse_module(textwrap.dedent(source)), "input.py")


def _refusal(source: str) -> str:
    shaped = _shaped(source)
    assert shaped.new_module is None and shaped.diagnostics, shaped.diagnostics
    return shaped.diagnostics[0][3]


GRAPH = """\
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
y = tf.matmul(x, w)
"""


def test_inline_session_options_are_dropped_with_a_note():
    shaped = _shaped(GRAPH + """\
sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=True))
sess.run(tf.global_variables_initializer())
print(sess.run(y, {x: [[1.0, 2.0]]}))
""")
    assert shaped.new_module is not None
    code = shaped.new_module.code
    assert "ConfigProto" not in code and "Session" not in code
    assert [d[2] for d in shaped.diagnostics] == ["TFG103"] and "config=" in shaped.diagnostics[0][3]


def test_session_options_in_a_main_guard_go_with_the_session():
    shaped = _shaped(GRAPH + """\
if __name__ == "__main__":
    options = tf.ConfigProto()
    options.gpu_options.allow_growth = True
    with tf.Session(config=options) as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(y, {x: [[1.0, 2.0]]}))
""")
    assert shaped.new_module is not None
    assert "options" not in shaped.new_module.code


def test_session_options_read_elsewhere_are_refused():
    message = _refusal(GRAPH + """\
options = tf.ConfigProto()
print(options)
with tf.Session(config=options) as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(y, {x: [[1.0, 2.0]]}))
""")
    assert "other than `config=`" in message


def test_a_session_target_is_refused():
    message = _refusal(GRAPH + """\
with tf.Session("grpc://localhost:2222") as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(y, {x: [[1.0, 2.0]]}))
""")
    assert "session created with arguments" in message


RUN = """\
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(y, {x: [[1.0, 2.0]]}))
"""


def test_a_graph_reset_before_any_graph_code_is_dropped():
    shaped = _shaped(GRAPH.replace("import tensorflow as tf\n", "import tensorflow as tf\ntf.reset_default_graph()\n") + RUN)
    assert shaped.new_module is not None and "reset_default_graph" not in shaped.new_module.code


def test_a_graph_reset_after_graph_code_is_refused():
    message = _refusal(GRAPH + "tf.reset_default_graph()\n" + RUN)
    assert "after graph code" in message


def test_the_framework_import_stays_while_something_else_reads_it():
    source = "from tensorflow.python.framework import ops\nops.reset_default_graph()\n" + GRAPH + \
        "print(ops.get_default_graph)\n" + RUN
    assert "import ops" in _shaped(source).new_module.code
    alone = _shaped("from tensorflow.python.framework import ops\nops.reset_default_graph()\n" + GRAPH + RUN)
    assert "ops" not in alone.new_module.code


def test_default_valued_get_variable_arguments_are_as_if_left_out():
    shaped = _shaped(GRAPH + 'k = tf.get_variable("k", [2], regularizer=None, partitioner=None, custom_getter=None)\n'
                     + RUN.replace("y, {", "y + k, {"))
    assert shaped.new_module is not None and "regularizer" not in shaped.new_module.code


def test_a_non_default_variable_argument_is_still_refused():
    message = _refusal(GRAPH + 'k = tf.get_variable("k", [2], regularizer=tf.nn.l2_loss)\n'
                       + RUN.replace("y, {", "y + k, {"))
    assert "regularizer" in message


def test_tf_variable_keeps_only_arguments_tf2_takes():
    kept = _shaped(GRAPH.replace('name="w")', 'name="w", validate_shape=True)') + RUN)
    assert "validate_shape=True" in kept.new_module.code
    assert "collections" in _refusal(GRAPH.replace('name="w")', 'name="w", collections=None)') + RUN)


def test_an_integer_get_variable_without_initializer_starts_at_zeros():
    shaped = _shaped(GRAPH + 'n = tf.get_variable("n", [], dtype=tf.int64, trainable=False)\n'
                     + RUN.replace("print(sess.run(y, {x: [[1.0, 2.0]]}))", "print(sess.run(n))"))
    assert "Zeros()([], dtype=tf.int64)" in shaped.new_module.code


def test_a_graph_of_constants_only_is_restructured():
    shaped = _shaped('import tensorflow as tf\nh = tf.constant("a")\nw = tf.constant("b")\n'
                     'with tf.Session() as sess:\n    print(sess.run(h + w))\n')
    assert shaped.new_module is not None and "Session" not in shaped.new_module.code


def test_a_constant_program_the_rewrite_cannot_follow_is_refused_not_renamed():
    # Renamed alone (`tf.random_normal` -> `tf.random.normal`) it would still open a
    # session, which TF2 lacks: refused at the construct's line (an op seed, whose
    # numbers TF2 does not draw), the file left intact.
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter, code_matches

    for opening in ("with tf.Session() as s:\n    print(s.run(noise))\n",
                    "s = tf.InteractiveSession()\nprint(noise.eval())\n"):
        source = "import tensorflow as tf\nnoise = tf.random_normal([2], seed=3)\n" + opening
        result = process_source("input.py", source.encode(), CodeFilter(), fix=True)
        assert result.new_source is None, opening
        refusals = [(f.line, f.code) for f in result.findings if code_matches(f.code, ("TFG905",))]
        assert refusals == [(2, "TFG910")], result.findings
    assert _refusal("import tensorflow as tf\nsess = tf.Session()\nsess.run(0)\n"
                    "with tf.Session() as s2:\n    s2.run(1)\n") == "more than one session"


def test_a_session_without_a_graph_it_can_follow_gets_a_reason():
    message = _refusal("import tensorflow as tf\nq = tf.FIFOQueue(3, [tf.float32])\nitem = q.dequeue()\n"
                       "with tf.Session() as sess:\n    print(sess.run(item))\n")
    assert "tf.FIFOQueue" in message and "queues" in message


SUMMARIES = """\
import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]), name="w")
loss = tf.reduce_mean(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
"""


def test_a_run_of_a_summary_written_at_once_becomes_the_writing_function():
    shaped = _shaped(SUMMARIES + """\
a = tf.summary.scalar("loss", loss)
b = tf.summary.histogram("w", w)
both = tf.summary.merge([b, a])
sess = tf.Session()
writer = tf.summary.FileWriter("logs")
sess.run(tf.global_variables_initializer())
for i in range(3):
    writer.add_summary(sess.run(both, {x: [[1.0, 2.0]]}), global_step=i)
    sess.run(train, {x: [[1.0, 2.0]]})
writer.flush()
""")
    code = shaped.new_module.code
    joined = "".join(code.split())
    assert "write_summaries(writer,[g.numpy()forgincompute_both(" in joined and "global_step=i)" in joined
    # (TF1 logs the histogram under `w_1`: the variable `w` holds the name `w`, constructs/summaries.py)
    assert 'tf.summary.histogram("w_1", summary[0], step=global_step)' in code
    assert 'tf.summary.scalar("loss", summary[1], step=global_step)' in code
    assert 'writer = tf.summary.create_file_writer("logs")' in code and "both = [tf.identity(w), loss]" in code


def test_a_summary_writer_used_otherwise_is_refused():
    message = _refusal(SUMMARIES + """\
tf.summary.scalar("loss", loss)
merged = tf.summary.merge_all()
with tf.Session() as sess:
    writer = tf.summary.FileWriter("logs", sess.graph)
    writer.reopen()
    sess.run(tf.global_variables_initializer())
    s, _ = sess.run([merged, train], {x: [[1.0, 2.0]]})
    writer.add_summary(s, 0)
""")
    assert "summary writer `writer` used other than" in message


def test_add_summary_of_something_else_is_refused():
    message = _refusal(SUMMARIES + """\
tf.summary.scalar("loss", loss)
merged = tf.summary.merge_all()
with tf.Session() as sess:
    writer = tf.summary.FileWriter("logs")
    sess.run(tf.global_variables_initializer())
    sess.run(train, {x: [[1.0, 2.0]]})
    writer.add_summary(made_by_hand, 0)
""")
    assert "not a fetched summary" in message


def test_summaries_merge_all_cannot_see_are_refused():
    # (a loop over a list literal of graph values is unrolled: constructs/summary_loops.py)
    loop = _refusal(SUMMARIES + 'for t in tf.trainable_variables():\n    tf.summary.histogram(t.op.name, t)\n'
                    'm = tf.summary.merge_all()\n'
                    'with tf.Session() as sess:\n    print(sess.run(m, {x: [[1.0, 2.0]]}))\n')
    assert "compound statement (`tf.summary.histogram`)" in loop
    tag = _refusal(SUMMARIES + 'tag = "loss"\ns = tf.summary.scalar(tag, loss)\n'
                   'with tf.Session() as sess:\n    print(sess.run(s, {x: [[1.0, 2.0]]}))\n')
    assert "string literal" in tag


def test_a_later_section_that_reads_an_earlier_graph_is_refused():
    message = _refusal(GRAPH + RUN + "z = tf.constant(3.0)\nlater = y * z\n"
                       "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                       "    print(sess.run(later, {x: [[1.0, 2.0]]}))\n")
    assert message.startswith("`y` of the graph an earlier session ran"), message


def test_sections_rebinding_names_are_rewritten_in_order():
    shaped = _shaped(GRAPH + RUN + 'x = tf.placeholder(tf.float32, [2])\nw = tf.Variable(tf.zeros([2]), name="w2")\n'
                     "y = x * w\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                     "    print(sess.run(y, {x: [1.0, 2.0]}))\n")
    code = shaped.new_module.code
    assert code.count("@tf.function") == 2 and "compute_y_2" in code and "Session" not in code


def test_a_second_session_reading_variables_it_did_not_restore_stays_refused():
    message = _refusal(GRAPH + RUN + "with tf.Session() as sess:\n    print(sess.run(y, {x: [[1.0, 2.0]]}))\n")
    assert "a later session `sess` reads variables it did not restore first" in message
    message = _refusal(GRAPH + "first = tf.Session()\nfirst.run(tf.global_variables_initializer())\n" + RUN
                       + "print(first.run(y, {x: [[1.0, 2.0]]}))\n")   # (two sessions open at once)
    assert "more than one session" in message


def test_shapes_of_constants_and_variables_are_read_on_the_host():
    shaped = _shaped(GRAPH + 'c = tf.constant([1.0, 2.0])\nprint(c.get_shape(), c.dtype, w.shape)\n' + RUN)
    assert "print(c.get_shape(), c.dtype, w.shape)" in shaped.new_module.code
    assert "used outside" in _refusal(GRAPH + "c = tf.constant([1.0, 2.0])\nprint(c.name)\n" + RUN)
    assert "used outside" in _refusal(GRAPH + "print(w.dtype)\n" + RUN)   # (v1: float32_ref)


def test_a_host_value_may_carry_a_name_graph_code_binds_later():
    shaped = _shaped("import tensorflow as tf\ny = [1.0, 2.0]\nprint(y)\n" + GRAPH.split("\n", 1)[1] + RUN)
    assert shaped.new_module is not None and "y = [1.0, 2.0]\nprint(y)" in shaped.new_module.code


def test_an_assignment_function_of_something_else_is_refused():
    message = _refusal(GRAPH + "u = tf.assign(y, tf.zeros([1, 1]))\n"
                       "with tf.Session() as sess:\n    sess.run(u, {x: [[1.0, 2.0]]})\n")
    assert "`tf.assign` of something other than a variable" in message
    locked = _refusal(GRAPH + "u = tf.assign_add(w, tf.ones([2, 1]), use_locking=True)\n"
                      "with tf.Session() as sess:\n    sess.run(u)\n")
    assert "arguments other than the variable and the value" in locked


def test_a_name_scope_whose_as_name_is_read_is_refused():
    message = _refusal(GRAPH + 'with tf.name_scope("head") as where:\n    v = tf.Variable(1.0)\nprint(where)\n'
                       + RUN.replace("y, {", "y * v, {"))
    assert "`tf.name_scope` other than a plain string scope" in message


def test_a_summary_under_a_name_scope_is_tagged_with_the_scope():
    shaped = _shaped(SUMMARIES + 'with tf.name_scope("s"):\n    m = tf.summary.scalar("loss", loss)\n'
                     'with tf.Session() as sess:\n    log = tf.summary.FileWriter("logs")\n'
                     '    log.add_summary(sess.run(m, {x: [[1.0, 2.0]]}), 0)\n')
    assert 'tf.summary.scalar("s/loss", ' in shaped.new_module.code


def test_name_scopes_may_all_bind_the_same_unused_as_name():
    shaped = _shaped(GRAPH + 'with tf.name_scope("a") as s:\n    u = tf.Variable(1.0)\n'
                     'with tf.name_scope("b") as s:\n    v = tf.Variable(2.0)\n' + RUN.replace("y, {", "y * u * v, {"))
    assert 'name="a/Variable"' in shaped.new_module.code and 'name="b/Variable"' in shaped.new_module.code


def test_session_options_of_a_model_class_go_with_its_session():
    shaped = _shaped("""\
import tensorflow as tf


class Model:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 2])
        self.w = tf.Variable(tf.ones([2, 1]), name="w")
        self.y = tf.matmul(self.x, self.w)
        options = tf.ConfigProto(log_device_placement=True)
        options.gpu_options.allow_growth = True
        self.sess = tf.Session(config=options)
        self.sess.run(tf.global_variables_initializer())

    def predict(self, data):
        return self.sess.run(self.y, {self.x: data})
""")
    code = shaped.new_module.code
    assert "class Model(tf.Module)" in code and "options" not in code and "Session" not in code


SECOND = ('x = tf.placeholder(tf.float32, [2])\nw = tf.Variable(tf.zeros([2]), name="NAME")\n'
          "y = x * w\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
          "    print(sess.run(y, {x: [1.0, 2.0]}))\n")


def test_a_later_section_in_the_same_tf1_graph_keeps_its_names_apart():
    assert "variable named `w` like one of an earlier section" in _refusal(GRAPH + RUN + SECOND.replace("NAME", "w"))
    after_reset = _shaped(GRAPH + RUN + "tf.reset_default_graph()\n" + SECOND.replace("NAME", "w"))
    assert after_reset.new_module is not None and "reset_default_graph" not in after_reset.new_module.code
    listing = SECOND.replace("NAME", "w2").replace("y = x * w\n", "y = x * w\nn = len(tf.trainable_variables())\n")
    assert "TF1's default graph still holds" in _refusal(GRAPH + RUN + listing)


def test_the_first_section_may_read_the_whole_graph():
    first = GRAPH + "n = len(tf.trainable_variables())\n" + RUN
    shaped = _shaped(first + SECOND.replace("NAME", "w2"))
    assert shaped.new_module is not None and "Session" not in shaped.new_module.code


def test_a_merged_summary_fetched_with_a_train_op_is_one_list():
    shaped = _shaped(SUMMARIES + 'tf.summary.scalar("loss", loss)\nmerged = tf.summary.merge_all()\n'
                     'with tf.Session() as sess:\n    writer = tf.summary.FileWriter("logs")\n'
                     '    s, _ = sess.run([merged, train], {x: [[1.0, 2.0]]})\n    writer.add_summary(s, 0)\n')
    assert "s = [g.numpy() for g in train_step(" in shaped.new_module.code


def test_a_tensorflow_import_used_only_by_a_dropped_reset_goes_with_it():
    source = ("import numpy as np\nimport tensorflow as tf\nfrom tensorflow.compat.v1 import reset_default_graph\n\n"
              "reset_default_graph()\n" + GRAPH + RUN)
    shaped = restructure(cst.parse_module(source), "prog.py")
    assert shaped.new_module is not None, shaped.diagnostics
    assert "reset_default_graph" not in shaped.new_module.code
