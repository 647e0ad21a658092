"""Reliability of one file's analysis: deep code, name bindings that are not
TensorFlow, and line endings kept byte for byte.

Each test runs the engine in-process (no TensorFlow); the few that start the
command line or `patch` say so.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tf1gradfix.engine import MAX_DEPTH, process_source
from tf1gradfix.findings import CodeFilter


def run(source: str | bytes, fix: bool = True):
    data = source.encode() if isinstance(source, str) else source
    return process_source("x.py", data, CodeFilter(), fix=fix)


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def fixed(result) -> list[str]:
    return [f.code for f in result.findings if f.fixed]


# -- item 2: deep code --------------------------------------------------------

def test_too_many_parentheses_is_a_syntax_error_not_a_crash():
    """LibCST's native parser crashed the process here; Python's compiler now judges first.

    (In a child process: the crash would take the test run down.)
    """
    script = (
        "from tf1gradfix.engine import process_source\n"
        "from tf1gradfix.findings import CodeFilter\n"
        "deep = 'import tensorflow as tf\\ny = ' + '(' * 1500 + 'tf.log(1.0)' + ')' * 1500 + '\\n'\n"
        "for data in (deep, 'import tensorflow as tf\\ny = tf.log(1.0)\\n'):\n"
        "    r = process_source('x.py', data.encode(), CodeFilter())\n"
        "    print(r.error, [f.code for f in r.findings])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert "syntax error: too many nested parentheses" in first and "line=2" in first
    assert second == "None ['TFG401']"  # the next file is still processed


@pytest.mark.parametrize("body", [
    "+".join(["a"] * 500),
    "lambda: " * 500 + "1",
    " and ".join(["a"] * 500),
    "a" + ".b" * 500,
])
def test_deep_valid_code_is_refused_with_its_depth(body):
    source = f"import tensorflow as tf\na = 1\ny = tf.log({body})\n"
    result = run(source)
    assert result.error is not None and result.new_source is None
    assert "too deeply nested for the rewrite" in result.error.message
    assert f"limit {MAX_DEPTH}" in result.error.message and "internal error" not in result.error.message
    assert result.error.line == 3


def test_deep_code_within_the_limit_is_rewritten():
    body = "+".join(["a"] * (MAX_DEPTH - 10))
    result = run(f"import tensorflow as tf\na = 1\ny = tf.log({body})\n")
    assert result.error is None and fixed(result) == ["TFG401"]


def test_a_sum_of_30000_terms_is_refused_fast():
    import time

    started = time.monotonic()
    result = run("import tensorflow as tf\na = 1\ny = tf.log(" + "+\n".join(["a"] * 30000) + ")\n")
    assert time.monotonic() - started < 10
    assert result.error is not None and "too deeply nested" in result.error.message


def test_nesting_python_does_not_show_is_a_clear_error():
    """Implicitly joined strings are one constant for Python, a nest for LibCST."""
    result = run("import tensorflow as tf\ny = tf.log(" + "\n".join(['"a"'] * 1000) + ")\n")
    assert result.error is not None and result.error.message.startswith("too deeply nested")
