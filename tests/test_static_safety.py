"""`check` and `rewrite` never import TensorFlow, never run user code, never
lose a byte of a file they cannot handle, and keep encoding, BOM, newlines and
mode of the files they rewrite.

TensorFlow itself is never started here: the import checks run the tool in a
subprocess and look at `sys.modules`, or put a trap package named
`tensorflow` first on the path.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Session-free TF1 code: a safe rename plus two manual findings per file.
TF1 = """\
import tensorflow as tf

tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 3])
grads = tf.gradients(tf.reduce_sum(x), [x])
"""
# A whole Session program: the whole-program restructuring runs on it.
SESSION_PROGRAM = """\
import tensorflow as tf

tf.set_random_seed(0)
x = tf.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.ones([3, 1]), name="w")
y = tf.matmul(x, w)
loss = tf.reduce_mean(tf.square(y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, loss], feed_dict={x: [[1.0, 2.0, 3.0]]})
        print(step, value)
"""

# Runs the CLI in this interpreter, then says which heavy modules got imported.
PROBE = r"""
import json, runpy, sys
runs = json.loads(sys.argv[1])
codes = []
try:
    for argv in runs:
        sys.argv = ["tf1gradfix", *argv]
        try:
            runpy.run_module("tf1gradfix", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            codes.append(exc.code)
finally:
    print(json.dumps({
        "codes": codes,
        "tensorflow": "tensorflow" in sys.modules,
        "keras": "keras" in sys.modules,
        "libcst": "libcst" in sys.modules,
        "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras")),
    }))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([*extra.pop("prepend", "").split(os.pathsep), str(ROOT)]).strip(os.pathsep)
    env.update(extra)
    return env


