"""The verifier's settings for a runner (`TF1GRADFIX_*` variables), kept out of the program's reach.

The orchestrator hands a runner its settings (step budget, lockstep, waits)
as environment variables. Just before the program starts, the runner moves
them out of `os.environ` into this module (`withdraw`), so the program does
not see that it is being verified by reading its environment, and reads
here find them still.
"""

from __future__ import annotations

import os

PREFIX = "TF1GRADFIX_"
_KEPT: dict[str, str] = {}


def get(name: str, default: str = "") -> str:
    """A setting, withdrawn or still in the environment (`default` where it is neither)."""
    return _KEPT[name] if name in _KEPT else os.environ.get(name, default)


def withdraw() -> None:
    """Move every `TF1GRADFIX_*` variable from the environment into this module's keeping."""
    for name in [k for k in os.environ if k.startswith(PREFIX)]:
        _KEPT[name] = os.environ.pop(name)
