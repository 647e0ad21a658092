"""TF1 keywords TF2 renamed (TFG403): every entry of the table generated from TensorFlow's
own upgrade tables is reported with its replacement, the safe ones are written into files
that stay TF1, and renames a tf.compat.v1 file cannot take wait for a restructuring."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tf1gradfix.detect.arguments import reorders
from tf1gradfix.detect.keywords import RESTRUCTURED, SAFE, table
from tf1gradfix.emit.keyword_renames import EVERY, renamed
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent


def _one_call_per_entry() -> tuple[bytes, list[tuple[str, str, str]]]:
    lines, expected = ["import tensorflow as tf", "", "def calls(x):"], []
    for name, keywords in sorted(table().items()):
        first = reorders().get(name, ((None,),))[0][0]   # (given as a keyword, not positionally too)
        for old, (new, _reach) in sorted(keywords.items()):
            lines.append(f"    tf.{name}({old}=1)" if first in (old, new) else f"    tf.{name}(x, {old}=1)")
            expected.append((f"tf.{name}", old, new))
    return ("\n".join(lines) + "\n").encode(), expected


def test_the_table_holds_the_common_old_keywords():
    rows = table()
    assert rows["reduce_sum"] == {"keep_dims": ("keepdims", SAFE), "reduction_indices": ("axis", SAFE)}
    assert rows["nn.softmax"]["dim"] == ("axis", SAFE)
    assert rows["argmax"]["dimension"] == ("axis", SAFE)
    assert rows["squeeze"]["squeeze_dims"] == ("axis", SAFE)
    assert rows["arg_max"]["dimension"] == ("axis", RESTRUCTURED)   # (tf.compat.v1.arg_max takes no `axis`)
    assert sum(len(k) for k in rows.values()) > 100


def test_check_reports_every_entry_with_its_replacement():
    source, expected = _one_call_per_entry()
    result = process_source("calls.py", source, CodeFilter(), fix=False)
    found = [f for f in result.findings if f.code == "TFG403"]
    assert len(found) == len(expected)
    for finding, (function, old, new) in zip(found, expected):
        assert f"`{function}(..., {old}=...)`" in finding.message and f"`{new}`" in finding.message


def test_rewrite_writes_the_safe_renames_into_a_module_that_stays_tf1():
    source = (b"import tensorflow as tf\n\ndef head(h):\n"
              b"    tf.set_random_seed(3)\n"
              b"    s = tf.reduce_mean(h, reduction_indices=1, keep_dims=True)\n"
              b"    return tf.nn.softmax(s, dim=-1), tf.arg_max(h, dimension=1)\n")
    result = process_source("head.py", source, CodeFilter())
    assert result.new_source == (b"import tensorflow as tf\n\ndef head(h):\n"
                                 b"    tf.compat.v1.set_random_seed(3)\n"
                                 b"    s = tf.reduce_mean(h, axis=1, keepdims=True)\n"
                                 b"    return tf.nn.softmax(s, axis=-1), tf.arg_max(h, dimension=1)\n")
    labels = {(f.code, f.line, f.col): (f.safety, f.fixed) for f in result.findings}
    assert labels[("TFG401", 4, 5)] == ("safe", True)   # TF1's own function: tf.compat.v1 has no random.set_seed
    assert labels[("TFG403", 6, 52)] == ("manual", False)   # tf.compat.v1.arg_max takes no axis
    assert labels[("TFG403", 5, 27)] == ("safe", True)


def test_compat_v1_aliases_and_from_imports_are_read():
    source = (b"import tensorflow.compat.v1 as tf1\nfrom tensorflow import nn\n"
              b"a = tf1.reduce_max(q, keep_dims=True)\nb = nn.log_softmax(q, dim=0)\nc = other.reduce_max(q, keep_dims=True)\n")
    assert renamed(source) == (b"import tensorflow.compat.v1 as tf1\nfrom tensorflow import nn\n"
                               b"a = tf1.reduce_max(q, keepdims=True)\nb = nn.log_softmax(q, axis=0)\n"
                               b"c = other.reduce_max(q, keep_dims=True)\n")


def test_a_call_already_giving_the_new_keyword_is_left_alone():
    source = b"import tensorflow as tf\nx = tf.nn.softmax(y, dim=1, axis=1)\n"
    assert renamed(source, EVERY) == source


def test_renames_a_tf1_file_cannot_take_are_listed():
    """Every rename whose TF2 name tf.compat.v1 lacks, or binds to another function, is
    written only into restructured programs (renames.toml: restructured_only), and the
    `tf.compat.v1.NAME` a file that stays TF1 gets instead is TF1's own function under
    both TensorFlows."""
    import inspect

    tf = pytest.importorskip("tensorflow")
    import tensorflow.compat.v1 as v1

    raw = tomllib.loads((ROOT / "rules" / "renames.toml").read_text("utf-8"))

    def resolve(root, dotted):
        for part in dotted.split("."):
            root = getattr(root, part, None)
        return root

    breaking = set()
    for old, new in raw["renames"].items():
        source, in_v1, in_tf2 = resolve(v1, old), resolve(v1, new), resolve(tf, new)
        assert in_tf2 is not None, new
        if in_v1 is None or inspect.unwrap(in_v1) is not inspect.unwrap(source):
            breaking.add(old)
    assert breaking == set(raw["restructured_only"]) and "set_random_seed" in breaking
    for old in breaking:
        assert resolve(tf, f"compat.v1.{old}") is resolve(v1, old) is resolve(v1, f"compat.v1.{old}"), old


@pytest.mark.tf
def test_the_shipped_table_is_what_the_installed_tensorflow_gives():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_keyword_renames.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.tf
def test_the_shipped_symbol_renames_are_what_the_installed_tensorflow_gives():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_symbol_renames.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
