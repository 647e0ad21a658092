"""`tf1gradfix rules`: every rule of the catalog, as text, Markdown or JSON."""

from __future__ import annotations

import argparse


def add_options(rules: argparse.ArgumentParser) -> None:
    rules.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from tf1gradfix.cli.catalog_view import render_rules

    print(render_rules(args.format))
    return 0
