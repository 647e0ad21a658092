"""The verifier's own fixtures, rewritten by the tool: every original
(fixtures/verify/*/original*.py: programs written to exercise the verifier,
not the rewrite) that the rewrite accepts is proven by the verifier. They
differ from the rewrite fixtures in names, layout and idioms, so they check
the rewrite on programs it was not shaped on. A rewrite may come out
NOT_COMPARABLE only because random ops ran (trained dropout): never
DIVERGED, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "verify"
ORIGINALS = sorted(ROOT.glob("*/original*.py"))


def rewritten(path: Path) -> str | None:
    """What `tf1gradfix rewrite` writes (the restructuring, then the renames), or None."""
    result = process_source(path.name, path.read_bytes(), CodeFilter())
    return None if result.new_source is None else result.new_source.decode()


ACCEPTED = [p for p in ORIGINALS if rewritten(p) is not None]


def test_most_verify_originals_are_rewritten():
    assert len(ACCEPTED) * 2 > len(ORIGINALS), [p.parent.name for p in ACCEPTED]


@pytest.mark.tf
@pytest.mark.parametrize("original", ACCEPTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_rewrite_of_a_verify_original_is_proven(original, tmp_path):
    from tf1gradfix.verify import orchestrate

    migrated = tmp_path / "migrated.py"
    migrated.write_text(rewritten(original))
    result = orchestrate.verify_pair(original, migrated)
    if result.verdict == orchestrate.NOT_COMPARABLE:
        assert "random ops ran" in result.reason, result.reason
    else:
        assert result.verdict == orchestrate.EQUIVALENT, (result.verdict, result.reason)
