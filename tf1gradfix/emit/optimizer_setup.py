"""Each optimizer of a program as its step functions use it: its name, a learning-rate
schedule it follows itself or has set before each update, a rate fed in a run, and the
note of a TF1 optimizer kept (TFG207).

Part of the rewrite of one program (program_rewrite.py's ProgramRewrite); the fields and
methods of it this setup reads are declared here.
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from tf1gradfix.constructs import schedules
from tf1gradfix.emit.positions import position
from tf1gradfix.emit.tape import TapeEmitter
from tf1gradfix.model.nodes import Optimizer


class OptimizerSetup:
    """The optimizers' part of the step functions (a base of ProgramRewrite)."""

    meta: Any

    def fresh(self, base: str) -> str:
        raise NotImplementedError   # (ProgramRewrite.fresh)

    def _optimizers(self, program, tape: TapeEmitter, fed: set[int]) -> None:
        state = tape.state
        for node in program.nodes:
            if not isinstance(node, Optimizer):
                continue
            name = self.fresh("optimizer") if node.inline else node.names[0]
            schedule = state.scheduled_rate(node)
            if schedule is not None:
                item = next(it for it in program.items if it.node is schedule)
                keras = state.kept(node) is None
                if schedules.follows_iterations(program, node, state.schedule_step(schedule), keras):
                    # the optimizer's own schedule; the rate, where read, is the optimizer's current one
                    tape.scheduled[node.index] = state.schedule_object(schedule)
                    tape.scheduled_rates.add(schedule.index)
                    item.stmt = schedule.stmt = cast(cst.SimpleStatementLine, cst.parse_statement(
                        f"{schedule.names[0]} = {name}.learning_rate\n")).with_changes(leading_lines=item.stmt.leading_lines)
                else:   # the Keras schedule on the same step, set before each update
                    item.stmt = schedule.stmt = state.schedule(schedule, tape.indent + 8)   # (in the tape)
            if node.index in fed and node.index not in tape.scheduled:   # (fed or scheduled: constructs.optimizers.check_settings)
                tape.fed_lr.add(node.index)
            kept = state.kept(node)
            if kept is not None:   # an info note, with the model's (TFG206)
                if not hasattr(self.meta, "notes"):
                    self.meta.notes = []
                self.meta.notes.append((*position(self.meta, node.call), "TFG207", kept, "safe"))
            tape.optimizer_names[node.index] = name
