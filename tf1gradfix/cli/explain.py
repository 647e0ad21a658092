"""`tf1gradfix explain CODE`: one rule (an example, its refusal reasons) or one refusal reason."""

from __future__ import annotations

import argparse
import sys


def add_options(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("code", help="a rule code (TFG911) or a refusal reason id (graph_value_outside_run)")


def run(args: argparse.Namespace) -> int:
    from tf1gradfix.cli.catalog_view import render_explanation

    text = render_explanation(args.code)
    if text is None:
        print(f"tf1gradfix: unknown rule code {args.code!r}, nor a refusal reason (see `tf1gradfix rules`)", file=sys.stderr)
        return 2
    print(text)
    return 0
