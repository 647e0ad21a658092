"""Refusal reasons are data (rules/refusals.toml): every reason is raised
somewhere, every raise names a reason with its fields, and a program reaches each one."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tf1gradfix.cli.catalog_view import render_explanation
from tf1gradfix.model import refusals
from tf1gradfix.rules.catalog import load
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter, is_suppressed, suppressions
from tf1gradfix.run import project_groups  # noqa: F401 - imported before `reported` patches its `diagnostic`
from tf1gradfix.constructs import flags  # noqa: F401 - the same

ROOT = Path(__file__).resolve().parent.parent
CASES = tomllib.loads((ROOT / "tests" / "refusal_cases.toml").read_text(encoding="utf-8"))
# Reasons no test program reaches yet: each must get a case (and leave this list) or be
# shown unreachable and removed. The list may only shrink (test_uncovered_list_is_exact).
UNCOVERED = frozenset((ROOT / "tests" / "refusal_uncovered.txt").read_text(encoding="utf-8").split())


def _raise_sites():
    """(file, line, reason id, keyword names) of every `Refusal.of` / `diagnostic` call."""
    sites = []
    for path in sorted((ROOT / "tf1gradfix").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "Refusal" and path.name != "refusals.py":
                sites.append((path.name, node.lineno, None, None))   # the old form: code and text in code
            elif name in ("of", "diagnostic") and (name == "diagnostic" or getattr(func.value, "id", "") == "Refusal"):
                reason = node.args[1 if name == "of" else 2]
                assert isinstance(reason, ast.Constant), f"{path.name}:{node.lineno}: a reason id must be a literal"
                sites.append((path.name, node.lineno, reason.value, {k.arg for k in node.keywords}))
    return sites


def test_every_raise_names_a_known_reason_with_its_fields():
    table = refusals.reasons()
    for file, line, reason, fields in _raise_sites():
        assert reason is not None, f"{file}:{line}: Refusal(node, code, message): name a reason of refusals.toml"
        assert reason in table, f"{file}:{line}: unknown reason {reason!r}"
        wanted = set(re.findall(r"(?<!\{)\{(\w+)\}", table[reason].message))
        assert fields == wanted, f"{file}:{line}: {reason} takes {sorted(wanted)}, given {sorted(fields)}"


def test_every_reason_is_raised_somewhere():
    used = {reason for _, _, reason, _ in _raise_sites()}
    assert [r for r in refusals.reasons() if r not in used] == []


def test_every_reason_is_complete_and_its_code_is_a_restructure_rule():
    catalog = load()
    for r in refusals.reasons().values():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", r.id) and r.message and r.why and r.instead, r
        assert catalog.rule(r.code) is not None and catalog.rule(r.code).reported_by == "restructure", r


def test_explain_lists_a_codes_reasons_and_shows_one():
    text = render_explanation("TFG911")
    assert "graph_value_outside_run: graph value `{code}` used outside `sess.run`" in text
    assert text.count("      why: ") == sum(1 for r in refusals.reasons().values() if r.code == "TFG911")
    one = render_explanation("graph_value_outside_run")
    reason = refusals.reasons()["graph_value_outside_run"]
    assert one.splitlines()[0].startswith("graph_value_outside_run (TFG911")
    assert f"Why: {reason.why}" in one and f"What to do instead: {reason.instead}" in one
    assert "TFG922" in render_explanation("TFG905")


@pytest.mark.parametrize("code", [r.code for r in load().rules if r.split_from])
def test_the_old_code_still_selects_ignores_and_suppresses_a_split_one(code):
    assert CodeFilter(select=("TFG905",)).wants(code) and not CodeFilter(ignore=("TFG905",)).wants(code)
    assert not CodeFilter(ignore=("TFG90",)).wants(code) and not CodeFilter(ignore=(code,)).wants(code)
    assert is_suppressed(3, code, suppressions("a\nb\nc  # tf1gradfix: ignore[TFG905]\n"))
    assert CodeFilter(ignore=("TFG905",)).wants("TFG906") and CodeFilter(ignore=("TFG905",)).wants("TFG101")


def test_uncovered_list_is_exact():
    assert sorted(UNCOVERED & set(CASES)) == [], "these have a case now: take them off refusal_uncovered.txt"
    assert sorted(UNCOVERED - set(refusals.reasons())) == []
    assert sorted(set(refusals.reasons()) - set(CASES) - UNCOVERED) == [], "a reason without a program"
    assert sorted(set(CASES) - set(refusals.reasons())) == []


@pytest.fixture
def reported(monkeypatch, tmp_path):
    """The reasons a program's findings report (a refusal raised and then taken back,
    e.g. in a graph of constants only tried, does not count), from `Refusal.of` and from
    the rewrite's checks of its own output (`diagnostic`). `fault` ("module:Class.method"):
    a function made to fail, for the reason that keeps a file intact on a bug of the rewrite."""
    raised = []
    made = refusals.Refusal.of.__func__

    def of(cls, node, reason, /, **fields):
        raised.append(made(cls, node, reason, **fields))
        return raised[-1]

    monkeypatch.setattr(refusals.Refusal, "of", classmethod(of))
    made_diagnostic = refusals.diagnostic

    def diagnostic(line, col, reason, /, **fields):
        out = made_diagnostic(line, col, reason, **fields)
        raised.append(refusals.Refusal(None, out[2], out[3], reason=reason))
        return out

    importlib.import_module("tf1gradfix.emit.restructure")   # (it imports `diagnostic` by name)
    importlib.import_module("tf1gradfix.run.project")   # (so does it)
    for module in [m for name, m in sys.modules.items() if name.startswith("tf1gradfix")]:
        if getattr(module, "diagnostic", None) is made_diagnostic:
            monkeypatch.setattr(module, "diagnostic", diagnostic)

    def run(program: str, fault: str | None = None, listed: list[str] | None = None) -> set[str]:
        if fault is not None:
            where, _, attribute = fault.partition(":")
            owner = importlib.import_module(where)
            *path, name = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)

            def fail(*args, **kwargs):
                raise RuntimeError("a fault put in by the test")
            monkeypatch.setattr(owner, name, fail)
        raised.clear()
        if isinstance(program, dict):   # a project: file name -> text (run/project.py)
            from tf1gradfix.run import project, project_groups

            for name, text in program.items():
                (tmp_path / name).write_text(text, encoding="utf-8")
            paths = sorted(str(tmp_path / name) for name in (listed or program))   # (`listed`: the files given)
            findings = [f for group in project_groups.groups(project.plan(paths))
                        for o in (project.outcomes(group[0], "diff", CodeFilter(), 10 ** 7) if len(group) == 1 else
                                  project_groups.outcomes(group, "diff", lambda _: CodeFilter(), 10 ** 7))
                        for f in o.findings]
        else:
            findings = process_source("case.py", program.encode(), CodeFilter()).findings
        shown = {(f.code, f.message) for f in findings}
        return {r.reason for r in raised if (r.code, r.message) in shown}
    return run


@pytest.mark.parametrize("reason", sorted(CASES))
def test_each_reason_has_a_program_that_reaches_it(reason, reported):
    case = CASES[reason]
    assert reason in reported(case.get("program") or case["files"], case.get("fault"), case.get("listed"))
