"""Never break a user's code: read-only files, symlinks, vanished files, Ctrl-C mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tf1gradfix.cli.main import main

OLD = b"import tensorflow as tf\ntf.set_random_seed(0)\nx = tf.random_normal([2])\n"
NEW = b"import tensorflow as tf\ntf.compat.v1.set_random_seed(0)\nx = tf.random.normal([2])\n"


def test_read_only_file_is_reported_and_kept(tmp_path, capsys):
    locked = tmp_path / "locked.py"
    locked.write_bytes(OLD)
    locked.chmod(0o444)
    other = tmp_path / "other.py"
    other.write_bytes(OLD)
    assert main(["rewrite", "-j", "1", str(locked), str(other)]) == 2
    out = capsys.readouterr().out
    assert f"{locked}: error: cannot write: file is read-only" in out
    assert locked.read_bytes() == OLD
    assert other.read_bytes() == NEW


def test_symlinks_are_not_followed_or_replaced(tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.py").write_bytes(OLD)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked_dir").symlink_to(outside, target_is_directory=True)
    (tree / "linked.py").symlink_to(outside / "far.py")
    (tree / "own.py").write_bytes(OLD)
    assert main(["rewrite", "-j", "1", str(tree)]) == 0
    assert (outside / "far.py").read_bytes() == OLD, "a file outside the tree was rewritten"
    assert (tree / "linked.py").is_symlink()
    assert (tree / "own.py").read_bytes() == NEW
    capsys.readouterr()
    # Named explicitly, a symlink is checked but never replaced by a plain file.
    assert main(["rewrite", str(tree / "linked.py")]) == 2
    assert "is a symlink" in capsys.readouterr().out
    assert (tree / "linked.py").is_symlink() and (outside / "far.py").read_bytes() == OLD


def test_missing_file_is_reported_and_the_run_goes_on(tmp_path, capsys):
    good = tmp_path / "good.py"
    good.write_bytes(OLD)
    assert main(["rewrite", str(tmp_path / "gone.py"), str(good)]) == 2
    assert "gone.py: error: no such file or folder" in capsys.readouterr().out
    assert good.read_bytes() == NEW


def test_file_vanishing_after_discovery(tmp_path):
    from tf1gradfix.run.batch import WRITE, Job, run_job
    from tf1gradfix.run.findings import CodeFilter

    path = tmp_path / "vanished.py"
    outcome = run_job(Job(str(path), WRITE, CodeFilter()))
    assert outcome.error is not None and "cannot read" in outcome.error.message


def _interruptible() -> None:
    """Ctrl-C as at a terminal. A shell's background job (`make test &`) starts
    with SIGINT ignored; the CLI would inherit that and never see the interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interrupt_leaves_every_file_old_or_new(tmp_path):
    tree = tmp_path / "many"
    tree.mkdir()
    body = OLD + b"".join(b"y%d = tf.log(tf.random_uniform([3]))\n" % i for i in range(20))
    for i in range(400):
        (tree / f"m{i:03d}.py").write_bytes(body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tf1gradfix", "rewrite", "-j", "2", str(tree)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=_interruptible,
    )
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=180)
    expected_new = None
    states = {"old": 0, "new": 0}
    for path in sorted(tree.iterdir()):
        assert path.suffix == ".py", f"left behind: {path.name}"
        data = path.read_bytes()
        if data == body:
            states["old"] += 1
        else:
            expected_new = expected_new or data
            assert data == expected_new and b"tf.math.log" in data
            states["new"] += 1
    assert states["old"] + states["new"] == 400
    assert states["old"] > 0, "the run finished before the interrupt: nothing was tested"
    assert proc.returncode == 130
