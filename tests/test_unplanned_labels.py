"""A safe label is a fix this file gets: a rename the rewrite cannot write (a name reached
through a `tf.compat.v1` alias) is labelled manual, with why, not `safe` with no diff."""

from __future__ import annotations

from tf1gradfix.cli.main import main

UTILITY = """import tensorflow.compat.v1 as tf


def scaled(x):
    tf.set_random_seed(1)
    return tf.log(x) * tf.get_variable("s", [])
"""


def test_a_compat_v1_module_labels_no_finding_safe_that_it_does_not_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "util.py").write_text(UTILITY)
    main(["rewrite", "--diff", "util.py"])
    out, err = capsys.readouterr()
    assert "+++" not in out   # (nothing written)
    renames = [line for line in (out + err).splitlines() if "TFG401" in line]
    assert len(renames) == 2 and all("[manual]" in line and "`tf.compat.v1` alias" in line for line in renames)
    assert "safe" not in (out + err).strip().splitlines()[-1]


def test_the_same_module_on_the_root_alias_gets_its_safe_fixes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "util.py").write_text(UTILITY.replace("tensorflow.compat.v1", "tensorflow"))
    main(["rewrite", "--diff", "util.py"])
    out, err = capsys.readouterr()
    assert "+    return tf.math.log(x)" in out and (out + err).count("TFG401 [*safe]") == 2
