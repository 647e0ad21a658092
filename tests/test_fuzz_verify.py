"""The differential fuzz campaign (benchmarks/fuzz_verify.py): generator and a fixed-seed sample."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import fuzz_programs  # noqa: E402
import fuzz_verify  # noqa: E402

# programs the rewrite restructures and the verifier found EQUIVALENT in the campaign
SAMPLE_SEEDS = (2001, 2002)


def test_generator_is_seeded_and_programs_compile():
    sources = [fuzz_programs.generate(seed)[0] for seed in range(40)]
    assert sources == [fuzz_programs.generate(seed)[0] for seed in range(40)]
    assert len(set(sources)) == 40
    for source in sources:
        compile(source, "generated.py", "exec", dont_inherit=True)
    tags = {t for seed in range(40) for t in fuzz_programs.generate(seed)[1]}
    assert {"embedding", "get_variable", "dense", "edit", "minimize"} <= tags


def test_report_counts_verdicts_and_refusals():
    records = [dict(status="rewritten", verdict="EQUIVALENT", refusals=[], error="", time=1.0),
               dict(status="rewritten", verdict="DIVERGED", refusals=[], error="", time=1.0),
               dict(status="refused", verdict="", refusals=["TFG905 `tf.gradients` in graph code"], error="")]
    text = fuzz_verify.report(records, 6.0)
    assert re.search(r"^refused +1 \(33%\)$", text, re.M)
    assert re.search(r"^DIVERGED +1$", text, re.M)
    assert re.search(r"^MIGRATED_FAILED +0$", text, re.M)
    assert "TFG905 `tf.gradients` in graph code" in text
    assert "2.00 s" in text


@pytest.mark.slow
@pytest.mark.tf
def test_fixed_seed_sample_is_equivalent(tmp_path):
    for seed in SAMPLE_SEEDS:
        rec = fuzz_verify.run_one(seed, tmp_path)
        assert rec["status"] == "rewritten", rec
        assert rec["verdict"] == "EQUIVALENT", rec