def probe(cwd: Path, *runs: list[str], prepend: str = "") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([list(r) for r in runs])],
        cwd=cwd,
        env=_env(prepend=prepend),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli(cwd: Path, *argv: str, prepend: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tf1gradfix", *argv],
        cwd=cwd,
        env=_env(prepend=prepend),
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_here(capsys, monkeypatch, cwd: Path, *argv: str) -> tuple[int, str]:
    """The CLI in this process (fast), from `cwd`."""
    from tf1gradfix.cli.main import main

    monkeypatch.chdir(cwd)
    code = main(list(argv))
    return code, capsys.readouterr().out


# -- TensorFlow is never imported ---------------------------------------------


def test_check_and_rewrite_do_not_import_tensorflow(tmp_path):
    (tmp_path / "train.py").write_text(TF1)
    (tmp_path / "other.py").write_text(SESSION_PROGRAM)
    result = probe(
        tmp_path,
        ["check", "-j", "1", "train.py", "other.py"],
        ["rewrite", "--diff", "-j", "1", "train.py"],
        ["rewrite", "-j", "1", "train.py", "other.py"],
        ["rules"],
        ["explain", "TFG401"],
    )
    assert result["codes"] == [1, 1, 1, 0, 0]  # train.py keeps manual work
    assert result["loaded"] == []
    assert result["tensorflow"] is False
    assert result["keras"] is False
    assert "tf.compat.v1.set_random_seed(0)" in (tmp_path / "train.py").read_text()  # the rewrite did happen
    restructured = (tmp_path / "other.py").read_text()  # ... and the whole-program one too, statically
    assert "tf.GradientTape()" in restructured and "tf.Session" not in restructured


def test_check_of_tf2_code_does_not_import_libcst(tmp_path):
    """What pre-commit runs on migrated code starts in a fraction of the time LibCST takes to load."""
    shutil.copy(ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "migrated.py", tmp_path / "model.py")
    (tmp_path / "util.py").write_text("def f(x):\n    return x + 1\n")
    result = probe(tmp_path, ["check", "model.py", "util.py"], ["check", "-j", "2", "model.py", "util.py"])
    assert result["codes"] == [0, 0]
    assert result["libcst"] is False
    (tmp_path / "old.py").write_text(TF1)
    assert probe(tmp_path, ["check", "old.py"])["libcst"] is False   # (TF1 code too: detection reads Python's tree)
    (tmp_path / "session.py").write_text(SESSION_PROGRAM)
    assert probe(tmp_path, ["check", "session.py"])["libcst"] is False
    assert probe(tmp_path, ["rewrite", "--check", "session.py"])["libcst"] is True  # (the probe can tell)


def test_trap_catches_an_import(tmp_path):
    """The trap used below can fail a test: importing tensorflow through it is logged."""
    trap = _trap_packages(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", "import tensorflow"],
        cwd=tmp_path,
        env=_env(prepend=str(trap)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "must not be imported" in proc.stderr
    assert (tmp_path / "imported.log").read_text().startswith("tensorflow in pid ")


def _trap_packages(tmp_path: Path) -> Path:
    """Packages named tensorflow/keras that log any import (in any process) and refuse it."""
    trap = tmp_path / "trap"
    log = tmp_path / "imported.log"
    for name in ("tensorflow", "keras", "tf_keras"):
        (trap / name).mkdir(parents=True)
        (trap / name / "__init__.py").write_text(
            f"import os\nwith open({str(log)!r}, 'a') as f:\n    f.write('{name} in pid %d\\n' % os.getpid())\n"
            f"raise ImportError('{name} must not be imported by tf1gradfix check/rewrite')\n"
        )
    return trap


def test_parallel_workers_do_not_import_tensorflow(tmp_path):
    trap = _trap_packages(tmp_path)
    work = tmp_path / "work"
    for i in range(12):
        path = work / f"pkg{i % 3}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TF1.replace("set_random_seed(0)", f"set_random_seed({i})"))
    check = cli(work, "check", "-j", "2", ".", prepend=str(trap))
    rewrite = cli(work, "rewrite", "-j", "2", ".", prepend=str(trap))
    assert check.returncode == 1, check.stderr
    assert rewrite.returncode == 1, rewrite.stderr
    # (each file: a rename, a placeholder, a gradient, and why it is not restructured: TFG916)
    assert check.stdout.splitlines()[-1].startswith("12 files checked: 48 findings (12 safe, 36 manual), 12 fixable, 36 need manual work")
    assert "12 files rewritten" in rewrite.stdout
    assert not (tmp_path / "imported.log").exists(), (tmp_path / "imported.log").read_text()


# -- user code is never executed ----------------------------------------------------


def test_user_code_is_never_executed(tmp_path):
    marker = tmp_path / "EXECUTED"
    helper_marker = tmp_path / "HELPER_IMPORTED"
    work = tmp_path / "work"
    work.mkdir()
    (work / "helper.py").write_text(f"open({str(helper_marker)!r}, 'w').write('helper')\n")
    source = textwrap.dedent(
        f"""\
        open({str(marker)!r}, "w").write("module body ran")
        import helper
        import tensorflow as tf

        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32)
        with tf.Session() as sess:
            open({str(marker)!r}, "w").write("session ran")
            sess.run(x, feed_dict={{x: 1.0}})

        if __name__ == "__main__":
            open({str(marker)!r}, "w").write("main ran")
        """
    )
    (work / "train.py").write_text(source)
    (work / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('package init ran')\nimport tensorflow\n")
    (work / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('conftest ran')\nimport tensorflow\n")

    result = probe(work, ["check", "."], ["rewrite", "--diff", "."], ["rewrite", "--check", "."], ["rewrite", "--no-verify", "."])
    assert result["codes"] == [1, 1, 1, 0]
    assert result["tensorflow"] is False
    assert not marker.exists(), marker.read_text()
    assert not helper_marker.exists()
    assert "tf.random.set_seed(0)" in (work / "train.py").read_text()
    assert "tf.Session" not in (work / "train.py").read_text()  # restructured, statically


# -- files that are not valid Python --------------------------------------------------

BAD_FILES = {
    # name: (bytes, expected line in the error or None)
    "a_syntax.py": (b"import tensorflow as tf\nx = = 1\ntf.set_random_seed(0)\n", "any"),
    "b_undecodable.py": (b"import tensorflow as tf\nname = '\xff\xfe\xfa'\ntf.set_random_seed(0)\n", 2),
    "c_binary.py": (b"\x7fELF\x02\x01\x01\x00tensorflow" + bytes(range(256)) * 4, 1),
    "d_junk.py": (b"\x89\xfe\xc0tensorflow\x81\x82\n\xff" * 20, 1),  # the undecodable bytes are on line 1
}
GOOD = b"import tensorflow as tf\n\ntf.set_random_seed(0)\nx = tf.placeholder(tf.float32)\n"


def _bad_tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name, (data, _) in BAD_FILES.items():
        (work / name).write_bytes(data)
    (work / "e_good.py").write_bytes(GOOD)
    return work


def test_bad_files_are_reported_and_the_run_goes_on(tmp_path):
    work = _bad_tree(tmp_path)
    proc = cli(work, "check", "--format", "json", ".")
    assert proc.returncode == 2, proc.stderr
    report = json.loads(proc.stdout)
    errors = {Path(e["path"]).name: e for e in report["errors"]}
    assert set(errors) == set(BAD_FILES)
    for name, (_, line) in BAD_FILES.items():
        if line == "any":
            assert isinstance(errors[name]["line"], int), errors[name]
        else:
            assert errors[name]["line"] == line, errors[name]
    assert errors["a_syntax.py"]["message"].startswith("syntax error")
    assert errors["b_undecodable.py"]["message"].startswith("cannot decode as utf-8")
    assert "binary" in errors["c_binary.py"]["message"]
    assert [(Path(f["path"]).name, f["line"], f["code"], f["fixed"]) for f in report["findings"]] == [
        ("e_good.py", 3, "TFG401", True),
        ("e_good.py", 4, "TFG101", False),
        ("e_good.py", 4, "TFG916", False),
    ]
    assert report["summary"]["files"] == 5 and report["summary"]["errors"] == 4


def test_bad_files_in_text_output_name_path_and_line(tmp_path):
    work = _bad_tree(tmp_path)
    proc = cli(work, "check", ".")
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    assert any(l.startswith("a_syntax.py:") and ": error: syntax error" in l for l in lines), lines
    assert any(l.startswith("b_undecodable.py:2: error: cannot decode") for l in lines), lines
    assert any(l.startswith("c_binary.py:1: error: binary file") for l in lines), lines
    assert any(l.startswith("d_junk.py") and ": error: " in l for l in lines), lines
    assert ("e_good.py:3:1: TFG401 [*safe] `tf.set_random_seed` is `tf.random.set_seed` in TF2 (in a file that stays "
            "TF1: `tf.compat.v1.set_random_seed`; tf.compat.v1 lacks the TF2 name or has another function under it)") in lines


@pytest.mark.parametrize("mode", [[], ["--diff"], ["--check"]], ids=["write", "diff", "check"])
def test_rewrite_leaves_bad_files_byte_identical(tmp_path, mode):
    work = _bad_tree(tmp_path)
    proc = cli(work, "rewrite", *mode, ".")
    assert proc.returncode == 2, proc.stderr
    for name, (data, _) in BAD_FILES.items():
        assert (work / name).read_bytes() == data, name
    expected_good = GOOD.replace(b"tf.set_random_seed", b"tf.compat.v1.set_random_seed") if not mode else GOOD
    assert (work / "e_good.py").read_bytes() == expected_good
    assert not [p.name for p in work.iterdir() if p.name.startswith(".")]  # no temporary files left behind
    if mode == ["--diff"]:
        assert "+tf.compat.v1.set_random_seed(0)" in proc.stdout
        assert "a_syntax" not in proc.stdout and "b_undecodable" not in proc.stdout


def test_syntax_error_names_the_right_line(tmp_path):
    (tmp_path / "s.py").write_bytes(b"import tensorflow as tf\nx = = 1\ny = 2\n")
    proc = cli(tmp_path, "check", "--format", "json", "s.py")
    [error] = json.loads(proc.stdout)["errors"]
    assert error["line"] == 2


def test_empty_files_are_valid(tmp_path, capsys, monkeypatch):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "__init__.py").write_bytes(b"")
    (tmp_path / "blank.py").write_bytes(b"\n\n")
    for argv in (["check", "."], ["rewrite", "."], ["rewrite", "--check", "."], ["rewrite", "--diff", "."]):
        said = "All checks passed!\n" if argv[0] == "check" else ""
        assert run_here(capsys, monkeypatch, tmp_path, *argv) == (0, said), argv
    assert (tmp_path / "empty.py").read_bytes() == b""
    assert (tmp_path / "__init__.py").read_bytes() == b""
    assert (tmp_path / "blank.py").read_bytes() == b"\n\n"


# -- encodings, BOM, newlines, tabs, mode ----------------------------------------

ENCODED = {
    "latin1_cookie": "# -*- coding: latin-1 -*-\nimport tensorflow as tf\n\n# café, naïve\ntf.set_random_seed(0)\nlabel = \"été\"\n".encode("latin-1"),
    "cp1252_cookie": "# coding=cp1252\nimport tensorflow as tf\nprice = \"5 €\"\ntf.set_random_seed(0)\n".encode("cp1252"),
    "utf8_bom": "\ufeffimport tensorflow as tf\n# naïve\ntf.set_random_seed(0)\n".encode("utf-8"),
    "utf8_bom_crlf": "\ufeffimport tensorflow as tf\r\n# naïve\r\ntf.set_random_seed(0)\r\n".encode("utf-8"),
    "crlf": b"import tensorflow as tf\r\n\r\ntf.set_random_seed(0)\r\nx = tf.log(2.0)\r\n",
    "tabs": b"import tensorflow as tf\n\nif True:\n\ttf.set_random_seed(0)\n\tif 1:\n\t\ty = tf.log(2.0)\n",
    "no_final_newline": b"import tensorflow as tf\ntf.set_random_seed(0)",
    "utf8_no_bom": "import tensorflow as tf\nπ = 3.14  # ünïcödé\ntf.set_random_seed(0)\n".encode("utf-8"),
}


@pytest.mark.parametrize("name", list(ENCODED))
def test_rewrite_keeps_encoding_bom_newlines_and_mode(tmp_path, capsys, monkeypatch, name):
    data = ENCODED[name]
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    os.chmod(path, 0o640)
    code, out = run_here(capsys, monkeypatch, tmp_path, "rewrite", path.name)
    assert code == 0, out
    assert out.splitlines()[-1].endswith("1 file rewritten.")
    expected = data.replace(b"tf.set_random_seed", b"tf.compat.v1.set_random_seed").replace(b"tf.log(", b"tf.math.log(")
    assert expected != data
    assert path.read_bytes() == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left
    assert run_here(capsys, monkeypatch, tmp_path, "rewrite", path.name) == (0, "")
    assert path.read_bytes() == expected


def test_columns_count_characters_not_bytes(tmp_path, capsys, monkeypatch):
    path = tmp_path / "u.py"
    path.write_bytes("import tensorflow as tf\né = 1; tf.set_random_seed(0)\n".encode("utf-8"))
    code, out = run_here(capsys, monkeypatch, tmp_path, "check", "u.py")
    assert code == 1
    assert out.splitlines()[0].startswith("u.py:2:8: TFG401 [*safe]")


def test_rewrite_keeps_cr_only_newlines(tmp_path, capsys, monkeypatch):
    data = b"import tensorflow as tf\rtf.set_random_seed(0)\rx = 1\r"
    path = tmp_path / "cr.py"
    path.write_bytes(data)
    run_here(capsys, monkeypatch, tmp_path, "rewrite", "cr.py")
    assert path.read_bytes() == data.replace(b"tf.set_random_seed", b"tf.compat.v1.set_random_seed")
