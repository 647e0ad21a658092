"""Text lines carry the fix label JSON and SARIF carry (`[safe]`, `[proven]`,
`[manual]`, with `*` when the run fixes it), and the summary line counts those labels."""

from __future__ import annotations

import json
import re

import pytest

from tf1gradfix.cli.main import main
from tests.test_cli_labels import SESSION

MARK = re.compile(r"^(?P<path>.+?):\d+:\d+: (?P<code>TFG\d{3}) \[(?P<star>\*?)(?P<label>safe|proven|manual|rewrite decides)\] \S")


def run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().out


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SESSION)
    (tmp_path / "inputs.py").write_text("import tensorflow as tf\ntf.set_random_seed(0)\n"
                                        "x = tf.placeholder(tf.float32, [None])\n")
    (tmp_path / "refused.py").write_text(SESSION.replace("feed_dict={x: [[1.0]]}", "feed_dict=feeds"))
    return tmp_path


def _marks(out: str) -> list[tuple[str, str, bool, str]]:
    found = [MARK.match(line) for line in out.splitlines()]
    return [(m["path"], m["code"], m["star"] == "*", m["label"]) for m in found if m]


def _label(finding: dict) -> str:
    """What text shows for a JSON finding: a restructuring `check` cannot promise is `rewrite`'s to decide."""
    return "rewrite decides" if finding["fixed"] is None and finding["safety"] == "proven" else finding["safety"]


@pytest.mark.parametrize("argv", [("check",), ("rewrite", "--check")])
def test_every_text_line_names_the_label_json_gives(folder, capsys, argv):
    _, out = run(capsys, *argv, "--format", "json", ".")
    expected = [(f["path"], f["code"], bool(f["fixed"]), _label(f)) for f in json.loads(out)["findings"]]
    _, out = run(capsys, *argv, ".")
    lines = [line for line in out.splitlines() if re.match(r"^\S+:\d+:\d+: TFG", line)]
    assert _marks(out) == expected and len(lines) == len(expected)


def test_the_labels_read_what_each_run_decides(folder, capsys):
    """`check` leaves a session program's question open (no `*`); `rewrite --check` fixes
    it (`*proven`) or, refused, names its findings manual."""
    _, out = run(capsys, "check", "train.py", "inputs.py")
    marks = {(path, code): (star, label) for path, code, star, label in _marks(out)}
    assert marks[("train.py", "TFG101")] == (False, "rewrite decides") and marks[("train.py", "TFG401")] == (False, "safe")
    assert marks[("inputs.py", "TFG401")] == (True, "safe") and marks[("inputs.py", "TFG101")] == (False, "manual")
    _, out = run(capsys, "rewrite", "--check", "train.py", "refused.py")
    marks = {(path, code): (star, label) for path, code, star, label in _marks(out)}
    assert marks[("train.py", "TFG101")] == (True, "proven")
    assert marks[("refused.py", "TFG101")] == (False, "manual") and marks[("refused.py", "TFG401")] == (False, "safe")


def test_the_summary_counts_the_labels_the_lines_show(folder, capsys):
    """`check`'s closing sentence promises no proof the lines do not: `decided by `rewrite``."""
    for argv in (("check", "."), ("rewrite", "--check", ".")):
        _, out = run(capsys, *argv)
        # (the sentence counts the labels the lines show; JSON counts the rules' labels, where
        # a restructuring `rewrite` decides is a fix with proof)
        shown = [label for *_, label in _marks(out)]
        counted = ", ".join(f"{shown.count(label)} {said}" for label, said in
                            (("safe", "safe"), ("proven", "proven"), ("manual", "manual"),
                             ("rewrite decides", "decided by `rewrite`")) if label in shown)
        assert f"{len(shown)} findings ({counted}), " in out.splitlines()[-1]
        labels = ["proven" if label == "rewrite decides" else label for label in shown]
        _, document = run(capsys, *argv, "--format", "json")
        assert json.loads(document)["summary"]["labels"] == {label: labels.count(label) for label in
                                                            ("safe", "proven", "manual") if label in labels}
