"""verify gives clean verdicts for programs that exit early, read argv or print megabytes."""

from __future__ import annotations

import os
import textwrap

import pytest

from tf1gradfix.verify.orchestrate import verify_pair

pytestmark = pytest.mark.tf

ORIGINAL = """
import sys
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((2, 1), np.float32), name="w")
x = tf.placeholder(tf.float32, [None, 2])
loss = tf.reduce_sum(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        _, value = sess.run([train, loss], {x: np.ones((1, 2), np.float32)})
        print("loss", value)
    print("w", sess.run(w).ravel())
{tail}
"""

MIGRATED = """
import sys
import numpy as np
import tensorflow as tf

w = tf.Variable(np.ones((2, 1), np.float32), name="w")
opt = tf.keras.optimizers.SGD(learning_rate=0.1)
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(np.ones((1, 2), np.float32), w))
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    print("loss", loss.numpy())
print("w", w.numpy().ravel())
{tail}
"""


def pair(tmp_path, tail_original: str, tail_migrated: str | None = None, timeout: float = 120):
    original = tmp_path / "original.py"
    migrated = tmp_path / "migrated.py"
    original.write_text(textwrap.dedent(ORIGINAL).replace("{tail}", tail_original))
    migrated.write_text(textwrap.dedent(MIGRATED).replace("{tail}", tail_migrated if tail_migrated is not None else tail_original))
    return verify_pair(original, migrated, timeout=timeout)


def test_sys_exit_zero_after_training(tmp_path):
    result = pair(tmp_path, "sys.exit(0)")
    assert result.verdict == "EQUIVALENT", result.reason
    assert result.comparison.steps == 3


def test_program_reading_argv_sees_only_its_own_name(tmp_path):
    result = pair(tmp_path, "print('argc', len(sys.argv))\nassert sys.argv[0].endswith('.py')")
    assert result.verdict == "EQUIVALENT", result.reason


def test_different_exit_codes_are_not_equivalent(tmp_path):
    result = pair(tmp_path, "sys.exit(0)", "sys.exit(3)")
    assert result.verdict != "EQUIVALENT"


def test_megabytes_of_output_do_not_hang_the_tool(tmp_path):
    flood = "for i in range(200000):\n    print('line', i, 'x' * 40)"
    result = pair(tmp_path, flood)
    assert result.verdict in ("EQUIVALENT", "DIVERGED", "NOT_COMPARABLE"), result.reason
    assert result.elapsed < 120


def test_output_past_the_compared_part_is_not_called_equivalent(tmp_path):
    """Both sides print 5 MiB alike, then a different number: past the compared 4 MiB,
    the verdict says what was not compared instead of EQUIVALENT."""
    flood = "for i in range(100000):\n    print('row', 'y' * 48)\nprint('final', {})"
    result = pair(tmp_path, flood.format(1), flood.format(2))
    assert result.verdict == "NOT_COMPARABLE", result.reason
    assert "compared only up to its first 4 MiB" in result.reason and "were not compared" in result.reason


def test_a_side_that_prints_without_end_is_stopped(tmp_path, monkeypatch):
    from tf1gradfix.verify import output_cap

    monkeypatch.setattr(output_cap, "STORED", 8 * 1024 * 1024)
    result = pair(tmp_path, "while True:\n    print('z' * 1000)", "")
    assert result.verdict == "ORIGINAL_FAILED", result.reason
    assert "stopped after writing more than 8 MiB to stdout" in result.reason
    assert result.elapsed < 100


def test_a_program_that_stops_its_parent_does_not_hang_the_verifier(tmp_path):
    """`os.kill(os.getppid(), SIGSTOP)` stops the warm process the program was forked from:
    it is continued (or killed), and the verdict comes."""
    from tf1gradfix.verify import pool

    if not pool.enabled():
        pytest.skip("programs run as fresh processes: their parent is the verifier itself")
    stop = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)"
    result = pair(tmp_path, stop)
    assert result.verdict == "EQUIVALENT", result.reason
    assert result.elapsed < 60



