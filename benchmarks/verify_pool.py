"""What the warm TensorFlow pool buys: two figures with their goals, in one run.

1. Verifying 30 fixture pairs in one process (the pool warms up inside the
   measured time) against running the 30 originals as plain TF1 processes one
   after another. Goal: at most 0.3x.
2. A 20,000-step program (a copy of `dev_linear_sgd` with more steps):
   `verify` of the whole run against the slower of the two programs run
   plainly. Goal: at most 1.5x (the per-step tracing must be cheap).

    .venv/bin/python benchmarks/verify_pool.py [--pairs N] [--steps N]

Prints figures only; `TF1GRADFIX_NO_POOL=1` measures the same without the pool.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "verify"
PLAIN_V1 = ("import os, runpy, sys; import tensorflow.compat.v1 as v1; v1.disable_v2_behavior(); "
            "sys.modules['tensorflow'] = v1; sys.argv = [sys.argv[1]]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
VERIFY_ALL = ("import sys, time; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
              "from tf1gradfix.verify.orchestrate import verify_pair; "
              "pairs = [a.split('|') for a in sys.argv[2:]]; "
              "[print(verify_pair(Path(o), Path(m)).verdict, flush=True) for o, m in pairs]")


def _env(legacy: bool) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    return env


def _timed(cmd, cwd, env) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    return time.perf_counter() - start, done.stdout


def pairs(n: int) -> list[tuple[Path, Path]]:
    found = sorted((d / "original.py", d / "migrated.py") for d in FIXTURES.iterdir()
                   if (d / "original.py").is_file() and (d / "migrated.py").is_file())
    return found[:n]


def plain_original(path: Path) -> float:
    """A plain run in a copy of the program's folder (a program may write files there)."""
    with tempfile.TemporaryDirectory(prefix="tf1gradfix-bench-plain-") as tmp:
        folder = Path(shutil.copytree(path.parent, Path(tmp) / path.parent.name))
        return _timed([sys.executable, "-c", PLAIN_V1, str(folder / path.name)], folder, _env(True))[0]


def verify_in_one_process(chosen: list[tuple[Path, Path]]) -> tuple[float, list[str]]:
    seconds, out = _timed([sys.executable, "-c", VERIFY_ALL, str(ROOT), *(f"{o}|{m}" for o, m in chosen)], ROOT, _env(False))
    return seconds, out.split()


def long_program(folder: Path, steps: int) -> tuple[Path, Path]:
    source = FIXTURES / "dev_linear_sgd"
    for name in ("original.py", "migrated.py"):
        text = (source / name).read_text(encoding="utf-8")
        assert "range(25)" in text, "the fixture's step count moved: update this benchmark"
        (folder / name).write_text(text.replace("range(25)", f"range({steps})"), encoding="utf-8")
    return folder / "original.py", folder / "migrated.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20000)
    args = parser.parse_args(argv)
    pool = "off (TF1GRADFIX_NO_POOL=1)" if os.environ.get("TF1GRADFIX_NO_POOL") == "1" else "on"
    print(f"warm TensorFlow pool: {pool}")

    chosen = pairs(args.pairs)
    plain = sum(plain_original(o) for o, _ in chosen)
    verify, verdicts = verify_in_one_process(chosen)
    ratio = verify / plain
    print(f"1. {len(chosen)} fixture pairs: originals run plainly one after another {plain:.1f} s; "
          f"verify of all in one process {verify:.1f} s; ratio {ratio:.2f}x (goal <= 0.30x: "
          f"{'met' if ratio <= 0.3 else 'NOT met'}); verdicts: "
          + ", ".join(f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts))))

    folder = Path(tempfile.mkdtemp(prefix="tf1gradfix-bench-long-"))
    try:
        original, migrated = long_program(folder, args.steps)
        t_orig = plain_original(original)
        t_mig = _timed([sys.executable, str(migrated)], folder, _env(False))[0]
        t_verify, verdict = verify_in_one_process([(original, migrated)])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    slower = max(t_orig, t_mig)
    ratio = t_verify / slower
    print(f"2. {args.steps}-step program: original {t_orig:.1f} s, migrated {t_mig:.1f} s plainly; verify {t_verify:.1f} s "
          f"({' '.join(verdict)}); ratio to the slower {ratio:.2f}x (goal <= 1.50x: {'met' if ratio <= 1.5 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
