"""Projects of several files (fixtures/projects/<name>/): a model module and the script
that imports it, rewritten together (tf1gradfix/run/project.py).

Each `input/` folder is rewritten as one project: every file equals its copy in
`expected/`, the findings equal `expected.diag` (one `file:line:col: CODE [*] message`
per line), and the expected folder is left as it is by a second rewrite. A refusal in
either file leaves both intact; the proofs run the script with the migrated modules
swapped in (`diverged/`: a wrong migration of a module, which the proof must catch, whole or
as a patch against its expected migration).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from fixture_patch import apply

from tf1gradfix.cli.output import finding_line
from tf1gradfix.run import project, project_groups
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
PROJECTS = sorted(p.parent for p in ROOT.glob("*/input"))


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py"))


def rewrite(folder: Path, monkeypatch) -> tuple[dict, str]:
    """(file name -> rewritten bytes, the findings) of the folder's one project, or its one
    group of scripts sharing a module (each file's findings once)."""
    monkeypatch.chdir(folder)
    planned = project_groups.groups(project.plan(_names(folder)))
    assert len(planned) == 1, planned
    outcomes = (project.outcomes(planned[0][0], "propose", CodeFilter(), 10 ** 7) if len(planned[0]) == 1
                else project_groups.outcomes(planned[0], "propose", lambda _: CodeFilter(), 10 ** 7))
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
    new = {name: (folder / name).read_bytes() for name in _names(folder)}
    for script in outcomes:
        if script.new_source is not None:
            new[script.path] = script.new_source
            new.update({path: data for path, (data, _) in (script.companions or {}).items()})
    once = {o.path: o for o in reversed(outcomes)}
    diag = "".join(finding_line(f) + "\n" for o in outcomes if once[o.path] is o for f in o.findings)
    return new, diag


def test_there_are_projects():
    assert len(PROJECTS) >= 2


@pytest.mark.parametrize("scenario", PROJECTS, ids=lambda p: p.name)
def test_project_rewrite(scenario: Path, monkeypatch, update_fixtures: bool):
    new, diag = rewrite(scenario / "input", monkeypatch)
    expected = scenario / "expected"
    if update_fixtures:
        expected.mkdir(exist_ok=True)
        for name, data in new.items():
            (expected / name).write_bytes(data)
        (scenario / "expected.diag").write_text(diag, encoding="utf-8")
    assert _names(expected) == sorted(new)
    for name, data in new.items():
        assert data == (expected / name).read_bytes(), name
        assert data != (scenario / "input" / name).read_bytes() or b"tensorflow" not in data, \
            f"{name}: each file of TensorFlow code has changes of its own"   # (a module of host code stays)
        compile(data, name, "exec")
    assert diag == (scenario / "expected.diag").read_text(encoding="utf-8")
    assert project.plan([str(expected / name) for name in new]) == []   # (nothing TF1 is left to migrate)
    for name, data in new.items():
        assert process_source(name, data, CodeFilter()).new_source is None, f"a second rewrite changed {name}"


def test_a_module_alone_says_why_it_is_not_rewritten():
    data = (ROOT / "classifier_class" / "input" / "model.py").read_bytes()
    for check in (True, False):
        result = process_source("model.py", data, CodeFilter(), check=check)
        assert result.new_source is None
        assert [f.line for f in result.findings if f.code == "TFG923" and "runs no session" in f.message] == [15]


# A refusal of the rewrite in one file: the line, in that file; neither file changes.
BREAKS = {
    "model.py": ("        self.probability = tf.sigmoid(self.logits)\n",
                 "        self.probability = tf.get_default_graph().get_tensor_by_name(\"logits:0\")\n"),
    "train.py": ("        probability = sess.run(model.probability, {model.features: points})\n",
                 "        probability = sess.run(\"Sigmoid:0\", {model.features: points})\n"),
}


@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_a_refusal_in_one_file_leaves_both_intact(broken, tmp_path, capsys):
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "classifier_class" / "input", folder)
    old, new = BREAKS[broken]
    text = (folder / broken).read_text(encoding="utf-8")
    assert old in text
    (folder / broken).write_text(text.replace(old, new), encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    line = text[:text.index(old)].count("\n") + 1
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    blocker = [row for row in out.splitlines() if "not restructured" in row]
    assert blocker and blocker[0].startswith(f"{folder / broken}: not restructured") and f"line {line}:" in blocker[0], out


def test_a_refused_project_still_gets_each_files_safe_fixes(tmp_path, capsys):
    """Renames need no proof and do not depend on the other file: a refused project's
    files get them as they would alone; nothing else changes."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "classifier_class" / "input", folder)
    old, new = BREAKS["train.py"]
    train = (folder / "train.py").read_text(encoding="utf-8")
    (folder / "train.py").write_text(train.replace(old, new), encoding="utf-8")
    model = (folder / "model.py").read_text(encoding="utf-8")
    marked = model.replace("tf.sigmoid(self.logits)", "tf.sigmoid(tf.log(tf.exp(self.logits)))")
    assert marked != model
    (folder / "model.py").write_text(marked, encoding="utf-8")
    before = (folder / "train.py").read_bytes()
    assert main(["rewrite", str(folder)]) == 1
    out = capsys.readouterr().out
    assert (folder / "train.py").read_bytes() == before
    assert (folder / "model.py").read_text(encoding="utf-8") == marked.replace("tf.log(", "tf.math.log(")
    assert "TFG401 [*safe] `tf.log` is `tf.math.log`" in out and "not restructured" in out, out


def test_a_module_two_scripts_import_is_migrated_once_for_both(tmp_path, capsys):
    """Two scripts sharing the module: one migration of it, with the steps of both."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "shared_regressor" / "input", folder)
    assert main(["rewrite", "--no-verify", str(folder)]) == 0, capsys.readouterr().out
    for name in _names(folder):
        assert (folder / name).read_bytes() == (ROOT / "shared_regressor" / "expected" / name).read_bytes(), name


def test_a_module_also_imported_by_a_file_without_a_session_is_migrated_with_none(tmp_path, capsys):
    """A file importing the module that is not migrated with it (it runs a session it is
    handed) would keep calling the TF1 form: every file is left as it was."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "classifier_class" / "input", folder)
    (folder / "report.py").write_text("from model import Classifier\n\n\ndef report(sess, model, points):\n"
                                      "    return sess.run(model.probability, {model.features: points})\n")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert "module `model` is also imported by report.py, which opens no session of its own" in out, out


def _group_folder(tmp_path, score_old=None, score_new=None):
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "shared_regressor" / "input", folder)
    if score_old is not None:
        text = (folder / "score.py").read_text(encoding="utf-8")
        assert score_old in text
        (folder / "score.py").write_text(text.replace(score_old, score_new), encoding="utf-8")
    return folder, {name: (folder / name).read_bytes() for name in _names(folder)}


def test_a_blocker_in_one_script_of_a_group_leaves_every_file_intact(tmp_path, capsys):
    """score.py fetches a tensor by name: it is refused, and train.py, which alone would be
    migrated, is left as it is, with the reason, in the same run."""
    from tf1gradfix.cli.main import main

    folder, before = _group_folder(tmp_path, "[net.worst, net.prediction]", '[net.worst, "Squeeze:0"]')
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'train.py'}:5:1: TFG923 [manual] shares a model module with score.py, which is not " \
           "restructured" in out, out
    assert any(row.startswith(f"{folder / 'score.py'}: not restructured") for row in out.splitlines()), out


_BASE = b"""import tensorflow as tf


class Net(tf.Module):
    def __init__(self):
        self.optimizer = tf.keras.optimizers.SGD(0.1)

    def forward(self, x):
        return 2 * x

    def train_step(self, x, y):
        return self.forward(x) - y

    def compute_error(self, x, y):
        return self.forward(x) - y
"""


def test_a_shared_module_holds_the_steps_of_every_script():
    """The largest migration is the base; another's methods it lacks are added to its class,
    its imports too; a method both wrote with the same parameters is the base's."""
    from tf1gradfix.run import module_merge

    other = (b"import numpy as np\nimport tensorflow as tf\n\n\nclass Net(tf.Module):\n"
             b"    def __init__(self):\n        optimizer = tf.keras.optimizers.SGD(0.1)\n\n"
             b"    def compute_error(self, x, y):\n        return 2 * x - y\n\n"
             b"    @tf.function\n    def compute_scale(self, x):\n        return np.float32(2) * x\n")
    merged = module_merge.merge([module_merge.Version("score.py", other, b"net.compute_error(a, b)\nnet.compute_scale(a)"),
                                 module_merge.Version("train.py", _BASE, b"net.train_step(a, b)")])
    text = merged.decode()
    assert text.startswith("import tensorflow as tf\nimport numpy as np\n"), text
    assert "self.optimizer = " in text and "return self.forward(x) - y\n\n    @tf.function\n" \
        "    def compute_scale(self, x):\n        return np.float32(2) * x\n" in text, text
    assert text.count("def compute_error") == 1
    compile(merged, "merged.py", "exec")


def test_a_step_two_scripts_call_with_other_parameters_is_a_conflict():
    from tf1gradfix.run import module_merge

    other = _BASE.replace(b"def compute_error(self, x, y):\n        return self.forward(x) - y",
                          b"def compute_error(self, x):\n        return self.forward(x)")
    versions = [module_merge.Version("train.py", _BASE + b"\n    def more(self):\n        pass\n", b"net.train_step(a, b)"),
                module_merge.Version("score.py", other, b"net.compute_error(a)")]
    assert module_merge.merge(versions) == module_merge.Conflict("Net.compute_error", "score.py", "train.py")
    versions[1] = module_merge.Version("score.py", other, b"net.forward(a)")   # (not called: the base's kept)
    assert module_merge.merge(versions) == versions[0].module


@pytest.mark.tf
def test_projects_are_proven_and_a_diverged_module_is_caught(tmp_path, capsys):
    """One batch of proofs: `rewrite --verify` of a folder writes both files once the script
    is EQUIVALENT with the migrated module; a wrong module makes the same script DIVERGED."""
    from tf1gradfix.cli.main import main
    from tf1gradfix.verify.orchestrate import DIVERGED, EQUIVALENT, verify_pair

    for scenario in PROJECTS:
        folder = tmp_path / scenario.name
        shutil.copytree(scenario / "input", folder)
        planned = next(p for p in project.plan([str(folder / name) for name in _names(folder)])
                       if Path(p.script).name == "train.py")
        assert main(["rewrite", "--verify", str(folder)]) == 0, capsys.readouterr().out
        modules = ", ".join(planned.modules)
        assert f"{folder / 'train.py'} with {modules}: {EQUIVALENT} (written)" in capsys.readouterr().out
        for name in _names(folder):
            assert (folder / name).read_bytes() == (scenario / "expected" / name).read_bytes(), name
    diverged = [scenario for scenario in PROJECTS if (scenario / "diverged").is_dir()]
    assert {"classifier_class", "session_handed", "shared_regressor", "nested_blocks", "star_pieces", "dotted_cells",
            "training_in_the_script", "session_in_a_graph_block"} \
        <= {s.name for s in diverged}
    for scenario in diverged:
        migrated = tmp_path / f"candidate_{scenario.name}.py"
        shutil.copy(scenario / "expected" / "train.py", migrated)
        wrong = {path.name: path.read_bytes() for path in (scenario / "expected").glob("*.py")
                 if path.name != "train.py"}   # (the other migrated modules, as they are)
        wrong.update({path.name: path.read_bytes() for path in (scenario / "diverged").glob("*.py")})
        wrong.update({f"{path.stem}.py": apply((scenario / "expected" / f"{path.stem}.py").read_text(encoding="utf-8"),
                                               path.read_text(encoding="utf-8")).encode()
                      for path in (scenario / "diverged").glob("*.patch")})   # (a patch against expected/)
        result = verify_pair(scenario / "input" / "train.py", migrated, swap=wrong)
        assert result.verdict == DIVERGED and result.first_divergence is not None, (scenario.name, result.reason)
    # the shared module wrong only in what score.py runs: score.py's own proof catches it
    scenario = ROOT / "shared_regressor"
    right = (scenario / "expected" / "network.py").read_text(encoding="utf-8")
    worst = "        worst = tf.reduce_max(tf.abs(prediction - targets))\n"
    assert right.count(worst) == 1
    wrong = {"network.py": right.replace(worst, worst.replace("reduce_max", "reduce_mean")).encode()}
    migrated = tmp_path / "candidate_score.py"
    shutil.copy(scenario / "expected" / "score.py", migrated)
    result = verify_pair(scenario / "input" / "score.py", migrated, swap=wrong)
    assert result.verdict == DIVERGED and "worst" in result.reason, result.reason


def test_rewrite_of_the_files_of_a_project_writes_both(tmp_path, capsys):
    """`rewrite model.py train.py` is the folder's project too; --no-verify writes both unproven."""
    from tf1gradfix.cli.main import main

    scenario = ROOT / "layer_builders"
    folder = tmp_path / "project"
    shutil.copytree(scenario / "input", folder)
    assert main(["rewrite", "--no-verify", *(str(folder / name) for name in _names(folder))]) == 0
    assert "2 files rewritten" in capsys.readouterr().out
    for name in _names(folder):
        assert (folder / name).read_bytes() == (scenario / "expected" / name).read_bytes(), name
    for name in _names(folder):
        shutil.copy(scenario / "input" / name, folder / name)
    capsys.readouterr()
    # the script alone: read without the module, its calls into it would look like plain functions
    assert main(["rewrite", "--no-verify", str(folder / "train.py")]) == 1
    assert "imports module `nets` of its folder, which makes variables" in capsys.readouterr().out
    for name in _names(folder):
        assert (folder / name).read_bytes() == (scenario / "input" / name).read_bytes(), name


def test_a_script_given_without_a_module_of_variable_helpers_is_refused(tmp_path, capsys):
    """A module whose functions only make `tf.Variable`s (no placeholder, no session) is a model
    module too: the folder is one project (its helpers make weights on every call: refused as
    builders), and the script alone is refused, both left as they were."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "parts.py").write_text(
        "import tensorflow as tf\n\n\ndef weight(shape):\n    return tf.Variable(tf.zeros(shape))\n\n\n"
        "def affine(x, size):\n    return tf.matmul(x, weight([int(x.get_shape()[1]), size])) + weight([size])\n")
    (folder / "fit.py").write_text(
        "import numpy as np\nimport tensorflow as tf\nfrom parts import affine\n\nx = tf.placeholder(tf.float32, [None, 2])\n"
        "y = affine(x, 1)\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
        "    print(sess.run(y, {x: np.ones([3, 2])}))\n")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder / "fit.py")]) == 1
    assert "imports module `parts` of its folder" in capsys.readouterr().out
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    assert "`affine` creates weights (`weight`) when called" in capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before


def test_import_of_the_module_is_followed_only_for_its_names(tmp_path, monkeypatch):
    """`import nets` is read as the module's code where `nets.fc` is all the script reads of
    it; the module used as a value is refused with the reason, at the import."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "layer_builders" / "input", folder)
    text = (folder / "train.py").read_text(encoding="utf-8")
    (folder / "train.py").write_text(text.replace("def main():\n", "def main():\n    print(nets)\n"), encoding="utf-8")
    new, diag = rewrite(folder, monkeypatch)
    assert all(new[name] == (folder / name).read_bytes() for name in new)
    line = text[:text.index("import nets")].count("\n") + 1
    assert f"train.py:{line}:1: TFG923 [manual] module `nets` is imported otherwise than" in diag


@pytest.mark.parametrize("renamed", [False, True], ids=["no-safe-fix", "safe-fix"])
def test_a_plain_rewrite_whose_proof_fails_writes_neither_file(renamed, tmp_path, capsys, monkeypatch):
    """Plain `rewrite` proves the project before writing: a DIVERGED proof of the script
    leaves the module unrestructured too, with none of its findings fixed but its safe
    renames (`renamed`: the module spells `tf.log`, which it gets as `tf.math.log`)."""
    from tf1gradfix.cli import rewrite_verify
    from tf1gradfix.cli.main import main

    asked = []

    def diverged(changed, companions=None, **_):
        asked.append({path: sorted(companions.get(path, {})) for path, _ in changed})
        return [rewrite_verify.ProofRow(path, "DIVERGED", "loss differs at step 1", False) for path, _ in changed]

    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    monkeypatch.setattr(rewrite_verify, "prove_and_write", diverged)
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "classifier_class" / "input", folder)
    model = (folder / "model.py").read_text(encoding="utf-8")
    if renamed:
        model = model.replace("tf.sigmoid(self.logits)", "tf.sigmoid(tf.log(tf.exp(self.logits)))")
        (folder / "model.py").write_text(model, encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--format", "json", str(folder)]) == 1
    document = __import__("json").loads(capsys.readouterr().out)
    assert asked == [{str(folder / "train.py"): [str(folder / "model.py")]}]
    after = {name: (folder / name).read_bytes() for name in _names(folder)}
    if renamed:
        assert after.pop("model.py").decode() == model.replace("tf.log(", "tf.math.log(")
        before.pop("model.py")
    assert after == before
    assert document["summary"]["changed"] == int(renamed)
    fixed = [f["code"] for f in document["findings"] if f["path"].endswith("model.py") and f["fixed"]]
    assert fixed == (["TFG401"] if renamed else [])


def test_a_module_starting_with_a_bom_keeps_it(tmp_path, monkeypatch):
    scenario = ROOT / "classifier_class"
    folder = tmp_path / "project"
    shutil.copytree(scenario / "input", folder)
    (folder / "model.py").write_bytes(b"\xef\xbb\xbf" + (folder / "model.py").read_bytes())
    new, _ = rewrite(folder, monkeypatch)
    assert new["model.py"] == b"\xef\xbb\xbf" + (scenario / "expected" / "model.py").read_bytes()
    assert new["train.py"] == (scenario / "expected" / "train.py").read_bytes()


@pytest.mark.parametrize("case,analyses", [("refused", 1), ("module_refused", 1), ("proven", 0), ("diverged", 1),
                                           ("no_tensorflow", 1)])
def test_each_file_is_analyzed_alone_at_most_once(case, analyses, tmp_path, capsys, monkeypatch):
    """Plain `rewrite` of a project analyzes each file on its own (its safe fixes: process_source
    with restructure=False) once at the most: a refused project takes findings and fixes from
    that one analysis (`refused`: in the script read with its module; `module_refused`: before,
    the module runs code when imported); a restructured one leaves it until its proof fails or
    cannot run."""
    from tf1gradfix.cli import rewrite_verify
    from tf1gradfix.cli.main import main
    from tf1gradfix.run import engine

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "classifier_class" / "input", folder)
    model = (folder / "model.py").read_text(encoding="utf-8")   # (a safe fix in the module: tf.log)
    (folder / "model.py").write_text(model.replace("tf.sigmoid(self.logits)", "tf.sigmoid(tf.log(tf.exp(self.logits)))"),
                                     encoding="utf-8")
    if case == "refused":
        old, new = BREAKS["train.py"]
        (folder / "train.py").write_text((folder / "train.py").read_text(encoding="utf-8").replace(old, new),
                                         encoding="utf-8")
    if case == "module_refused":
        with open(folder / "model.py", "a", encoding="utf-8") as module:
            module.write('print("model loaded")\n')
    counted: dict[str, int] = {}
    analyze = engine.process_source

    def counting(display, data, codes, fix=True, restructure=True, check=False):
        if not restructure:
            counted[Path(display).name] = counted.get(Path(display).name, 0) + 1
        return analyze(display, data, codes, fix=fix, restructure=restructure, check=check)

    def proven(changed, companions=None, **_):
        verdict = "EQUIVALENT" if case == "proven" else "DIVERGED"
        return [rewrite_verify.ProofRow(path, verdict, "", verdict == "EQUIVALENT") for path, _ in changed]

    monkeypatch.setattr(engine, "process_source", counting)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: case == "no_tensorflow")
    monkeypatch.setattr(rewrite_verify, "prove_and_write", proven)
    main(["rewrite", str(folder)])
    out = capsys.readouterr().out
    expected = {"model.py": analyses, "train.py": analyses} if analyses else {}
    assert counted == expected, out
    if case != "proven":   # (the module got its safe fix alone)
        assert "tf.math.log(" in (folder / "model.py").read_text(encoding="utf-8"), out


