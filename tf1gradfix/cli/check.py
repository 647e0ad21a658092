"""`tf1gradfix check [PATH...]`: report the TF1 constructs of the files, change nothing.

Exit 0 when nothing was found, 1 with findings, 2 when a file could not be read.
This is the path pre-commit takes: nothing it imports may need TensorFlow.
"""

from __future__ import annotations

import argparse
import sys

from tf1gradfix.cli.file_run import (EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, add_file_options, gather, print_closing,
                                     print_findings, summarize)
from tf1gradfix.run.batch import CHECK

add_options = add_file_options


def run(args: argparse.Namespace) -> int:
    found = gather(args, CHECK)
    if isinstance(found, int):
        return found
    summarize(found)
    stream = sys.stdout
    print_findings(found, stream)
    if not print_closing(found, stream) and args.format == "text" and not args.quiet and not args.statistics:
        print("All checks passed!", file=stream)
    if found.errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if found.findings else EXIT_CLEAN
