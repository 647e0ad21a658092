"""`rewrite --verify`: prove each rewritten file before it replaces the original.

A rewrite is only as good as its proof, so with `--verify` a file is written
only when the verifier finds it EQUIVALENT to the original; a file that
diverges, fails or cannot be compared is left untouched and reported. The
candidate is run from the original's own folder (a hidden sibling file), so
relative paths in the program behave as they do for the original; its name is
fresh (random, created with O_EXCL: never a file of the user's) and it is
removed whatever happens, SIGTERM, SIGHUP and Ctrl-C included (stopping.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tf1gradfix.run.source_io import SourceError, read_source, write_atomic
from tf1gradfix.verify import stopping
from tf1gradfix.verify.budget import headline as budget_headline

EQUIVALENT = "EQUIVALENT"
NOT_VERIFIED = "NOT_VERIFIED"   # the pair could not even be run (no candidate file)


@dataclass
class ProofRow:
    path: str
    verdict: str
    reason: str
    written: bool
    report_stem: str | None = None
    reports_failed: bool = False    # a report asked for could not be written (said on stderr; exit 2)
    together: tuple = ()            # a project's modules, proven and written with the script
    budget: dict | None = None      # the --steps cut of a partial proof (verify/budget.of_run)

    @property
    def headline(self) -> str:
        return budget_headline(self.verdict, self.budget)


def _slug(path: str, root: str) -> str:
    """Report file stem: the path below the files' common folder, made file-name safe; where
    that loses characters (`a/b.py` and `a_b.py`, `ü.py` and `ä.py`), a digest of the path
    keeps the stems of two files apart."""
    relative = os.path.relpath(path, root)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", relative).strip("_.") or "program"
    if slug == relative:
        return slug
    import hashlib

    return f"{slug}-{hashlib.sha256(relative.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, SourceError) else (getattr(exc, "strerror", None) or str(exc))


def _snapshot(path: str):
    """What the file is before the (long) verification, so an edit saved meanwhile is not overwritten."""
    try:
        return read_source(path)[1]
    except OSError:
        return None


# a proof's typical length (both programs, up to the step budget, run concurrently): a
# 300-program tree proves in about 25 minutes; the running estimate uses the proofs' own times
TYPICAL_PROOF_SECONDS = 5.0


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} minutes"


def announce(count: int, timeout: float, slots: int = 1) -> None:
    """The first line of a rewrite that proves: what it will run, for how long, how to skip it."""
    if count:
        things = "program" if count == 1 else "programs"
        together = f", {slots} at a time" if slots > 1 else ""
        print(f"tf1gradfix: proving {count} {things} by running {'it' if count == 1 else 'them'}{together}, about "
              f"{_minutes(-(-count // slots) * TYPICAL_PROOF_SECONDS)} (at most {timeout:g} s each); "
              f"`--no-verify` writes unproven, `--diff` writes nothing", file=sys.stderr, flush=True)


def progress(done: int, count: int, path: str, verdict: str, elapsed: float, spent: float) -> None:
    """One line on stderr as each proof finishes, with the time the rest should take."""
    left = (count - done) * spent / done
    print(f"tf1gradfix: [{done}/{count}] {path}: {verdict} in {elapsed:.1f} s"
          + (f"; about {_minutes(left)} left" if done < count else ""), file=sys.stderr, flush=True)


@dataclass
class Proof:
    """What proving one file gave: its content before (an edit saved meanwhile is kept), and
    the verifier's result, or why the pair could not be run."""
    snapshot: object
    result: object = None
    failure: str = ""


class Finishing:
    """The progress line of each proof as it ends (in the order they end, `-j N`)."""

    def __init__(self, count: int, started: float, paths: list[str]):
        self.count, self.started, self.paths, self.done = count, started, paths, 0

    def __call__(self, index: int, proof) -> None:
        self.done += 1
        result = proof.result if isinstance(proof, Proof) else proof   # (verify --base: the result, or why not)
        verdict, elapsed = (result.verdict, result.elapsed) if hasattr(result, "verdict") else (NOT_VERIFIED, 0.0)
        progress(self.done, self.count, self.paths[index], verdict, elapsed, time.monotonic() - self.started)


