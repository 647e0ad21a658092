"""The verifier's failure paths: bad tolerances, exit statuses, signals, forked
processes, leftover files, report errors and user modules shadowing the stdlib.

Most tests replace the two TensorFlow runners by a TensorFlow-free one that runs
the program through the same `runner_common.run_user_script`, so the orchestration
(process groups, exit statuses, signals, cleanup) is tested at no TensorFlow cost.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import test_verify_hostile

from tf1gradfix.cli import main as cli
from tf1gradfix.verify import comparison, orchestrate, side_runs


def test_a_divergence_names_an_element_that_fails_the_tolerance():
    # element 0 has the largest difference but is within rtol; element 1 fails atol + rtol*|b|
    ok, abs_err, rel_err, index, _ = comparison.check([1.0, 1e-5], [1.0005, 1.3e-5], 1e-3, 1e-6)
    assert not ok and index == [1]
    assert abs_err > 1e-6 + 1e-3 * 1.3e-5
    cmp = comparison.Comparison()
    comparison._record(cmp, "gradient", [1.0, 1e-5], [1.0005, 1.3e-5], 1e-3, 1e-6, step=1, name="w", order=(0, 0))
    text = cmp.first.describe()
    assert "original 1e-05 vs migrated 1.3e-05 at [1]" in text
    assert "largest difference at [0]" in text and "within tolerance" in text
    # the statistics still show the largest difference
    assert math.isclose(cmp.stats["gradient"].max_abs_err, 5e-4, rel_tol=1e-6)


# -- a TensorFlow-free runner --------------------------------------------------------

FAKE_RUNNER = '''
import os, sys
from tf1gradfix.verify import runner_common as rc

SIDE = "{side}"
trace_dir, script = sys.argv[1], sys.argv[2]
trace = rc.Trace(trace_dir, SIDE)
trace.event("start", side=SIDE, script=os.path.abspath(script))
final = lambda: trace.write_atomic(SIDE + ".final.json", {{"variables": {{}}}})
sys.exit(rc.run_user_script(script, trace, before_exit=final))
'''


def install_fake_runners(folder: Path) -> dict:
    """Write the two runner modules into `folder`; return the PYTHONPATH and RUNNERS to use."""
    folder.mkdir(exist_ok=True)
    for side in ("original", "migrated"):
        (folder / f"fake_runner_{side}.py").write_text(FAKE_RUNNER.format(side=side))
    return {"original": "fake_runner_original", "migrated": "fake_runner_migrated"}


@pytest.fixture
def fake_runners(tmp_path, monkeypatch):
    runners = install_fake_runners(tmp_path / "runners")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "runners"))
    monkeypatch.setenv("TF1GRADFIX_NO_POOL", "1")   # a warm pool would import TensorFlow for nothing
    monkeypatch.setattr(side_runs, "RUNNERS", runners)
    return runners


def programs(tmp_path, original: str, migrated: str) -> tuple[Path, Path]:
    folder = tmp_path / "programs"
    folder.mkdir(exist_ok=True)
    (folder / "original.py").write_text(textwrap.dedent(original))
    (folder / "migrated.py").write_text(textwrap.dedent(migrated))
    return folder / "original.py", folder / "migrated.py"


# -- item 7: tolerances and timeout ---------------------------------------------------

def test_the_fake_runner_sees_a_divergence(tmp_path, fake_runners):
    original, migrated = programs(tmp_path, "print('loss', 1.0)", "print('loss', 1.5)")
    assert orchestrate.verify_pair(original, migrated, timeout=60).verdict == "DIVERGED"


@pytest.mark.parametrize("limits", [{"rtol": math.nan}, {"atol": math.nan}, {"rtol": -1e-3},
                                    {"atol": math.inf}, {"timeout": 0}, {"timeout": -5}, {"timeout": math.nan}])
def test_a_meaningless_tolerance_or_timeout_is_refused_not_turned_into_a_verdict(tmp_path, fake_runners, limits):
    original, migrated = programs(tmp_path, "print('loss', 1.0)", "print('loss', 1.5)")
    with pytest.raises(ValueError, match=next(iter(limits))):
        orchestrate.verify_pair(original, migrated, **{"timeout": 60, **limits})


@pytest.mark.parametrize("option", [["--rtol", "nan"], ["--atol", "nan"], ["--rtol", "-1"], ["--atol", "inf"],
                                    ["--timeout", "0"], ["--timeout", "-5"], ["--timeout", "nan"],
                                    ["--plot", "p.txt"]])
def test_verify_refuses_bad_numbers_and_plot_formats_as_argument_errors(tmp_path, capsys, option):
    original, migrated = programs(tmp_path, "print(1)", "print(1)")
    with pytest.raises(SystemExit) as stop:
        cli.main(["verify", str(original), str(migrated), *option])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option[0]}" in err and "Traceback" not in err


# -- item 18: the process's real exit status counts --------------------------------------

EXIT_LATE = "import atexit, os\natexit.register(lambda: os._exit({code}))\n"


def test_an_exit_status_set_after_the_script_body_fails_that_side(tmp_path, fake_runners):
    original, migrated = programs(tmp_path, "print('loss', 1.0)\n",
                                  "print('loss', 1.0)\n" + EXIT_LATE.format(code=3))
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    assert result.verdict == "MIGRATED_FAILED", result.reason
    assert "status 3" in result.reason and result.migrated.exit_code == 3


def test_an_original_failing_by_its_exit_status_is_original_failed(tmp_path, fake_runners):
    original, migrated = programs(tmp_path, "import sys\nprint('loss', 1.0)\nsys.exit(4)\n", "print('loss', 1.0)\n")
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    assert result.verdict == "ORIGINAL_FAILED" and "status 4" in result.reason, result.reason


def test_both_sides_exiting_with_the_same_status_are_compared_and_the_status_reported(tmp_path, fake_runners):
    late = EXIT_LATE.format(code=3)
    original, migrated = programs(tmp_path, "print('loss', 1.0)\n" + late, "print('loss', 1.0)\n" + late)
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    assert result.verdict == "EQUIVALENT" and "both programs exited with status 3" in result.reason, result.reason
    original, migrated = programs(tmp_path, "print('loss', 1.0)\n" + late, "print('loss', 1.5)\n" + late)
    assert orchestrate.verify_pair(original, migrated, timeout=60).verdict == "DIVERGED"


# -- item 14: what the program forks dies with its side ------------------------------------

def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids_in(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid")) if p.read_text().strip()]


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


SPAWN = """
import pathlib, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
pathlib.Path({marker!r}).write_text(str(child.pid))
print('loss', 1.0)
"""


def test_processes_a_program_forks_do_not_outlive_the_verdict(tmp_path, fake_runners):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, migrated = programs(tmp_path, SPAWN.format(marker=str(marks / "o.pid")),
                                  SPAWN.format(marker=str(marks / "m.pid")))
    try:
        result = orchestrate.verify_pair(original, migrated, timeout=60)
        assert result.verdict == "EQUIVALENT", result.reason
        children = pids_in(marks)
        assert len(children) == 2
        deadline = time.monotonic() + 5   # reaped by init, which may take a moment
        while any(alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in children if alive(p)], "a forked process outlived the verdict"
    finally:
        kill_all(pids_in(marks))


# -- item 13: stop signals kill both sides and remove every temporary file -----------------

LOOP = """
import os, pathlib, time
pathlib.Path({marker!r}).write_text(str(os.getpid()))
while True:
    time.sleep(0.05)