def _stubbed_proofs(monkeypatch, failing: str | None) -> list:
    """Each proof's verdict as given (DIVERGED for the script named `failing`); the list of
    (script, modules swapped in) of each proof asked for."""
    from tf1gradfix.verify import orchestrate

    swapped: list = []

    def verdict(original, migrated, swap=None, **_):
        swapped.append((Path(original).name, sorted(swap or {})))
        side = orchestrate.SideResult("original", str(original), status="ok")
        name = "DIVERGED" if Path(original).name == failing else "EQUIVALENT"
        return orchestrate.VerifyResult(name, "as given", side, replace(side, role="migrated"))

    monkeypatch.setattr(orchestrate, "verify_pair", verdict)
    monkeypatch.setattr("tf1gradfix.verify.budget.tensorflow_missing", lambda: False)
    return swapped


@pytest.mark.parametrize("command", [["--verify"], []], ids=["verify", "plain"])
@pytest.mark.parametrize("failing", [None, "score.py"])
def test_a_group_is_written_once_every_script_is_proven(failing, command, tmp_path, capsys, monkeypatch):
    """`rewrite --verify` and plain `rewrite`: each script of the group is proven with the one module; a script
    not EQUIVALENT leaves every file of the group as it was (the proof stubbed: each
    script's verdict as given)."""
    from tf1gradfix.cli.main import main

    swapped = _stubbed_proofs(monkeypatch, failing)
    folder, before = _group_folder(tmp_path)
    assert main(["rewrite", *command, str(folder)]) == (1 if failing else 0)
    out = capsys.readouterr().out
    assert sorted(swapped) == [("score.py", ["network.py"]), ("train.py", ["network.py"])]
    after = {name: (folder / name).read_bytes() for name in _names(folder)}
    if failing:
        assert after == before
        assert f"{folder / 'train.py'} with {folder / 'network.py'}: EQUIVALENT (left unchanged)" in out, out
    else:
        assert after == {name: (ROOT / "shared_regressor" / "expected" / name).read_bytes() for name in after}


