"""Whole repositories through `rewrite --verify`, as a team would bring them.

    make projects PROJECTS=DIR [PROJECTS_ARGS="--steps 20 --timeout 300 --json out.json"]
    .venv/bin/python benchmarks/projects.py DIR [--only NAME] [--steps N] [--timeout S] [--json F]

DIR holds prepared projects (each repository copied out, with its data) and a
`projects.toml` naming them:

    [[project]]
    name = "gcn"
    folder = "gcn/gcn"              # what `rewrite` is given, relative to DIR
    cwd = "gcn/gcn"                 # where it runs (default: folder)
    pythonpath = ["gcn"]            # added to PYTHONPATH, relative to DIR
    arguments = ["--epochs", "20"]  # the program arguments (after `--`)
    entry-points = ["train.py"]     # the scripts a user runs, relative to folder

or, where each entry point takes its own arguments, a table of them (written to
the copy's settings as `[tool.tf1gradfix.entry-points]`, relative to `cwd`):

    [project.entry-points]
    "train.py" = ["--epochs", "1"]
    "eval.py" = ["--split", "test"]

Each project is copied to a temporary folder (DIR is never touched) and
`tf1gradfix rewrite --verify --report-dir R FOLDER -- ARGUMENTS` runs once over it.
Printed per entry point: whether it was restructured, its verdict, and the first
blocker (its line, code and message); then the other files the run touched or
refused. The figures a team plans a migration from.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

TF1GRADFIX = str(Path(sys.executable).parent / "tf1gradfix")


@dataclass
class FileRow:
    path: str                  # relative to the project's folder
    entry: bool                # an entry point of the manifest
    outcome: str               # restructured | not restructured | renamed | unchanged
    verdict: str = ""          # the proof's verdict, when one ran
    written: bool = False
    blocker: str = ""          # the first line that stopped the restructuring
    together: list = field(default_factory=list)   # modules proven and written with it


@dataclass
class ProjectRow:
    name: str
    seconds: float
    exit_code: int
    files: list[FileRow]
    error: str = ""


def _manifest(root: Path) -> list[dict]:
    path = root / "projects.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        sys.exit(f"projects.py: {path}: {exc}")


def measure(root: Path, spec: dict, steps: int, timeout: float) -> ProjectRow:
    """One project: copied, rewritten with --verify, read back from summary.json."""
    with tempfile.TemporaryDirectory(prefix="tf1gradfix-projects-") as tmp:
        top = spec["folder"].split("/")[0]
        shutil.copytree(root / top, Path(tmp) / top, symlinks=True)
        folder = Path(tmp) / spec["folder"]
        cwd = Path(tmp) / spec.get("cwd", spec["folder"])
        reports = Path(tmp) / ".reports"
        entries = spec.get("entry-points", [])
        if isinstance(entries, dict):   # (each entry point its own arguments: the project's settings)
            settings = cwd / "pyproject.toml"
            if settings.exists():
                return ProjectRow(spec["name"], 0.0, 2, [], f"{settings} exists: entry-point arguments not written")
            settings.write_text("[tool.tf1gradfix.entry-points]\n" + "".join(
                f"{json.dumps(script)} = {json.dumps(list(args))}\n" for script, args in entries.items()),
                encoding="utf-8")
        env = dict(os.environ)
        paths = [str(Path(tmp) / p) for p in spec.get("pythonpath", [])]
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        command = [TF1GRADFIX, "rewrite", "--verify", "--report-dir", str(reports), "--steps", str(steps),
                   "--timeout", str(timeout), "--format", "json", str(folder), "--", *spec.get("arguments", [])]
        began = time.monotonic()
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, errors="replace")
        seconds = time.monotonic() - began
        try:
            document = json.loads(proc.stdout)
        except json.JSONDecodeError:
            return ProjectRow(spec["name"], seconds, proc.returncode, [], (proc.stderr or proc.stdout)[-2000:])
        summary = json.loads((reports / "summary.json").read_text()) if (reports / "summary.json").exists() else []
        return ProjectRow(spec["name"], seconds, proc.returncode, _files(folder, spec, document, summary))


def _files(folder: Path, spec: dict, document: dict, summary: list[dict]) -> list[FileRow]:
    """A row per entry point, then per other file the run proved, refused or renamed."""
    def rel(path: str) -> str:
        return os.path.relpath(os.path.abspath(path), folder)

    entries = [os.path.relpath(os.path.join(spec.get("cwd", spec["folder"]), e), spec["folder"])
               if isinstance(spec.get("entry-points"), dict) else e for e in spec.get("entry-points", [])]
    rows: dict[str, FileRow] = {e: FileRow(e, True, "unchanged") for e in entries}
    for item in summary:
        path = rel(item["path"])
        row = rows.setdefault(path, FileRow(path, False, "unchanged"))
        if item["verdict"] == "NOT_RESTRUCTURED":
            row.outcome, row.blocker = "not restructured", item["reason"].split("; line ")[0]
        else:
            row.outcome, row.verdict, row.written = "restructured", item["verdict"], item["written"]
            row.together = [rel(p) for p in item.get("together", [])]
    findings = document.get("findings", [])
    deep = {rel(f["path"]) for f in findings if f.get("fixed") and f.get("safety") != "safe"}
    manual = {rel(f["path"]) for f in findings if not f.get("fixed") and f.get("safety") != "safe"}
    for path, row in rows.items():
        if row.outcome == "restructured" and path not in deep:
            row.outcome = "renamed"   # (its safe fixes, proven too)
        elif row.outcome == "unchanged" and path in manual:
            row.outcome, row.blocker = "not restructured", "none of its own (a module it imports is refused)"
    fixed = {rel(f["path"]) for f in findings if f.get("fixed")}
    for path in sorted(fixed - set(rows)):
        rows[path] = FileRow(path, False, "renamed")
    for row in list(rows.values()):   # (a module proven and written with its scripts)
        for module in row.together:
            rows[module] = FileRow(module, False, f"migrated with {row.path}" if module not in rows
                                   or not rows[module].outcome.startswith("migrated with")
                                   else f"{rows[module].outcome}, {row.path}", written=row.written)
    return [rows[e] for e in entries] + sorted((r for r in rows.values() if not r.entry), key=lambda r: r.path)


def render(row: ProjectRow) -> str:
    lines = [f"{row.name}: exit {row.exit_code}, {row.seconds:.0f} s"]
    if row.error:
        lines.append(f"  error: {row.error.strip().splitlines()[-1] if row.error.strip() else '?'}")
    for f in row.files:
        mark = "entry " if f.entry else "      "
        what = f.outcome + (f" {f.verdict}" if f.verdict else "") + (" (written)" if f.written else "")
        what += f" with {', '.join(f.together)}" if f.together else ""
        lines.append(f"  {mark}{f.path}: {what}" + (f"; first blocker {f.blocker}" if f.blocker else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder of prepared projects, with projects.toml")
    parser.add_argument("--only", action="append", help="measure only this project (repeatable)")
    parser.add_argument("--steps", type=int, default=20, help="training steps each proof compares (default 20)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds each program may run (default 600)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    for spec in _manifest(args.root):
        if args.only and spec["name"] not in args.only:
            continue
        rows.append(measure(args.root, spec, args.steps, args.timeout))
        print(render(rows[-1]), flush=True)
    entries = [f for r in rows for f in r.files if f.entry]
    proven = [f for f in entries if f.verdict == "EQUIVALENT" and f.written]
    print(f"\n{len(rows)} projects, {len(entries)} entry points: {sum(f.outcome == 'restructured' for f in entries)} "
          f"restructured, {len(proven)} proven EQUIVALENT and written")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
