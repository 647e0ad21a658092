"""The rule catalog shown to people: `tf1gradfix rules` and `tf1gradfix explain`."""

from __future__ import annotations

import json
import textwrap

from tf1gradfix.rules.catalog import load

FIX_MARK = {"safe": "safe fix", "proven": "fix with proof", "manual": "manual"}   # (catalog.SAFETIES)
FIX_MEANING = {
    "safe": "always applied by `tf1gradfix rewrite`",
    "proven": "the whole-program restructuring; `tf1gradfix rewrite` writes it once the verifier proves it "
              "(`--no-verify`: unproven)",
    "manual": "not rewritten; the message says what to use instead",
}


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
    return "\n".join(f"{r.code}  {r.name:<{width}}  {FIX_MARK[r.safety]:<14}  {r.title}" for r in catalog.rules)


AFTER_TF1 = "After (TF1 that `rewrite` then restructures):"   # (a manual rule's fix is in the TF1 code)


def render_explanation(code: str) -> str | None:
    """A rule with its example and the refusal reasons it reports; or one reason, by id."""
    rule = load().rule(code)
    if rule is None:
        return _render_reason(code)
    indent = lambda text: textwrap.indent(text, "    ")  # noqa: E731
    return "\n".join(
        [
            f"{rule.code} {rule.name}: {rule.title}",
            f"Fix: {FIX_MARK[rule.safety]} ({FIX_MEANING[rule.safety]})",
            "",
            rule.explanation,
            "",
            "Before (TF1):",
            indent(rule.before),
            "",
            AFTER_TF1 if rule.after_tf1 else "After (TF2):",
            indent(rule.after),
        ]
        + _family(rule.code)
        + _reason_list(rule.code)
    )


def _family(code: str) -> list[str]:
    """The codes split from `code`, which it still selects and ignores."""
    split = [r for r in load().rules if r.split_from == code]
    if not split:
        return []
    return ["", f"Codes of this family (`{code}` in --select/--ignore matches them all):"] + [
        f"    {r.code}  {r.name}: {r.title}" for r in split]


def _reason_list(code: str) -> list[str]:
    from tf1gradfix.model.refusals import reasons

    rows = [r for r in reasons().values() if r.code == code]
    if not rows:
        return []
    lines = ["", f"Reasons ({len(rows)}; `tf1gradfix explain ID` shows one):"]
    for r in rows:
        lines += [f"  {r.id}: {r.message}", f"      why: {r.why}", f"      instead: {r.instead}"]
    return lines


def _render_reason(reason_id: str) -> str | None:
    from tf1gradfix.model.refusals import reasons

    r = reasons().get(reason_id.lower())
    if r is None:
        return None
    rule = load().rule(r.code)
    return "\n".join([f"{r.id} ({r.code} {rule.name}: {rule.title})", "", f"Message: {r.message}",
                      f"Why: {r.why}", f"What to do instead: {r.instead}"])
