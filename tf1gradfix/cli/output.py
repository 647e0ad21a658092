"""Formatting what a run found: text lines, JSON, GitHub annotations, SARIF 2.1.0 or JUnit XML."""

from __future__ import annotations

from tf1gradfix.run.findings import FileError, Finding

FORMATS = ("text", "json", "github", "sarif", "junit")
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


LABELS = ("safe", "proven", "manual")   # (catalog.SAFETIES, in the order summaries count them)


def mark(finding: Finding) -> str:
    """A finding's fix label in brackets, `*` first when this run fixes it (or would):
    `[*safe]`, `[*proven]`, `[safe]`, `[proven]`, `[manual]`; ruff's `[*]`, with the label.
    `check` cannot know whether a session program's restructuring goes through (FIFOQueue,
    a fetch by name...): those findings read `[rewrite decides]`, not a promise of a proof."""
    if finding.fixed is None and finding.safety == "proven":
        return "[rewrite decides]"
    return f"[{'*' if finding.fixed else ''}{finding.safety}]"


def finding_line(finding: Finding) -> str:
    return f"{shown(finding.path)}:{finding.line}:{finding.col}: {finding.code} {mark(finding)} {finding.message}"


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
    for f in findings:   # (a notebook's finding: the notebook's file, its cell in the title)
        title = f"{f.code} (cell {cell_of(f)})" if cell_of(f) else f.code
        lines.append(
            f"::warning file={_github_property(file_of(f))},line={f.line},col={f.col},title={_github_property(title)}"
            f"::{_github_escape(f.code + ' ' + f.message)}"
        )
    for e in errors:
        location = f"file={_github_property(e.path)}" + (f",line={e.line}" if e.line else "")
        lines.append(f"::error {location},title=tf1gradfix::{_github_escape(e.message)}")
    return lines


def render(fmt: str, findings: list[Finding], errors: list[FileError], summary: dict, outcomes=(), proofs=()) -> str:
    """`outcomes` (per file) adds the diffs to JSON and the clean files to JUnit; `proofs`
    (the verifier's rows, cli/rewrite_verify.ProofRow) add `"proofs"` to JSON."""
    if fmt == "json":
        import json  # (here: a text run need not import it)

        document = {   # (a notebook's finding: the notebook's path, and its cell apart)
            "findings": [{**f.to_json(), **({"path": file_of(f), "cell": cell_of(f)} if cell_of(f) else {})}
                         for f in findings],
            "errors": [e.to_json() for e in errors],
            "summary": summary,
        }
        blocked = blockers(findings)
        if blocked:   # files whose whole-program rewrite was not made, with the lines that stopped it
            document["not_restructured"] = {p: [{**({"cell": cell_of(f)} if cell_of(f) else {}),
                                                  "line": f.line, "code": f.code, "message": f.message} for f in hits]
                                             for p, hits in blocked.items()}
        diffs = {o.path: o.diff for o in outcomes if o.diff}
        if diffs:   # `rewrite --diff --format json`: stdout stays one JSON document
            document["diffs"] = diffs
        if proofs:
            document["proofs"] = [{"path": r.path, "verdict": r.verdict, "reason": r.reason, "written": r.written,
                                   "budget": r.budget}
                                  for r in proofs]
        return json.dumps(document, indent=2)
    if fmt == "github":
        return "\n".join(github_lines(findings, errors))
    if fmt == "sarif":
        import json

        from tf1gradfix.cli.sarif import sarif_document

        return json.dumps(sarif_document(findings, errors), indent=2)
    if fmt == "junit":
        return junit_document(findings, errors, [o.path for o in outcomes])
    lines = [error_line(e) for e in errors] + [finding_line(f) for f in findings]
    return "\n".join(lines)


def label_counts(findings: list[Finding]) -> dict[str, int]:
    """The findings counted per fix label (the labels no finding has left out)."""
    counts = {label: sum(f.safety == label for f in findings) for label in LABELS}
    return {label: n for label, n in counts.items() if n}


def summary_sentence(summary: dict, verb: str) -> str:
    """`N findings (a safe, b proven, c manual), F fixed, M need manual work, ...`: the
    labels as the lines show them, then what this run did with them."""
    labels = dict(summary.get("labels") or {})
    if summary.get("rewrite_decides"):   # (`check` cannot promise these a proof: the lines say so too)
        labels["proven"] -= summary["rewrite_decides"]
        labels = {label: n for label, n in labels.items() if n}
        labels["decided by `rewrite`"] = summary["rewrite_decides"]
    parts = [f"{summary['findings']} finding{'s' if summary['findings'] != 1 else ''}"
             + (" (" + ", ".join(f"{n} {label}" for label, n in labels.items()) + ")" if labels else "")]
    if summary.get("fixed"):
        parts.append(f"{summary['fixed']} {verb}")
    if summary.get("manual"):
        parts.append(f"{summary['manual']} need{'s' if summary['manual'] == 1 else ''} manual work")
    if summary.get("proof_needed"):
        parts.append(f"{summary['proof_needed']} fixable with proof, not written")
    if summary.get("undecided"):
        parts.append(f"{summary['undecided']} in session programs (`tf1gradfix rewrite --diff` shows what it fixes)")
    text = f"{summary['files']} file{'s' if summary['files'] != 1 else ''} checked: " + ", ".join(parts)
    if summary.get("changed"):
        text += f"; {summary['changed']} file{'s' if summary['changed'] != 1 else ''} {'would change' if verb == 'fixable' else 'rewritten'}"
    if summary.get("unproven"):
        n = summary["unproven"]
        text += (f"; {n} file{'s' if n != 1 else ''} restructured unproven (--no-verify; "
                 "`tf1gradfix verify --base REF` proves them against a committed version)")
    if summary.get("errors"):
        text += f"; {summary['errors']} error{'s' if summary['errors'] != 1 else ''}"
    return text + "."


