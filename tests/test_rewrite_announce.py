"""A plain `rewrite` runs the user's programs to prove its restructurings: its first line
says so, how long it should take and how to skip it; a line follows as each proof ends."""

from __future__ import annotations

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

from test_reliability_reports import SESSION


@pytest.fixture
def folder(tmp_path, monkeypatch):
    from tf1gradfix.verify import orchestrate

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)

    def verified(original, candidate, **_):
        result = VerifyResult("EQUIVALENT", "compared", SideResult("original", str(original)),
                              SideResult("migrated", str(candidate)))
        result.elapsed = 2.0
        return result
    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    return tmp_path


def test_plain_rewrite_says_first_that_it_runs_the_programs_then_each_proof(folder, capsys):
    for name in ("a.py", "b.py"):
        (folder / name).write_text(SESSION)
    main(["rewrite", "-j", "1", "a.py", "b.py"])
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("tf1gradfix: proving 2 programs by running them, about ")
    assert err[0].endswith("`--no-verify` writes unproven, `--diff` writes nothing")
    done = [line for line in err if line.startswith("tf1gradfix: [")]
    assert done[0].startswith("tf1gradfix: [1/2] a.py: EQUIVALENT in 2.0 s; about ") and done[0].endswith(" left")
    assert done[1] == "tf1gradfix: [2/2] b.py: EQUIVALENT in 2.0 s"


def test_a_rewrite_that_proves_nothing_says_nothing_of_proofs(folder, capsys):
    (folder / "a.py").write_text(SESSION)
    main(["rewrite", "--diff", "a.py"])
    assert "proving" not in capsys.readouterr().err