@stopping.guarded
def prove_and_write(changed: list[tuple[str, bytes]], *, write: bool, report_dir: str | None,
                    rtol: float, atol: float, timeout: float, unwritable, steps=None,
                    program_args=(), refused=(), companions=None, groups=None, arguments=None,
                    jobs: int | None = None) -> list[ProofRow]:
    """Verify each (path, rewritten source); write the EQUIVALENT ones when `write`.
    `refused`: (path, why) of the files not restructured, for the summary reports.
    `companions`: path -> {module path: (new bytes, snapshot)} of a project's script: the
    script is proven with those modules swapped in, and written with them or not at all.
    `groups`: path -> the scripts sharing a module with it (project_groups): each is proven,
    and they are written together once all are EQUIVALENT, or none is. `arguments`: path ->
    the program arguments of that entry point (settings), in place of `program_args`.
    `jobs`: proofs run at once (parallel.py); results are reported in the order of `changed`."""
    from tf1gradfix.verify import parallel, report
    from tf1gradfix.verify.orchestrate import verify_pair

    rows: list[ProofRow] = []
    results = []
    proven: dict = {}   # a group's script, EQUIVALENT: (its row, the files written with it)
    out, reports_failed = open_report_dir(report_dir, [p for p, _ in changed] + [str(p) for p, _ in refused])
    root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p, _ in changed]) if changed else "."
    slots = parallel.slots(jobs, len(changed))
    announce(len(changed), timeout, slots)
    started = time.monotonic()

    def prove(item: tuple[str, bytes]) -> Proof:
        path, new_source = item
        original, snapshot, made = Path(path), _snapshot(path), []
        try:   # fresh names (O_EXCL, random): never a file of the user's
            program, candidate = _programs(original, new_source, made)
        except (OSError, ValueError) as exc:
            _forget(made)
            return Proof(snapshot, None, f"cannot write the candidate next to it: {_why(exc)}")
        try:
            modules = (companions or {}).get(path) or {}
            result = verify_pair(program, candidate, rtol=rtol, atol=atol, timeout=timeout,
                                 steps=steps, program_args=(arguments or {}).get(path, program_args),
                                 swap={Path(p).name: data for p, (data, _) in modules.items()} or None)
        finally:
            _forget(made)
        if program != original:   # (a notebook: its code cells ran)
            result.original.script = path
        return Proof(snapshot, result)

    finishing = Finishing(len(changed), started, [p for p, _ in changed])
    for (path, new_source), proof in parallel.in_order(changed, prove, slots, finishing):
        original, snapshot, result = Path(path), proof.snapshot, proof.result
        if result is None:
            rows.append(ProofRow(path, NOT_VERIFIED, proof.failure, False))
            print(f"{NOT_VERIFIED}: {rows[-1].reason}\n  original: {path}", flush=True)
            continue
        modules = (companions or {}).get(path) or {}
        result.migrated.script = f"{path} (rewritten)"
        results.append(result)
        row = ProofRow(path, result.verdict, result.reason, False, budget=result.budget)
        row.together = tuple(modules)
        if write and result.verdict == EQUIVALENT and path in (groups or {}):
            proven[path] = (row, [(Path(p), data, shot) for p, (data, shot) in modules.items()]
                            + [(original, new_source, snapshot)])
        elif write and result.verdict == EQUIVALENT:
            refusal = unwritable(original) or next(
                (f"{p} {why}" for p in modules if (why := unwritable(Path(p)))), None)
            if refusal:
                row.reason += f"; not written: {refusal}"
            else:
                try:
                    with stopping.deferred():   # the files are old or new, never half-written by a stop
                        _write_together([(Path(p), data, shot) for p, (data, shot) in modules.items()]
                                        + [(original, new_source, snapshot)])
                    row.written = True
                except OSError as exc:
                    row.reason += f"; not written: {_why(exc)}"
        report_pair(out, row, result, root)
        rows.append(row)
        print(report.summary(result), flush=True)
    _write_groups(rows, proven, groups or {}, unwritable)
    reports_failed = report_summary(out, results, rows, refused) or reports_failed
    for row in rows:
        row.reports_failed = row.reports_failed or reports_failed
    return rows


def _write_groups(rows: list[ProofRow], proven: dict, groups: dict, unwritable) -> None:
    """Write each group of scripts sharing a module whose every script is EQUIVALENT, with
    their modules (each once); a group with one script not proven is written not at all."""
    verdicts = {row.path: row.verdict for row in rows}
    for group in dict.fromkeys(tuple(groups[path]) for path in proven):
        members = [path for path in group if path in proven]
        missing = [path for path in group if path not in proven]
        if missing:
            why = ", ".join(f"{os.path.basename(p)} {verdicts.get(p, NOT_VERIFIED)}" for p in missing)
            for path in members:
                proven[path][0].reason += f"; not written: it shares a module with {why}"
            continue
        files = {str(path): (path, data, shot) for member in members for path, data, shot in proven[member][1]}
        refusal = next((f"{p} {why}" for p in files if (why := unwritable(Path(p)))), None)
        try:
            if refusal:
                raise OSError(0, refusal)
            with stopping.deferred():
                _write_together(list(files.values()))
        except OSError as exc:
            for path in members:
                proven[path][0].reason += f"; not written: {_why(exc)}"
            continue
        for path in members:
            proven[path][0].written = True


def _write_together(files: list) -> None:
    """Write each (path, bytes, snapshot), or none: a failed write puts back those already
    written, then raises."""
    done = []
    try:
        for path, data, snapshot in files:
            old = path.read_bytes()
            write_atomic(path, data, snapshot)
            done.append((path, old))
    except OSError:
        for path, old in done:
            write_atomic(path, old)
        raise


