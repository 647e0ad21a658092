"""Command line: check, rewrite, rules, explain, verify; this module parses and dispatches.

Each command lives in a module of its own (COMMANDS) that adds its options and runs
it, printing what it found; here are what all commands share: the parser, signals,
and the exit code of a run that was stopped or broke.

Exit codes everywhere: 0 clean / equivalent, 1 findings / diverged,
2 errors (a file could not be read or parsed, a verification side failed,
a bad setting, an internal error), 128+N stopped by signal N.
This module must stay free of TensorFlow: pre-commit runs start here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from contextlib import contextmanager

from tf1gradfix import __version__
from tf1gradfix.cli.config import ConfigError
from tf1gradfix.run.batch import BUG_HINT

EXIT_FINDINGS, EXIT_ERROR = 1, 2


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


COMMANDS = (  # name, help, the module that adds its options (add_options) and runs it (run)
    ("check", "report TF1 constructs", "tf1gradfix.cli.check"),
    ("rewrite", "apply the fixes that exist", "tf1gradfix.cli.rewrite"),
    ("rules", "list every rule", "tf1gradfix.cli.rules"),
    ("explain", "explain one rule (with an example and its refusal reasons) or one refusal reason", "tf1gradfix.cli.explain"),
    ("verify", "run ORIGINAL (TF1) and MIGRATED (TF2) side by side and compare", "tf1gradfix.verify.command"),
)


def _door(module: str):
    """The module of one command, imported when that command is asked for (a cold `check`
    need not load the others)."""
    return importlib.import_module(module)


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
    for name, help_text, module in COMMANDS:
        if only in (None, name):
            _door(module).add_options(sub.add_parser(name, help=help_text, formatter_class=_Formatter))
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
    return _door(dict((name, module) for name, _, module in COMMANDS)[args.command]).run(args)


__all__ = ["main", "build_parser"]
