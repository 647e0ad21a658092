"""The README is what a newcomer reads in five minutes (under 25 KB, details in docs/), and
every command and option the README and docs/ name on a `tf1gradfix` command line exists."""

from __future__ import annotations

import re
from pathlib import Path

from tf1gradfix.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_LINE = re.compile(r"tf1gradfix ([a-z][\w-]*)([^`\n]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])(?![\w-])")


def _options() -> dict:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.choices and isinstance(a.choices, dict)]
    return {name: {o for action in sub._actions for o in action.option_strings}
            for name, sub in commands.choices.items()}


def code(text: str) -> str:
    """The text's code: `spans`, indented lines and fenced blocks (prose says "tf1gradfix reads")."""
    lines, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif fence or line.startswith("    "):
            lines.append(line)
        else:
            lines.extend(re.findall(r"`([^`]+)`", line))
    # (a shell comment or a <placeholder> is prose again)
    return "\n".join(re.sub(r"<[^>]*>", "", line.split(" # ")[0]) for line in lines)


def named(text: str):
    """(command, option or None) for each `tf1gradfix COMMAND ...` the text shows in code;
    the program's own arguments after `--` are not the tool's."""
    for match in COMMAND_LINE.finditer(code(text)):
        command, rest = match.group(1), match.group(2).split(" -- ")[0]
        yield command, None
        for option in OPTION.findall(rest):
            yield command, option


def test_the_readme_fits_five_minutes_and_links_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) < 25_000
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name
    assert "make demo" in readme and "make test" in readme


def test_every_command_and_option_the_docs_name_exists():
    options = _options()
    unknown = sorted({f"{page.name}: tf1gradfix {command} {option or ''}".rstrip()
                      for page in PAGES for command, option in named(page.read_text(encoding="utf-8"))
                      if command not in options or (option is not None and option not in options[command])})
    assert not unknown, unknown


def test_the_reader_catches_a_made_up_option():
    assert ("check", "--frobnicate") in set(named("run `tf1gradfix check --frobnicate x.py -- --epochs 2`"))
    assert ("check", "--epochs") not in set(named("run `tf1gradfix check x.py -- --epochs 2`"))
