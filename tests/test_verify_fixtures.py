"""Every entry of every fixtures/verify/*/expect.toml must get its verdict.

Each scenario folder holds ``original.py`` (TF1) and TF2 versions; the
table name in ``expect.toml`` is the TF2 file's stem.  Correct migrations
must come out EQUIVALENT and the deliberately wrong ones DIVERGED, otherwise
the verifier proves nothing.  Optional keys per entry: ``rtol``, ``atol``,
``timeout``, ``original`` (another original file), ``reason_contains``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tf1gradfix.verify import compare, report
from tf1gradfix.verify.orchestrate import verify_pair

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "verify"


def _cases():
    for expect in sorted(FIXTURES.glob("*/expect.toml")):
        data = tomllib.loads(expect.read_text(encoding="utf-8"))
        for name, entry in data.items():
            if isinstance(entry, dict) and "verdict" in entry:
                yield pytest.param(expect.parent, name, entry, id=f"{expect.parent.name}/{name}")


CASES = list(_cases())


def test_there_are_fixtures():
    assert len(CASES) >= 4, "fixtures/verify should hold scenario pairs"
    verdicts = {entry["verdict"] for _, _, entry in (c.values for c in CASES)}
    assert {"EQUIVALENT", "DIVERGED"} <= verdicts


def test_every_fixture_file_is_covered():
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        expect = folder / "expect.toml"
        assert expect.is_file(), f"{folder.name} has no expect.toml"
        names = set(tomllib.loads(expect.read_text(encoding="utf-8")))
        for py in folder.glob("*.py"):
            if py.stem != "original" and not py.stem.startswith("original"):
                assert py.stem in names, f"{py} has no entry in {expect}"


@pytest.mark.tf
@pytest.mark.parametrize("folder,name,entry", CASES)
def test_fixture_verdict(folder: Path, name: str, entry: dict):
    original = folder / entry.get("original", "original.py")
    result = verify_pair(original, folder / f"{name}.py",
                         rtol=entry.get("rtol", compare.DEFAULT_RTOL),
                         atol=entry.get("atol", compare.DEFAULT_ATOL),
                         timeout=entry.get("timeout", 180.0))
    summary = report.summary(result)
    assert result.verdict == entry["verdict"], f"{entry.get('why', '')}\n{summary}"
    assert result.exit_code == {"EQUIVALENT": 0, "DIVERGED": 1}.get(entry["verdict"], 2)
    if "reason_contains" in entry:
        assert entry["reason_contains"] in result.reason, summary
    if result.verdict == "EQUIVALENT":
        c = result.comparison
        assert c is not None and not c.divergences
        assert sum(s.compared for s in c.stats.values()) > 0, summary
    if result.verdict == "DIVERGED":
        assert result.first_divergence is not None, summary
