"""TF1's command-line flags written as absl's (tf1gradfix/constructs/flags.py): the
rewrites of fixtures/rewrite/flags_* proven with arguments, and the forms refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf1gradfix.constructs import flags
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

REWRITE = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite"

SCRIPT = """import numpy as np
import tensorflow as tf

{defines}
x = tf.placeholder(tf.float32, [None])
w = tf.Variable(1.0, name="w")
loss = tf.reduce_sum(tf.square(w * x))
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([loss, step], {{x: np.ones(3, np.float32) * {read}}})[0])
{tail}"""


def _refusal(defines: str, read: str = "2.0", tail: str = "") -> str:
    result = process_source("fit.py", SCRIPT.format(defines=defines, read=read, tail=tail).encode(), CodeFilter())
    assert result.new_source is None
    return "\n".join(f"{f.line}:{f.code} {f.message}" for f in result.findings if f.safety == "manual")


def test_a_flag_defined_in_a_function_after_a_read_at_import_is_refused():
    defines = ("FLAGS = tf.app.flags.FLAGS\n\n\ndef define():\n    tf.app.flags.DEFINE_float('scale', 2.0, '')\n\n\n"
               "define()\n")
    out = _refusal(defines, read="FLAGS.scale")
    assert "TFG905 TF1's command-line flags" in out and "before every flag is defined at its top level" in out, out


def test_absl_bound_otherwise_is_refused():
    out = _refusal("absl = None\ntf.app.flags.DEFINE_float('scale', 2.0, '')\n", read="tf.app.flags.FLAGS.scale")
    assert "the name `absl` is bound otherwise" in out, out


def test_app_run_without_a_main_is_refused():
    out = _refusal("tf.app.flags.DEFINE_float('scale', 2.0, '')\n",
                   tail="\n\ndef start(argv):\n    pass\n\n\nif __name__ == '__main__':\n    tf.app.run()\n")
    assert "`app.run()` calls `__main__.main`" in out, out


def test_a_program_without_tf1_flags_is_left_as_it_is():
    source = b"import tensorflow as tf\nflags = ['a']\nprint(flags)\n"
    assert flags.absl_form(source, source) == (source, None)


@pytest.mark.tf
def test_the_rewrites_take_the_same_arguments():
    """Both sides get the arguments: the migrated flags parse them as TF1's did (an undefined
    flag reaches main's argv under tf.app.run; the first read at import parses them)."""
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    cases = {"flags_app_run": ["--epochs", "7", "--report_every_epoch", "--undefined_setting"],
             "flags_read_at_import": ["--pace", "slow", "--init_scale", "0.5"]}
    for name, args in cases.items():
        result = verify_pair(REWRITE / name / "input.py", REWRITE / name / "expected.py", program_args=args)
        assert result.verdict == EQUIVALENT, (name, result.reason)
        if name == "flags_app_run":   # (seven epochs: the argument was read)
            assert result.comparison.stats["loss"].compared == 7, result.comparison.stats
