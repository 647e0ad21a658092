"""The rule tables: complete, consistent, and true of the installed TensorFlow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tf1gradfix.rules.catalog import SAFETIES, load
from tf1gradfix.cli.catalog_view import render_explanation, render_rules

ROOT = Path(__file__).resolve().parent.parent


def test_every_rule_is_complete():
    catalog = load()
    codes = [r.code for r in catalog.rules]
    assert len(codes) == len(set(codes)), "duplicate codes"
    for rule in catalog.rules:
        assert re.fullmatch(r"TFG\d{3}", rule.code)
        assert rule.safety in SAFETIES
        assert rule.title and rule.explanation and rule.before and rule.after
        assert rule.symbols or rule.methods or rule.renames or rule.reported_by, f"{rule.code} matches nothing"
        if rule.methods:
            assert rule.receiver in catalog.kinds, f"{rule.code}: unknown receiver kind {rule.receiver}"


def test_detection_covers_the_migrated_constructs():
    catalog = load()
    for symbol in [
        "tensorflow.placeholder", "tensorflow.placeholder_with_default", "tensorflow.Session",
        "tensorflow.InteractiveSession", "tensorflow.global_variables_initializer", "tensorflow.gradients",
        "tensorflow.train.MomentumOptimizer", "tensorflow.get_variable", "tensorflow.variable_scope",
        "tensorflow.get_collection", "tensorflow.GraphKeys.TRAINABLE_VARIABLES", "tensorflow.trainable_variables",
        "tensorflow.layers.dense", "tensorflow.GraphKeys.UPDATE_OPS", "tensorflow.set_random_seed",
        "tensorflow.contrib.layers.xavier_initializer",
    ]:
        assert catalog.symbol_rule(symbol) is not None, symbol
    methods = {m for r in catalog.rules for m in r.methods}
    assert {"run", "eval", "minimize", "compute_gradients", "apply_gradients"} <= methods


def test_most_specific_pattern_wins():
    catalog = load()
    assert catalog.symbol_rule("tensorflow.GraphKeys.UPDATE_OPS")[0].name == "update-ops"
    assert catalog.symbol_rule("tensorflow.GraphKeys.TRAINABLE_VARIABLES")[0].name == "collections"
    assert catalog.symbol_rule("tensorflow.Variable") is None
    assert catalog.symbol_rule("tensorflow.GradientTape") is None


def test_explain_shows_before_and_after():
    for rule in load().rules:
        text = render_explanation(rule.code.lower())
        after = "After (TF1 that `rewrite` then restructures):" if rule.after_tf1 else "After (TF2):"
        assert "Before (TF1):" in text and after in text and rule.title in text
    assert render_explanation("TFG000") is None


def test_rule_list_is_generated_from_the_tables():
    rules = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert render_rules("markdown") in rules, "docs/rules.md rule list is stale: paste `tf1gradfix rules --format markdown`"
    assert "(docs/rules.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.tf
def test_renames_resolve_in_installed_tensorflow():
    """Each TF1 name exists in tf.compat.v1 and each TF2 name in tf (2.21)."""
    pairs = sorted(load().renames.items())
    script = (
        "import json, sys, functools\n"
        "import tensorflow as tf\n"
        "def get(root, dotted):\n"
        "    try:\n"
        "        return functools.reduce(getattr, dotted.split('.'), root)\n"
        "    except AttributeError:\n"
        "        return None\n"
        "pairs = json.loads(sys.argv[1])\n"
        "bad = [(o, n) for o, n in pairs if get(tf.compat.v1, o[len('tensorflow.'):]) is None or get(tf, n[len('tensorflow.'):]) is None]\n"
        "print(json.dumps(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, json.dumps(pairs)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
