"""The strict applier of wrong counterparts written as patches (tests/fixture_patch.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixture_patch import PatchError, apply, counterpart_text, diff, main

BASE = "".join(f"line {i}\n" for i in range(1, 21))
VERIFY = Path(__file__).resolve().parent.parent / "fixtures" / "verify"


def _edited(text: str, **lines: str) -> str:
    rows = text.splitlines(keepends=True)
    for key, value in lines.items():
        rows[int(key[1:]) - 1] = value
    return "".join(rows)


@pytest.mark.parametrize("new", [
    _edited(BASE, n3="three\n", n17="seventeen\n"),                 # two hunks
    "first\n" + BASE,                                                # insertion before line 1
    BASE.replace("line 10\n", ""),                                   # a deletion
    BASE + "after\n",                                                # an addition at the end
    BASE[:-1],                                                       # no newline at the end
    BASE.replace("line 5\n", "\n"),                                  # an empty line
])
def test_a_diff_applies_back_to_the_same_text(new):
    patch = diff(BASE, new, "base.py", "new.py")
    assert patch.startswith("--- base.py\n+++ new.py\n@@ ")
    assert apply(BASE, patch) == new


def test_context_lines_stripped_of_their_space_still_apply():
    new = BASE.replace("line 5\n", "\n").replace("line 7\n", "seven\n")
    patch = diff(BASE.replace("line 5\n", "\n"), new, "base.py", "new.py")
    assert "\n \n" in patch
    assert apply(BASE.replace("line 5\n", "\n"), patch.replace("\n \n", "\n\n")) == new


def test_a_changed_base_names_the_hunk_and_the_line():
    patch = diff(BASE, _edited(BASE, n3="three\n", n17="seventeen\n"), "base.py", "new.py")
    changed = _edited(BASE, n15="fifteen\n")
    with pytest.raises(PatchError) as err:
        apply(changed, patch, patch_name="wrong.patch", base_name="base.py")
    message = str(err.value)
    assert message.startswith("wrong.patch, hunk 2 (@@ -14,7 +14,7 @@) does not apply to base.py")
    assert "line 15 is 'fifteen\\n', the hunk expects 'line 15\\n'" in message
    assert "nowhere in the base" in message and "write the counterpart again" in message


def test_no_offsets_a_moved_base_says_by_how_much():
    patch = diff(BASE, _edited(BASE, n10="ten\n"), "base.py", "new.py")
    with pytest.raises(PatchError, match=r"hunk 1 .*the hunk's lines stand at line 9 \(\+2 lines\)"):
        apply("new 1\nnew 2\n" + BASE, patch)


def test_a_base_too_short_for_the_hunk():
    patch = diff(BASE, _edited(BASE, n19="nineteen\n"), "base.py", "new.py")
    with pytest.raises(PatchError, match="reaches line 20, the base has 12"):
        apply("".join(BASE.splitlines(keepends=True)[:12]), patch)


@pytest.mark.parametrize("patch,message", [
    ("@@ -1 +1 @@\n-line 1\n+one\n", "starts with the lines '--- BASE' and '+++ NEW'"),
    ("--- a\n+++ b\n", "no hunks"),
    ("--- a\n+++ b\n@@ -1,2 +1,2 @@\n-line 1\n+one\n", "counts 2 old and 2 new lines, its body has 1 and 1"),
    ("--- a\n+++ b\n@@ -1 +1 @@\n-line 1\n+one\n+two\n", "expected a hunk header"),
    ("--- a\n+++ b\nsome text\n", "expected a hunk header"),
    ("--- a\n+++ b\n@@ -5 +5 @@\n-line 5\n+five\n@@ -2 +2 @@\n-line 2\n+two\n", "inside or before the hunk before it"),
    ("--- a\n+++ b\n@@ -5 +6 @@\n-line 5\n+five\n", "new start 6 does not follow"),
])
def test_malformed_patches_are_refused(patch, message):
    with pytest.raises(PatchError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        apply(BASE, patch)


def test_a_fixture_patch_fails_when_its_expected_rewrite_changes(tmp_path):
    """What whoever changes a rewrite meets: the counterpart names its hunk instead of verifying a stale program."""
    scenario = tmp_path / "verify" / "bilstm_classifier"
    scenario.mkdir(parents=True)
    for name in ("wrong_directions_swapped.patch", "expect.toml"):
        (scenario / name).write_bytes((VERIFY / "bilstm_classifier" / name).read_bytes())
    expected = VERIFY.parent / "rewrite" / "bilstm_classifier" / "expected.py"
    rewrite = tmp_path / "rewrite" / "bilstm_classifier"
    rewrite.mkdir(parents=True)
    (rewrite / "expected.py").write_text(expected.read_text().replace("outputs_bw = tf.nn.dropout(outputs_bw, ",
                                                                      "outputs_bw = tf.nn.dropout(outputs_bw,  "))
    assert "outputs = (outputs_bw, outputs_fw)" in counterpart_text(VERIFY / "bilstm_classifier",
                                                                     "wrong_directions_swapped")
    with pytest.raises(PatchError, match=r"wrong_directions_swapped.patch, hunk 1 \(@@ .* @@\) does not apply to "
                                         r"\.\./\.\./rewrite/bilstm_classifier/expected.py: line \d+ is"):
        counterpart_text(scenario, "wrong_directions_swapped")


def test_a_patch_entry_without_a_base_is_refused(tmp_path):
    (tmp_path / "expect.toml").write_text('[wrong]\nverdict = "DIVERGED"\n')
    (tmp_path / "wrong.patch").write_text("--- migrated.py\n+++ wrong.py\n")
    with pytest.raises(PatchError, match="names no base"):
        counterpart_text(tmp_path, "wrong")


def test_the_command_writes_and_applies_patches(tmp_path, capsys):
    (tmp_path / "scenario").mkdir()
    base, new = tmp_path / "base.py", tmp_path / "scenario" / "new.py"
    base.write_text(BASE)
    new.write_text(_edited(BASE, n4="four\n"))
    assert main(["diff", str(base), str(new)]) == 0
    patch = tmp_path / "scenario" / "new.patch"
    patch.write_text(capsys.readouterr().out)
    assert patch.read_text().startswith("--- ../base.py\n+++ new.py\n")
    assert main(["apply", str(base), str(patch)]) == 0
    assert capsys.readouterr().out == new.read_text()
    base.write_text(_edited(BASE, n4="changed\n"))
    assert main(["apply", str(base), str(patch)]) == 2
    assert "hunk 1" in capsys.readouterr().err
    assert main(["merge", str(base), str(patch)]) == 2