def junit_document(findings: list[Finding], errors: list[FileError], paths: list[str]) -> str:
    """One test case per file: failed with its findings, errored when it could not be read."""
    import xml.etree.ElementTree as ET

    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    broken = {e.path: e for e in errors}
    names = list(dict.fromkeys([*paths, *by_path, *broken]))
    suite = ET.Element("testsuite", name="tf1gradfix", tests=str(len(names)),
                       failures=str(len(by_path)), errors=str(len(broken)))
    for name in names:
        # (one classname per file, as CI groups cases: a notebook's cells are cases of the notebook)
        case = ET.SubElement(suite, "testcase", classname=shown(split_cell(name)[0]), name=shown(name))
        if name in broken:
            ET.SubElement(case, "error", message=broken[name].message).text = error_line(broken[name])
        elif name in by_path:
            hits = by_path[name]
            failure = ET.SubElement(case, "failure", message=f"{len(hits)} finding{'s' if len(hits) != 1 else ''}")
            failure.text = "\n".join(finding_line(f) for f in hits)
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True)


def statistics(findings: list[Finding], errors: list[FileError], fmt: str) -> str:
    """`--statistics`: findings counted per code, most frequent first (as ruff prints them)."""
    from collections import Counter

    from tf1gradfix.rules.catalog import load

    counts = Counter(f.code for f in findings)
    fixed = {f.code for f in findings if f.fixed}
    labels = {code: [label for label in LABELS if any(f.code == code and f.safety == label for f in findings)]
              for code in counts}   # (one code's findings may differ: fixable with proof here, manual there)
    catalog = load()
    rows = [(code, n, catalog.rule(code).name if catalog.rule(code) else "", code in fixed)
            for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    if fmt == "json":
        import json

        return json.dumps([{"code": c, "name": name, "count": n, "fixable": fix, "labels": labels[c]}
                           for c, n, name, fix in rows]
                          + [{"code": "error", "name": "file error", "count": len(errors), "fixable": False,
                              "labels": []}] * bool(errors), indent=2)
    width = max((len(str(n)) for _, n, _, _ in rows), default=1)
    lines = [f"{n:>{width}}\t{code}\t[{'*' if fix else ''}{'/'.join(labels[code])}] {name}" for code, n, name, fix in rows]
    if errors:
        lines.append(f"{len(errors):>{width}}\terror\t    file error")
    return "\n".join(lines)


from tf1gradfix.run.findings import _CELL, blocking_codes, split_cell  # noqa: F401  (a place's cell, read here too)


def file_of(finding: Finding) -> str:
    """The file a finding is in (a notebook's findings name their cell too: `x.ipynb:cell 4`)."""
    return split_cell(finding.path)[0]


def cell_of(finding: Finding) -> int | None:
    return split_cell(finding.path)[1]


def blockers(findings: list[Finding]) -> dict[str, list[Finding]]:
    """Per file, the findings that kept its whole-program rewrite from being made (the
    restructuring's refusals), in line order (a notebook's: in cell order)."""
    codes = blocking_codes()
    found: dict[str, list[Finding]] = {}
    for f in findings:
        if f.code in codes:
            found.setdefault(file_of(f), []).append(f)
    return {path: sorted(hits, key=lambda f: (cell_of(f) or 0, f.line, f.col)) for path, hits in found.items()}


def elided(message: str) -> str:
    """A reason with its names and numbers elided, so equal reasons count together."""
    import re

    return re.sub(r"\b\d+\b", "N", re.sub(r"`[^`]*`", "`…`", message))


def place(f: Finding) -> str:
    """`line 4`, or in a notebook `cell 2 line 4`."""
    return f"cell {cell_of(f)} line {f.line}" if cell_of(f) else f"line {f.line}"


def by_reason(hits: list[Finding]) -> dict[str, list[str]]:
    """Each blocking reason once (`CODE message`), with the places that give it, in the
    order of their first place: several lines with one reason do not repeat it."""
    places: dict[str, list[str]] = {}
    for f in hits:
        places.setdefault(f"{f.code} {f.message}", []).append(place(f))
    return places


def reasons_once(hits: list[Finding]) -> str:
    """`; `-joined reasons, each said once; one several lines give names them."""
    return "; ".join(reason + (f" ({', '.join(where)})" if len(where) > 1 else "")
                     for reason, where in by_reason(hits).items())


def blocker_lines(findings: list[Finding]) -> list[str]:
    """One line per file left as graph code, naming the blocking line(s); then, over a run of
    several such files, the reasons counted, most common first (a migration plan)."""
    from collections import Counter

    blocked = blockers(findings)
    lines = []
    for path, hits in blocked.items():
        where = ", ".join(place(f) for f in hits)
        lines.append(f"{shown(path)}: not restructured (still TF1 graph code) because of {where}: {reasons_once(hits)}")
    if len(blocked) > 1:
        reasons = Counter(f"{f.code} {elided(f.message)}" for hits in blocked.values() for f in hits)
        lines.append(f"{len(blocked)} files not restructured; reasons, most common first:")
        lines += [f"  {n:>4}  {reason}" for reason, n in reasons.most_common()]
    return lines
