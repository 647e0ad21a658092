"""Printed values that differ from run to run: shown, never decisive.

A correct migration of a script that prints its wall-clock time, a date, a
process id or a path in a temporary folder (each side runs in its own) would
otherwise diverge on that line.  Each class below is a pattern over a printed
line; what it matches is replaced by ``<class>`` before the line is compared
(so the words around it, and every other number of the line, still compare
exactly: a wrong loss next to a timestamp diverges), and both sides' values
are kept for the report.  A clock that feeds training (a seed from the time)
is not masked: the training shows it.

The patterns are narrow on purpose: a number is volatile only with a time unit
(``0.63 s``, ``12ms``, ``3.1 sec/step``, ``250 examples/sec``), after a
word that names a duration (``took``, ``elapsed``, ``time:``, ``duration=``),
as a date, a clock time or an epoch time, after ``pid``, or in a path under
the temporary folder.
"""

from __future__ import annotations

import re
import tempfile

_NUM = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_UNIT = r"(?:s|sec|secs|seconds?|ms|msec|milliseconds?|µs|microseconds?|minutes?|hours?)"   # not min, h: a minimum
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_TMP = "|".join(sorted({re.escape(tempfile.gettempdir()), "/tmp", "/var/folders", "/private/var/folders"}, key=len,
                       reverse=True))

# (class, pattern), tried in this order; a span taken by one is not looked at again.
CLASSES = (
    ("timestamp", rf"\b\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:[.,]\d+)?)?(?:Z|[+-]\d{{2}}:?\d{{2}})?"),
    ("timestamp", rf"\b(?:{_DAY},? +)?{_MONTH} +\d{{1,2}},? +\d{{1,2}}:\d{{2}}:\d{{2}}(?: +\d{{4}})?"),
    ("timestamp", r"(?<![\d.])1[5-9]\d{8}(?:\.\d+)?(?![\d.])"),          # time.time(): 2017 to 2033
    ("date", r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b"),
    ("clock", r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?![\d:])"),
    ("throughput", rf"(?<![\w.]){_NUM} *(?:examples|samples|steps|images|batches|it|tokens|words)/(?:s|sec|second)\b"),
    ("duration", rf"(?<![\w.]){_NUM} *{_UNIT}/(?:step|batch|epoch|iter|it)\b"),
    ("duration", rf"(?<![\w.]){_NUM} *{_UNIT}\b(?![/\w])"),
    ("duration", rf"\b(?:took|elapsed|duration|wall[- ]?time|time|runtime|time taken|time elapsed)\b *[:=]? *{_NUM}"),
    ("pid", r"\b(?:pid|process id|PID)\b *[:=#]? *\d+"),
    ("path", rf"(?:{_TMP})/[^\s'\",;)\]}}>]*"),
)
_COMPILED = tuple((name, re.compile(p, re.IGNORECASE if name == "duration" else 0)) for name, p in CLASSES)


def mask(line: str) -> tuple[str, list]:
    """The line with each volatile span replaced by ``<class>``, and [(class, text)] in line order."""
    spans: list = []
    for name, pattern in _COMPILED:
        for m in pattern.finditer(line):
            if not any(s < m.end() and m.start() < e for s, e, _, _ in spans):
                spans.append((m.start(), m.end(), name, m.group(0)))
    if not spans:
        return line, []
    spans.sort()
    out, at = [], 0
    for start, end, name, _ in spans:
        out.append(line[at:start] + f"<{name}>")
        at = end
    out.append(line[at:])
    return "".join(out), [(name, text) for _, _, name, text in spans]


def mask_output(text: str) -> tuple[str, list]:
    """Every line masked; [(line number, class, text)] of what was masked."""
    lines, found = [], []
    for no, line in enumerate(text.splitlines(), 1):
        masked, spans = mask(line)
        lines.append(masked)
        found += [(no, name, value) for name, value in spans]
    return "\n".join(lines) + ("\n" if text.endswith("\n") else ""), found


def record(cmp, found_o: list, found_m: list) -> None:
    """Show what was masked: a note with the classes, and both sides' values in the JSON report."""
    if not found_o and not found_m:
        return
    pairs = [{"class": a[1], "line": a[0], "original": a[2], "migrated": b[2]} for a, b in zip(found_o, found_m)]
    pairs += [{"class": a[1], "line": a[0], "original": a[2], "migrated": None} for a in found_o[len(found_m):]]
    pairs += [{"class": b[1], "line": b[0], "original": None, "migrated": b[2]} for b in found_m[len(found_o):]]
    cmp.volatile = pairs[:50]
    counts: dict = {}
    for p in pairs:
        counts[p["class"]] = counts.get(p["class"], 0) + 1
    first = pairs[0]
    cmp.notes.append("volatile output shown, not compared: " + ", ".join(f"{n} {c}" for c, n in counts.items())
                     + f" (first, line {first['line']}: original {first['original']!r}, "
                       f"migrated {first['migrated']!r}); every other word and number of those lines was compared")
