"""Detection on Python's own syntax tree gives LibCST's detection, hit for hit.

`check` reads files with detect/ast_rules alone; `rewrite` takes its rename
plans for modules that open no session. Both engines run here on every
fixture, on the alias spellings of the prefilter tests and on the rebinding
cases of the reliability tests, and must agree on code, position, message,
rename plan and ambiguity.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from tf1gradfix.detect import ast_rules
from tf1gradfix.detect.detector import AnalysisWrapper, detect
from tf1gradfix.emit.token_renames import renamed
from tf1gradfix.rules import catalog
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_prefilter import SPELLINGS  # noqa: E402
from test_reliability_renames import BINDINGS, SEED  # noqa: E402

SCOPES = {  # shadowing and rebinding the model must read as LibCST's scope analysis does
    "parameter_shadows": "import tensorflow as tf\ndef f(tf):\n    return tf.log(1)\ny = tf.log(2)\n",
    "local_assigned_later": "import tensorflow as tf\ndef f():\n    a = tf.log(1)\n    tf = 3\n    return a\n",
    "class_body_hidden": "import math\nclass A:\n    import tensorflow as tf\n    def f(self):\n        return tf.log(1)\n",
    "global_rebinds": "import tensorflow as tf\ndef f():\n    global tf\n    import math as tf\nprint(tf.log(1))\n",
    "comprehension": "import tensorflow as tf\nv = [tf.log(x) for x in range(3)]\nw = [tf for tf in range(3)]\n",
    "self_assignment": "import tensorflow as tf\ntf = tf.compat.v1\nx = tf.placeholder(tf.float32)\ntf.set_random_seed(1)\n",
    "rebound_after_use": "import tensorflow as tf\ntf.set_random_seed(1)\nimport math as tf\n",
    "dotted_root_only": "import tensorflow.compat.v1\ntensorflow.set_random_seed(0)\nx = tensorflow.compat.v1.placeholder(1)\n",
    "raw_import_string": "tf = __import__(r'tensorflow')\ntf.set_random_seed(0)\n",
    "joined_import_string": "tf = __import__('tensor' 'flow')\ntf.set_random_seed(0)\n",
    "non_ascii_column": "import tensorflow as tf\nnäme = 'é'; tf.set_random_seed(0)\n",
    "keyword_argument": "from tensorflow import Session\nf(Session=1)\n",
    "lambda_and_default": "import tensorflow as tf\ng = lambda tf=tf.log: tf\ndef h(x=tf.log(1)):\n    return x\n",
    "session_program": "import tensorflow as tf\nx = tf.placeholder(tf.float32)\nwith tf.Session() as s:\n    s.run(x)\n",
}


def _sources():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        if path.name in ("expected.py", "migrated.py"):
            continue   # (TF2 code: the rewrite's own outputs)
        yield str(path.relative_to(ROOT)), path.read_bytes()
    for name, text in {**SPELLINGS, **SCOPES}.items():
        yield name, text.encode()
    for i, text in enumerate(BINDINGS + [b + SEED for b in (
            "import tensorflow as tf\ntf = tf.compat.v1\n", "import tensorflow\ntf = tensorflow\n",
            "import tensorflow as tf\nimport math as tf\n", "import tensorflow as tf\ndel tf\nimport math as tf\n")]):
        yield f"binding_{i}", text.encode()


def _cases():
    for name, data in _sources():
        try:
            module = cst.parse_module(data)
            tree = ast.parse(data)
        except (cst.ParserSyntaxError, SyntaxError):
            continue
        yield pytest.param(data, module, tree, id=name)


def _key(hit):
    plan = None if hit.replacement is None else (hit.replacement[0], tuple(hit.replacement[1]))
    return hit.rule.code, hit.line, hit.col, hit.message, plan, hit.ambiguous


CASES = list(_cases())


@pytest.mark.parametrize("data, module, tree", CASES)
def test_ast_detection_and_byte_edits_are_libcsts(data, module, tree):
    from tf1gradfix.emit.renames import renamed_source

    libcst_hits = detect(AnalysisWrapper(module), catalog.load())
    hits = ast_rules.detect(tree, data, catalog.load())
    assert sorted(map(_key, hits)) == sorted(map(_key, libcst_hits))
    plans = {h.node: h.replacement for h in libcst_hits if h.replacement is not None and h.rule.safety == "safe"}
    text, exact = renamed(data, [(h.node, h.replacement) for h in hits
                                 if h.replacement is not None and h.rule.safety == "safe"])
    if exact:
        assert text == renamed_source(module, plans)


def test_a_bracket_inside_a_renamed_chain_is_left_to_libcst():
    data = b"import tensorflow as tf\n(tf).set_random_seed(0)\n"
    tree = ast.parse(data)
    plans = [(h.node, h.replacement) for h in ast_rules.detect(tree, data, catalog.load()) if h.replacement]
    assert renamed(data, plans)[1] is False
    assert process_source("x.py", data, CodeFilter()).new_source == b"import tensorflow as tf\n(tf).compat.v1.set_random_seed(0)\n"


def test_check_of_a_session_program_leaves_fixed_to_rewrite():
    data = (ROOT / "fixtures" / "rewrite" / "compat_v1_import" / "input.py").read_bytes()
    checked = process_source("x.py", data, CodeFilter(), check=True)
    rewritten = process_source("x.py", data, CodeFilter())
    assert [(f.code, f.line, f.col) for f in checked.findings] == [(f.code, f.line, f.col) for f in rewritten.findings]
    assert {f.fixed for f in checked.findings} == {None} and {f.fixed for f in rewritten.findings} == {True}


def test_a_rename_only_file_is_checked_and_rewritten_without_libcst():
    script = (
        "import sys\n"
        "from tf1gradfix.run.engine import process_source\n"
        "from tf1gradfix.run.findings import CodeFilter\n"
        "data = b'import tensorflow as tf\\ntf.set_random_seed(1)\\n'\n"
        "for check in (True, False):\n"
        "    r = process_source('x.py', data, CodeFilter(), check=check)\n"
        "    assert r.new_source == b'import tensorflow as tf\\ntf.compat.v1.set_random_seed(1)\\n', r\n"
        "print('libcst' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_check_of_a_tf1_session_program_never_imports_libcst(tmp_path):
    program = ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "original.py"
    env = dict(os.environ, TF1GRADFIX_NO_CACHE="1")
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "tf1gradfix", "check", str(program)],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 1 and "TFG1" in out.stdout   # (findings were reported)
    imported = [line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")]
    assert "tf1gradfix.detect.ast_rules" in imported
    assert not [name for name in imported if name.split(".")[0] in ("libcst", "tensorflow")]


def test_a_syntax_error_is_reported_with_its_line_by_pythons_compiler(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32)\ndef f(:\n    pass\n")
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "tf1gradfix", "check", str(bad)],
                         capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, TF1GRADFIX_NO_CACHE="1"))
    assert out.returncode == 2 and f"{bad}:3:" in out.stdout + out.stderr
    assert "libcst" not in out.stderr
