"""SARIF locations relative to `%SRCROOT%`, declared in originalUriBaseIds, so a report
made in one checkout resolves in another (GitHub code scanning's convention)."""

from __future__ import annotations

import json

from tf1gradfix.cli.main import main

TF1 = "import tensorflow as tf\ntf.set_random_seed(0)\n"


def test_locations_are_relative_to_the_source_root(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TF1)
    for given in ("pkg/train.py", str(tmp_path / "pkg" / "train.py")):
        main(["check", "-j", "1", "--format", "sarif", given])
        (run,) = json.loads(capsys.readouterr().out)["runs"]
        assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
        locations = {json.dumps(r["locations"][0]["physicalLocation"]["artifactLocation"]) for r in run["results"]}
        assert locations == {json.dumps({"uri": "pkg/train.py", "uriBaseId": "%SRCROOT%"})}


def test_a_file_outside_the_run_folder_keeps_its_absolute_uri(tmp_path, monkeypatch, capsys):
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere.py").write_text(TF1)
    monkeypatch.chdir(tmp_path / "here")
    main(["check", "-j", "1", "--format", "sarif", str(tmp_path / "elsewhere.py")])
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (tmp_path / "elsewhere.py").resolve().as_uri()}


def test_rules_link_their_help_and_the_tool_its_project_only_when_declared(tmp_path, monkeypatch, capsys):
    from tf1gradfix.cli import sarif

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TF1)
    for url in ("https://example.org/tf1gradfix", None):
        monkeypatch.setattr(sarif, "project_url", lambda url=url: url)
        main(["check", "-j", "1", "--format", "sarif", "train.py"])
        (run,) = json.loads(capsys.readouterr().out)["runs"]
        driver = run["tool"]["driver"]
        assert driver.get("informationUri") == url and driver["version"]
        assert {rule.get("helpUri") for rule in driver["rules"]} == {url and f"{url}/blob/HEAD/docs/rules.md"}
