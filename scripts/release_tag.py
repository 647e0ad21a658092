"""`make release-tag`: the annotated tag `v<version>` (setup.cfg) on the current commit.

The pre-commit snippets (README.md, .pre-commit-hooks.yaml) name `rev: v<version>`;
pre-commit can only install a rev that exists, so each version is tagged when it
is released. Refused (exit 2, the tag left as it is): a version the docs do not
name, uncommitted changes, or a tag of that name on another commit.
"""

from __future__ import annotations

import argparse
import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", ".pre-commit-hooks.yaml")
REV = re.compile(r"^\s*#?\s*rev:\s*(\S+)", re.MULTILINE)


def version(root: Path = ROOT) -> str:
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg", encoding="utf-8")
    return config["metadata"]["version"]


def documented_revs(root: Path = ROOT) -> dict[str, list[str]]:
    """The `rev:` each pre-commit snippet names, per file."""
    return {name: REV.findall((root / name).read_text(encoding="utf-8")) for name in DOCS}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"git {args[0]} failed")
    return done.stdout.strip()


def tag(root: Path = ROOT, dry_run: bool = False) -> str:
    """Tag HEAD `v<version>`; the line to print. Raises RuntimeError when refused."""
    name = f"v{version(root)}"
    wrong = {file: revs for file, revs in documented_revs(root).items() if revs != [name] * len(revs) or not revs}
    if wrong:
        raise RuntimeError(f"the pre-commit snippets must name rev: {name} (setup.cfg's version): "
                           + "; ".join(f"{file} names {', '.join(revs) or 'none'}" for file, revs in wrong.items()))
    if _git(root, "status", "--porcelain", "--untracked-files=no"):
        raise RuntimeError("uncommitted changes: commit them first (the tag names the commit)")
    head = _git(root, "rev-parse", "HEAD")
    try:
        tagged = _git(root, "rev-parse", "--verify", "--quiet", f"refs/tags/{name}^{{commit}}")
    except RuntimeError:
        tagged = ""
    if tagged == head:
        return f"{name} already tags {head[:12]}"
    if tagged:
        raise RuntimeError(f"{name} already tags another commit ({tagged[:12]}): raise the version in setup.cfg")
    if not dry_run:
        _git(root, "tag", "-a", name, "-m", f"tf1gradfix {name[1:]}")
    return f"{'would tag' if dry_run else 'tagged'} {head[:12]} {name} (push it: git push origin {name})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="release_tag", description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would be tagged; tag nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        print(tag(args.root, args.dry_run))
    except (RuntimeError, OSError, KeyError) as exc:
        print(f"release-tag: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
