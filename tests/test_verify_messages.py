"""How the verifier names a program's error in its one-line reason."""

from tf1gradfix.verify.side_runs import exception_line as _exception_line
from tf1gradfix.verify.runner_common import exception_summary

TF_MESSAGE = """Graph execution error:

Detected at node 'enc/w/read' defined at (most recent call last):
  File "p.py", line 12, in <module>
Node: 'enc/w/read'
Original stack trace for 'enc/w/read':
  File "p.py", line 6, in enc
Attempting to use uninitialized value enc/w
\t [[{{node enc/w/read}}]]"""


class FailedPreconditionError(Exception):
    pass


def test_a_tensorflow_error_is_named_by_what_went_wrong_not_by_its_op_traceback():
    assert exception_summary(FailedPreconditionError(TF_MESSAGE)) == \
        "FailedPreconditionError: Attempting to use uninitialized value enc/w"


def test_a_plain_error_keeps_its_message():
    assert exception_summary(ValueError("shapes (2,) and (3,) differ")) == "ValueError: shapes (2,) and (3,) differ"
    assert exception_summary(KeyError()) == "KeyError"


def test_a_traceback_without_a_summary_is_read_for_its_exception_line():
    tb = 'Traceback (most recent call last):\n  File "p.py", line 3\nValueError: bad\n  File "ops.py", line 9, in f\n'
    assert _exception_line(tb) == "ValueError: bad"
