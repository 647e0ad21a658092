"""How long plain `rewrite` takes over the projects of fixtures/projects before their
proofs (`project.outcomes` in GUARDED mode), with the package at a git revision and
as it is in the working tree: two figures per project, best of several runs, each
tree in fresh processes, taking turns (other load on the machine shows less). `refused`: the same project with a module that runs code
when imported (refused before it is read with the script).

    .venv/bin/python benchmarks/project_rewrite_time.py REV [--repeat N] [--rounds N]

Prints figures only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = r"""
import os, shutil, sys, tempfile, time
from pathlib import Path
from tf1gradfix.run import project
from tf1gradfix.run.findings import CodeFilter

projects, repeat = Path(sys.argv[1]), int(sys.argv[2])
for scenario in sorted(projects.glob("*/input")):
    for variant in ("", "refused"):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(shutil.copytree(scenario, Path(tmp) / "project"))
            if variant:
                module = next(p for p in sorted(folder.glob("*.py")) if p.name != "train.py")
                module.write_text(module.read_text() + 'print("loaded")\n')
            os.chdir(folder)
            [plan] = project.plan(sorted(p.name for p in folder.glob("*.py")))
            best = float("inf")
            for _ in range(repeat + 1):   # (the first run imports and warms up: not counted)
                start = time.perf_counter()
                project.outcomes(plan, "guarded", CodeFilter(), 10 ** 7)
                best = min(best, time.perf_counter() - start) if _ else float("inf")
            print(f"{scenario.parent.name + (' ' + variant if variant else '')}\t{best * 1000:.1f}")
            os.chdir(projects)
"""


def measure(package_root: Path, repeat: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", MEASURE, str(ROOT / "fixtures" / "projects"), str(repeat)],
                          cwd=package_root, env={"PYTHONPATH": str(package_root), "PATH": ""},
                          capture_output=True, text=True, check=True)
    return {name: float(ms) for name, ms in (line.split("\t") for line in done.stdout.splitlines())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the revision to compare the working tree with (e.g. HEAD~1)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree, in turns")
    args = parser.parse_args(argv)
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tf1gradfix-bench-rev-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev, "tf1gradfix"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for _ in range(args.rounds):
            for best, tree in ((before, Path(tmp)), (after, ROOT)):
                for name, ms in measure(tree, args.repeat).items():
                    best[name] = min(ms, best.get(name, ms))
    print(f"{'project':<28} {args.rev:>12} {'working tree':>13}   (ms, best of {args.rounds} x {args.repeat})")
    for name in before:
        print(f"{name:<28} {before[name]:>12.1f} {after.get(name, float('nan')):>13.1f}")
    print(f"{'total':<28} {sum(before.values()):>12.1f} {sum(after.values()):>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
