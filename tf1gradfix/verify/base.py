"""`verify --base REF [PATH...]`: prove files migrated on a branch against their version at REF.

`rewrite --verify` proves a rewrite before it is written; a team that
migrated files in a branch (by the tool or by hand) needs the same proof in
CI, file by file, against the base branch. Each file's content at REF is
written next to the file (a fresh hidden name, removed afterwards and on a
stop), so the program's relative paths resolve as they do for the file
itself, and it is verified as the original against the file as it is now.
Without PATHs, the Python files that exist at REF and differ from it now
(`git diff --name-only REF`) are verified. Reports are those of
`rewrite --verify --report-dir`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tf1gradfix.verify import stopping


class BaseError(Exception):
    """A git question that has no answer here (not a repository, unknown ref): exit 2."""


def _git(args: list[str], cwd: str) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise BaseError(f"cannot run git: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        raise BaseError(done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0]
                        if done.stderr.strip() else f"git {' '.join(args)} failed")
    return done.stdout


def changed_files(ref: str, cwd: str = ".") -> list[str]:
    """Python files (relative to `cwd`) that exist at `ref` and differ from it in the work tree."""
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)
    except BaseError as exc:   # (--quiet leaves git silent: say what is wrong, not the command line)
        if "not a git repository" in str(exc).lower():
            raise
        raise BaseError(f"`{ref}` names no commit in this repository (a branch, tag or commit id)") from exc
    out = _git(["diff", "--name-only", "--relative", "--diff-filter=M", "-z", ref, "--", "*.py"], cwd)
    return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def content_at(ref: str, path: str) -> bytes:
    folder, name = os.path.split(os.path.abspath(path))
    return _git(["show", f"{ref}:./{name}"], folder)


@stopping.guarded
def run(args) -> int:
    """Verify each file against its content at `args.base`; print and report as rewrite --verify does."""
    from tf1gradfix.cli.rewrite_verify import (NOT_VERIFIED, ProofRow, _why, count_line, exit_code, open_report_dir,
                                           report_pair, report_summary)
    from tf1gradfix.verify import report
    from tf1gradfix.verify.orchestrate import verify_pair

    try:
        paths = list(args.paths) or changed_files(args.base)
        olds = [(path, content_at(args.base, path)) for path in paths]
    except BaseError as exc:
        print(f"tf1gradfix: verify --base {args.base}: {exc}", file=sys.stderr)
        return 2
    if not olds:
        print(f"tf1gradfix: no Python file differs from {args.base}")
        return 0
    out, failed = open_report_dir(args.report_dir)
    root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p, _ in olds])
    rows, results = [], []
    for path, old in olds:
        current = Path(path)
        try:
            original = Path(stopping.new_file(str(current.parent), f".{current.stem}.tf1gradfix-base-", ".py", old))
        except OSError as exc:
            rows.append(ProofRow(path, NOT_VERIFIED, f"cannot write its version at {args.base} next to it: "
                                 f"{_why(exc)}", False))
            print(f"{NOT_VERIFIED}: {rows[-1].reason}\n  file: {path}", flush=True)
            continue
        try:
            result = verify_pair(original, current, rtol=args.rtol, atol=args.atol, timeout=args.timeout,
                                 steps=args.steps, program_args=getattr(args, "program_args", ()),
                                 lockstep_mode=getattr(args, "lockstep", "auto"))
        finally:
            original.unlink(missing_ok=True)
            stopping.forget(str(original))
        result.original.script = f"{path} (at {args.base})"
        results.append(result)
        row = ProofRow(path, result.verdict, result.reason, False, budget=result.budget)
        report_pair(out, row, result, root)
        rows.append(row)
        print(report.summary(result), flush=True)
    failed = report_summary(out, results, rows) or failed
    print("\n".join(["", f"Verification against {args.base}:", *(f"  {row.path}: {row.headline}" for row in rows),
                      "  " + count_line(rows)]))
    code = exit_code(rows)
    return max(code, 2) if failed or any(row.reports_failed for row in rows) else code