def test_a_fresh_runner_stopped_by_its_program_is_continued(tmp_path, monkeypatch):
    """Without warm processes the runner forks the program off: the parent the program
    stops is the runner's boot process, which the verifier continues, never the verifier."""
    from tf1gradfix.verify import pool

    monkeypatch.setenv(pool.NO_POOL, "1")
    stop = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)"
    result = pair(tmp_path, stop)
    assert result.verdict == "EQUIVALENT", result.reason
    assert result.elapsed < 90


def test_a_warm_process_left_stopped_is_killed_at_a_deadline(tmp_path, monkeypatch):
    """Were the stopped process never continued, waiting for its report has a deadline."""
    from tf1gradfix.verify import pool

    if not pool.enabled():
        pytest.skip("programs run as fresh processes: their parent is the verifier itself")
    monkeypatch.setattr(pool._Zygote, "resume", lambda self: None)
    monkeypatch.setattr(pool, "REAP_WAIT", 3.0)
    stop = "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(300)"
    result = pair(tmp_path, stop, timeout=15)
    assert result.verdict != "EQUIVALENT" and "timed out" in result.reason, result.reason
    assert result.elapsed < 45


@pytest.mark.parametrize("warm", [True, False], ids=["warm process", "fresh runner"])
def test_a_fork_that_leaves_its_process_group_ends_with_the_verdict(tmp_path, monkeypatch, warm):
    import os
    import sys
    import time

    from tf1gradfix.verify import pool

    if not sys.platform.startswith("linux") or warm and not pool.enabled():
        pytest.skip("strays are found through /proc and a subreaper (Linux)")
    if not warm:
        monkeypatch.setenv(pool.NO_POOL, "1")
    marks = tmp_path / "strays"
    marks.mkdir()
    stray = (f"import os, time\npid = os.fork()\nif pid == 0:\n    os.setpgid(0, 0)\n    time.sleep(600)\n    os._exit(0)\n"
             f"open(os.path.join({str(marks)!r}, str(pid)), 'w').close()")
    result = pair(tmp_path, stray)
    assert result.verdict == "EQUIVALENT", result.reason
    pids = [int(p.name) for p in marks.iterdir()]
    assert len(pids) == 2

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


def test_the_program_does_not_find_the_verifiers_settings_in_its_environment(tmp_path):
    """`TF1GRADFIX_*` variables (the step budget among them) are withdrawn before the program
    starts (tests/test_verify_budget.py: the runner still reads them)."""
    original, migrated = tmp_path / "original.py", tmp_path / "migrated.py"
    tail = "import os\nprint('seen', sorted(k for k in os.environ if k.startswith('TF1GRADFIX')))"
    original.write_text(textwrap.dedent(ORIGINAL).replace("{tail}", tail))
    migrated.write_text(textwrap.dedent(MIGRATED).replace("{tail}", tail))
    result = verify_pair(original, migrated, timeout=120)
    assert result.verdict == "EQUIVALENT", result.reason
    for side in (result.original, result.migrated):
        assert "seen []" in side.stdout_tail, side.stdout_tail


# The migrated program looks for the verifier's files from its own: the folder of the events file
# it has open (/proc/self/fd), that folder's parent (the trace folder the sides share), and the
# names the original's records had there.
FIND_OWN_TRACE = """
import os
own = []
for fd in os.listdir("/proc/self/fd"):
    try:
        own.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:   # (the listing's own descriptor, closed by now)
        pass
own = [p for p in own if p.endswith(".events.jsonl")]
mine = os.path.dirname(own[0])
shared = os.path.dirname(mine)
"""


