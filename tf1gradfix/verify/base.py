"""`verify --base REF [PATH...]`: prove files migrated on a branch against their version at REF.

`rewrite --verify` proves a rewrite before it is written; a team that
migrated files in a branch (by the tool or by hand) needs the same proof in
CI, file by file, against the base branch. Each file's content at REF is
written next to the file (a fresh hidden name, removed afterwards and on a
stop), so the program's relative paths resolve as they do for the file
itself, and it is verified as the original against the file as it is now.
Without PATHs, the Python files and notebooks that differ now from a file at
REF are verified, a renamed or copied one against its source (`git diff -M -C
REF`); a notebook runs as its code cells on both sides. The original runs
with the modules of its folder as they were at REF (a project migrated on the
branch is proven as a project), the migration with those of the branch. Reports are those of
`rewrite --verify --report-dir`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
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


SUFFIXES = ("*.py", "*.ipynb")


def check_ref(ref: str) -> None:
    """A ref is a revision, never an option of git (`--base=--output=x`)."""
    if not ref or ref.startswith("-"):
        raise BaseError(f"not a revision: {ref!r}")


RENAMED = "15%"   # (git's similarity for a rename: a migrated file keeps a fifth of its lines)


def changes(ref: str, cwd: str = ".") -> tuple[dict[str, str], list[str]]:
    """({path now: its path at `ref`} for the Python files and notebooks that differ from a
    file at `ref`, renamed and copied ones followed to their source; the paths at `ref` of
    the Python files changed, renamed away or deleted since), relative to `cwd`.

    A rename pairs a deleted file with an added one, and is found down to RENAMED alike; a
    copy may come from any file, and needs git's usual half."""
    check_ref(ref)
    try:
        _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd)
    except BaseError as exc:   # (--quiet leaves git silent: say what is wrong, not the command line)
        if "not a git repository" in str(exc).lower():
            raise
        raise BaseError(f"`{ref}` names no commit in this repository (a branch, tag or commit id)") from exc
    renames = _name_status(ref, cwd, [f"--find-renames={RENAMED}"])
    copies = {path: source for status, source, path in _name_status(ref, cwd, ["-C", "--find-copies-harder"])
              if status == "C"}
    pairs: dict[str, str] = {}
    before: list[str] = []
    for status, source, path in renames:
        if status == "A" and path in copies:
            status, source = "C", copies[path]
        if status in "MTRC":
            pairs[path] = source
        if status in "MTRD" and source.endswith(".py"):
            before.append(source)
    return dict(sorted(pairs.items())), before


def _name_status(ref: str, cwd: str, finding: list[str]) -> list[tuple[str, str, str]]:
    """(status letter, path at `ref`, path now) of each file `git diff REF` lists."""
    out = _git(["diff", "--name-status", "-z", *finding, "--relative", ref, "--", *SUFFIXES], cwd)
    words = out.decode("utf-8", "surrogateescape").split("\0")
    rows, at = [], 0
    while at < len(words) and words[at]:
        status = words[at][0]
        if status in "RC":
            rows.append((status, words[at + 1], words[at + 2]))
            at += 3
        else:
            rows.append((status, words[at + 1], words[at + 1]))
            at += 2
    return rows


def changed_files(ref: str, cwd: str = ".") -> list[str]:
    """The files (relative to `cwd`) that came from a file at `ref` and differ from it."""
    return list(changes(ref, cwd)[0])


def content_at(ref: str, path: str) -> bytes:
    """The content at `ref` of `path` (relative to the current folder)."""
    check_ref(ref)
    folder, name = os.path.split(os.path.abspath(path))
    if os.path.isdir(folder):   # (git asked from the file's own folder: the current one may be no repository)
        return _git(["show", f"{ref}:./{name}"], folder)
    return _git(["show", f"{ref}:./{path}"], ".")


def _modules_at(ref: str, path: str, source: str, before: list[str]) -> dict[str, bytes]:
    """The Python files of the folder `path` is in as they were at `ref`, where they were
    changed, renamed or deleted since: the original imports those, not the branch's."""
    folder = os.path.dirname(os.path.normpath(path))
    return {os.path.basename(p): content_at(ref, p) for p in before
            if os.path.dirname(os.path.normpath(p)) == folder and p != source}


@stopping.guarded
def run(args) -> int:
    """Verify each file against its content at `args.base`; print and report as rewrite --verify does."""
    from tf1gradfix.cli.rewrite_verify import (NOT_VERIFIED, Finishing, ProofRow, _forget, _why, as_program,
                                               count_line, exit_code, open_report_dir, report_pair, report_summary)
    from tf1gradfix.verify import parallel, report
    from tf1gradfix.verify.orchestrate import verify_pair

    try:
        check_ref(args.base)
        try:
            found, before = changes(args.base)
        except BaseError:
            if not args.paths:
                raise
            found, before = {}, []   # (named files outside a repository here: asked from their folders)
        paths = list(args.paths) or list(found)
        if getattr(args, "shard", None):   # (one CI job's share of the tree)
            from tf1gradfix.cli.shards import share

            paths = share(paths, *args.shard)
        olds = []
        for path in paths:
            relative = os.path.relpath(path)
            source = found.get(relative, relative)
            olds.append((path, source, content_at(args.base, source), _modules_at(args.base, relative, source, before)))
    except BaseError as exc:
        print(f"tf1gradfix: verify --base {args.base}: {exc}", file=sys.stderr)
        return 2
    if not olds:
        print(f"tf1gradfix: no Python file or notebook differs from {args.base}", file=sys.stderr)
        return 0
    out, failed = open_report_dir(args.report_dir, [p for p, *_ in olds])
    root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p, *_ in olds])
    rows, results = [], []

    def prove(item: tuple):
        path, source, old, modules = item
        current, made = Path(path), []
        try:   # (a notebook runs as its code cells, on both sides)
            original = as_program(current, old, "base", made, always=True)
            migrated = as_program(current, None, "base", made)
        except (OSError, ValueError) as exc:
            _forget(made)
            return f"cannot write its version at {args.base} next to it: {_why(exc)}"
        try:
            return verify_pair(original, migrated, rtol=args.rtol, atol=args.atol, timeout=args.timeout,
                               steps=args.steps, program_args=getattr(args, "program_args", ()),
                               lockstep_mode=getattr(args, "lockstep", "auto"), original_swap=modules or None,
                               rerun_original=getattr(args, "rerun_original", "auto"))
        finally:
            _forget(made)

    finishing = Finishing(len(olds), time.monotonic(), [p for p, *_ in olds])
    for (path, source, _, _), result in parallel.in_order(olds, prove, parallel.slots(getattr(args, "jobs", None),
                                                                                          len(olds)), finishing):
        if isinstance(result, str):
            rows.append(ProofRow(path, NOT_VERIFIED, result, False))
            print(f"{NOT_VERIFIED}: {rows[-1].reason}\n  file: {path}", flush=True)
            continue
        result.original.script, result.migrated.script = f"{source} (at {args.base})", path
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
