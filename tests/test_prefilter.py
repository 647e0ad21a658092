"""The prefilter never rules out what detection or the restructuring would find.

It decides, from identifiers alone, that LibCST need not parse a text. So on
every source we have (fixture inputs, rewrites, verifier programs, TF2 code)
a rule detection fires must be among the possible ones, and a program the
restructuring touches must be possible at all.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import QualifiedNameSource, ScopeProvider

from tf1gradfix.rules import catalog
from tf1gradfix.run import engine
from tf1gradfix.detect import prefilter
from tf1gradfix.cst import walk
from tf1gradfix.cst.metadata import AnalysisWrapper
from tf1gradfix.detect.detector import detect
from tf1gradfix.run.findings import CodeFilter
from tf1gradfix.detect.prefilter import Spelling
from tf1gradfix.emit.restructure import restructure

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))

# Import forms and aliases the fixtures do not all use.
SPELLINGS = {
    "compat_module_alias": "from tensorflow.compat import v1 as tf1\nx = tf1.placeholder(tf1.float32)\n",
    "imported_class": "from tensorflow.train import AdamOptimizer as A\nopt = A(0.1)\nstep = opt.minimize(loss)\n",
    "imported_function": "from tensorflow import log as ln, Session\ny = ln(2.0)\ns = Session()\n",
    "renamed_root": "import tensorflow as T\nT.set_random_seed(1)\nk = T.GraphKeys.TRAINABLE_VARIABLES\n",
    "keras_submodule": "import tensorflow.compat.v1 as tf\nd = tf.layers.dense(x, 3)\n",
    "method_on_session": "import tensorflow as tf\nwith tf.Session() as s:\n    s.run(op)\n    v.eval()\n",
    "dotted_import": ("import tensorflow.compat.v1\nx = tensorflow.compat.v1.placeholder(tensorflow.compat.v1.float32)\n"
                      "y = tensorflow.compat.v1.Session().run(x)\n"),
    "through_calls": "import tensorflow as tf\nv = tf.get_variable('w', [2])[0]\nz = tf.train.AdamOptimizer(0.1).minimize(v)\n",
    "local_import": "def f():\n    import tensorflow.compat.v1 as v1\n    return v1.gradients(y, [x])\n",
    "comment_inside": "import tensorflow as tf\ny = (tf.  # why\n     log(x))\n",
}

TF2 = '''\
import tensorflow as tf

w = tf.Variable(tf.zeros([3]))
opt = tf.keras.optimizers.SGD(0.1)


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(w * x))
    opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    return loss
'''


def _sources():
    for path in SOURCES:
        yield str(path.relative_to(ROOT)), path.read_bytes()
    for name, text in SPELLINGS.items():
        yield name, text.encode()
    yield "tf2", TF2.encode()


def _parsed():
    """(name, bytes, module) of every source LibCST reads (a broken original it cannot)."""
    for name, data in _sources():
        try:
            yield pytest.param(name, data, cst.parse_module(data), id=name)
        except cst.ParserSyntaxError:
            continue


@pytest.mark.parametrize("name,data,module", list(_parsed()))
def test_every_rule_detection_fires_is_possible(name, data, module):
    fired = {hit.rule.code for hit in detect(AnalysisWrapper(module), catalog.load(), positions=False)}
    possible = prefilter.load().possible(data)
    assert fired <= possible.codes, fired - possible.codes
    resolved = prefilter.load().possible(data, resolve=True)
    assert fired <= resolved.codes <= possible.codes, fired - resolved.codes
    shaped = restructure(module, name, AnalysisWrapper(module))
    if shaped.new_module is not None or shaped.diagnostics:
        assert resolved.anything and prefilter.load().worth_parsing(data)


@pytest.mark.parametrize("name,data,module", list(_parsed()))
def test_imported_names_hold_every_name_the_scope_analysis_gives_through_an_import(name, data, module):
    wrapper = AnalysisWrapper(module)
    scopes = wrapper.resolve(ScopeProvider)
    given = set()
    for node in walk.walk(module):
        if type(node) in (cst.Name, cst.Attribute) and scopes.get(node) is not None:
            given |= {q.name for q in scopes[node].get_qualified_names_for(node) if q.source is QualifiedNameSource.IMPORT}
    names, _methods = prefilter.imported_names(data)
    assert given <= names, given - names


def test_keras_attributes_and_module_members_are_not_tf1_names():
    """What the identifiers alone cannot tell apart, the imports do."""
    text = (b"import tensorflow as tf\nlayer = tf.keras.layers.Dense(3)\n"
            b"opt.apply_gradients(zip(g, model.trainable_variables))\n")
    assert prefilter.load().possible(text).codes
    assert not prefilter.load().possible(text, resolve=True).codes


def test_the_alias_spellings_do_fire():
    """(so the test above checks something on them)"""
    for name, text in SPELLINGS.items():
        module = cst.parse_module(text)
        assert detect(AnalysisWrapper(module), catalog.load(), positions=False), name


def test_tf2_code_rules_nothing_possible():
    possible = prefilter.load().possible(TF2.encode())
    assert possible.codes == frozenset() and not possible.anything
    assert not prefilter.load().worth_parsing(TF2.encode())


def test_migrated_code_is_not_worth_parsing_though_its_words_leave_rules_possible():
    migrated = (ROOT / "fixtures" / "verify" / "batchnorm_update_ops" / "migrated.py").read_bytes()
    assert prefilter.load().possible(migrated).anything
    assert not prefilter.load().worth_parsing(migrated)


@pytest.mark.parametrize("pattern,parts,starts,ends", [
    ("tensorflow.placeholder", {"tensorflow", "placeholder"}, (), ()),
    ("tensorflow.train.*Optimizer", {"tensorflow", "train"}, (), ("Optimizer",)),
    ("tensorflow.GraphKeys.*", {"tensorflow", "GraphKeys"}, (), ()),
    ("tensorflow.contrib*.x", {"tensorflow", "x"}, ("contrib",), ()),
    ("tensorflow.a*b.c", {"tensorflow", "c"}, ("a",), ("b",)),
    ("tensorflow.a?b", {"tensorflow"}, ("a",), ()),
])
def test_spelling_of_a_pattern(pattern, parts, starts, ends):
    assert Spelling.of(pattern) == Spelling(frozenset(parts), starts, ends)


def test_a_spelling_is_matched_on_whole_tokens():
    spelling = Spelling.of("tensorflow.train.*Optimizer")
    assert spelling.written_in(frozenset({"tensorflow", "train", "AdamOptimizer"}))
    assert not spelling.written_in(frozenset({"tensorflow", "train_step", "AdamOptimizer"}))
    assert not spelling.written_in(frozenset({"tensorflow", "train", "Optimizers"}))


def test_a_method_rule_needs_its_receiver_kind():
    """`.apply_gradients` is a TF1 construct only on a `tf.train` optimizer."""
    keras = prefilter.load().possible(b"import tensorflow as tf\nopt = tf.keras.optimizers.SGD()\nopt.apply_gradients(g)\n")
    v1 = prefilter.load().possible(b"import tensorflow as tf\nopt = tf.train.AdamOptimizer()\nopt.apply_gradients(g)\n")
    code = next(r.code for r in catalog.load().rules if "apply_gradients" in r.methods)
    assert code not in keras.codes and code in v1.codes


def test_tf2_code_is_not_parsed_but_its_syntax_errors_are_reported(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("LibCST parsed a file the prefilter ruled out")

    monkeypatch.setattr(cst, "parse_module", refuse)
    assert engine.process_source("ok.py", TF2.encode(), CodeFilter()).error is None
    broken = engine.process_source("bad.py", b"import tensorflow as tf\ndef f(:\n    pass\n", CodeFilter())
    assert broken.error is not None and broken.error.line == 2 and "syntax error" in broken.error.message
