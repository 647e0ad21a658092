"""Every failure is a clear error with exit 2: no hang, no orphan, no lost edit.

Crashes of our own, FIFOs, unreadable folders, bad numbers, a closed stdin,
edits saved during a run, unprintable file names, broken settings, SIGTERM and
SIGHUP, oversized files, one file named several ways. We run as root, so access
is denied through a child process that drops to `nobody`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tf1gradfix.run import batch
from tf1gradfix.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
OLD = b"import tensorflow as tf\ntf.set_random_seed(0)\nx = tf.random_normal([2])\n"
NEW = b"import tensorflow as tf\ntf.compat.v1.set_random_seed(0)\nx = tf.random.normal([2])\n"
NOBODY = 65534


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def cli(*argv: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 60):
    """`python -m tf1gradfix` in a child, for what in-process runs cannot show."""
    return subprocess.run(
        [sys.executable, "-m", "tf1gradfix", *argv], cwd=cwd, capture_output=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TF1GRADFIX_NO_CACHE": "1", **(env or {})},
    )


def as_nobody(argv: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """`main(argv)` in a forked child that dropped root (which ignores permissions).

    Forked, not started: the interpreter may live where `nobody` cannot read, so
    everything the run needs is loaded here first."""
    from tf1gradfix.detect import prefilter
    from tf1gradfix.run.engine import preload

    preload()
    prefilter.load()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 99
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
                os.environ["TF1GRADFIX_NO_CACHE"] = "1"
                os.chdir(cwd)
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(NOBODY)
                    os.setuid(NOBODY)
                code = main(argv)
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read()


@pytest.fixture
def shared_dir():
    """A folder `nobody` can reach (pytest's own tmp folders are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="tf1gradfix-reliability-"))
    base.chmod(0o755)
    yield base
    for root, dirs, _ in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(base)


def _one_line(err: bytes) -> str:
    text = err.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1, text
    return text.strip()


# -- 1. our own crashes are errors, not findings ----------------------------------


def _crash_on(name: str, real):
    def patched(path, *args, **kwargs):
        if Path(path).name == name:
            raise RuntimeError("boom")
        return real(path, *args, **kwargs)

    return patched


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "workers"])
def test_internal_error_names_the_file_exits_2_and_the_run_goes_on(tmp_path, capsys, monkeypatch, jobs):
    # A bug outside the engine (here while deciding whether the file may be replaced);
    # forked workers inherit the patch.
    monkeypatch.setattr(batch, "unwritable", _crash_on("bad.py", batch.unwritable))
    (tmp_path / "bad.py").write_bytes(OLD)
    (tmp_path / "good.py").write_bytes(OLD)
    assert main(["rewrite", "-j", jobs, "bad.py", "good.py"]) == 2
    out = capsys.readouterr().out
    assert "bad.py: error: internal error: RuntimeError: boom; file left unchanged (a bug in tf1gradfix: please report it)" in out
    assert (tmp_path / "bad.py").read_bytes() == OLD
    assert (tmp_path / "good.py").read_bytes() == NEW


def test_crash_outside_any_file_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from tf1gradfix.cli import file_run

    def broken(*_args, **_kwargs):
        raise ValueError("walk failed")

    monkeypatch.setattr(file_run, "discover", broken)
    assert main(["check", "."]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "tf1gradfix: internal error: ValueError: walk failed (a bug in tf1gradfix: please report it)\n"


# -- 3. only regular files are read --------------------------------------------------


def test_fifo_in_a_folder_is_skipped_and_a_named_fifo_is_an_error(tmp_path, capsys):
    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tree / "x.py")  # opening it would block until a writer comes: never
    (tree / "real.py").write_bytes(OLD)
    proc = cli("check", "tree", cwd=tmp_path, timeout=30)  # a child: a hang is a timeout, not a stuck suite
    assert proc.returncode == 1, proc.stderr
    assert b"x.py" not in proc.stdout + proc.stderr
    assert main(["rewrite", "-j", "1", "tree"]) == 0
    assert "x.py" not in capsys.readouterr().out
    assert (tree / "real.py").read_bytes() == NEW
    assert main(["check", "-j", "1", "tree/x.py", "tree/real.py"]) == 2
    assert "tree/x.py: error: not a regular file; not read\n" in capsys.readouterr().out


# -- 6. folders that cannot be read -----------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX permissions")
@pytest.mark.parametrize("mode, message", [(0o300, "cannot read folder"), (0o444, "cannot enter folder")],
                         ids=["unlistable", "listable-not-enterable"])