@pytest.mark.parametrize("config", ["pyproject.toml", "setup.cfg"])
def test_each_entry_point_is_proven_with_its_own_arguments(config, tmp_path, capsys, monkeypatch):
    """`entry-points` in the settings gives a script its arguments; the others get the
    command line's (after `--`)."""
    from tf1gradfix.cli.main import main
    from tf1gradfix.verify import orchestrate

    given = {}

    def verdict(original, migrated, swap=None, program_args=(), **_):
        given[Path(original).name] = list(program_args)
        side = orchestrate.SideResult("original", str(original), status="ok")
        return orchestrate.VerifyResult("EQUIVALENT", "as given", side, replace(side, role="migrated"))

    monkeypatch.setattr(orchestrate, "verify_pair", verdict)
    folder, _ = _group_folder(tmp_path)
    if config == "pyproject.toml":
        text = '[tool.tf1gradfix.entry-points]\n"score.py" = ["--grid", "5", "--name=held out"]\n'
    else:
        text = "[tf1gradfix]\nentry-points =\n    score.py: --grid 5 '--name=held out'\n"
    (folder / config).write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    assert main(["rewrite", "--verify", ".", "--", "--steps", "3"]) == 0, capsys.readouterr().out
    assert given == {"score.py": ["--grid", "5", "--name=held out"], "train.py": ["--steps", "3"]}


