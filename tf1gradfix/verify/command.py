"""`tf1gradfix verify ORIGINAL MIGRATED [-- ARGS...]` and `verify --base REF [PATH...]`: arguments and exit codes.

Importing this module is cheap on purpose: the heavy parts (NumPy, the
orchestrator) are imported inside ``run``; TensorFlow is never imported in
this process at all.
"""

from __future__ import annotations

import argparse
import sys

from tf1gradfix.cli.arg_types import nonneg_float, positive_float, positive_int, shard

DEFAULT_RTOL = 1e-3    # keep in sync with comparison.DEFAULT_RTOL (not imported: NumPy is slow to load)
DEFAULT_ATOL = 1e-6
DEFAULT_TIMEOUT = 300.0


PLOT_FORMATS = (".png", ".svg", ".pdf")


def plot_path(text: str) -> str:
    """The picture's format is chosen by its extension: refuse one matplotlib would not write."""
    if not text.lower().endswith(PLOT_FORMATS):
        raise argparse.ArgumentTypeError(f"{text!r}: the picture must end in {', '.join(PLOT_FORMATS)}")
    return text


USAGE = ("%(prog)s [options] ORIGINAL MIGRATED [-- ARGS ...]\n"
         "       %(prog)s --base REF [options] [PATH ...] [-- ARGS ...]")
EPILOG = "ARGS after `--` are the programs' own command-line arguments, given to both sides."


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    parser.epilog = EPILOG
    parser.add_argument("paths", nargs="*", metavar="ORIGINAL MIGRATED",
                        help="the TF1 program (run with tensorflow.compat.v1 semantics) and the TF2 program to "
                             "check against it; with --base, the files to prove (default: those changed since REF)")
    parser.add_argument("--base", metavar="REF",
                        help="prove each file against its own content at the git ref REF (for CI)")
    parser.add_argument("--report-dir", metavar="DIR",
                        help="with --base: JSON, JUnit, Markdown and plot per file, plus a summary")
    parser.add_argument("--shard", type=shard, metavar="K/N", default=None,
                        help="with --base: prove only the K-th of N deterministic shares of the files, "
                             "a folder never split (one CI job per share)")
    parser.add_argument("-j", "--jobs", type=positive_int, default=1, metavar="N",
                        help="with --base: prove up to N files at once (default 1; each proof runs two "
                             "TensorFlow processes of some 300-500 MB); results keep the files' order")
    parser.add_argument("--rtol", type=nonneg_float, default=DEFAULT_RTOL,
                        help=f"relative tolerance (default {DEFAULT_RTOL:g}, see TOLERANCES.md)")
    parser.add_argument("--atol", type=nonneg_float, default=DEFAULT_ATOL,
                        help=f"absolute tolerance (default {DEFAULT_ATOL:g})")
    parser.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT,
                        help=f"seconds each program may run (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N",
                        help="stop both programs after N training steps and compare up to there "
                             "(default: run them whole; see TOLERANCES.md)")
    parser.add_argument("--lockstep", choices=("auto", "off", "always"), default="auto",
                        help="run the pair again with every step of the migration started from the original's "
                             "state: when the plain run diverged only by drift after step 1 (auto, the default), "
                             "never (off), or whenever it can follow the program (always); see TOLERANCES.md")
    parser.add_argument("--rerun-original", choices=("auto", "off"), default="auto",
                        help="after a divergence, run the original once more: where its two runs differ, the "
                             "original is not deterministic and the verdict is NOT_COMPARABLE (auto, the "
                             "default), or never (off); see TOLERANCES.md")
    parser.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML (one testcase per quantity kind)")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (for CI job summaries)")
    parser.add_argument("--plot", metavar="FILE.png", type=plot_path,
                        help="write a picture of both loss curves (.png, .svg or .pdf)")


def add_rewrite_arguments(group) -> None:
    """`rewrite --verify --steps N`: a budget by default, since real scripts train for hours."""
    from tf1gradfix.verify.budget import DEFAULT_REWRITE_STEPS

    group.add_argument("--steps", type=positive_int, default=DEFAULT_REWRITE_STEPS, metavar="N",
                       help=f"with --verify: training steps run and compared (default {DEFAULT_REWRITE_STEPS})")


