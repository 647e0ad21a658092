"""Legacy training bugs (TFG8xx): what a TF1 program trains, freezes or draws that its
author most likely did not mean (a `tf.stop_gradient` added after the loss, a frozen
variable listed for training, a listed variable the loss never reaches, an evaluation
drawing the training's random numbers, a mask left off one update, a clipped list
never applied).

Each rule reads the program model the rewrite built (loss slices, var_lists, trainable
flags, runs), not the text. They are reported, never fixed: the rewrite keeps TF1's
behaviour exactly (that is what it proves), and each message says how to get the
intended behaviour in the TF2 code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tf1gradfix.legacy import (bypassed_stop, evaluation_draws, frozen_listed, late_stop, unapplied_clip, unmasked_update,
                               unreached_listed)
from tf1gradfix.legacy.slices import tf1_names, updates
from tf1gradfix.rules.catalog import load

Diagnostic = tuple[int, int, str, str, str]

# (code, a rule reading the graph: (program, updates, qualified) -> [(node, fields, variables)])
GRAPH_RULES: tuple[tuple[str, Callable], ...] = (
    ("TFG801", late_stop.find),
    ("TFG802", frozen_listed.find),
    ("TFG803", unreached_listed.find),
    ("TFG805", unmasked_update.find),   # a mask between compute_gradients and apply_gradients
    ("TFG805", bypassed_stop.find),     # an entry-wise stop_gradient
    ("TFG806", unapplied_clip.find),
)
# (code, a rule reading the runs too: (program, updates, sites, qualified, span) -> [(node, fields, variables)])
RUN_RULES: tuple[tuple[str, Callable], ...] = (
    ("TFG804", evaluation_draws.find),
)


@dataclass(frozen=True)
class Found:
    """One legacy bug: where, the rule's message, and the TF1 names of the variables it
    concerns (what the verifier's evidence is read for, legacy/evidence.py)."""

    line: int
    col: int
    code: str
    message: str
    variables: tuple[str, ...] = ()
    limit: float | None = None    # a number the rule read that the evidence is measured against (a clip norm)

    def as_diagnostic(self) -> Diagnostic:
        return (self.line, self.col, self.code, self.message, "manual")


def graph_findings(program, qualified, position) -> list[Found]:
    """The findings of the graph the block built (`position`: a CST node -> (line, col))."""
    return _guarded(lambda done: [_found(code, position(node), fields, tf1_names(program, variables))
                                  for code, rule in GRAPH_RULES
                                  for node, fields, variables in rule(program, done, qualified)], program, qualified)


def run_findings(program, sites, qualified, position, span) -> list[Found]:
    """The findings of the runs of that graph (`sites`: model.sites.Site, in host order;
    `span`: a CST node -> its first and last line)."""
    return _guarded(lambda done: [_found(code, position(node), fields, tf1_names(program, variables))
                                  for code, rule in RUN_RULES
                                  for node, fields, variables in rule(program, done, sites, qualified, span)],
                    program, qualified)


STRICT = False   # (the tests set it: a rule's own error is raised instead of costing only its findings)


def _guarded(find, program, qualified) -> list[Found]:
    """The rules never cost a file its rewrite: a model they cannot read gives no finding."""
    try:
        return find(updates(program, qualified))
    except Exception:  # noqa: BLE001 - a report on top of the rewrite, never a reason to refuse it
        if STRICT:
            raise
        return []


def _found(code: str, where: tuple[int, int], fields: dict, variables: tuple[str, ...]) -> Found:
    return Found(*where, code, load().by_code[code].message.format(**fields), variables, fields.get("limit"))