def test_a_merge_that_fails_is_an_internal_error_with_every_file_intact(tmp_path, capsys, monkeypatch):
    from tf1gradfix.cli.main import main
    from tf1gradfix.run import module_merge

    def broken(versions):
        raise SyntaxError("a merge of ours that does not parse")

    monkeypatch.setattr(module_merge, "merge", broken)
    folder, before = _group_folder(tmp_path)
    assert main(["rewrite", "--no-verify", str(folder)]) == 2
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert "internal error" in capsys.readouterr().out


def test_a_module_importing_a_module_that_makes_variables_is_refused_without_it(tmp_path, capsys):
    """model.py calls `dense` of layers.py, which makes a variable on each call: given without
    layers.py, model.py read in place of train.py's import would still call TF1's layers.py;
    every file is left as it was. The folder is one project of the three (refused here for a
form of builder of layers.py's own)."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "layers.py").write_text("import tensorflow as tf\n\n\ndef dense(x, n, name):\n"
                                      "    w = tf.get_variable(name, [int(x.shape[-1]), n])\n    return tf.matmul(x, w)\n")
    (folder / "model.py").write_text("import tensorflow as tf\nfrom layers import dense\n\n\nclass Net:\n"
                                     "    def __init__(self):\n        self.x = tf.placeholder(tf.float32, [None, 3])\n"
                                     "        self.out = dense(self.x, 2, \"out\")\n")
    (folder / "train.py").write_text("import numpy as np\nimport tensorflow as tf\nfrom model import Net\n\nnet = Net()\n"
                                     "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                                     "    print(sess.run(net.out, {net.x: np.ones([2, 3])}))\n")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder / "model.py"), str(folder / "train.py")]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'model.py'}:2:1: TFG923 [manual] module `model` imports `layers`, another module of its " \
           "folder" in out, out
    # the folder: layers.py is read with the project, and its own blocker is the one reported
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'layers.py'}:4:1: TFG915 [manual] builder function `dense`" in out, out
    assert "imports `layers`" not in out, out


def test_a_module_only_another_module_imports_is_migrated_with_it(tmp_path, capsys):
    """train.py imports net.py alone; net.py's `from blocks import affine` brings blocks.py
    into the project, read before net.py: the three files as when train.py imports both."""
    from tf1gradfix.cli.main import main

    scenario = ROOT / "nested_blocks"
    folder = tmp_path / "project"
    shutil.copytree(scenario / "input", folder)
    line = "from blocks import affine\n"
    train = (folder / "train.py").read_text(encoding="utf-8")
    assert line in train
    (folder / "train.py").write_text(train.replace(line, ""), encoding="utf-8")
    assert main(["rewrite", "--no-verify", str(folder)]) == 0, capsys.readouterr().out
    for name in ("blocks.py", "net.py"):
        assert (folder / name).read_bytes() == (scenario / "expected" / name).read_bytes(), name
    expected = (scenario / "expected" / "train.py").read_text(encoding="utf-8").replace(line, "")
    assert (folder / "train.py").read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("file,old,new,line", [
    ("curve.py", "from kit import *\n", "from kit import *\nSPREAD = _SCALE\n", 4),    # a private name it reads
    ("train.py", "from curve import *\n", "from curve import *\nprint(_ORDER)\n", 5),
    ("kit.py", "import tensorflow as tf\n", "import tensorflow as tf\n__all__ = ['squash_unit']\n", 4),   # (curve.py:4)
])
def test_a_star_import_not_read_as_the_module_in_its_place_is_refused(tmp_path, capsys, file, old, new, line):
    """`from m import *` binds m's public names; its code in place of the import binds all of
    them, which is the same only without `__all__` and when no private name is read."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "star_pieces" / "input", folder)
    for each, private in (("kit.py", "_SCALE = 0.5"), ("curve.py", "_ORDER = 2")):   # (what importers could read)
        text = (folder / each).read_text(encoding="utf-8")
        (folder / each).write_text(text.replace('"""\n', f'"""\n{private}\n', 1), encoding="utf-8")
    text = (folder / file).read_text(encoding="utf-8")
    assert old in text
    (folder / file).write_text(text.replace(old, new, 1), encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    where = "curve.py" if file == "kit.py" else file   # (the refusal is at the star import)
    assert f"{folder / where}:{line}:1: TFG923 [manual]" in out and "files left intact" in out, out


@pytest.mark.parametrize("old,new", [
    ("        lower = cells.gated(", "        kit = cells\n        lower = kit.gated("),   # the module as a value
    ("import cells\n", "import cells as pieces\n"),                                  # an alias
    ("import cells\n", "import cells\ngated = None\n"),                              # a name of cells bound here too
])
def test_a_module_importing_another_by_name_otherwise_than_as_other_name_is_refused(tmp_path, capsys, old, new):
    """`import cells` in a model module is read as cells' code before it only where the
    module reads `cells.NAME` and nothing else, under that name; every file stays intact."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "dotted_cells" / "input", folder)
    text = (folder / "tower.py").read_text(encoding="utf-8")
    assert old in text
    (folder / "tower.py").write_text(text.replace(old, new, 1), encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert "TFG923" in out and "files left intact" in out, out


def test_a_name_a_star_import_of_host_code_binds_and_the_script_binds_otherwise_is_refused(tmp_path, capsys):
    """`from sizes import *` in kit.py binds sizes' public names in the one namespace the
    project is read as: the script's own `report` would take their place (project_name_clash)."""
    from tf1gradfix.cli.main import main

    folder = tmp_path / "project"
    shutil.copytree(ROOT / "star_pieces" / "input", folder)
    text = (folder / "train.py").read_text(encoding="utf-8")
    (folder / "train.py").write_text(text.replace("from sizes import *\n", "\n\ndef report(epoch, error):\n"
                                                  "    return str(error)\n", 1), encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in _names(folder)}
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'kit.py'}:3:1: TFG923 [manual] `report` is bound here and, otherwise, in train.py" in out, out


