"""Coverage census of a corpus of real TF1 files: what `rewrite --verify` does with each.

    make coverage CORPUS=DIR [RUNNABLE=FILE]
    .venv/bin/python benchmarks/coverage.py DIR [--runnable FILE] [--timeout S] [--steps N] [--json F]

DIR is laid out as a corpus extraction writes it (`OWNER__NAME/<path with /
replaced by __>`); RUNNABLE lists paths relative to DIR, one per line (the
files that run to completion under TF1 semantics). The corpus is never
touched: everything runs on a copy in a temporary folder.

Two stages, both as a user meets them:

1. Static: each file through the rewrite (no TensorFlow, no user code): it is
   restructured, renamed only (a file that still needs a session is counted
   apart), refused (grouped by the refusal's code and message, names
   elided), left with findings and no reason (a silent outcome), clean,
   unreadable, or it crashed the tool.
2. Proof: `tf1gradfix rewrite --verify` over the copy, which verifies every
   changed file against its original and writes only the EQUIVALENT ones.
   Verdicts are read from the run's `summary.json`.

The figures printed are the census a team would plan a migration from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tf1gradfix.detect.api_surface import missing_in_source  # noqa: E402
from tf1gradfix.run.engine import process_source  # noqa: E402
from tf1gradfix.run.findings import CodeFilter  # noqa: E402
from tf1gradfix.emit.restructure import HANDLED  # noqa: E402
from tf1gradfix.run.findings import blocking_codes  # noqa: E402

TF1GRADFIX = str(Path(sys.executable).parent / "tf1gradfix")
# Codes the whole-program rewrite reports when it leaves a file intact (rules/codes.toml: reported_by = "restructure").
# Codes of constructs that need a session to run: a file renamed but still holding one does not run on TF2.
SESSION_CODES = ("TFG101", "TFG102", "TFG103", "TFG104", "TFG105", "TFG106")


@dataclass
class FileCensus:
    path: str
    outcome: str                 # restructured | renamed | renamed-needs-session | refused | silent | clean | error | crashed
    reason: str = ""
    line: int = 0
    verdict: str = ""            # from the proof stage, for changed files
    proof_reason: str = ""
    written: bool = False
    codes: list[str] = field(default_factory=list)
    missing_tf2: list[str] = field(default_factory=list)   # names TF2 lacks in the written file


def _elide(message: str) -> str:
    """A refusal message with its names and numbers elided, so equal reasons group together."""
    text = re.sub(r"`[^`]*`", "`…`", message)
    text = re.sub(r"\b\d+\b", "N", text)
    return text.split(";")[0].strip()


def static_census(root: Path, files: list[Path]) -> list[FileCensus]:
    rows = []
    for path in files:
        rel = str(path.relative_to(root))
        try:
            result = process_source(rel, path.read_bytes(), CodeFilter(), fix=True)
        except Exception as exc:  # the census must see a crash, not stop at it
            rows.append(FileCensus(rel, "crashed", f"{type(exc).__name__}: {exc}"))
            continue
        codes = sorted({f.code for f in result.findings})
        row = FileCensus(rel, "clean", codes=codes)
        refusals = [f for f in result.findings if f.code in blocking_codes() and not f.fixed]
        restructured = any(f.fixed and f.code in HANDLED for f in result.findings)
        if result.error is not None:
            internal = "internal error" in result.error.message
            row.outcome, row.reason, row.line = ("crashed" if internal else "error"), result.error.message, result.error.line or 0
        elif result.new_source is not None and restructured:
            row.outcome = "restructured"
        elif refusals:
            first = min(refusals, key=lambda f: (f.line, f.col))
            row.outcome, row.reason, row.line = "refused", f"{first.code} {_elide(first.message)}", first.line
        elif result.new_source is not None:
            needs = [f for f in result.findings if f.code in SESSION_CODES and not f.fixed]
            row.outcome = "renamed-needs-session" if needs else "renamed"
        elif any(not f.fixed for f in result.findings):
            row.outcome, row.reason = "silent", "findings, no rewrite and no reason: " + ", ".join(codes)
        rows.append(row)
    return rows


def prove(work: Path, rows: list[FileCensus], timeout: float, steps: int | None, report_dir: Path) -> str:
    """Run `rewrite --verify` over the changed files of the copy; fill the verdicts in."""
    changed = [r for r in rows if r.outcome in ("restructured", "renamed", "renamed-needs-session")]
    if not changed:
        return ""
    command = [TF1GRADFIX, "rewrite", "--verify", "--report-dir", str(report_dir), "--timeout", str(timeout)]
    if steps is not None:
        command += ["--steps", str(steps)]
    command += [r.path for r in changed]
    proc = subprocess.run(command, cwd=work, capture_output=True, text=True, errors="replace")
    summary = report_dir / "summary.json"
    by_path = {}
    if summary.exists():
        for entry in json.loads(summary.read_text(encoding="utf-8")):
            by_path[os.path.normpath(entry["path"])] = entry
    for row in changed:
        entry = by_path.get(os.path.normpath(row.path))
        if entry is None:
            row.verdict = "NOT_RUN"
            continue
        row.verdict, row.proof_reason, row.written = entry["verdict"], entry.get("reason", ""), entry.get("written", False)
        if row.written:   # what was written must run on TF2: no name TF2 lacks
            row.missing_tf2 = [m.name for m in missing_in_source((work / row.path).read_bytes())]
    trouble = "Traceback (most recent call last)" in proc.stderr
    return f"rewrite --verify exit {proc.returncode}" + (" (TRACEBACK on stderr)" if trouble else "")


def render(rows: list[FileCensus], runnable: set[str], elapsed: float, note: str) -> str:
    out = [f"Coverage census: {len(rows)} files ({elapsed:.0f} s){'; ' + note if note else ''}", ""]
    outcomes = Counter(r.outcome for r in rows)
    for outcome in ("restructured", "renamed", "renamed-needs-session", "refused", "silent", "clean", "error", "crashed"):
        out.append(f"  {outcome:22s} {outcomes.get(outcome, 0):4d}")
    verdicts = Counter(r.verdict for r in rows if r.verdict)
    if verdicts:
        out += ["", "Proof of the changed files:"]
        out += [f"  {v:22s} {n:4d}" for v, n in verdicts.most_common()]
        out.append(f"  {'written':22s} {sum(r.written for r in rows):4d}")
        lacking = [r for r in rows if r.missing_tf2]
        out.append(f"  {'written, naming a name TF2 lacks':22s} {len(lacking):4d}"
                   + "".join(f"\n    {r.path}: {', '.join(r.missing_tf2[:5])}" for r in lacking))
    reasons = Counter(r.reason for r in rows if r.outcome == "refused")
    if reasons:
        out += ["", "Refused, by reason (most common first):"]
        out += [f"  {n:3d}  {reason}" for reason, n in reasons.most_common()]
    silent = [r for r in rows if r.outcome in ("silent", "crashed", "error")]
    if silent:
        out += ["", "Crashed, errors and silent outcomes:"]
        out += [f"  {r.path}: {r.outcome}: {r.reason}" for r in silent]
    if runnable:
        mine = [r for r in rows if r.path in runnable]
        out += ["", f"Runnable files ({len(mine)} of {len(runnable)} listed):"]
        def bucket(r: FileCensus) -> str:
            if r.verdict:
                return r.verdict + (" (written)" if r.written else "")
            return r.outcome
        counts = Counter(bucket(r) for r in mine)
        out += [f"  {b:32s} {n:4d}" for b, n in counts.most_common()]
        out += ["", "  per file:"]
        for r in sorted(mine, key=lambda r: r.path):
            detail = r.proof_reason if r.verdict else r.reason
            out.append(f"    {bucket(r):24s} {r.path}" + (f"  -- {detail[:160]}" if detail else ""))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runnable", type=Path, help="file listing runnable corpus paths, one per line")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds each side of a verification may run")
    parser.add_argument("--steps", type=int, default=None, help="step budget passed to rewrite --verify")
    parser.add_argument("--json", type=Path, help="write the per-file census as JSON")
    parser.add_argument("--static-only", action="store_true", help="skip the proof stage (no TensorFlow)")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"coverage: {args.corpus}: not a folder", file=sys.stderr)
        return 2
    runnable = set()
    if args.runnable:
        runnable = {line.strip() for line in args.runnable.read_text(encoding="utf-8").splitlines() if line.strip()}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tf1gradfix-coverage-") as tmp:
        work = Path(tmp) / "corpus"
        shutil.copytree(args.corpus, work, symlinks=True)
        files = sorted(p for p in work.rglob("*.py") if p.is_file())
        rows = static_census(work, files)
        note = "" if args.static_only else prove(work, rows, args.timeout, args.steps, Path(tmp) / "reports")
    print(render(rows, runnable, time.monotonic() - start, note))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