def run(args: argparse.Namespace) -> int:
    """Verify one pair; print the summary; return 0/1/2 (equivalent/diverged/error)."""
    from pathlib import Path

    from tf1gradfix.verify import budget, report
    from tf1gradfix.verify.orchestrate import verify_pair

    if args.base is None and len(args.paths) != 2:
        print("tf1gradfix verify: give ORIGINAL and MIGRATED, or --base REF [PATH...]", file=sys.stderr)
        return 2
    if args.base is None and getattr(args, "shard", None):
        print("tf1gradfix verify: --shard goes with --base (it shares a tree's files among CI jobs)", file=sys.stderr)
        return 2
    if args.base is None and args.report_dir is not None:
        print("tf1gradfix verify: --report-dir goes with --base (one pair: --json, --junit, --markdown, --plot)",
              file=sys.stderr)
        return 2
    per_pair = [f"--{name}" for name in ("json", "junit", "markdown", "plot") if getattr(args, name, None)]
    if args.base is not None and per_pair:
        print(f"tf1gradfix verify: {', '.join(per_pair)} {'writes' if len(per_pair) == 1 else 'write'} one pair's "
              f"report, which --base does not make: use --report-dir DIR (reports per file and a summary)",
              file=sys.stderr)
        return 2
    unusable = [] if args.base is not None else [why for why in map(_unusable, args.paths) if why]
    if unusable:   # (before TensorFlow starts: a typo or a syntax error is not a verdict)
        print(f"tf1gradfix verify: {'; '.join(unusable)}", file=sys.stderr)
        return 2
    if budget.tensorflow_missing():
        print(f"tf1gradfix: {budget.missing_reason()}", file=sys.stderr)
        return 2
    if args.base is not None:
        from tf1gradfix.verify import base

        return base.run(args)
    args.original, args.migrated = args.paths
    programs = {Path(p).resolve() for p in args.paths}
    clobbered = [p for p in (args.json, args.junit, args.markdown, args.plot) if p and Path(p).resolve() in programs]
    if clobbered:
        print(f"tf1gradfix verify: a report would overwrite a program being verified: {clobbered[0]}", file=sys.stderr)
        return 2
    from tf1gradfix.cli.rewrite_verify import _forget, as_program
    from tf1gradfix.run.source_io import SourceError

    made: list[Path] = []
    try:   # (a notebook runs as its code cells, on either side)
        original, migrated = (as_program(Path(args.original), None, "original", made),
                              as_program(Path(args.migrated), None, "migrated", made))
        result = verify_pair(original, migrated, rtol=args.rtol, atol=args.atol, timeout=args.timeout,
                             steps=args.steps, program_args=getattr(args, "program_args", ()),
                             lockstep_mode=args.lockstep, rerun_original=args.rerun_original)
    except (ValueError, SourceError, OSError) as exc:
        print(f"tf1gradfix verify: {exc}", file=sys.stderr)
        return 2
    finally:
        _forget(made)
    result.original.script, result.migrated.script = args.original, args.migrated
    print(report.summary(result))
    report.write_reports(result, json=args.json, junit=args.junit,
                         markdown=args.markdown, plot=args.plot)
    return result.exit_code


def _unusable(path: str) -> str | None:
    """Why `path` cannot be run at all (missing, a folder, not Python), or None."""
    import ast
    import os

    if not os.path.exists(path):
        return f"{path}: no such file"
    if os.path.isdir(path):
        return f"{path}: a folder (give two files, or --base REF for a tree)"
    from tf1gradfix.run import notebooks

    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if notebooks.is_notebook(path):   # (a notebook runs as its code cells)
            data = notebooks.script(data)
        ast.parse(data, filename=path)
    except SyntaxError as exc:
        return f"{path}:{exc.lineno or 0}: syntax error: {exc.msg}"
    except (OSError, ValueError) as exc:
        return f"{path}: cannot be read ({exc})"
    return None


def split_program_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``verify A B -- ARGS`` and ``rewrite --verify PATHS -- ARGS``: the words after
    ``--`` are the programs' arguments. Elsewhere ``--`` keeps its usual meaning."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    head = argv[:cut]
    if head[:1] == ["verify"] or (head[:1] == ["rewrite"] and "--verify" in head):
        return head, argv[cut + 1:]
    return argv, []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tf1gradfix verify",
                                     description="Run a TF1 program and its TF2 migration side by side "
                                                 "and compare losses, gradients, updates and results.")
    add_options(parser)
    argv, program_args = split_program_args(["verify", *(sys.argv[1:] if argv is None else argv)])
    args = parser.parse_args(argv[1:])
    args.program_args = program_args
    return run(args)
