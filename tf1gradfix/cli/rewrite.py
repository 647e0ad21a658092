"""`tf1gradfix rewrite [PATH...]`: apply the fixes that exist, and prove the restructurings.

The workers write the safe fixes; a whole-program restructuring is written only
once the verifier proves it EQUIVALENT (rewrite_verify.py), unless `--no-verify`.
`--diff` and `--check` write nothing; `--verify` proves every rewritten file, renames
too, and writes the EQUIVALENT ones. This module owns that flow and what it prints.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from tf1gradfix.cli.arg_types import nonneg_float, positive_float, shard
from tf1gradfix.cli.discover import STDIN
from tf1gradfix.cli.file_run import (EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, FileRun, add_file_options, gather,
                                     print_clean, print_closing, print_findings, summarize)
from tf1gradfix.cli.output import render
from tf1gradfix.run.batch import DIFF, GUARDED, PREVIEW, PROPOSE, WRITE, safe_source_of, unwritable, write_outcome
from tf1gradfix.run.findings import FileError
from tf1gradfix.run.source_io import CHANGED, unchanged


def add_options(rewrite: argparse.ArgumentParser) -> None:
    add_file_options(rewrite)
    mode = rewrite.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff; write nothing")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything would change or needs manual work")
    proof = rewrite.add_argument_group("verification (needs the `verify` extra: TensorFlow)")
    proving = proof.add_mutually_exclusive_group()
    proving.add_argument("--verify", action="store_true",
                         help="prove every rewritten file against its original (renames too); write only EQUIVALENT ones; "
                              "TensorFlow required")
    proving.add_argument("--no-verify", action="store_true",
                         help="write whole-program restructurings unproven (the default proves them first)")
    proof.add_argument("--report-dir", metavar="DIR", help="with --verify: JSON, JUnit, Markdown and plot per file, plus a summary")
    from tf1gradfix.verify.command import add_rewrite_arguments  # TensorFlow-free

    add_rewrite_arguments(proof)   # --steps; program arguments follow `--` (split_program_args)
    proof.add_argument("--rtol", type=nonneg_float, default=None, help="with --verify: relative tolerance")
    proof.add_argument("--atol", type=nonneg_float, default=None, help="with --verify: absolute tolerance")
    proof.add_argument("--timeout", type=positive_float, default=None, help="with --verify: seconds each program may run")
    proof.add_argument("--shard", type=shard, metavar="K/N", default=None,
                       help="rewrite (and prove) only the K-th of N deterministic shares of the files, "
                            "a folder never split (one CI job per share)")
    rewrite.set_defaults(steps=None)   # (None: not given; --verify then uses the default budget)
    rewrite._option_string_actions["--jobs"].help = (
        "worker processes reading the files (default: all cores), and proofs run at once (default 1: each "
        "runs two TensorFlow processes of some 300-500 MB; results keep the files' order)")


def _mode(args: argparse.Namespace) -> str:
    if args.verify:
        return PROPOSE
    if args.diff:
        return DIFF
    if args.check:
        return PREVIEW
    return WRITE if args.no_verify else GUARDED


VERIFY_ONLY = ("report_dir", "rtol", "atol", "timeout", "steps")


def _needs_verify(args: argparse.Namespace) -> str | None:
    """Proof options given to a rewrite that proves nothing: they would do nothing, silently."""
    if args.verify or not (args.no_verify or args.diff or args.check):
        return None   # (a plain rewrite proves its restructurings: the proof options apply)
    given = [f"--{name.replace('_', '-')}" for name in VERIFY_ONLY if getattr(args, name) is not None]
    return ", ".join(given) or None   # (program arguments after `--` are split off only with --verify)


def run(args: argparse.Namespace) -> int:
    useless = _needs_verify(args)
    if useless:
        print(f"tf1gradfix: {useless} need{'s' if ',' not in useless else ''} --verify (without it nothing is proven)",
              file=sys.stderr)
        return EXIT_ERROR
    mode = _mode(args)
    found = gather(args, mode)
    if isinstance(found, int):
        return found
    rows, unproven, meanwhile = _guard(args, found.outcomes) if mode == GUARDED else ([], None, [])
    summarize(found, meanwhile)
    if mode == PROPOSE:
        return _prove(found)
    structured = args.format != "text"
    for outcome in found.outcomes:
        if outcome.diff and not structured:   # (a structured format carries the diffs itself)
            sys.stdout.write(outcome.diff)
        if outcome.new_source is not None:
            sys.stdout.buffer.write(outcome.new_source)
            sys.stdout.flush()
    stream = sys.stderr if (mode in (WRITE, GUARDED) and STDIN in found.files) or (mode == DIFF and not structured) \
        else sys.stdout
    print_findings(found, stream, proofs=rows)
    if rows and args.format == "text":
        from tf1gradfix.cli.rewrite_verify import render_rows

        print(render_rows(rows), file=stream)
    print_closing(found, stream)
    if unproven and not args.quiet:
        print(unproven, file=sys.stderr)
    if any(row.reports_failed for row in rows):
        return EXIT_ERROR
    if found.errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    manual = any(f.fixed is False for f in found.findings)
    if mode in (DIFF, PREVIEW):
        return EXIT_FINDINGS if (found.changed or manual) else EXIT_CLEAN
    return EXIT_FINDINGS if manual else EXIT_CLEAN


def _prove(found: FileRun) -> int:
    """rewrite --verify: report the static findings, then prove each rewrite."""
    from tf1gradfix.cli import rewrite_verify

    args, findings, errors, summary = found.args, found.findings, found.errors, found.summary
    structured = args.format != "text"
    report = render(args.format, findings, errors, summary)
    print_clean(found)
    if report and not structured:
        print(report)
    from tf1gradfix.run import imported_helpers

    outcomes = found.outcomes
    proven = imported_helpers.attach([o for o in outcomes if o.changed and o.new_source is not None])
    rows, changed_meanwhile = _proofs(args, proven, write=not (args.diff or args.check), all_outcomes=outcomes)
    if structured:   # one document on stdout, after the proofs, with their verdicts (JSON: "proofs")
        errors = errors + changed_meanwhile
        print(render(args.format, findings, errors, {**summary, "errors": len(errors)}, proofs=rows))
    elif rows:
        print(rewrite_verify.render_rows(rows))
    if changed_meanwhile and not structured:
        print(render(args.format, [], changed_meanwhile, {**summary, "errors": len(errors) + len(changed_meanwhile)}))
    if errors or changed_meanwhile:
        return EXIT_ERROR
    proof = rewrite_verify.exit_code(rows)
    if proof:
        return proof
    if args.exit_zero:
        return EXIT_CLEAN
    if (args.diff or args.check) and any(o.changed for o in outcomes):
        return EXIT_FINDINGS   # (as without --verify: something would change)
    return EXIT_FINDINGS if any(not f.fixed for f in findings) else EXIT_CLEAN


def _proofs(args, outcomes, write: bool, all_outcomes=()):
    """Prove each outcome's new source against its file; write the EQUIVALENT ones when `write`.
    Returns the proof rows and the files edited while they were proven (an edit saved meanwhile wins)."""
    from contextlib import redirect_stdout

    snapshots = {o.path: o.snapshot for o in outcomes if o.snapshot is not None}
    changed_meanwhile: list[FileError] = []

    def refusal(path):
        """Asked just before an EQUIVALENT rewrite is written."""
        why = unwritable(path)
        if why is None and str(path) in snapshots and not unchanged(path, snapshots[str(path)]):
            why = CHANGED
            changed_meanwhile.append(FileError(str(path), CHANGED))
        return why

    # (a structured format keeps stdout one document: the verifier's lines go to stderr)
    with redirect_stdout(sys.stderr) if args.format != "text" else nullcontext():
        rows = _prove_and_write(args, outcomes, write, refusal, all_outcomes)
    return rows, changed_meanwhile


def _prove_and_write(args, outcomes, write: bool, refusal, all_outcomes=()):
    from tf1gradfix.cli import rewrite_verify
    from tf1gradfix.verify import command as verify_defaults
    from tf1gradfix.verify.budget import DEFAULT_REWRITE_STEPS

    return rewrite_verify.prove_and_write(
        [(o.path, o.new_source) for o in outcomes],
        companions={o.path: o.companions for o in outcomes if o.companions},
        groups={o.path: o.group for o in outcomes if o.group},
        write=write,
        report_dir=args.report_dir,
        rtol=args.rtol if args.rtol is not None else verify_defaults.DEFAULT_RTOL,
        atol=args.atol if args.atol is not None else verify_defaults.DEFAULT_ATOL,
        timeout=args.timeout if args.timeout is not None else verify_defaults.DEFAULT_TIMEOUT,
        unwritable=refusal,
        steps=args.steps if args.steps is not None else DEFAULT_REWRITE_STEPS,
        program_args=args.program_args,
        arguments={o.path: a for o in outcomes if (a := _arguments_for(args, o.path)) is not None},
        refused=refused_files(all_outcomes) if args.report_dir else (),
        jobs=args.jobs,
    )


def _arguments_for(args, path: str):
    """The arguments the settings' `entry-points` give the script proven (None: the command line's)."""
    settings = getattr(args, "settings", None)
    return settings.arguments_for(path) if settings is not None else None


def refused_files(outcomes) -> list[tuple[str, str]]:
    """(path, the lines that stopped it) of each file not restructured, for the reports."""
    from tf1gradfix.cli.output import blockers, by_reason

    blocked = blockers([f for o in outcomes for f in o.findings])
    return [(path, "; ".join(f"{', '.join(where)}: {reason}" for reason, where in by_reason(hits).items()))
            for path, hits in blocked.items()]


def _guard(args, outcomes):
    """Plain `rewrite`: the workers wrote the safe fixes; a whole-program restructuring is
    written only once the verifier proves it EQUIVALENT, and a file whose restructuring is
    not proven (or cannot be: no TensorFlow) gets its safe fixes alone.
    Returns (proof rows, a note on what was left unproven, files edited meanwhile)."""
    from tf1gradfix.records import replace
    from tf1gradfix.run import imported_helpers
    from tf1gradfix.verify.budget import install_advice, tensorflow_missing

    pending = imported_helpers.attach([o for o in outcomes if o.restructured])   # (a helper goes with its script)
    if not pending and not (args.report_dir and refused_files(outcomes)):   # (the reports list refused files)
        return [], None, []
    rows, meanwhile, note = [], [], None
    if tensorflow_missing():
        if not pending:
            return [], None, []
        count = f"{len(pending)} file{'s' if len(pending) != 1 else ''}"
        note = (f"tf1gradfix: {count} can be restructured into TF2 but got only the safe fixes: proving a "
                f"restructuring runs both programs, which needs TensorFlow ({install_advice()}); "
                "`tf1gradfix rewrite --no-verify` writes them unproven")
    else:
        rows, meanwhile = _proofs(args, pending, write=True, all_outcomes=outcomes)
    written = {row.path for row in rows if row.written}
    edited = {e.path for e in meanwhile}
    for outcome in pending:
        outcome.new_source = None
        if outcome.path in written:
            continue
        outcome.findings = [f if f.safety == "safe" else replace(f, fixed=False) for f in outcome.findings]
        safe = None if outcome.path in edited else safe_source_of(outcome)
        if safe is None:
            outcome.changed = False
            outcome.findings = [replace(f, fixed=False) for f in outcome.findings]
        else:
            write_outcome(outcome, safe, outcome.snapshot)
    _companions_follow(pending, outcomes, written)
    return rows, note, meanwhile


def _companions_follow(pending, outcomes, written) -> None:
    """A project's modules were written with their script, or not at all (fixed as it is)."""
    from tf1gradfix.records import replace

    by_path = {o.path: o for o in outcomes}
    followed = set()   # (a module several scripts share follows them once: they are written all or none)
    for outcome in pending:
        for path in outcome.companions or {}:
            module = by_path.get(path)
            if module is None or path in followed:
                continue
            followed.add(path)
            module.changed = outcome.path in written
            if module.changed:
                continue
            safe = safe_source_of(module)
            if safe is None:
                module.findings = [replace(f, fixed=False) for f in module.findings]
            else:   # (its safe fixes alone, as the script got)
                module.changed = True
                module.findings = [f if f.safety == "safe" else replace(f, fixed=False) for f in module.findings]
                write_outcome(module, safe, module.snapshot)
