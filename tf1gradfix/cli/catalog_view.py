"""The rule catalog shown to people: `tf1gradfix rules` and `tf1gradfix explain`."""

from __future__ import annotations

import json
import textwrap

from tf1gradfix.rules.catalog import load

FIX_MARK = {"safe": "safe fix", "unsafe": "unsafe fix", "manual": "manual"}


def render_rules(fmt: str = "text") -> str:
    catalog = load()
    if fmt == "json":
        return json.dumps(
            [{"code": r.code, "name": r.name, "title": r.title, "safety": r.safety} for r in catalog.rules], indent=2
        )
    if fmt == "markdown":
        lines = ["| code | name | what it finds | fix |", "| --- | --- | --- | --- |"]
        for r in catalog.rules:
            lines.append(f"| `{r.code}` | {r.name} | {r.title.replace('|', '/')} | {FIX_MARK[r.safety]} |")
        return "\n".join(lines)
    width = max(len(r.name) for r in catalog.rules)
    return "\n".join(f"{r.code}  {r.name:<{width}}  {FIX_MARK[r.safety]:<10}  {r.title}" for r in catalog.rules)


def render_explanation(code: str) -> str | None:
    rule = load().rule(code)
    if rule is None:
        return None
    indent = lambda text: textwrap.indent(text, "    ")  # noqa: E731
    return "\n".join(
        [
            f"{rule.code} {rule.name}: {rule.title}",
            f"Fix: {FIX_MARK[rule.safety]}",
            "",
            rule.explanation,
            "",
            "Before (TF1):",
            indent(rule.before),
            "",
            "After (TF2):",
            indent(rule.after),
        ]
    )
