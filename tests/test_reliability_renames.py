"""Reliability of one file's analysis: deep code, name bindings that are not
TensorFlow, and line endings kept byte for byte.

Each test runs the engine in-process (no TensorFlow); the few that start the
command line or `patch` say so.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.judgement import MAX_DEPTH
from tf1gradfix.run.findings import CodeFilter


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
        "from tf1gradfix.run.engine import process_source\n"
        "from tf1gradfix.run.findings import CodeFilter\n"
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


DEEP = {
    "sum": lambda n: "+".join(["a"] * n),
    "lambdas": lambda n: "lambda: " * n + "1",
    "and": lambda n: " and ".join(["a"] * n),
    "attributes": lambda n: "a" + ".b" * n,
}


@pytest.mark.parametrize("shape", DEEP)
def test_deep_valid_code_is_refused_with_its_depth(shape):
    """It was an internal error (RecursionError) at 1:1; code within the limit is still rewritten."""
    def source(n):
        return f"import tensorflow as tf\na = 1\ny = tf.log({DEEP[shape](n)})\n"

    result = run(source(500))
    assert result.error is not None and result.new_source is None
    assert "too deeply nested for the rewrite" in result.error.message
    assert f"limit {MAX_DEPTH}" in result.error.message and "internal error" not in result.error.message
    assert result.error.line == 3
    within = run(source(MAX_DEPTH - 10))
    assert within.error is None and fixed(within) == ["TFG401"]


def test_a_sum_of_30000_terms_is_refused_fast():
    import time

    started = time.monotonic()
    result = run("import tensorflow as tf\na = 1\ny = tf.log(" + "+\n".join(["a"] * 30000) + ")\n")
    assert time.monotonic() - started < 10
    assert result.error is not None and "too deeply nested" in result.error.message


def test_nesting_python_does_not_show_is_a_clear_error():
    """Implicitly joined strings are one constant for Python, a nest for LibCST: a session
    program (LibCST reads it) is refused clearly; renames alone need no LibCST and are made."""
    joined = "\n".join(['"a"'] * 1000)
    result = run("import tensorflow as tf\ny = tf.log(" + joined + ")\nwith tf.Session() as s:\n    s.run(y)\n")
    assert result.error is not None and result.error.message.startswith("too deeply nested")
    renamed = run("import tensorflow as tf\ny = tf.log(" + joined + ")\n")
    assert renamed.error is None and renamed.new_source == ("import tensorflow as tf\ny = tf.math.log(" + joined + ")\n").encode()


# -- item 4: names bound to TensorFlow modules by assignment, star imports ----

SEED = "tf.set_random_seed(0)\n"


@pytest.mark.parametrize("binding", [
    "import tensorflow as tf\ntf = tf.compat.v1\n",
    "tf = __import__('tensorflow').compat.v1\n",
    "import importlib\ntf = importlib.import_module('tensorflow.compat.v1')\n",
])
def test_a_compat_v1_module_bound_by_assignment_is_found_but_not_renamed(binding):
    """`compat.v1.random` has no `set_seed`: like `import tensorflow.compat.v1 as tf`, no safe fix."""
    result = run(binding + SEED)
    assert codes(result) == ["TFG401"] and fixed(result) == [] and result.new_source is None


def test_the_tensorflow_root_bound_by_assignment_takes_the_rename():
    result = run("import tensorflow\ntf = tensorflow\n" + SEED)
    assert result.new_source == b"import tensorflow\ntf = tensorflow\ntf.compat.v1.set_random_seed(0)\n"


def test_compat_v1_assignment_is_consistent_with_the_compat_v1_import():
    imported = run("import tensorflow.compat.v1 as tf\n" + SEED + "x = tf.placeholder(tf.float32)\n")
    assigned = run("import tensorflow as tf\ntf = tf.compat.v1\n" + SEED + "x = tf.placeholder(tf.float32)\n")
    assert [(f.code, f.fixed) for f in imported.findings] == [(f.code, f.fixed) for f in assigned.findings]


SESSION_PROGRAM = """\
import numpy as np
import tensorflow as tf
tf = tf.compat.v1

tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(step, feed_dict={x: np.ones((2, 3), np.float32)})
"""


def test_the_whole_program_rewrite_of_a_compat_v1_alias_takes_no_wrong_rename():
    """It made `tf.random.set_seed` on the compat.v1 alias; it now leaves the file intact and says why."""
    result = run(SESSION_PROGRAM)
    assert result.new_source is None
    assert "TFG905" in codes(result) and not any(f.fixed for f in result.findings)


@pytest.mark.parametrize("module", ["tensorflow", "tensorflow.compat.v1"])
def test_bare_names_a_star_import_may_bind_are_found(module):
    result = run(f"from {module} import *\nx = placeholder(float32)\nset_random_seed(0)\nprint(x)\n")
    assert {"TFG101", "TFG401"} <= set(codes(result)) and fixed(result) == []
    bound = run(f"from {module} import *\ndef placeholder(x):\n    return x\ny = placeholder(1)\nset_random_seed(0)\n")
    assert codes(bound) == ["TFG401"]  # (a name a statement binds is not the star import's)




# -- item 5: a `tf` also bound to something else; chains written to -------------

@pytest.mark.parametrize("rebinding", [
    "import math as tf\n",
    "import math\nif cond:\n    tf = math\n",
    "del tf\nimport math as tf\n",
])
def test_a_name_also_bound_to_another_module_takes_no_rename(rebinding):
    result = run("import tensorflow as tf\n" + rebinding + "print(tf.log(1.0))\n")
    assert result.new_source is None and fixed(result) == []


@pytest.mark.parametrize("statement", [
    "tf.log = patched", "tf.log += 1", "del tf.log", "a, tf.log = 1, 2", "tf.log: object = patched",
])
def test_a_chain_written_to_is_never_renamed(statement):
    result = run(f"import tensorflow as tf\n{statement}\nprint(tf.log(1.0))\n")
    assert result.new_source == f"import tensorflow as tf\n{statement}\nprint(tf.math.log(1.0))\n".encode()
    assert [f.fixed for f in result.findings] == [False, True]


# -- the prefilter stays a necessary condition with the new bindings ----------

BINDINGS = [
    "import tensorflow as T\ntf = T.compat.v1\ntf.set_random_seed(0)\nwith tf.Session() as s:\n    s.run(op)\n",
    "tf = __import__('tensorflow').compat.v1\nx = tf.placeholder(tf.float32)\n",
    "import importlib\ntf = importlib.import_module('tensorflow.compat.v1')\ng = tf.gradients(y, [x])\n",
    "import tensorflow\na = tensorflow\nb = a\nb.set_random_seed(0)\n",
    "from tensorflow import *\nx = placeholder(float32)\nsess = Session()\nsess.run(x)\n",
    "from tensorflow.compat.v1 import *\nopt = train.AdamOptimizer(0.1)\nstep = opt.minimize(loss)\n",
]


@pytest.mark.parametrize("source", BINDINGS)
def test_prefilter_allows_every_rule_the_new_bindings_fire(source):
    import libcst as cst

    from tf1gradfix.rules import catalog
    from tf1gradfix.detect import prefilter
    from tf1gradfix.cst.metadata import AnalysisWrapper
    from tf1gradfix.detect.detector import detect

    data = source.encode()
    fired = {hit.rule.code for hit in detect(AnalysisWrapper(cst.parse_module(data)), catalog.load(), positions=False)}
    assert fired  # (each source holds a construct through the new binding)
    resolved = prefilter.load().possible(data, resolve=True)
    assert fired <= resolved.codes and prefilter.load().worth_parsing(data)


def test_the_prefilter_follows_a_self_assignment_without_end():
    from tf1gradfix.detect import prefilter

    names, _ = prefilter.imported_names(b"import tensorflow as tf\ntf = tf.compat.v1\nx = tf.log(1)\n")
    assert {"tensorflow.log", "tensorflow.compat.v1.log"} <= names


# -- item 16: what LibCST loses is put back; lines no rename edits are checked --

def test_mixed_lone_cr_and_lf_keep_the_last_line_ending():
    result = run(b"import tensorflow as tf\ry = tf.log(1.0)\nz = 1\r")
    assert result.new_source == b"import tensorflow as tf\ry = tf.math.log(1.0)\nz = 1\r"


def test_a_form_feed_starting_a_line_is_kept():
    result = run(b"import tensorflow as tf\n\x0cy = tf.log(1.0)\n\x0cz = 1\n")
    assert result.new_source == b"import tensorflow as tf\n\x0cy = tf.math.log(1.0)\n\x0cz = 1\n"


def test_a_form_feed_is_kept_by_the_whole_program_rewrite():
    program = SESSION_PROGRAM.replace("tf = tf.compat.v1\n", "").replace("tf.set_random_seed(0)\n", "")
    program = program.replace("import numpy as np\n", "import numpy as np\n\n\n\x0cdef ones():\n    return 1\n\n\n")
    result = run(program)
    assert result.new_source is not None and b"\n\x0cdef ones():\n" in result.new_source


@pytest.mark.parametrize("printer, chain", [
    ("renames.renamed_source", "(tf).log"),   # (a bracket in the chain: LibCST prints the rename)
    ("token_renames.renamed", "tf.log"),      # (byte edits)
])
def test_a_rewrite_that_changes_a_line_it_did_not_edit_is_refused(monkeypatch, printer, chain):
    import importlib

    module, name = printer.split(".")
    module = importlib.import_module(f"tf1gradfix.emit.{module}")
    real = getattr(module, name)

    def corrupted(*args):
        out = real(*args)
        return (out[0].replace(b"z = 1", b"z = 2"), out[1]) if isinstance(out, tuple) else out.replace(b"z = 1", b"z = 2")

    monkeypatch.setattr(module, name, corrupted)
    source = f"import tensorflow as tf\ny = {chain}(1.0)\nz = 1\n".encode()
    result = run(source)
    assert result.new_source is None and result.error is not None
    assert result.error.message.startswith("internal error: the rewrite changed line 3")
    assert result.error.message.endswith("file left unchanged") and fixed(result) == []


def test_rename_only_rewrites_keep_every_other_byte():
    """Random line endings, form feeds and endings of the last line: undoing the renames gives the input back."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    lines = [b"import tensorflow as tf", b"y = tf.log(1.0)", b"s = 'a\x0cb\\u2028'", b"def f():",
             b"    return tf.log(2.0)", b"z = 1"]

    @hypothesis.settings(max_examples=15, deadline=None, database=None)
    @hypothesis.given(st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=len(lines), max_size=len(lines)),
                      st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)), st.booleans())
    def check(endings, feeds, last):
        if b"\r" in endings and endings.count(b"\r") == len(endings):
            endings[0] = b"\n"  # (a CR-only file takes another path, tested elsewhere)
        data = b"".join((b"\x0c" if feed and not line.startswith(b" ") else b"") + line + end
                        for line, end, feed in zip(lines, endings, feeds))
        if not last:
            data = data[:-len(endings[-1])]
        result = run(data)
        assert result.error is None
        assert result.new_source.replace(b"tf.math.log", b"tf.log") == data

    check()


