"""The legacy training-bug rules (TFG8xx, tf1gradfix/legacy/): each rule's VALID and
INVALID programs of rules/codes.toml, read by the restructuring (no TensorFlow)."""

from __future__ import annotations

import libcst as cst
import pytest

from tf1gradfix.emit.restructure import restructure
from tf1gradfix.rules.catalog import load

LEGACY = [r for r in load().rules if r.reported_by == "legacy"]
CASES = [(r.code, kind, i, text) for r in LEGACY for kind, texts in (("valid", r.valid), ("invalid", r.invalid))
         for i, text in enumerate(texts)]


def legacy_codes(text: str) -> list[str]:
    shaped = restructure(cst.parse_module(text.lstrip("\n")), "example.py")
    return [d[2] for d in shaped.diagnostics if d[2].startswith("TFG8")]


def test_every_legacy_rule_has_examples_both_ways():
    assert {r.code for r in LEGACY} == {"TFG801", "TFG802", "TFG803", "TFG804", "TFG805", "TFG806"}
    for rule in LEGACY:
        assert rule.valid and rule.invalid and rule.safety == "manual", rule.code


@pytest.mark.parametrize("code,kind,i,text", CASES, ids=[f"{c}-{k}-{i}" for c, k, i, _ in CASES])
def test_example(code: str, kind: str, i: int, text: str):
    found = legacy_codes(text)
    if kind == "valid":
        assert code not in found, found
    else:
        assert found.count(code) == 1, found
