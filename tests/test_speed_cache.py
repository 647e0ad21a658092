"""`check` keeps its results by content: a repeated run reads them back, and
anything the result depends on gives another key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tf1gradfix.run import batch, cache
from tf1gradfix.cli.main import main
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "original.py"


@pytest.fixture
def kept(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TF1GRADFIX_CACHE_DIR", str(folder))
    monkeypatch.delenv("TF1GRADFIX_NO_CACHE", raising=False)
    return folder


def _check(capsys, *args):
    code = main(["check", *args])
    return code, capsys.readouterr().out


def _uncached(capsys, monkeypatch, *args):
    with monkeypatch.context() as m:
        m.setenv("TF1GRADFIX_NO_CACHE", "1")
        return _check(capsys, *args)


def test_a_second_check_reads_the_first(kept, tmp_path, capsys, monkeypatch):
    program = tmp_path / "train.py"
    shutil.copy(PROGRAM, program)
    expected = {fmt: _uncached(capsys, monkeypatch, "--format", fmt, str(program)) for fmt in ("text", "json")}
    assert expected["text"][0] == 1 and "TFG" in expected["text"][1]
    assert _check(capsys, str(program)) == expected["text"]
    assert len(list(kept.iterdir())) == 1

    def analysed(*args):
        raise AssertionError("analysed again")

    monkeypatch.setattr(batch, "run_source", analysed)
    for fmt in ("text", "json"):
        assert _check(capsys, "--format", fmt, str(program)) == expected[fmt]


def test_a_changed_file_is_analysed_again(kept, tmp_path, capsys, monkeypatch):
    program = tmp_path / "train.py"
    shutil.copy(PROGRAM, program)
    _check(capsys, str(program))
    program.write_text("import tensorflow as tf\nsess = tf.Session()\n")
    assert _check(capsys, str(program)) == _uncached(capsys, monkeypatch, str(program))
    assert len(list(kept.iterdir())) == 2


def test_what_the_key_covers():
    codes = CodeFilter()
    base = cache.key("check", "a.py", b"data", codes)
    assert base == cache.key("check", "a.py", b"data", CodeFilter())
    assert base != cache.key("check", "a.py", b"data2", codes)
    assert base != cache.key("check", "b.py", b"data", codes)
    assert base != cache.key("diff", "a.py", b"data", codes)
    assert base != cache.key("check", "a.py", b"data", CodeFilter(ignore=("TFG1",)))
    assert base != cache.key("check", "a.py", b"data", CodeFilter(select=("TFG2",)))


def test_the_tools_code_and_rules_are_in_the_key(tmp_path, monkeypatch):
    copy = tmp_path / "tf1gradfix"
    shutil.copytree(cache._PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "verify"))
    shutil.copytree(cache._PACKAGE.parent / "rules", tmp_path / "rules")   # (the tables, beside the package)
    monkeypatch.setattr(cache, "_PACKAGE", copy)
    cache.fingerprint.cache_clear()
    try:
        for edited in ("tf1gradfix/run/engine.py", "tf1gradfix/detect/detector.py", "tf1gradfix/emit/tape.py",
                       "rules/renames.toml"):
            before = cache.fingerprint()
            (tmp_path / edited).write_text((tmp_path / edited).read_text() + "\n# changed\n")
            cache.fingerprint.cache_clear()
            assert cache.fingerprint() != before, f"{edited} is not in the cache key"
    finally:
        cache.fingerprint.cache_clear()


def test_off_damaged_and_unwritable(kept, tmp_path, capsys, monkeypatch):
    program = tmp_path / "train.py"
    shutil.copy(PROGRAM, program)
    expected = _uncached(capsys, monkeypatch, str(program))
    assert not kept.exists()
    assert _check(capsys, str(program)) == expected
    (entry,) = kept.iterdir()
    entry.write_text("{not json")
    assert _check(capsys, str(program)) == expected
    shutil.rmtree(kept)
    kept.write_text("a file where the folder should be")
    assert _check(capsys, str(program)) == expected


def test_stored_results_need_no_libcst_in_the_parent(kept, tmp_path, capsys, monkeypatch):
    """A parallel check whose files all have stored results does not load LibCST before forking."""
    for name in ("a.py", "b.py"):
        shutil.copy(PROGRAM, tmp_path / name)
    args = ["-j", "2", str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    expected = _uncached(capsys, monkeypatch, *args)
    loads = []
    monkeypatch.setattr(batch, "preload", lambda *rewrite: loads.append(1))
    assert _check(capsys, *args) == expected and loads == [1]  # nothing stored yet
    assert _check(capsys, *args) == expected and loads == [1]


def test_tf2_files_need_no_libcst_in_the_parent(tmp_path, capsys, monkeypatch):
    """A parallel check of TF2 code (it imports TensorFlow, spells no TF1 construct) loads no LibCST."""
    migrated = ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "migrated.py"
    for name in ("a.py", "b.py"):
        shutil.copy(migrated, tmp_path / name)
    loads = []
    monkeypatch.setattr(batch, "preload", lambda *rewrite: loads.append(1))
    code, out = _uncached(capsys, monkeypatch, "-j", "2", str(tmp_path / "a.py"), str(tmp_path / "b.py"))
    assert code == 0 and loads == [], out
