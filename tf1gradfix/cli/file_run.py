"""The run over files that `check` and `rewrite` share: options, discovery, jobs, report.

Both commands read the same files the same way (settings, excludes, a shard, standard
input, a project's modules rewritten with their scripts); they differ in the mode the
workers run in and in what they do with the outcomes, which check.py and rewrite.py own.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from tf1gradfix.cli.arg_types import positive_int
from tf1gradfix.cli.config import load_settings
from tf1gradfix.cli.discover import STDIN, discover
from tf1gradfix.cli.output import FORMATS, blocker_lines, label_counts, render, shown, statistics, summary_sentence
from tf1gradfix.records import field, record
from tf1gradfix.run.batch import CHECK, DIFF, GUARDED, PREVIEW, PROPOSE, WRITE, Job, run_all, run_source, worker_count
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
from tf1gradfix.run.source_io import MAX_FILE_BYTES

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


def add_file_options(parser: argparse.ArgumentParser) -> None:
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


@record
class FileRun:
    """What the workers made of the files named: the outcomes per file, and their totals."""

    args: argparse.Namespace
    mode: str
    files: list[str]
    outcomes: list
    errors: list[FileError]
    summary: dict = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [f for o in self.outcomes for f in o.findings]

    @property
    def changed(self) -> list:
        return [o for o in self.outcomes if o.changed]


def gather(args: argparse.Namespace, mode: str) -> FileRun | int:
    """Run the files `args` names in `mode`; an exit code when there is nothing to run."""
    if not args.paths:
        args.paths = ["."]   # as ruff: no path means the current folder
    settings = load_settings()
    args.settings = settings   # (the proofs read each entry point's arguments from it)
    if args.verbose:
        print(f"tf1gradfix: settings from {settings.source or 'defaults (no [tf1gradfix] section found)'}", file=sys.stderr)
    select = args.select or settings.select
    ignore = (args.ignore if args.ignore is not None else settings.ignore)
    exclude = tuple(args.exclude) + settings.exclude
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
    return FileRun(args, mode, files, outcomes, errors)


def summarize(run: FileRun, meanwhile=()) -> dict:
    """The totals every format reports (`summary` of JSON, the closing sentence of text);
    the files' own errors join those of the discovery, and `meanwhile`: the files a
    rewrite left alone because they were edited while it proved them."""
    run.errors = run.errors + [o.error for o in run.outcomes if o.error is not None] + list(meanwhile)
    findings = run.findings
    manual = [f for f in findings if f.fixed is False]
    summary = {
        "files": len(run.files),
        "findings": len(findings),
        "labels": label_counts(findings),
        "fixed": sum(bool(f.fixed) for f in findings),
        "manual": sum(f.safety != "proven" for f in manual),
        "changed": len(run.changed),
        "errors": len(run.errors),
    }
    if len(manual) > summary["manual"]:   # restructurings left unwritten for want of a proof
        summary["proof_needed"] = len(manual) - summary["manual"]
    undecided = sum(f.fixed is None for f in findings)   # `check` of a session program: `rewrite` decides
    if undecided:
        summary["undecided"] = undecided
        summary["rewrite_decides"] = sum(f.fixed is None and f.safety == "proven" for f in findings)
    if run.mode == WRITE:   # --no-verify: restructurings written without a proof, and said so
        from tf1gradfix.run.batch import restructured

        unproven_count = sum(o.changed and restructured(o.findings) for o in run.outcomes)
        if unproven_count:
            summary["unproven"] = unproven_count
    run.summary = summary
    return summary


def print_findings(run: FileRun, stream, proofs=()) -> None:
    """The findings and errors in the format asked for (or counted, --statistics), and with
    -v the clean files."""
    args = run.args
    if args.statistics:
        report = statistics(run.findings, run.errors, args.format)
    else:
        report = render(args.format, run.findings, run.errors, run.summary, outcomes=run.outcomes, proofs=proofs)
    print_clean(run)
    if report:
        print(report, file=stream)


def print_clean(run: FileRun) -> None:
    """With -v, each clean file (a log line: stderr)."""
    if run.args.verbose:
        for outcome in run.outcomes:
            if not outcome.findings and outcome.error is None:
                print(f"{shown(outcome.path)}: clean", file=sys.stderr)


def print_closing(run: FileRun, stream) -> bool:
    """The files left as graph code and the summary sentence, in text; False when the run
    found nothing to say them of."""
    args = run.args
    if args.format != "text" or args.quiet or not (run.findings or run.errors or run.changed):
        return False
    for line in blocker_lines(run.findings):
        print(line, file=stream)
    verb = "fixable" if run.mode in (CHECK, DIFF, PREVIEW) else "fixed"
    print(summary_sentence(run.summary, verb), file=stream)
    return True


def _progress(total: int):
    """A rich progress bar on stderr for long runs at a terminal; nothing otherwise."""
    if total < PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return nullcontext(None)
    from rich.progress import Progress

    return Progress(transient=True, console=__import__("rich.console").console.Console(stderr=True))


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
