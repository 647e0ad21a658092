"""Emitters do not refuse: every refusal is decided by the model (tf1gradfix/model,
tf1gradfix/constructs) before any text is written, so no module of tf1gradfix/emit
makes a Refusal."""

from __future__ import annotations

import ast
from pathlib import Path

EMIT = Path(__file__).resolve().parent.parent / "tf1gradfix" / "emit"
NOT_MOVED_YET: dict[str, int] = {}   # (none left: the count may only go down)


def _refusals_made(source: str) -> list[int]:
    """Lines of `Refusal(...)` and `Refusal.of(...)` calls."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "Refusal" \
                or isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "Refusal":
            lines.append(node.lineno)
    return lines


def test_no_emitter_makes_a_refusal():
    made = {p.name: len(_refusals_made(p.read_text(encoding="utf-8"))) for p in sorted(EMIT.glob("*.py"))}
    assert {name: n for name, n in made.items() if n} == NOT_MOVED_YET, \
        "decide these in tf1gradfix/model or the construct's module, before any text is written"


def test_the_finder_finds_both_forms():
    sample = "raise Refusal.of(node, 'reason')\nx = Refusal(node, 'TFG905', 'text')\ny = refusal.of(1)\n"
    assert _refusals_made(sample) == [1, 2]
