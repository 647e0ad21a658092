"""Formatting what a run found: text lines, JSON, or GitHub annotations."""

from __future__ import annotations

from tf1gradfix.run.findings import FileError, Finding

FORMATS = ("text", "json", "github")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(path: str) -> str:
    """`path` safe to print on one line: control characters and undecodable bytes
    (surrogate escapes) as backslash escapes, so a file name cannot forge output."""
    if path.isprintable():
        return path
    return "".join(_escaped(char) for char in path)


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def finding_line(finding: Finding) -> str:
    mark = " [*]" if finding.fixed else ""
    return f"{shown(finding.path)}:{finding.line}:{finding.col}: {finding.code}{mark} {finding.message}"


def error_line(error: FileError) -> str:
    where = shown(error.path)
    if error.line is not None:
        where += f":{error.line}"
        if error.col is not None:
            where += f":{error.col}"
    return f"{where}: error: {error.message}"


def _github_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    return _github_escape(shown(text)).replace(":", "%3A").replace(",", "%2C")


def github_lines(findings: list[Finding], errors: list[FileError]) -> list[str]:
    lines = []
    for f in findings:
        lines.append(
            f"::warning file={_github_property(f.path)},line={f.line},col={f.col},title={f.code}::{_github_escape(f.code + ' ' + f.message)}"
        )
    for e in errors:
        location = f"file={_github_property(e.path)}" + (f",line={e.line}" if e.line else "")
        lines.append(f"::error {location},title=tf1gradfix::{_github_escape(e.message)}")
    return lines


def render(fmt: str, findings: list[Finding], errors: list[FileError], summary: dict) -> str:
    if fmt == "json":
        import json  # (only this format needs it)

        return json.dumps(
            {
                "findings": [f.to_json() for f in findings],
                "errors": [e.to_json() for e in errors],
                "summary": summary,
            },
            indent=2,
        )
    if fmt == "github":
        return "\n".join(github_lines(findings, errors))
    lines = [error_line(e) for e in errors] + [finding_line(f) for f in findings]
    return "\n".join(lines)


def summary_sentence(summary: dict, verb: str) -> str:
    parts = [f"{summary['findings']} finding{'s' if summary['findings'] != 1 else ''}"]
    if summary.get("fixed"):
        parts.append(f"{summary['fixed']} {verb}")
    if summary.get("manual"):
        parts.append(f"{summary['manual']} need manual work")
    if summary.get("undecided"):
        parts.append(f"{summary['undecided']} in session programs (`tf1gradfix rewrite --diff` shows what it fixes)")
    text = f"{summary['files']} file{'s' if summary['files'] != 1 else ''} checked: " + ", ".join(parts)
    if summary.get("changed"):
        text += f"; {summary['changed']} file{'s' if summary['changed'] != 1 else ''} {'would change' if verb == 'fixable' else 'rewritten'}"
    if summary.get("errors"):
        text += f"; {summary['errors']} error{'s' if summary['errors'] != 1 else ''}"
    return text + "."
