"""`.eval()` of an expression over graph values in host code (`tf.norm(A).eval()` with an
interactive or default session): a fetched expression, as `sess.run(tf.norm(A))` is
(model/fetches.py). The fixture interactive_parts_initialized_again proves a program."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.emit.restructure import restructure

PROGRAM = """import numpy as np
import tensorflow as tf

sess = tf.InteractiveSession()
a = tf.constant(np.ones((2, 2), np.float32))
w = tf.Variable(tf.ones([2, 1]))
tf.global_variables_initializer().run()
print(LINE)
"""


def rewrite(line: str):
    result = restructure(cst.parse_module(PROGRAM.replace("LINE", line)), "input.py")
    return result.new_module.code if result.new_module is not None else None, [d[3] for d in result.diagnostics]


def test_an_expression_evaluated_is_computed_by_a_function_of_its_own():
    code, messages = rewrite("tf.matmul(a, w).eval().ravel(), (w * 2.0).eval()")
    assert code is not None, messages
    assert "def compute_matmul():\n    matmul = tf.matmul(a, w)\n    return matmul" in code
    assert "print(compute_matmul().numpy().ravel(), compute_fetched().numpy())" in code


def test_eval_of_a_host_object_is_left_to_it():
    code, messages = rewrite("np.poly1d([1, 2]).eval() if hasattr(np.poly1d, 'eval') else 0, w.eval()")
    assert code is not None and "np.poly1d([1, 2]).eval()" in code, messages