# -- item 15: `rewrite --diff` output applies with `patch` ------------------------

DIFFED = {
    "no_final_newline": b"import tensorflow as tf\ny = tf.log(1.0)",
    "cr_only": b"import tensorflow as tf\ry = tf.log(1.0)\rz = 1\r",
    "form_feed": b"import tensorflow as tf\n\x0cz = 1\ny = tf.log(1.0)\ns = '\x0c'\n",
    "line_separator_in_string": "import tensorflow as tf\ns = '\u2028'\ny = tf.log(1.0)\nz = 2\n".encode(),
    "lone_cr_in_string": b"import tensorflow as tf\ns = '''a\rb'''\ny = tf.log(1.0)\n",
}


@pytest.mark.integration
@pytest.mark.parametrize("name", DIFFED)
def test_the_diff_applies_with_patch(name, tmp_path):
    import shutil

    from tf1gradfix.run.batch import unified_diff

    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed")
    old = DIFFED[name]
    new = run(old).new_source
    assert new is not None and new != old
    (tmp_path / "x.py").write_bytes(old)
    (tmp_path / "change.diff").write_bytes(unified_diff("x.py", old, new).encode("utf-8"))
    done = subprocess.run(["patch", "-p1", "--binary", "--fuzz=0", "-s", "-i", "change.diff"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "x.py").read_bytes() == new


def test_a_last_line_without_newline_is_marked():
    from tf1gradfix.run.batch import unified_diff

    diff = unified_diff("x.py", b"a = 1\nb = 2", b"a = 1\nb = 3")
    assert diff.endswith("-b = 2\n\\ No newline at end of file\n+b = 3\n\\ No newline at end of file\n")
