"""A lever: one SGLang setting, the way to move it and what that changes, with the arithmetic of
its value when the evidence carries the numbers.

The lifecycle's stages (memledger.sglang.lifecycle) and SGLang's own setting changes
(memledger.sglang.adjustments) name their levers in this shape; diagnose makes Suggestions of
them. Stdlib only: memledger.sglang.adjustments is imported by the scan worker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lever:
    knob: str
    """SGLang's server-arg name with underscores."""
    direction: str
    """`lower`, `raise`, `enable` or `disable` (the diagnosis' Direction values): in a lifecycle
    stage the way that frees memory in that phase; in an adjustment the way to another value than
    the one SGLang chose."""
    effect: str
    """What the change does, with the arithmetic SGLang applies."""
    needs: str = ""
    """What a paste must add for a value, when not the fraction's P and mfs (server_args and
    `Load weight begin`)."""
    value: str = ""
    """The value's arithmetic, an expression of memledger.formulas over `args.*` (the settings
    the paste shows) and `log.*` (the numbers the line printed); empty: a direction only."""
