"""Command line: check, rewrite, rules, explain, verify.

Exit codes everywhere: 0 clean / equivalent, 1 findings / diverged,
2 errors (a file could not be read or parsed, a verification side failed,
a bad setting, an internal error), 128+N stopped by signal N.
This module must stay free of TensorFlow: pre-commit runs start here.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from contextlib import contextmanager, nullcontext

from tf1gradfix import __version__
from tf1gradfix.run.batch import (BUG_HINT, CHECK, DIFF, GUARDED, PREVIEW, PROPOSE, WRITE, Job, run_all, run_source,
                                  safe_source_of, unwritable, worker_count, write_outcome)
from tf1gradfix.cli.arg_types import nonneg_float, positive_float, positive_int, shard
from tf1gradfix.cli.config import ConfigError, load_settings
from tf1gradfix.cli.discover import STDIN, discover
from tf1gradfix.run.findings import CodeFilter, FileError
from tf1gradfix.cli.output import FORMATS, blocker_lines, label_counts, render, shown, statistics, summary_sentence
from tf1gradfix.run.source_io import CHANGED, MAX_FILE_BYTES, unchanged

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_THRESHOLD = 50  # files; below this a bar is noise


def _codes(value: str) -> tuple[str, ...]:
    """Code prefixes; one that names no rule is a usage error (a typo would select nothing)."""
    from tf1gradfix.rules.catalog import load

    codes = tuple(part.strip().upper() for part in value.split(",") if part.strip())
    unknown = load().unknown_prefixes(codes)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown code {', '.join(map(repr, unknown))} (see `tf1gradfix rules`)")
    return codes


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's width, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own layout, at the width it would take. argparse makes a formatter for
    every option it is given, and its own finds the width through shutil, whose import
    (with the compression modules) costs a cold `check` some 3 ms."""

    def __init__(self, prog: str):
        super().__init__(prog, width=_columns() - 2)   # (the margin argparse leaves)


def _add_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders (default: the current folder); - reads standard input")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument("--stdin-filename", metavar="NAME",
                        help="the name standard input is reported under (and matched against per-file-ignores)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain (errors still exit 2)")
    parser.add_argument("--statistics", action="store_true", help="count findings per code instead of listing them")
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary line")
    loud.add_argument("-v", "--verbose", action="store_true", help="also say where settings came from and each clean file")
    parser.add_argument("--select", type=_codes, help="only these code prefixes (comma separated; ALL)")
    parser.add_argument("--ignore", type=_codes, help="skip these code prefixes (comma separated)")
    parser.add_argument("--exclude", action="append", default=[], help="glob of paths to skip (repeatable)")
    parser.add_argument("-j", "--jobs", type=positive_int, default=None,
                        help="worker processes (default: all cores; never more than files; serial for one file)")


def _add_rewrite_options(rewrite: argparse.ArgumentParser) -> None:
    _add_file_options(rewrite)
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