def test_unreadable_folder_is_an_error_and_the_rest_is_checked(shared_dir, mode, message):
    hidden = shared_dir / "hidden"
    hidden.mkdir()
    (hidden / "tf1.py").write_bytes(OLD)
    (shared_dir / "open.py").write_bytes(OLD)
    hidden.chmod(mode)
    code, out, err = as_nobody(["check", "-j", "1", "."], shared_dir)
    assert b"Traceback" not in err, err.decode()
    assert code == 2
    assert f"hidden: error: {message}: Permission denied; its files were not checked".encode() in out
    assert b"open.py:2:1: TFG401" in out


# -- 7. numbers on the command line ----------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["check", "-j", "0", "a.py"],
    ["check", "-j", "-3", "a.py"],
    ["rewrite", "--verify", "--rtol", "-1", "a.py"],
    ["rewrite", "--verify", "--atol", "nan", "a.py"],
    ["rewrite", "--verify", "--timeout", "0", "a.py"],
    ["rewrite", "--verify", "--timeout", "-5", "a.py"],
    ["rewrite", "--verify", "--timeout", "nan", "a.py"],
])
def test_bad_numbers_are_usage_errors(tmp_path, capsys, argv):
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_workers_never_outnumber_files(tmp_path, capsys, monkeypatch):
    import concurrent.futures

    real = concurrent.futures.ProcessPoolExecutor
    asked = []

    def recording(*args, **kwargs):
        asked.append(kwargs["max_workers"])
        return real(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", recording)
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_bytes(OLD)
    assert main(["check", "-j", "2000", "a.py", "b.py", "c.py"]) == 1
    assert asked == [3]
    assert batch.worker_count(2000, 10_000) == batch.MAX_WORKERS


# -- 8. `rewrite -` as an editor filter ------------------------------------------------


def _stdin(monkeypatch, data: bytes) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_stdin_filter_echoes_the_input_on_an_internal_error(capsys, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(batch, "process_source", broken)
    _stdin(monkeypatch, OLD)
    assert main(["rewrite", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == OLD.decode()
    assert "-: error: internal error: RuntimeError: boom" in captured.err


def test_stdin_filter_echoes_an_oversized_input(capsys, monkeypatch):
    data = OLD + b"y = 1  # " + b"z" * 60_000 + b"\n"
    _stdin(monkeypatch, data)
    assert main(["rewrite", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == data.decode()
    assert "limit 50000 bytes" in captured.err


def test_closed_stdin_is_an_error(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)  # what Python sets when descriptor 0 is closed
    assert main(["rewrite", "-"]) == 2
    assert capsys.readouterr().err == "tf1gradfix: standard input is closed; nothing to read\n"


# -- 9. an edit saved during the run wins -------------------------------------------


def test_edit_saved_while_rewriting_is_kept(tmp_path, capsys, monkeypatch):
    target = tmp_path / "train.py"
    target.write_bytes(OLD)
    (tmp_path / "other.py").write_bytes(OLD)
    real = batch.process_source
    edit = b"# saved in the editor meanwhile\n"

    def slow_user(display, data, *args, **kwargs):
        result = real(display, data, *args, **kwargs)
        if display == "train.py":
            with open(target, "ab") as handle:  # same size change, new mtime: the user saved
                handle.write(edit)
        return result

    monkeypatch.setattr(batch, "process_source", slow_user)
    assert main(["rewrite", "-j", "1", "train.py", "other.py"]) == 2
    out = capsys.readouterr().out
    assert "train.py: error: changed while being rewritten; left as it is" in out
    assert target.read_bytes() == OLD + edit
    assert (tmp_path / "other.py").read_bytes() == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.py", "train.py"]


def test_same_size_edit_with_the_old_mtime_is_still_seen(tmp_path):
    from tf1gradfix.run.source_io import SourceError, read_source, write_atomic

    target = tmp_path / "t.py"
    target.write_bytes(OLD)
    data, snapshot = read_source(str(target))
    before = os.stat(target)
    target.write_bytes(OLD.replace(b"0", b"1"))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # only the bytes tell
    with pytest.raises(SourceError, match="changed while being rewritten"):
        write_atomic(target, NEW, snapshot)
    assert target.read_bytes() == OLD.replace(b"0", b"1")


def test_edit_saved_during_the_proof_is_kept(tmp_path, capsys, monkeypatch):
    """rewrite --verify runs for seconds to minutes per file: the window for an edit is wide."""
    from types import SimpleNamespace

    from tf1gradfix.verify import orchestrate, report

    target = tmp_path / "train.py"
    target.write_bytes(OLD)
    edit = b"# saved in the editor meanwhile\n"

    def proof_while_the_user_types(original, candidate, **_kwargs):
        with open(original, "ab") as handle:
            handle.write(edit)
        return SimpleNamespace(verdict="EQUIVALENT", reason="same", migrated=SimpleNamespace(script=str(candidate)),
                               budget=None, elapsed=0.1)

    monkeypatch.setattr(orchestrate, "verify_pair", proof_while_the_user_types)
    monkeypatch.setattr(report, "summary", lambda result: result.verdict)
    assert main(["rewrite", "--verify", "-j", "1", "train.py"]) == 2
    assert "train.py: error: changed while being rewritten; left as it is" in capsys.readouterr().out
    assert target.read_bytes() == OLD + edit


# -- 10. file names that do not print ------------------------------------------------


def test_non_ascii_names_with_an_ascii_terminal(tmp_path, monkeypatch):
    import io

    (tmp_path / "café.py").write_bytes(OLD)
    for argv, expected in ((["rewrite", "--diff", "café.py"], b"+++ b/caf\\xe9.py"), (["check", "."], b"caf\\xe9.py:2:1: TFG401")):
        terminal = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(terminal, encoding="ascii"))  # PYTHONIOENCODING=ascii
        assert main([*argv[:1], "-j", "1", *argv[1:]]) == 1
        sys.stdout.flush()
        assert expected in terminal.getvalue()
    assert (tmp_path / "café.py").read_bytes() == OLD


def test_control_characters_and_undecodable_bytes_are_escaped(tmp_path, capsys):
    names = ["evil\nfake.py:1:1: TFG999.py", "\x1b[31mred.py", os.fsdecode(b"raw\xff.py")]
    for name in names:
        (tmp_path / name).write_bytes(OLD)
    assert main(["check", "-j", "1", "."]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7  # two findings per file, and the summary
    assert any(line.startswith("evil\\nfake.py:1:1: TFG999.py:2:1: TFG401") for line in lines)
    assert any(line.startswith("raw\\xff.py:2:1: TFG401") for line in lines)
    assert any(line.startswith("\\x1b[31mred.py:2:1: TFG401") for line in lines)
    assert main(["rewrite", "--diff", "-j", "1", names[0]]) == 1
    diff = capsys.readouterr().out
    assert "--- a/evil\\nfake.py:1:1: TFG999.py\n" in diff
    assert main(["check", "--format", "json", "-j", "1", "."]) == 1
    report = json.loads(capsys.readouterr().out)
    assert sorted({f["path"] for f in report["findings"]}) == sorted(names)


# -- 11. settings files ----------------------------------------------------------------


@pytest.mark.parametrize("name, body, expected", [
    ("setup.cfg", b"[tf1gradfix]\nexclude = 100%_generated/*\nselect = TFG9\n", None),
    ("setup.cfg", b"[metadata]\nname = caf\xe9\n[tf1gradfix]\nselect = TFG4\n", r"setup\.cfg:2: error: not UTF-8 text"),
    ("setup.cfg", b"[tf1gradfix]\nselect TFG4\n", r"setup\.cfg:2: error: "),
    ("setup.cfg", b"[tf1gradfix]\nper-file-ignores =\n    nocolon\n", r"setup\.cfg:2: error: per-file-ignores: 'nocolon'"),
    ("pyproject.toml", b'[tool.tf1gradfix]\nper-file-ignores = "tests/*.py"\n',
     r"pyproject\.toml:2: error: `per-file-ignores` must be a table"),
    ("pyproject.toml", b"[tool.tf1gradfix]\n\nselect = [1, 2]\n", r"pyproject\.toml:3: error: `select` must be a string or a list of strings"),
    ("pyproject.toml", b"[tool.tf1gradfix]\nselect = [\"TFG4\"\nignore = 3\n", r"pyproject\.toml:3: error: invalid TOML: "),
    ("setup.cfg", b"[tf1gradfix]\nmax-file-size = 1MB\n", r"setup\.cfg:2: error: `max-file-size` must be a whole number of bytes"),
    ("pyproject.toml", b"[tool.tf1gradfix]\nmax-file-size = 0\n", r"pyproject\.toml:2: error: `max-file-size` must be a whole number"),
], ids=["percent", "not-utf8", "cfg-syntax", "cfg-per-file", "toml-per-file-string", "toml-select-ints", "toml-syntax",
        "cfg-size-text", "toml-size-zero"])
def test_settings_errors_are_one_line_exit_2(tmp_path, capsys, name, body, expected):
    (tmp_path / name).write_bytes(body)
    (tmp_path / "a.py").write_bytes(OLD)
    code = main(["check", "-j", "1", "a.py"])
    captured = capsys.readouterr()
    if expected is None:  # `%` is a character in a glob: the settings simply apply
        assert code == 0 and captured.err == ""
        return
    assert code == 2 and captured.out == ""
    line = _one_line(captured.err.encode())
    assert re.match(rf"tf1gradfix: .*{expected}", line), line


# -- 12. SIGTERM, SIGHUP, and a parent killed outright ---------------------------------


def _alive_in_group(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies waiting for a reaper do not count)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def _parallel_rewrite(tree: Path, files: int = 400) -> tuple[subprocess.Popen, bytes]:
    tree.mkdir()
    body = OLD + b"".join(b"y%d = tf.log(tf.random_uniform([3]))\n" % i for i in range(20))
    for i in range(files):
        (tree / f"m{i:03d}.py").write_bytes(body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tf1gradfix", "rewrite", "-j", "2", str(tree)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    while len(_alive_in_group(proc.pid)) < 3 and time.monotonic() < deadline:  # the parent and two workers
        time.sleep(0.05)
    time.sleep(0.5)
    return proc, body


def _every_file_old_or_new(tree: Path, body: bytes) -> int:
    old = 0
    for path in sorted(tree.iterdir()):
        assert path.suffix == ".py", f"left behind: {path.name}"
        data = path.read_bytes()
        if data == body:
            old += 1
        else:
            assert b"tf.math.log" in data and b"tf.log(" not in data
    return old


def _group_ends(pgid: int, within: float = 20) -> list[int]:
    deadline = time.monotonic() + within
    while _alive_in_group(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive_in_group(pgid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_stops_the_workers_and_leaves_every_file_whole(tmp_path):
    proc, body = _parallel_rewrite(tmp_path / "many")
    try:
        proc.send_signal(signal.SIGTERM)  # to the parent only, as `kill PID` does
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, err.decode()
        assert err.decode() == "tf1gradfix: stopped by SIGTERM; every file is either unchanged or fully rewritten\n"
        assert _group_ends(proc.pid) == [], "workers outlived the run"
        assert _every_file_old_or_new(tmp_path / "many", body) > 0, "the run finished before the signal"
    finally:
        if _alive_in_group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


class _Hangup(Exception):
    pass


def _hangup(*_args):
    raise _Hangup  # without the CLI's own handler, SIGHUP would end the test run itself


def test_sighup_stops_a_run_like_ctrl_c(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.py").write_bytes(OLD)
    (tmp_path / "b.py").write_bytes(OLD)
    real = batch.process_source

    def hang_up_after_the_first(display, *args, **kwargs):
        result = real(display, *args, **kwargs)
        if display == "a.py":
            os.kill(os.getpid(), signal.SIGHUP)  # the terminal closes while a.py is being processed
        return result

    monkeypatch.setattr(batch, "process_source", hang_up_after_the_first)
    kept = signal.signal(signal.SIGHUP, _hangup)
    try:
        code = main(["rewrite", "-j", "1", "a.py", "b.py"])
    finally:
        assert signal.signal(signal.SIGHUP, kept) is _hangup, "the CLI left its handler installed"
    assert code == 128 + signal.SIGHUP
    assert capsys.readouterr().err == "tf1gradfix: stopped by SIGHUP; every file is either unchanged or fully rewritten\n"
    assert (tmp_path / "a.py").read_bytes() in (OLD, NEW) and (tmp_path / "b.py").read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_end_when_the_parent_is_killed(tmp_path):
    proc, body = _parallel_rewrite(tmp_path / "many")
    try:
        proc.kill()
        proc.wait(timeout=30)
        assert _group_ends(proc.pid) == [], "orphaned workers still run"
        _every_file_old_or_new(tmp_path / "many", body)
    finally:
        if _alive_in_group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


def test_orphan_watch_of_a_worker_started_by_a_fork_server(monkeypatch):
    """Under forkserver (Python 3.14's default on Linux) a worker's parent is the
    fork server, not the run: only the run's end may stop the worker."""
    import threading

    exits = []
    run_alive = threading.Event()
    run_alive.set()
    monkeypatch.setattr(batch.os, "getppid", lambda: 4242)  # the fork server, which lives on
    monkeypatch.setattr(batch, "_alive", lambda pid: run_alive.is_set())
    monkeypatch.setattr(batch.os, "_exit", lambda code: exits.append(code))
    watch = threading.Thread(target=batch._watch_parent, args=(os.getpid(), 0.01), daemon=True)
    watch.start()
    time.sleep(0.3)
    assert watch.is_alive() and exits == [], "a live run's worker was told to exit"
    run_alive.clear()  # the run is killed
    watch.join(timeout=5)
    assert exits == [batch.EXIT_ORPHANED]


# -- 20. size limits -------------------------------------------------------------------


def test_oversized_file_is_never_read(tmp_path, capsys, monkeypatch):
    big = tmp_path / "huge.py"
    with open(big, "wb") as handle:
        handle.truncate(4 * 1024**3)  # sparse: costs no disk, and no memory unless read
    (tmp_path / "ok.py").write_bytes(OLD)
    assert main(["rewrite", "-j", "1", "huge.py", "ok.py"]) == 2
    out = capsys.readouterr().out
    assert "huge.py: error: file too large: 4294967296 bytes (limit 1048576 bytes, setting max-file-size); left as it is" in out
    assert big.stat().st_size == 4 * 1024**3 and big.stat().st_blocks == 0
    assert (tmp_path / "ok.py").read_bytes() == NEW


def test_overlong_line_is_an_error_and_the_file_is_kept(tmp_path, capsys):
    data = OLD + b"table = '" + b"0" * 60_000 + b"'\n"
    (tmp_path / "gen.py").write_bytes(data)
    assert main(["rewrite", "-j", "1", "gen.py"]) == 2
    assert "gen.py: error: line 4 is 60010 bytes long (limit 50000 bytes); left as it is" in capsys.readouterr().out
    assert (tmp_path / "gen.py").read_bytes() == data


@pytest.mark.parametrize("name, body", [("setup.cfg", "[tf1gradfix]\nmax-file-size = 100\n"),
                                        ("pyproject.toml", "[tool.tf1gradfix]\nmax-file-size = 100\n")])
def test_the_size_limit_is_a_setting(tmp_path, capsys, monkeypatch, name, body):
    (tmp_path / name).write_text(body)
    (tmp_path / "small.py").write_bytes(OLD)
    padded = OLD + b"#" * 100 + b"\n"
    (tmp_path / "padded.py").write_bytes(padded)
    assert main(["rewrite", "-j", "1", "small.py", "padded.py"]) == 2
    assert f"padded.py: error: file too large: {len(padded)} bytes (limit 100 bytes, setting max-file-size)" in capsys.readouterr().out
    assert (tmp_path / "padded.py").read_bytes() == padded and (tmp_path / "small.py").read_bytes() == NEW
    _stdin(monkeypatch, padded)
    assert main(["rewrite", "-"]) == 2
    assert capsys.readouterr().out == padded.decode()


# -- 21. one file, several names -------------------------------------------------------


def test_a_file_named_several_ways_is_processed_once(tmp_path, capsys):
    (tmp_path / "a.py").write_bytes(OLD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    spellings = ["a.py", "sub/../a.py", str(tmp_path / "a.py"), "link.py", "."]
    assert main(["rewrite", "-j", "3", *spellings]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "1 file checked: 2 findings (2 safe), 2 fixed; 1 file rewritten."
    assert (tmp_path / "a.py").read_bytes() == NEW and (tmp_path / "link.py").is_symlink()


@pytest.mark.parametrize("module, message", [
    ("tf1gradfix.run.engine", "tf1gradfix: interrupted; every file is unchanged"),  # while the tool loads
    ("tf1gradfix.emit.token_renames", "tf1gradfix: interrupted; every file is either unchanged or fully rewritten"),  # while it runs
], ids=["loading", "running"])
def test_interrupt_is_one_line_and_exit_130_wherever_it_lands(tmp_path, module, message):
    """Ctrl-C inside an exec() of a string, as while a dataclass is made: CPython
    would end the process by SIGINT (-2) though the CLI handled the interrupt."""
    (tmp_path / "a.py").write_bytes(OLD)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        "            exec('os.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(10**6): pass')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
    )
    proc = cli("rewrite", "-j", "1", "a.py", cwd=tmp_path, env={"PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}"})
    assert proc.returncode == 130, proc.stderr.decode()
    assert proc.stderr.decode() == message + "\n"
    assert (tmp_path / "a.py").read_bytes() == OLD
