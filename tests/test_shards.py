"""`rewrite --shard K/N`: N deterministic shares of a tree, together every file once, a
folder never split, the same partition whatever order the files were found in."""

from __future__ import annotations

import pytest

from tf1gradfix.cli.main import main
from tf1gradfix.cli.shards import share

FILES = [f"{d}/{f}.py" for d in ("a", "b", "c", "d/e") for f in ("x", "y", "z")[: 1 + len(d) % 3]] + ["top.py"]


def test_the_shares_cover_the_tree_once_keep_folders_and_ignore_order():
    shares = [share(FILES, k, 3) for k in (1, 2, 3)]
    assert sorted(sum(shares, [])) == sorted(FILES)
    for part in shares:
        assert part, shares
        folders = {p.rpartition("/")[0] for p in part}
        assert all(p in part for p in FILES if p.rpartition("/")[0] in folders)
    assert [sorted(share(list(reversed(FILES)), k, 3)) for k in (1, 2, 3)] == [sorted(p) for p in shares]


def test_rewrite_touches_only_its_share(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("import tensorflow as tf\ny = tf.log(2.0)\n")
    main(["rewrite", "-j", "1", "--shard", "2/2", "."])
    changed = {f for f in ("one", "two") if "tf.math.log" in (tmp_path / f / "m.py").read_text()}
    assert len(changed) == 1


@pytest.mark.parametrize("bad", ["0/2", "3/2", "2", "a/b"])
def test_a_bad_shard_is_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["rewrite", "--shard", bad, "."])
    assert stop.value.code == 2 and "K/N" in capsys.readouterr().err


def test_verify_base_proves_only_its_share(tmp_path, monkeypatch, capsys):
    import subprocess

    from tf1gradfix.verify import orchestrate
    from tf1gradfix.verify.orchestrate import SideResult, VerifyResult

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    proven = []

    def verified(original, candidate, **_):
        proven.append(str(candidate))
        return VerifyResult("EQUIVALENT", "compared", SideResult("original", str(original)),
                            SideResult("migrated", str(candidate)))
    monkeypatch.setattr(orchestrate, "verify_pair", verified)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    for folder in ("one", "two", "three"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("print(1)\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    for folder in ("one", "two", "three"):
        (tmp_path / folder / "m.py").write_text("print(2)\n")
    shares = []
    for k in (1, 2):
        proven.clear()
        main(["verify", "--base", "HEAD", "--shard", f"{k}/2"])
        shares.append(sorted(proven))
    assert sorted(shares[0] + shares[1]) == ["one/m.py", "three/m.py", "two/m.py"] and all(shares)
    assert main(["verify", "a.py", "b.py", "--shard", "1/2"]) == 2
