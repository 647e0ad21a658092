"""`--format sarif`: SARIF 2.1.0, the format GitHub and GitLab code scanning read.

Each finding is a result of its rule (the rule's name, title and
explanation travel in the run's rule list); a file that could not be read
is a tool execution notification, so the scan shows it as an error, not as
a finding of the code.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from tf1gradfix import __version__
from tf1gradfix.run.findings import FileError, Finding, split_cell

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# fixed by this run / needs work, or (`check` of a session program, fixed None) `rewrite` decides
_LEVEL = {True: "note", False: "warning", None: "warning"}


def project_url() -> str | None:
    """The project's public address from its package metadata (setup.cfg `url` or a
    `project_urls` entry), None when it declares none: SARIF's informationUri and helpUri
    must be absolute, so without it they are left out rather than invented."""
    from importlib import metadata

    try:
        meta = metadata.metadata("tf1gradfix")
    except metadata.PackageNotFoundError:
        return None
    urls = [meta.get("Home-page")] + [u.split(",", 1)[-1].strip() for u in meta.get_all("Project-URL") or ()]
    return next((u.rstrip("/") for u in urls if u and u.startswith(("https://", "http://"))), None)


SRCROOT = "%SRCROOT%"   # (the base id code scanning maps to the checkout)


def _artifact(path: str) -> dict:
    """A path under the run's folder is relative to `%SRCROOT%` (declared in the run's
    originalUriBaseIds), so a report made in CI resolves in any checkout; a path outside it
    stays an absolute file URI. Both are percent-encoded (`#`, `?`, `%`, spaces and control
    characters are no URI's text)."""
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            return {"uri": p.resolve().as_uri()}
    return {"uri": quote(p.as_posix().encode("utf-8", "surrogateescape"), safe="/"), "uriBaseId": SRCROOT}


def _location(path: str, line: int | None, col: int | None) -> dict:
    """A finding's place; in a notebook, the notebook is the artifact and the cell a property
    (`notebook.ipynb:cell 3` names no file)."""
    file, cell = split_cell(path)
    physical: dict = {"artifactLocation": _artifact(file)}
    if line:
        physical["region"] = {"startLine": line, **({"startColumn": col} if col else {})}
    if cell:
        physical.setdefault("region", {})["properties"] = {"cell": cell}
    return {"physicalLocation": physical}


def sarif_document(findings: list[Finding], errors: list[FileError]) -> dict:
    from tf1gradfix.rules.catalog import load

    catalog = load()
    url = project_url()
    codes = list(dict.fromkeys(f.code for f in findings))
    rules = []
    for code in codes:
        rule = catalog.rule(code)
        entry: dict = {"id": code}
        if rule is not None:
            entry.update(name=rule.name, shortDescription={"text": rule.title},
                         fullDescription={"text": " ".join(rule.explanation.split()) or rule.title},
                         help={"text": f"tf1gradfix explain {code}"}, properties={"safety": rule.safety},
                         **({"helpUri": f"{url}/blob/HEAD/docs/rules.md"} if url else {}))   # (the rule table)
        rules.append(entry)
    index = {code: i for i, code in enumerate(codes)}
    results = [{"ruleId": f.code, "ruleIndex": index[f.code], "level": _LEVEL[f.fixed],
                "message": {"text": f.message}, "locations": [_location(f.path, f.line, f.col)],
                "properties": {"safety": f.safety, "fixed": f.fixed}}
               for f in findings]
    notifications = [{"level": "error", "message": {"text": e.message}, "locations": [_location(e.path, e.line, e.col)]}
                     for e in errors]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tf1gradfix", "version": __version__, "rules": rules,
                                **({"informationUri": url} if url else {})}},
            "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
