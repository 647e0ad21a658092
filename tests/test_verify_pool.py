"""The warm TensorFlow pool (verify/pool.py): programs forked from one warm process stay apart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tf1gradfix.verify import pool

# The first pair leaves traces everywhere a program can: a module it adds to
# sys.modules, an attribute on a stdlib module, TF's graph and seed, a variable,
# an environment variable, the working folder. The second pair fails if any
# of them reached it.
POLLUTER_V1 = """\
import json, os, sys, types
import tensorflow as tf
sys.modules["left_behind"] = types.ModuleType("left_behind")
json.LEFT_BEHIND = True
os.environ["LEFT_BEHIND"] = "1"
tf.set_random_seed(99)
w = tf.Variable(3.0, name="leftover")
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("value", sess.run(w))
"""
POLLUTER_V2 = """\
import json, os, sys, types
import tensorflow as tf
sys.modules["left_behind"] = types.ModuleType("left_behind")
json.LEFT_BEHIND = True
os.environ["LEFT_BEHIND"] = "1"
tf.random.set_seed(99)
w = tf.Variable(3.0, name="leftover")
print("value", w.numpy())
"""
CHECK = """\
import json, os, sys
import tensorflow as tf
seen = [what for what, there in (
    ("module", "left_behind" in sys.modules), ("attribute", hasattr(json, "LEFT_BEHIND")),
    ("environment", "LEFT_BEHIND" in os.environ)) if there]
{graph}
print("leftovers", len(seen), seen)
"""
GRAPH_V1 = "seen += ['graph'] if tf.get_default_graph().get_operations() else []"
GRAPH_V2 = "seen += []"


def _pair(folder: Path, original: str, migrated: str) -> tuple[Path, Path]:
    folder.mkdir()
    (folder / "original.py").write_text(original)
    (folder / "migrated.py").write_text(migrated)
    return folder / "original.py", folder / "migrated.py"


@pytest.mark.tf
def test_programs_forked_from_the_warm_process_do_not_see_each_other(tmp_path, monkeypatch):
    from tf1gradfix.verify.orchestrate import EQUIVALENT, verify_pair

    monkeypatch.delenv(pool.NO_POOL, raising=False)
    first = verify_pair(*_pair(tmp_path / "first", POLLUTER_V1, POLLUTER_V2))
    assert first.verdict == EQUIVALENT, first.reason
    zygotes = {legacy: z.proc.pid for legacy, z in pool._ZYGOTES.items()}
    assert set(zygotes) == {True, False}, "both sides ran in the pool"
    second = verify_pair(*_pair(tmp_path / "second", CHECK.format(graph=GRAPH_V1), CHECK.format(graph=GRAPH_V2)))
    assert second.verdict == EQUIVALENT, second.reason
    assert "leftovers 0 []" in second.original.stdout_tail and "leftovers 0 []" in second.migrated.stdout_tail
    # the same warm processes served both pairs
    assert {legacy: z.proc.pid for legacy, z in pool._ZYGOTES.items()} == zygotes
    assert "LEFT_BEHIND" not in os.environ


def test_a_zygote_serves_only_runs_with_its_startup_environment():
    base = {"PATH": "/bin", "PYTHONHASHSEED": "0", "TF_USE_LEGACY_KERAS": "1"}
    assert pool._startup_key(base) == pool._startup_key({**base, "PATH": "/usr/bin", "HOME": "/x"})
    assert pool._startup_key(base) != pool._startup_key({**base, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert pool._startup_key(base) != pool._startup_key({**base, "PYTHONPATH": "/elsewhere"})


def test_the_pool_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(pool.NO_POOL, "1")
    assert not pool.enabled()
    assert pool.start(True, ["tf1gradfix.verify.runner_v1"], dict(os.environ), "/", os.devnull, os.devnull) is None