def test_the_migration_does_not_find_the_originals_trace_where_its_own_is(tmp_path):
    """Each side writes into a folder of its own, named by the verifier's secret; the shared
    folder cannot be listed while they run (root, for whom permissions do not hold, can list
    it: the next test is the defence that holds then)."""
    tries = FIND_OWN_TRACE + textwrap.dedent("""
        seen = []
        for path in (os.path.join(shared, "original.events.jsonl"), os.path.join(mine, "original.events.jsonl"),
                     os.path.join(shared, "original.final.json"), os.path.join(shared, "original.stdout")):
            try:
                open(path).read()
                seen.append("read")
            except OSError:
                seen.append("refused")
        try:
            os.listdir(shared)
            seen.append("listed")
        except OSError:
            seen.append("unlisted")
        print("tries", seen)
    """)
    listing = "listed" if os.geteuid() == 0 else "unlisted"
    result = pair(tmp_path, f"print('tries', ['refused'] * 4 + [{listing!r}])", tries)
    assert result.verdict == "EQUIVALENT", (result.reason, result.migrated.stdout_tail)


def test_the_originals_records_replayed_into_the_migrations_trace_are_tampering(tmp_path):
    """Where the program can read the original's records (as root), they are sealed with the
    original's token, not the migration's: replayed, they are tampering, not evidence."""
    replay = FIND_OWN_TRACE + textwrap.dedent("""
        import time
        try:
            theirs = [os.path.join(shared, n, "original.events.jsonl") for n in os.listdir(shared)
                      if n.startswith("original-")]
        except OSError:
            theirs = []
        deadline = time.time() + 60
        while theirs and not os.path.exists(os.path.join(shared, "original.done")) and time.time() < deadline:
            time.sleep(0.1)
        if theirs:
            with open(theirs[0]) as source, open(own[0], "a") as handle:
                handle.write(source.read())
        else:
            print("unlisted")
    """)
    result = pair(tmp_path, "", replay)
    if "unlisted" in result.migrated.stdout_tail:   # (not root: the folder could not be listed)
        assert result.verdict == "DIVERGED", result.reason
    else:
        assert result.verdict == "NOT_COMPARABLE", result.reason
        assert "the migrated program's trace was tampered with" in result.reason


FORGE = FIND_OWN_TRACE + """
import json
with open(own[0], "a") as handle:   # a gradient step of its own making, as the records look unsealed
    handle.write(json.dumps({"kind": "note", "seq": 10**6, "text": "forged"}) + "\\n")
"""


def test_events_written_without_the_runs_seal_are_tampering(tmp_path):
    result = pair(tmp_path, "", FORGE)
    assert result.verdict == "NOT_COMPARABLE", result.reason
    assert "the migrated program's trace was tampered with" in result.reason


def test_final_values_rewritten_by_the_program_are_tampering(tmp_path):
    forge = FIND_OWN_TRACE + textwrap.dedent("""
        import atexit, json
        def forge():   # after the recorder wrote its final values
            with open(os.path.join(mine, "migrated.final.json"), "w") as handle:
                json.dump({"variables": {}}, handle)
        atexit.register(forge)
    """)
    result = pair(tmp_path, "", forge)
    assert result.verdict == "NOT_COMPARABLE", result.reason
    assert "its final.json is not sealed by the run" in result.reason


def test_the_recorders_modules_are_not_found_by_name(tmp_path):
    """The runner's modules (the live trace, its token) are out of `sys.modules` while the
    program runs; importing one by name gives a fresh copy holding no trace."""
    look = textwrap.dedent("""
        import sys
        print("modules", sorted(n for n in sys.modules if n.startswith("tf1gradfix.verify.")
                                and n.rpartition(".")[2] in ("runner_common", "runner_v1", "runner_v2", "trace_seal", "settings")))
        import tf1gradfix.verify.settings as fresh
        print("settings", fresh._KEPT)
    """)
    result = pair(tmp_path, look)
    assert result.verdict == "EQUIVALENT", result.reason
    for side in (result.original, result.migrated):
        assert "modules []" in side.stdout_tail and "settings {}" in side.stdout_tail, side.stdout_tail
