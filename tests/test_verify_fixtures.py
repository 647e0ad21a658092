"""Every entry of every fixtures/verify/*/expect.toml must get its verdict.

Each scenario folder holds ``original.py`` (TF1) and TF2 versions; the
table name in ``expect.toml`` is the TF2 version's stem.  Correct migrations
must come out EQUIVALENT and the deliberately wrong ones DIVERGED, otherwise
the verifier proves nothing.  Optional keys per entry: ``rtol``, ``atol``,
``timeout``, ``original`` (another original file), ``reason_contains``, ``steps``
(a step budget: the verdict must then be labelled partial when EQUIVALENT),
``whole_verdict`` (the verdict of the same pair run whole, without ``steps``),
``args`` (the program arguments both sides get) and ``beside`` (a folder the patched
program is written into, for the files it reads next to itself, and removed from after).

A TF2 version is either a whole file ``NAME.py`` or, where it differs from
a correct program by a few lines, a patch ``NAME.patch``: a unified diff
(``--- BASE``, ``+++ NAME.py``, hunks ``@@ -L,N +L,N @@``) against the
file the entry's ``base`` key names, relative to the folder (the scenario's
``migrated.py``, or ``../../rewrite/<scenario>/expected.py``).  The patch
is applied before the verifier runs (tests/fixture_patch.py), strictly: a
hunk must match its base at the lines its header names, or the test fails
saying which hunk and which line differ.  When a base changes, write the
counterpart again on purpose: ``python tests/fixture_patch.py apply OLD_BASE
NAME.patch`` gives the program as it was, ``python tests/fixture_patch.py
diff BASE NEW.py`` the new patch.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fixture_patch import counterpart_text
from tf1gradfix.verify import comparison, report
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
        for program in [*folder.glob("*.py"), *folder.glob("*.patch")]:
            if not program.stem.startswith("original"):
                assert program.stem in names, f"{program} has no entry in {expect}"


@pytest.mark.parametrize("folder,name,entry", CASES)
def test_every_entry_has_one_program(folder: Path, name: str, entry: dict):
    """NAME.py or NAME.patch with a base, never both; a patch applies, changes its base and parses."""
    whole, patch = (folder / f"{name}.py").is_file(), (folder / f"{name}.patch").is_file()
    assert whole != patch, f"{folder.name}/{name}: give either {name}.py or {name}.patch"
    assert ("base" in entry) == patch, f"{folder.name}/{name}: a base belongs to a .patch entry, and only there"
    if patch:
        first = (folder / f"{name}.patch").read_text(encoding="utf-8").split("\n", 1)[0]
        assert first == f"--- {entry['base']}", f"{folder.name}/{name}.patch names another base than expect.toml"
        text = counterpart_text(folder, name, entry)
        assert text != (folder / entry["base"]).read_text(encoding="utf-8"), f"{folder.name}/{name}: changes nothing"
        compile(text, f"{name}.py", "exec")


@pytest.mark.tf
@pytest.mark.parametrize("folder,name,entry", CASES)
def test_fixture_verdict(folder: Path, name: str, entry: dict, tmp_path: Path):
    original = folder / entry.get("original", "original.py")
    migrated = folder / f"{name}.py"
    if not migrated.is_file():   # NAME.patch: the program is written out, its base applied
        beside = entry.get("beside")   # (a folder whose files the program reads next to it: a checkpoint)
        migrated = (folder / beside / f".{name}.fixture.py") if beside else tmp_path / f"{name}.py"
        migrated.write_text(counterpart_text(folder, name, entry), encoding="utf-8")
    try:
        result = verify_pair(original, migrated,
                             rtol=entry.get("rtol", comparison.DEFAULT_RTOL),
                             atol=entry.get("atol", comparison.DEFAULT_ATOL),
                             timeout=entry.get("timeout", 180.0), steps=entry.get("steps"),
                             program_args=entry.get("args", ()))
        whole = verify_pair(original, migrated, timeout=entry.get("timeout", 180.0)) \
            if "whole_verdict" in entry else None
    finally:
        if entry.get("beside"):
            migrated.unlink(missing_ok=True)
    summary = report.summary(result)
    if "steps" in entry and result.verdict == "EQUIVALENT":
        assert result.budget and result.budget["partial"], summary
        assert summary.startswith(f"EQUIVALENT within the first {result.budget['steps_compared']} training steps")
    if whole is not None:
        assert whole.verdict == entry["whole_verdict"], report.summary(whole)
        assert whole.budget is None
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
