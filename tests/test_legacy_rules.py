"""The legacy training-bug rules (TFG8xx, tf1gradfix/legacy/): each rule's VALID and
INVALID programs of rules/codes.toml, read by the restructuring (no TensorFlow)."""

from __future__ import annotations

import libcst as cst
import numpy as np
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


def _trace(folder, initial: dict, final: dict) -> str:
    import json

    from tf1gradfix.verify.runner_common import encode_array

    from tf1gradfix.verify import trace_seal

    def text(values):
        return json.dumps({"variables": {
            k: {"value": encode_array(np.asarray(v, dtype=np.float32)), "trainable": True} for k, v in values.items()}})
    (folder / "init.json").write_text(text(initial))   # (shared by the sides; the final values are the original's own)
    trace_seal.make_side_dirs(str(folder))
    with open(trace_seal.side_file(str(folder), "original", "final.json"), "w", encoding="utf-8") as fh:
        fh.write(trace_seal.seal(trace_seal.token(str(folder), "original"), text(final)))
    return str(folder)


def _example(code: str, kind: str = "invalid") -> str:
    return getattr(load().by_code[code], kind)[0].lstrip("\n")


def test_evidence_reads_the_original_run(tmp_path):
    """What the TF1 run showed, per bug: how far the frozen variable moved, how many gradient
    computations gave the listed variable none, how many draws ran in runs updating nothing,
    how often the gradients applied were above the clip norm."""
    from tf1gradfix.legacy import evidence
    from tf1gradfix.verify.runner_common import encode_array

    frozen = tmp_path / "frozen.py"
    frozen.write_text(_example("TFG802"))
    trace = _trace(tmp_path, {"w": [[1.0], [1.0]], "scale": 2.0}, {"w": [[0.5], [0.25]], "scale": 1.75})
    assert evidence.measured(frozen, trace, []) == [
        "line 6: TFG802: in TF1 `scale` moved by up to 0.25 (mean 0.25) over the run"]
    unreached = tmp_path / "unreached.py"
    unreached.write_text(_example("TFG803"))
    events = [{"kind": "compute", "none": ["bias"]}, {"kind": "compute", "none": ["bias"]}, {"kind": "compute"}]
    trace = _trace(tmp_path, {"bias": [0.0]}, {"bias": [0.0]})
    assert evidence.measured(unreached, trace, events) == [
        "line 7: TFG803: in TF1 `bias` got no gradient in 2 of 3 gradient computations and moved by 0"]
    drawing = tmp_path / "drawing.py"
    drawing.write_text(_example("TFG804"))
    events = [{"kind": "aligned", "ops": 1, "draws": 6, "training": 6, "evaluating": 3}]
    assert evidence.measured(drawing, trace, events) == [
        "line 12: TFG804: TF1 drew random numbers 6 times, 3 of them in runs that update no variable "
        "(each moved on the stream the training steps draw from)"]
    masking = tmp_path / "masking.py"
    masking.write_text(_example("TFG805"))
    trace = _trace(tmp_path, {"emb": [[1.0], [1.0]]}, {"emb": [[0.5], [1.0]]})
    assert evidence.measured(masking, trace, []) == [
        "line 9: TFG805: in TF1 1 of the 2 entries of `emb` kept their initial value (the others moved by up to 0.5)"]
    clipping = tmp_path / "clipping.py"
    clipping.write_text(_example("TFG806"))
    applied = [[[3.0], [4.0]], [[0.3], [0.4]], [[0.0], [2.0]]]   # norms 5, 0.5, 2 against the clip norm 1.0
    events = [{"kind": "apply", "grads": {"w": encode_array(np.asarray(g, dtype=np.float32))}} for g in applied]
    assert evidence.measured(clipping, trace, events) == [
        "line 8: TFG806: in TF1 the gradients applied to `w` had a global norm above 1 in 2 of their 3 updates "
        "(largest 5): clipping scales such gradients down"]
    clean = tmp_path / "clean.py"
    clean.write_text(_example("TFG802", "valid"))
    assert evidence.measured(clean, trace, events) == []


def test_check_reports_them_when_selected():
    """A plain `check` reads with Python's parser only (no program model, no legacy rule);
    `check --select TFG8` (or one of its codes) builds the model for them."""
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter

    data = _example("TFG802").encode()
    plain = process_source("x.py", data, CodeFilter(), check=True)
    assert not [f for f in plain.findings if f.code.startswith("TFG8")]
    for select in (("TFG8",), ("TFG802",), ("TFG80", "TFG1")):
        found = process_source("x.py", data, CodeFilter(select=select), check=True).findings
        assert [(f.line, f.code, f.safety, f.fixed) for f in found if f.code.startswith("TFG8")] == [
            (6, "TFG802", "manual", False)], select
    ignored = process_source("x.py", data, CodeFilter(select=("TFG8",), ignore=("TFG802",)), check=True)
    assert ignored.findings == []
    silenced = data.replace(b"var_list=[w, scale])", b"var_list=[w, scale])  # tf1gradfix: ignore[TFG802]")
    assert process_source("x.py", silenced, CodeFilter(select=("TFG8",)), check=True).findings == []