def _add_rules_options(rules: argparse.ArgumentParser) -> None:
    rules.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def _add_explain_options(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("code", help="a rule code (TFG911) or a refusal reason id (graph_value_outside_run)")


def _add_verify_options(verify: argparse.ArgumentParser) -> None:
    from tf1gradfix.verify import command as verify_command  # TensorFlow-free by contract

    verify_command.add_arguments(verify)


COMMANDS = (  # name, help, what adds its options
    ("check", "report TF1 constructs", _add_file_options),
    ("rewrite", "apply the fixes that exist", _add_rewrite_options),
    ("rules", "list every rule", _add_rules_options),
    ("explain", "explain one rule (with an example and its refusal reasons) or one refusal reason", _add_explain_options),
    ("verify", "run ORIGINAL (TF1) and MIGRATED (TF2) side by side and compare", _add_verify_options),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; `only`: that command alone, for an `argv` that starts with it (all
    it can print then is that command's help and the main usage line, which names every
    command still). Each parser and option costs argparse a formatter and translations."""
    parser = argparse.ArgumentParser(prog="tf1gradfix", description="Rewrite TensorFlow 1 graph code into TF2, and prove it.",
                                     formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"tf1gradfix {__version__}")
    names = [name for name, _, _ in COMMANDS]
    # (the usage line names the commands there are: with one made, it is told them all)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(names) + "}" if only else None)
    for name, help_text, add_options in COMMANDS:
        if only in (None, name):
            add_options(sub.add_parser(name, help=help_text, formatter_class=_Formatter))
    parser.set_defaults(commands=sub.choices)   # (a bad option is reported with its command's usage)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command `argv` runs when its first word names one (else the main parser's
    options or errors come first, and they print every command)."""
    return argv[0] if argv and argv[0] in [name for name, _, _ in COMMANDS] else None


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C: running files finish, the rest stay as they are."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, _frame) -> None:
    raise Stopped(signum)


@contextmanager
def _stop_on_signals():
    """SIGTERM (a CI cancel) and SIGHUP (a closed terminal) stop the run as Ctrl-C does."""
    kept = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is None:
            continue
        try:
            kept[number] = signal.signal(number, _stop)
        except ValueError:  # not the main thread (an embedding program): leave its signals alone
            pass
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)


def _safe_streams() -> None:
    """A character the terminal's encoding lacks is printed as an escape, never a crash after the files were written."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # not a text stream of ours, or closed
            pass


def forget_interrupt() -> None:
    """Let a handled Ctrl-C end the run with our exit code.

    CPython remembers a KeyboardInterrupt that crossed an exec() of a string
    (a dataclass or namedtuple being made when the interrupt came) and, though
    it was handled, ends the process by SIGINT at exit; evaluating any string
    clears that mark.
    """
    exec("pass")


def _say(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except (OSError, ValueError, AttributeError):  # no terminal left (SIGHUP): the exit code says it
        pass


def main(argv: list[str] | None = None) -> int:
    _safe_streams()
    try:
        with _stop_on_signals():
            code = _main(argv)
            sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except KeyboardInterrupt as exc:
        forget_interrupt()
        signum = getattr(exc, "signum", signal.SIGINT)
        what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        _say(f"tf1gradfix: {what}; every file is either unchanged or fully rewritten")
        return 128 + signum
    except BrokenPipeError:  # `tf1gradfix check . | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
    except ConfigError as exc:
        _say(f"tf1gradfix: {exc}")
        return EXIT_ERROR
    except Exception as exc:  # a bug of ours: one line and exit 2, never a traceback taken for findings
        _say(f"tf1gradfix: internal error: {type(exc).__name__}: {exc} ({BUG_HINT})")
        return EXIT_ERROR


def _main(argv: list[str] | None) -> int:
    argv, program_args = list(sys.argv[1:] if argv is None else argv), []
    if "--" in argv:   # (only then: a plain `check` need not import the verifier's command line)
        from tf1gradfix.verify.command import split_program_args

        argv, program_args = split_program_args(argv)
    args, unknown = build_parser(only=_command_of(argv)).parse_known_args(argv)
    if unknown:   # (argparse's own message, under the usage of the command it was given to)
        args.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    args.program_args = program_args
    if args.command in ("check", "rewrite"):
        return _run_files(args)
    if args.command == "rules":
        from tf1gradfix.cli.catalog_view import render_rules

        print(render_rules(args.format))
        return EXIT_CLEAN
    if args.command == "explain":
        from tf1gradfix.cli.catalog_view import render_explanation

        text = render_explanation(args.code)
        if text is None:
            print(f"tf1gradfix: unknown rule code {args.code!r}, nor a refusal reason (see `tf1gradfix rules`)", file=sys.stderr)
            return EXIT_ERROR
        print(text)
        return EXIT_CLEAN
    if args.command == "verify":
        from tf1gradfix.verify import command as verify_command

        return verify_command.run(args)
    print(f"tf1gradfix: unknown command {args.command!r}", file=sys.stderr)
    return EXIT_ERROR


def _mode(args: argparse.Namespace) -> str:
    if args.command == "check":
        return CHECK
    if args.verify:
        return PROPOSE
    if args.diff:
        return DIFF
    if args.check:
        return PREVIEW
    return WRITE if args.no_verify else GUARDED


def _progress(total: int):
    """A rich progress bar on stderr for long runs at a terminal; nothing otherwise."""
    if total < PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return nullcontext(None)
    from rich.progress import Progress

    return Progress(transient=True, console=__import__("rich.console").console.Console(stderr=True))


VERIFY_ONLY = ("report_dir", "rtol", "atol", "timeout", "steps")


def _needs_verify(args: argparse.Namespace) -> str | None:
    """Proof options given to a rewrite that proves nothing: they would do nothing, silently."""
    if args.command != "rewrite" or args.verify or not (args.no_verify or args.diff or args.check):
        return None   # (a plain rewrite proves its restructurings: the proof options apply)
    given = [f"--{name.replace('_', '-')}" for name in VERIFY_ONLY if getattr(args, name) is not None]
    return ", ".join(given) or None   # (program arguments after `--` are split off only with --verify)


def _run_files(args: argparse.Namespace) -> int:
    useless = _needs_verify(args)
    if useless:
        print(f"tf1gradfix: {useless} need{'s' if ',' not in useless else ''} --verify (without it nothing is proven)",
              file=sys.stderr)
        return EXIT_ERROR
    if not args.paths:
        args.paths = ["."]   # as ruff: no path means the current folder
    settings = load_settings()
    args.settings = settings   # (the proofs read each entry point's arguments from it)
    if args.verbose:
        print(f"tf1gradfix: settings from {settings.source or 'defaults (no [tf1gradfix] section found)'}", file=sys.stderr)
    select = args.select or settings.select
    ignore = (args.ignore if args.ignore is not None else settings.ignore)
    exclude = tuple(args.exclude) + settings.exclude
    mode = _mode(args)
    skipped: list[str] = []
    files, errors = discover(args.paths, exclude, settings.respect_gitignore, skipped)
    if getattr(args, "shard", None):
        from tf1gradfix.cli.shards import share

        files = share(files, *args.shard)
    if skipped and not args.quiet:
        print(f"tf1gradfix: {', '.join(skipped)}: named but excluded (exclude = {list(exclude)}); not read",
              file=sys.stderr)
    if not files and not errors:   # (as ruff: a warning on stderr, not an error)
        print("tf1gradfix: No Python files found under the given paths", file=sys.stderr)
        return EXIT_CLEAN
    if mode == PROPOSE and STDIN in files:
        print("tf1gradfix: --verify needs files on disk, not standard input", file=sys.stderr)
        return EXIT_ERROR

    limit = settings.max_file_size or MAX_FILE_BYTES
    projects = _projects(files, mode)
    together = {path for project in projects for path in (project.script, *project.modules)}
    jobs = [Job(path, mode, CodeFilter(select, ignore + settings.ignores_for(path)), limit) for path in files
            if path != STDIN and path not in together]
    workers = worker_count(args.jobs, len(jobs))
    outcomes = []
    if STDIN in files:
        data = _read_stdin()
        if data is None:
            print("tf1gradfix: standard input is closed; nothing to read", file=sys.stderr)
            return EXIT_ERROR
        name = args.stdin_filename
        codes = CodeFilter(select, ignore + (settings.ignores_for(name) if name else ()))
        outcome = _stdin_outcome(data, mode, codes, limit)
        if name:
            outcome = _renamed(outcome, name)
        outcomes.append(outcome)
    with _progress(len(jobs)) as bar:
        task = bar.add_task("tf1gradfix", total=len(jobs)) if bar else None
        outcomes += run_all(jobs, workers, (lambda: bar.advance(task)) if bar else None)
    if projects:
        outcomes = _with_projects(outcomes, projects, files, mode, lambda path: CodeFilter(
            select, ignore + settings.ignores_for(path)), limit)

    rows, unproven, meanwhile = _guard(args, outcomes) if mode == GUARDED else ([], None, [])
    findings = [f for o in outcomes for f in o.findings]
    errors += [o.error for o in outcomes if o.error is not None] + meanwhile
    changed = [o for o in outcomes if o.changed]
    manual = [f for f in findings if f.fixed is False]
    summary = {
        "files": len(files),
        "findings": len(findings),
        "labels": label_counts(findings),
        "fixed": sum(bool(f.fixed) for f in findings),
        "manual": sum(f.safety != "proven" for f in manual),
        "changed": len(changed),
        "errors": len(errors),
    }
    if len(manual) > summary["manual"]:   # restructurings left unwritten for want of a proof
        summary["proof_needed"] = len(manual) - summary["manual"]
    undecided = sum(f.fixed is None for f in findings)   # `check` of a session program: `rewrite` decides
    if undecided:
        summary["undecided"] = undecided
    if mode == WRITE:   # --no-verify: restructurings written without a proof, and said so
        from tf1gradfix.run.batch import restructured

        unproven_count = sum(o.changed and restructured(o.findings) for o in outcomes)
        if unproven_count:
            summary["unproven"] = unproven_count

    if mode == PROPOSE:
        return _prove(args, outcomes, findings, errors, summary)
    structured = args.format != "text"
    for outcome in outcomes:
        if outcome.diff and not structured:   # (a structured format carries the diffs itself)
            sys.stdout.write(outcome.diff)
        if outcome.new_source is not None:
            sys.stdout.buffer.write(outcome.new_source)
            sys.stdout.flush()
    if args.statistics:
        report = statistics(findings, errors, args.format)
    else:
        report = render(args.format, findings, errors, summary, outcomes=outcomes, proofs=rows)
    stream = sys.stderr if (mode in (WRITE, GUARDED) and STDIN in files) or (mode == DIFF and not structured) else sys.stdout
    if args.verbose:
        for outcome in outcomes:
            if not outcome.findings and outcome.error is None:
                print(f"{shown(outcome.path)}: clean", file=sys.stderr)
    if report:
        print(report, file=stream)
    if rows and args.format == "text":
        from tf1gradfix.cli.rewrite_verify import render_rows

        print(render_rows(rows), file=stream)
    if args.format == "text" and not args.quiet and (findings or errors or changed):
        for line in blocker_lines(findings):
            print(line, file=stream)
        verb = "fixable" if mode in (CHECK, DIFF, PREVIEW) else "fixed"
        print(summary_sentence(summary, verb), file=stream)
    elif mode == CHECK and args.format == "text" and not args.quiet and not args.statistics:
        print("All checks passed!", file=stream)
    if unproven and not args.quiet:
        print(unproven, file=sys.stderr)
    if any(row.reports_failed for row in rows):
        return EXIT_ERROR

    if errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    if mode == CHECK:
        return EXIT_FINDINGS if findings else EXIT_CLEAN
    if mode in (DIFF, PREVIEW):
        return EXIT_FINDINGS if (changed or manual) else EXIT_CLEAN
    return EXIT_FINDINGS if manual else EXIT_CLEAN


def _projects(files: list[str], mode: str) -> list:
    """The model modules and the scripts importing them, rewritten together (project.py); a
    script given without the model module of its folder that it imports is refused."""
    if mode == CHECK or not files:
        return []
    from tf1gradfix.run import project

    return project.plan(files)


def _with_projects(outcomes, projects, files, mode, codes_for, limit):
    """`outcomes` with those of each project's files, in the order of `files` (a module two
    scripts import, refused for both, is reported once)."""
    from tf1gradfix.run import project, project_groups

    made = {}
    for group in project_groups.groups(projects):
        found = (project.outcomes(group[0], mode, codes_for(group[0].script), limit) if len(group) == 1
                 else project_groups.outcomes(group, mode, codes_for, limit))
        for outcome in found:
            made.setdefault(outcome.path, outcome)
    order = {path: index for index, path in enumerate(files)}
    return sorted([*outcomes, *made.values()], key=lambda o: order.get(o.path, -1))


def _read_stdin() -> bytes | None:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return None
    try:
        return stream.read()
    except (OSError, ValueError):  # a closed descriptor
        return None


def _stdin_outcome(data: bytes, mode: str, codes: CodeFilter, limit: int):
    """`rewrite -` is an editor filter: whatever it cannot rewrite, it prints back unchanged."""
    from tf1gradfix.run.batch import Outcome
    from tf1gradfix.run.source_io import long_line

    too_long = long_line(data) or (
        f"input too large: {len(data)} bytes (limit {limit} bytes, setting max-file-size)" if len(data) > limit else None)
    outcome = Outcome(STDIN, error=FileError(STDIN, too_long)) if too_long else run_source(STDIN, data, mode, codes)
    if mode in (WRITE, GUARDED) and outcome.new_source is None:
        outcome.new_source = data
    return outcome


def _renamed(outcome, name: str):
    """The stdin outcome reported under `--stdin-filename`."""
    from tf1gradfix.records import replace

    return replace(outcome, path=name, findings=[replace(f, path=name) for f in outcome.findings],
                   error=replace(outcome.error, path=name) if outcome.error is not None else None)


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
    )


def _arguments_for(args, path: str):
    """The arguments the settings' `entry-points` give the script proven (None: the command line's)."""
    settings = getattr(args, "settings", None)
    return settings.arguments_for(path) if settings is not None else None


def refused_files(outcomes) -> list[tuple[str, str]]:
    """(path, the lines that stopped it) of each file not restructured, for the reports."""
    from tf1gradfix.cli.output import blockers

    blocked = blockers([f for o in outcomes for f in o.findings])
    return [(path, "; ".join(f"line {f.line}: {f.code} {f.message}" for f in hits)) for path, hits in blocked.items()]


def _guard(args, outcomes):
    """Plain `rewrite`: the workers wrote the safe fixes; a whole-program restructuring is
    written only once the verifier proves it EQUIVALENT, and a file whose restructuring is
    not proven (or cannot be: no TensorFlow) gets its safe fixes alone.
    Returns (proof rows, a note on what was left unproven, files edited meanwhile)."""
    from tf1gradfix.records import replace

    from tf1gradfix.verify.budget import install_advice, tensorflow_missing

    pending = [o for o in outcomes if o.restructured]
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


def _prove(args, outcomes, findings, errors, summary) -> int:
    """rewrite --verify: report the static findings, then prove each rewrite."""
    from tf1gradfix.cli import rewrite_verify

    structured = args.format != "text"
    report = render(args.format, findings, errors, summary)
    if report and not structured:
        print(report)
    rows, changed_meanwhile = _proofs(args, [o for o in outcomes if o.changed and o.new_source is not None],
                                      write=not (args.diff or args.check), all_outcomes=outcomes)
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


__all__ = ["main", "build_parser"]