def _programs(original: Path, new_source: bytes, made: list[Path]) -> tuple[Path, Path]:
    """(the original program, the candidate) to run, next to the original: a notebook runs
    as its code cells in order, on both sides (notebooks.script)."""
    return (as_program(original, None, "original", made),
            as_program(original, new_source, "candidate", made, always=True))


def as_program(path: Path, data: bytes | None, kind: str, made: list[Path], always: bool = False) -> Path:
    """The script that runs `path` (its content `data`, or its own): a notebook's code cells
    in order (notebooks.script), written beside it; a script as it is (unless `always`).
    Raises ValueError for a notebook that is no notebook."""
    from tf1gradfix.run import notebooks

    notebook = notebooks.is_notebook(str(path))
    if not notebook and not always:
        return path
    data = read_source(path)[0] if data is None else data
    made.append(Path(stopping.new_file(str(path.parent), f".{path.stem}.tf1gradfix-{kind}-", ".py",
                                       notebooks.script(data) if notebook else data)))
    return made[-1]


def _forget(made: list[Path]) -> None:
    for path in made:
        path.unlink(missing_ok=True)
        stopping.forget(str(path))


# -- reports of a run over several files (also `verify --base`) ---------------------------

def open_report_dir(report_dir: str | None, sources=()) -> tuple[Path | None, bool]:
    """(the folder, or None; whether it failed). A folder that cannot be made, or that holds
    one of the `sources` proven (its own summary.md, junit.xml would be overwritten), is one
    line: the proofs still run and are printed, and the exit code says it."""
    out = Path(report_dir) if report_dir else None
    if out is None:
        return None, False
    try:
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(0, "not a folder")
        if out.is_dir() and any(Path(source).resolve().parent == out.resolve() for source in sources):
            raise IsADirectoryError(0, "it holds the files being proven (their reports would overwrite the "
                                       "folder's own files); give a folder of its own")
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"tf1gradfix: --report-dir {out}: {_why(exc)}; no reports written", file=sys.stderr, flush=True)
        return None, True
    return out, False


def report_pair(out: Path | None, row: ProofRow, result, root: str) -> None:
    """JSON, JUnit, Markdown and plot of one file, named after its path below `root`."""
    from tf1gradfix.verify import report

    if out is None:
        return
    row.report_stem = _slug(os.path.abspath(row.path), root)
    stem = out / row.report_stem
    try:
        report.write_reports(result, json=f"{stem}.json", junit=f"{stem}.junit.xml",
                             markdown=f"{stem}.md", plot=f"{stem}.png" if report.has_loss(result) else None)
    except report.ReportError:
        row.reports_failed = True


NOT_RESTRUCTURED = "NOT_RESTRUCTURED"   # (summary.json: a file the rewrite refused, left unchanged)


def report_summary(out: Path | None, results: list, rows: list[ProofRow], refused=()) -> bool:
    """summary.md, junit.xml and summary.json over all files, the refused ones too; True
    when one could not be written."""
    from tf1gradfix.verify import report

    if out is None or not (results or refused):
        return False
    failed = False
    try:
        report.write_reports(results, junit=out / "junit.xml", markdown=out / "summary.md", refused=refused)
    except report.ReportError:
        failed = True
    entries = [_entry(row) for row in rows] + [_entry(ProofRow(str(path), NOT_RESTRUCTURED, why, False))
                                               for path, why in refused]
    try:
        report.write_text(out / "summary.json", json.dumps(entries, indent=2) + "\n")
    except OSError as exc:
        print(f"tf1gradfix: cannot write {out / 'summary.json'}: {_why(exc)}", file=sys.stderr, flush=True)
        failed = True
    return failed


def _entry(row: ProofRow) -> dict:
    """A row of summary.json (`together` only for a project's script)."""
    return {k: list(v) if k == "together" else v for k, v in row.__dict__.items() if k != "together" or v}


def render_rows(rows: list[ProofRow]) -> str:
    lines = ["", "Verification summary:"]
    for row in rows:
        action = ("written" if row.written else "left unchanged") + ("; reports not written" if row.reports_failed else "")
        together = f" with {', '.join(row.together)}" if row.together else ""
        lines.append(f"  {row.path}{together}: {row.headline} ({action})")
    lines.append("  " + count_line(rows))
    return "\n".join(lines)


def count_line(rows: list[ProofRow]) -> str:
    """`2 EQUIVALENT (1 within a step budget), 1 DIVERGED`: a partial proof is counted as one."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    partial = sum(1 for row in rows if row.budget and row.verdict == EQUIVALENT)
    return ", ".join(f"{n} {verdict}" + (f" ({partial} within a step budget)" if verdict == EQUIVALENT and partial
                                         else "") for verdict, n in sorted(counts.items()))


def exit_code(rows: list[ProofRow]) -> int:
    if any(row.verdict not in (EQUIVALENT, "DIVERGED") or row.reports_failed for row in rows):
        return 2
    return 1 if any(row.verdict == "DIVERGED" for row in rows) else 0