@pytest.mark.parametrize("change", ["rebound", "two_lines", "aliased"])
def test_a_repeated_import_is_followed_only_where_it_binds_the_same_objects(change, tmp_path, monkeypatch):
    """`from helpers import summarize` after `from helpers import dense_block` is read as
    the names the module's code bound already (repeated_imports); where the script binds
    such a name otherwise, or the import spans lines or renames, it is refused at it."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "repeated_imports" / "input", folder)
    text = (folder / "train.py").read_text(encoding="utf-8")
    edited = {"rebound": text.replace("grid = ", "summarize = str\ngrid = "),
              "two_lines": text.replace("from helpers import summarize", "from helpers import (\n    summarize,\n)"),
              "aliased": text.replace("from helpers import summarize", "from helpers import summarize as report")
              .replace("print(summarize(", "print(report(")}[change]
    assert edited != text
    (folder / "train.py").write_text(edited, encoding="utf-8")
    new, diag = rewrite(folder, monkeypatch)
    assert all(new[name] == (folder / name).read_bytes() for name in new)
    line = edited[:edited.index("from helpers import", edited.index("dense_block\n"))].count("\n") + 1
    assert f"train.py:{line}:1: TFG923 [manual] module `helpers` is imported otherwise than" in diag


@pytest.mark.parametrize("condition", ['print("choosing") or "leaky_relu" in dir(tf.nn)', 'os.environ.get("BENT")'])
def test_a_module_choosing_its_definitions_by_running_code_is_refused(condition, tmp_path, monkeypatch):
    """`if "leaky_relu" in dir(tf.nn):` only asks what a module has (ops_read_first); a
    condition that prints or reads the environment runs code where the module is read."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "ops_read_first" / "input", folder)
    text = (folder / "kit.py").read_text(encoding="utf-8")
    edited = text.replace('if "leaky_relu" in dir(tf.nn):', f"if {condition}:").replace("import numpy", "import os\nimport numpy")
    assert edited != text
    (folder / "kit.py").write_text(edited, encoding="utf-8")
    new, diag = rewrite(folder, monkeypatch)
    assert all(new[name] == (folder / name).read_bytes() for name in new)
    assert "TFG923 [manual] module `kit` runs code when imported" in diag


