"""Why the rewrite leaves a file intact, as data: each refusal names a reason of
rules/refusals.toml, whose row gives its code, message, why and what to do."""

from __future__ import annotations

import functools

from tf1gradfix.records import record
from tf1gradfix.rules.catalog import _read


@record(frozen=True)
class Reason:
    id: str
    code: str
    message: str
    why: str
    instead: str
    definite: bool = False


@functools.lru_cache(maxsize=None)
def reasons() -> dict[str, Reason]:
    """Reason id -> its row, in table order."""
    return {row["id"]: Reason(**row) for row in _read("refusals.toml")["reason"]}


def render(template: str, fields: dict) -> str:
    """A reason's message with its fields filled in; an `api` field is a qualified
    TensorFlow name, shown as users write it (`tf.X`)."""
    if "api" in fields:
        fields = {**fields, "api": fields["api"].replace("tensorflow", "tf", 1)}
    return template.format(**fields)


class Refusal(Exception):
    """The program holds a construct the rewrite cannot translate with certainty."""

    def __init__(self, node, code: str, message: str, definite: bool = False, reason: str | None = None):
        """`definite`: a construct no rewrite exists for (TF1 queues), reported also where
        the program is only tried (a session program without placeholders or variables)."""
        super().__init__(message)
        self.node, self.code, self.message, self.definite, self.reason = node, code, message, definite, reason

    @classmethod
    def of(cls, node, reason: str, /, **fields) -> "Refusal":
        """The refusal for `reason` (an id of refusals.toml) at `node`."""
        row = reasons()[reason]
        return cls(node, row.code, render(row.message, fields), row.definite, reason)


class Refusals(Refusal):
    """Several refusals of one program, found in one pass (statements that do not read
    what a refused one binds are still analyzed): it reads as its first, and `all` holds
    every one, so a user learns every blocker from one run."""

    def __init__(self, found: list[Refusal]):
        first = found[0]
        super().__init__(first.node, first.code, first.message, first.definite, first.reason)
        self.all = [r for refusal in found for r in getattr(refusal, "all", [refusal])]

    @classmethod
    def joined(cls, earlier: list[Refusal], last: Refusal | None = None) -> Refusal:
        """`earlier` and `last` as one refusal (itself, when it is alone)."""
        found = [*earlier, *([last] if last is not None else [])]
        return found[0] if len(found) == 1 else cls(found)


def diagnostic(line: int, col: int, reason: str, /, **fields) -> tuple:
    """A refusal decided outside the model (the rewrite's own checks of its output), as
    the (line, col, code, message, safety) the rewrite reports."""
    row = reasons()[reason]
    return (line, col, row.code, render(row.message, fields), "manual")