"""

DRIVER = """
import sys
from pathlib import Path
from tf1gradfix.verify import orchestrate, side_runs
side_runs.RUNNERS = {runners!r}
mode, original, migrated = sys.argv[1:]
if mode == "verify":
    from tf1gradfix.cli.main import main
    sys.exit(main(["verify", original, migrated, "--timeout", "120"]))
if mode == "pair":   # the library call, without the command line's own signal handling
    sys.exit(orchestrate.verify_pair(Path(original), Path(migrated), timeout=120).exit_code)
from tf1gradfix.run.batch import unwritable
from tf1gradfix.cli.rewrite_verify import prove_and_write
prove_and_write([(original, Path(migrated).read_bytes())], write=True, report_dir=None,
                rtol=1e-3, atol=1e-6, timeout=120, unwritable=unwritable)
"""


def start_driver(tmp_path, mode: str, original: Path, migrated: Path) -> subprocess.Popen:
    """The verifier in a child process (with the TensorFlow-free runners), its temp folder under tmp_path."""
    runners = install_fake_runners(tmp_path / "runners")
    (tmp_path / "driver.py").write_text(DRIVER.format(runners=runners))
    (tmp_path / "tmp").mkdir()
    path = os.pathsep.join([str(tmp_path / "runners"), str(Path(orchestrate.__file__).parents[2])])
    env = {**os.environ, "PYTHONPATH": path, "TMPDIR": str(tmp_path / "tmp"), "TF1GRADFIX_NO_POOL": "1"}
    return subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), mode, str(original), str(migrated)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for(predicate, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("mode,sig", [("pair", signal.SIGTERM), ("pair", signal.SIGHUP),
                                      ("verify", signal.SIGINT), ("rewrite", signal.SIGTERM)])
def test_a_stop_signal_kills_both_sides_and_leaves_no_file(tmp_path, mode, sig):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, migrated = programs(tmp_path, LOOP.format(marker=str(marks / "o.pid")),
                                  LOOP.format(marker=str(marks / "m.pid")))
    if mode == "rewrite":   # the rewrite's candidate is written next to the original, from this source
        migrated = migrated.rename(tmp_path / "rewritten.py")
    before = sorted(p.name for p in original.parent.iterdir())
    driver = start_driver(tmp_path, mode, original, migrated)
    try:
        assert wait_for(lambda: len(pids_in(marks)) == 2), driver.stderr.read() if driver.poll() is not None else ""
        if mode == "rewrite":
            assert any("candidate" in p.name for p in original.parent.iterdir())
        driver.send_signal(sig)
        out, err = driver.communicate(timeout=30)
        assert driver.returncode == 128 + sig, err
        said = [line for line in err.strip().splitlines() if not _progress(line)]
        assert len(said) == 1 and signal.Signals(sig).name in said[0], err
        assert wait_for(lambda: not any(alive(p) for p in pids_in(marks)), 5), "a program outlived the verifier"
        assert list((tmp_path / "tmp").iterdir()) == [], "temporary folder left behind"
        assert sorted(p.name for p in original.parent.iterdir()) == before, "candidate left behind"
    finally:
        if driver.poll() is None:
            driver.kill()
        kill_all(pids_in(marks))


# -- item 17: the candidate never touches a user's file; report errors are one line, exit 2 --

def prove(original: Path, source: bytes, **options):
    from tf1gradfix.run.batch import unwritable
    from tf1gradfix.cli.rewrite_verify import prove_and_write

    settings = dict(write=True, report_dir=None, rtol=1e-3, atol=1e-6, timeout=60, unwritable=unwritable)
    return prove_and_write([(str(original), source)], **{**settings, **options})


def test_a_user_file_named_like_a_candidate_is_never_overwritten_or_deleted(tmp_path, fake_runners):
    original, _ = programs(tmp_path, "print('loss', 1.0)\n", "")
    mine = original.parent / ".original.tf1gradfix-candidate.py"
    mine.write_text("# the user's own file\n")
    [row] = prove(original, b"print('loss', 1.0)\n# rewritten\n")
    assert row.verdict == "EQUIVALENT" and row.written
    assert mine.read_text() == "# the user's own file\n"
    assert sorted(p.name for p in original.parent.iterdir()) == [".original.tf1gradfix-candidate.py",
                                                                 "migrated.py", "original.py"]


def test_a_folder_where_the_candidate_cannot_be_written_is_a_one_line_error(tmp_path, fake_runners, monkeypatch, capsys):
    from tf1gradfix.cli import rewrite_verify
    from tf1gradfix.verify import stopping

    def refuse(folder, *args):
        raise PermissionError(13, "Permission denied", folder)
    monkeypatch.setattr(stopping, "new_file", refuse)
    original, _ = programs(tmp_path, "print('loss', 1.0)\n", "")
    [row] = prove(original, b"print('loss', 1.0)\n")
    assert row.verdict == "NOT_VERIFIED" and not row.written and "Permission denied" in row.reason
    assert rewrite_verify.exit_code([row]) == 2
    assert original.read_text() == "print('loss', 1.0)\n"


def test_a_report_dir_that_is_a_file_still_proves_and_prints_then_exits_2(tmp_path, fake_runners, capsys):
    from tf1gradfix.cli import rewrite_verify

    original, _ = programs(tmp_path, "print('loss', 1.0)\n", "")
    not_a_folder = tmp_path / "reports"
    not_a_folder.write_text("")
    [row] = prove(original, b"print('loss', 1.0)\n# rewritten\n", report_dir=str(not_a_folder))
    out, err = capsys.readouterr()
    assert row.verdict == "EQUIVALENT" and row.written and row.reports_failed
    assert "EQUIVALENT" in out
    assert [line for line in err.strip().splitlines() if not _progress(line)] == [
        f"tf1gradfix: --report-dir {not_a_folder}: not a folder; no reports written"]
    assert rewrite_verify.exit_code([row]) == 2
    assert "reports not written" in rewrite_verify.render_rows([row])


@pytest.mark.parametrize("option", ["--json", "--junit", "--markdown", "--plot"])
def test_a_report_that_cannot_be_written_is_one_line_and_exit_2_after_the_verdict(tmp_path, fake_runners, capsys,
                                                                                  option):
    original, migrated = programs(tmp_path, "print('loss', 1.0)\n", "print('loss', 1.0)\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / ("r.png" if option == "--plot" else "r.out")   # a path below a regular file
    with pytest.raises(SystemExit) as stop:
        cli.main(["verify", str(original), str(migrated), "--timeout", "60", option, str(target)])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out.startswith("EQUIVALENT: ")
    assert len(err.strip().splitlines()) == 1 and err.startswith("tf1gradfix: cannot write the ") and str(target) in err


def test_a_program_choosing_its_matplotlib_backend_is_still_recorded(tmp_path, fake_runners):
    """`matplotlib.use("Agg")` in the program selects the recording backend: a drawing that
    differs is a divergence, on whichever side pyplot was imported first."""
    plot = """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.plot([0.0, 1.0], [{}, 2.0])
    plt.savefig("drawn.png")
    print("loss", 1.0)
    """
    original, migrated = programs(tmp_path, plot.format(1.0), plot.format(1.5))
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    assert result.verdict == "DIVERGED" and "plotted value" in result.reason, result.reason
    original, migrated = programs(tmp_path, plot.format(1.0), plot.format(1.0))
    assert orchestrate.verify_pair(original, migrated, timeout=60).verdict == "EQUIVALENT"


def test_a_plot_in_a_format_matplotlib_does_not_write_is_a_report_error(tmp_path, fake_runners):
    from tf1gradfix.verify import report

    original, migrated = programs(tmp_path, "print('loss', 1.0)\n", "print('loss', 1.0)\n")
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    with pytest.raises(report.ReportError):
        report.write_reports(result, plot=tmp_path / "p.txt")


# -- item 19: a user's module named like a standard one is never imported by the tool ------

SHADOWED = ("argparse", "json", "tempfile", "typing", "dataclasses", "pathlib", "random", "base64", "threading",
            "traceback", "subprocess", "signal", "shutil", "contextlib", "functools", "runpy")


def shadow_stdlib(folder: Path, marks: Path) -> None:
    for name in SHADOWED:
        (folder / f"{name}.py").write_text(f"open({str(marks / name)!r}, 'w').close()\n")


def test_python_m_tf1gradfix_never_imports_the_users_modules(tmp_path):
    project, marks = tmp_path / "project", tmp_path / "marks"
    project.mkdir()
    marks.mkdir()
    shadow_stdlib(project, marks)
    (project / "train.py").write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32)\n")
    proc = subprocess.run([sys.executable, "-m", "tf1gradfix", "check", "."], cwd=project,
                          capture_output=True, text=True, timeout=120)
    assert sorted(p.name for p in marks.iterdir()) == [], proc.stdout + proc.stderr
    assert proc.returncode == 1 and "train.py" in proc.stdout, proc.stdout + proc.stderr


def test_the_runners_imports_come_before_the_programs_folder(tmp_path, fake_runners):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, migrated = programs(tmp_path, "print('loss', 1.0)\n", "print('loss', 1.0)\n")
    shadow_stdlib(original.parent, marks)
    result = orchestrate.verify_pair(original, migrated, timeout=60)
    assert sorted(p.name for p in marks.iterdir()) == [], result.reason
    assert result.verdict == "EQUIVALENT", result.reason


def test_the_runners_die_with_a_verifier_killed_outright(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, migrated = programs(tmp_path, LOOP.format(marker=str(marks / "o.pid")),
                                  LOOP.format(marker=str(marks / "m.pid")))
    driver = start_driver(tmp_path, "pair", original, migrated)
    try:
        assert wait_for(lambda: len(pids_in(marks)) == 2)
        driver.kill()   # SIGKILL: no handler runs, no finally
        driver.communicate(timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in pids_in(marks)), 5), "a program outlived the verifier"
    finally:
        if driver.poll() is None:
            driver.kill()
        kill_all(pids_in(marks))


# -- the same with the real TensorFlow runners ------------------------------------------------

# The small pair of the hostile-program tests, without their tails.
TF1_PROGRAM = test_verify_hostile.ORIGINAL.replace("{tail}", "")
TF2_PROGRAM = test_verify_hostile.MIGRATED.replace("{tail}", "")


@pytest.mark.tf
def test_real_runners_count_a_late_exit_status_and_skip_the_programs_stdlib_shadows(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, migrated = programs(tmp_path, TF1_PROGRAM, TF2_PROGRAM + EXIT_LATE.format(code=3))
    for name in ("json", "argparse", "tempfile"):
        (original.parent / f"{name}.py").write_text(f"open({str(marks / name)!r}, 'w').close()\n")
    result = orchestrate.verify_pair(original, migrated, timeout=120)
    assert sorted(p.name for p in marks.iterdir()) == [], result.reason
    assert result.verdict == "MIGRATED_FAILED", result.reason
    assert result.reason == "migrated exited with status 3 (set after the script ended: atexit or os._exit)"


def _progress(line: str) -> bool:
    """A proving rewrite's announcement and progress lines (cli/rewrite_verify.py)."""
    return line.startswith("tf1gradfix: proving ") or line.startswith("tf1gradfix: [")