def _self_tested(tmp_path, old=None, new=None, name="ranker.py"):
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "self_tested_model" / "input", folder)
    if old is not None:
        text = (folder / name).read_text(encoding="utf-8")
        assert text.count(old) == 1
        (folder / name).write_text(text.replace(old, new), encoding="utf-8")
    return folder, {n: (folder / n).read_bytes() for n in _names(folder)}


def test_a_module_with_a_test_of_its_own_is_one_more_entry_point_of_its_group(tmp_path, monkeypatch):
    """ranker.py opens a session only in what `python ranker.py` runs (own_runs.py): to
    train.py it is a model module, read without that part, and it is planned as a script
    of its own, first in the group, so its test is migrated and proven too."""
    folder, _ = _self_tested(tmp_path)
    monkeypatch.chdir(folder)
    planned = project_groups.groups(project.plan(_names(folder)))
    assert [[(p.script, p.modules) for p in group] for group in planned] == \
        [[("ranker.py", []), ("train.py", ["ranker.py"])]]


def test_a_blocker_in_the_modules_own_test_leaves_every_file_intact(tmp_path, capsys):
    """The module's test fetches a tensor by name: refused, and train.py, migrated alone
    against a module left TF1, would break; every file stays, with the reason."""
    from tf1gradfix.cli.main import main

    folder, before = _self_tested(tmp_path, "sess.run(model.accuracy,", 'sess.run("Mean_1:0",')
    assert main(["rewrite", "--no-verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'train.py'}:5:1: TFG923 [manual] shares a model module with ranker.py, which is not " \
           "restructured" in out, out
    assert any(row.startswith(f"{folder / 'ranker.py'}: not restructured") for row in out.splitlines()), out


def test_an_import_of_what_only_the_module_as_a_script_runs_is_refused(tmp_path, monkeypatch):
    """`_smoke` is the module's own (read away for importers): a script importing it is refused."""
    folder, before = _self_tested(tmp_path, "from ranker import Ranker, toy_rows", "from ranker import Ranker, toy_rows, _smoke",
                                  name="train.py")
    new, diag = rewrite(folder, monkeypatch)
    assert new == before
    assert "train.py:5:1: TFG923 [manual] module `ranker` is imported otherwise than" in diag


def test_a_name_of_the_modules_own_part_may_be_the_scripts_too(tmp_path, monkeypatch):
    """Both files define `main`: the module's is its own part, which importers never bind."""
    folder, before = _self_tested(tmp_path)
    assert b"def main():" in before["ranker.py"] and b"def main():" in before["train.py"]
    new, diag = rewrite(folder, monkeypatch)
    assert all(new[name] != before[name] for name in new) and "TFG923" not in diag


@pytest.mark.tf
def test_the_modules_own_test_is_proven_and_a_wrong_one_is_caught(tmp_path):
    """`python ranker.py` against its migration: EQUIVALENT as written; a migration whose
    test measures other rows (a part train.py never runs) is DIVERGED by that proof."""
    from tf1gradfix.verify.orchestrate import DIVERGED, EQUIVALENT, verify_pair

    scenario = ROOT / "self_tested_model"
    candidate = tmp_path / "candidate_ranker.py"
    shutil.copy(scenario / "expected" / "ranker.py", candidate)
    result = verify_pair(scenario / "input" / "ranker.py", candidate)
    assert result.verdict == EQUIVALENT, result.reason
    wrong = apply((scenario / "expected" / "ranker.py").read_text(encoding="utf-8"),
                  (scenario / "diverged_as_script" / "ranker.patch").read_text(encoding="utf-8"))
    candidate.write_text(wrong, encoding="utf-8")
    result = verify_pair(scenario / "input" / "ranker.py", candidate)
    assert result.verdict == DIVERGED and "accuracy" in result.reason, result.reason
    train = tmp_path / "candidate_train.py"
    shutil.copy(scenario / "expected" / "train.py", train)
    assert verify_pair(scenario / "input" / "train.py", train, swap={"ranker.py": wrong.encode()}).verdict == EQUIVALENT


@pytest.mark.parametrize("given", [None, "ranker.py"], ids=["folder", "module-alone"])
def test_a_file_opening_a_session_that_a_script_imports_graph_code_from_is_not_rewritten_alone(given, tmp_path, capsys):
    """ranker.py trains at import (`main()` unguarded): it is not a model module, and written
    alone its `Ranker` would become a tf.Module train.py still runs in a session. Both are
    refused, each naming the other, whether the folder or the module alone is given."""
    from tf1gradfix.cli.main import main

    folder, before = _self_tested(tmp_path, 'if __name__ == "__main__":\n    main()\n', "main()\n")
    assert main(["rewrite", "--no-verify", str(folder / given) if given else str(folder)]) == 1
    out = capsys.readouterr().out
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == before
    assert f"{folder / 'ranker.py'}:7:1: TFG923 [manual] `Ranker` builds graph code that train.py imports, and this " \
           "file opens a session of its own (line 31)" in out, out
    if given is None:
        assert f"{folder / 'train.py'}:5:1: TFG923 [manual] imports `Ranker` from `ranker`, which builds graph code " \
               "and opens a session of its own (line 31 of ranker.py)" in out, out


def test_a_file_opening_a_session_that_a_script_imports_host_code_from_is_rewritten(tmp_path, capsys):
    """train.py imports only `toy_rows` (NumPy) of it: the module's rewrite leaves that as it is."""
    from tf1gradfix.cli.main import main

    folder, before = _self_tested(tmp_path, 'if __name__ == "__main__":\n    main()\n', "main()\n")
    (folder / "train.py").write_text("from ranker import toy_rows\n\nprint(toy_rows(__import__('numpy').random, 2, 3))\n")
    main(["rewrite", "--no-verify", str(folder)])
    out = capsys.readouterr().out
    assert (folder / "ranker.py").read_bytes() != before["ranker.py"] and "TFG923" not in out, out


@pytest.mark.parametrize("failing", [None, "ranker.py", "train.py"])
def test_a_module_run_as_a_script_is_proven_as_one_and_written_with_its_group(failing, tmp_path, capsys, monkeypatch):
    """`rewrite --verify`: the module's own run (`python ranker.py`, nothing swapped in) and
    train.py's (the module swapped in) are each proven; either not EQUIVALENT leaves every
    file as it was (the proof stubbed: each verdict as given)."""
    from tf1gradfix.cli.main import main

    swapped = _stubbed_proofs(monkeypatch, failing)
    folder, before = _self_tested(tmp_path)
    assert main(["rewrite", "--verify", str(folder)]) == (1 if failing else 0)
    out = capsys.readouterr().out
    assert sorted(swapped) == [("ranker.py", []), ("train.py", ["ranker.py"])]
    after = {name: (folder / name).read_bytes() for name in _names(folder)}
    if failing:
        assert after == before, out
    else:
        assert after == {name: (ROOT / "self_tested_model" / "expected" / name).read_bytes() for name in after}


def test_a_file_opening_a_session_that_a_script_without_one_calls_is_rewritten(tmp_path, capsys):
    """run.py only calls `_smoke`, which builds its graph and runs it in its own session: it
    runs nothing of ranker.py in a session of its own, so ranker.py migrates whole."""
    from tf1gradfix.cli.main import main

    folder, before = _self_tested(tmp_path, 'if __name__ == "__main__":\n    main()\n', "main()\n")
    (folder / "train.py").unlink()
    (folder / "run.py").write_text("from ranker import _smoke\n\n_smoke(2)\n")
    main(["rewrite", "--no-verify", str(folder)])
    out = capsys.readouterr().out
    assert (folder / "ranker.py").read_bytes() != before["ranker.py"] and "TFG923" not in out, out
