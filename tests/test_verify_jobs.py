"""`-j N`: several proofs at once, reported in the order of the files, as with one at a time."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from fixture_patch import counterpart_text
from tf1gradfix.cli import main as cli
from tf1gradfix.verify import parallel

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "verify" / "dev_linear_sgd"


@pytest.mark.parametrize("command", [["verify", "--base", "HEAD"], ["verify", "a.py", "b.py"], ["rewrite", "x.py"]])
@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_a_job_count_below_one_is_a_usage_error(command, jobs, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main([*command, "-j", jobs])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "-j/--jobs" in err and "Traceback" not in err


def test_results_come_in_input_order_and_each_end_is_heard_once():
    heard: list[int] = []
    threads: set[str] = set()

    def prove(n: int) -> int:
        threads.add(threading.current_thread().name)
        time.sleep(0.05 * (4 - n))           # the last finishes first
        return n * n

    got = list(parallel.in_order([0, 1, 2, 3], prove, 2, lambda i, r: heard.append(i)))
    assert got == [(0, 0), (1, 1), (2, 4), (3, 9)]
    assert sorted(heard) == [0, 1, 2, 3] and len(threads) == 2


def test_a_failed_proof_is_raised_in_its_turn():
    def prove(n: int) -> int:
        if n == 1:
            raise ValueError("no")
        return n

    seen = []
    with pytest.raises(ValueError, match="no"):
        for item, result in parallel.in_order([0, 1, 2], prove, 2):
            seen.append(result)
    assert seen == [0]


def test_one_slot_runs_in_the_callers_thread():
    names = []
    list(parallel.in_order([1, 2], lambda n: names.append(threading.current_thread().name), 1))
    assert names == [threading.main_thread().name] * 2


def test_slots_are_never_more_than_programs_or_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert parallel.slots(None, 5) == 1
    assert parallel.slots(4, 5) == 2
    assert parallel.slots(2, 1) == 1


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


def _lines(out: str) -> list[str]:
    """The output without what differs from run to run (seconds)."""
    return [re.sub(r"\d+\.\d+ ?s\b", "T s", line) for line in out.splitlines()]


@pytest.mark.tf
@pytest.mark.integration
def test_two_proofs_at_once_give_what_one_at_a_time_gives(tmp_path, monkeypatch, capsys):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in ("train.py", "probe.py"):
        (repo / name).write_text((FIXTURE / "original.py").read_text(encoding="utf-8"), encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "TF1 code")
    (repo / "train.py").write_text((FIXTURE / "migrated.py").read_text(encoding="utf-8"), encoding="utf-8")
    (repo / "probe.py").write_text(counterpart_text(FIXTURE, "wrong_learning_rate"), encoding="utf-8")
    monkeypatch.chdir(repo)
    runs = {}
    for jobs in ("1", "2"):
        reports = tmp_path / f"reports{jobs}"
        code = cli.main(["verify", "--base", "HEAD", "--steps", "5", "-j", jobs, "--report-dir", str(reports)])
        captured = capsys.readouterr()
        summary = [{k: v for k, v in row.items() if k != "reason"}
                   for row in json.loads((reports / "summary.json").read_text())]
        runs[jobs] = (code, _lines(captured.out), summary)
        finished = [line for line in captured.err.splitlines() if re.match(r"tf1gradfix: \[\d/2\]", line)]
        assert len(finished) == 2, captured.err          # a progress line per proof, on stderr
        assert not any("[1/2]" in line for line in captured.out.splitlines())
    assert runs["1"] == runs["2"]
    assert runs["2"][0] == 1 and [row["verdict"] for row in runs["2"][2]] == ["DIVERGED", "EQUIVALENT"]
    assert sorted(p.name for p in repo.glob("*.py")) == ["probe.py", "train.py"], "no temporary file left"


@pytest.mark.tf
@pytest.mark.integration
def test_rewrite_proves_two_programs_at_once_as_one_at_a_time(tmp_path, monkeypatch, capsys):
    fixtures = FIXTURE.parent.parent / "rewrite"
    for name in ("graph_tail_rebinds", "train_result_unused_name"):
        shutil.copy(fixtures / name / "input.py", tmp_path / f"{name}.py")
    monkeypatch.chdir(tmp_path)
    runs = {}
    for jobs in ("1", "2"):
        code = cli.main(["rewrite", "--verify", "--check", "--steps", "5", "-j", jobs, "."])
        captured = capsys.readouterr()
        runs[jobs] = (code, _lines(captured.out))
        assert len(re.findall(r"^tf1gradfix: \[\d/2\] ", captured.err, re.MULTILINE)) == 2, captured.err
    assert runs["1"] == runs["2"]
    assert runs["2"][1].count("  2 EQUIVALENT") == 1, runs["2"]
