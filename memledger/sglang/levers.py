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
    """SGLang's server-arg name with underscores, or a request's own field (REQUEST_FIELDS)."""
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
    the paste shows; SGLang's default for the card where it picks one by the GPU's size and the
    paste shows the size: memledger.sizing.defaults.GPU_DEFAULTS) and `log.*` (the numbers the
    line printed); empty: a direction only."""


REQUEST_FIELDS: dict[str, str] = {
    "logprob_start_len": "v0.5.8 managers/io_struct.py:190 (GenerateReqInput)",
    "max_new_tokens": "v0.5.8 sampling/sampling_params.py:42 (SamplingParams)",
}
"""Knobs that are a request's own fields, not server args (v0.5.8 server_args.py has neither): a
lever names them as the request's, never as a launch flag."""


def flag_of(knob: str) -> str:
    """`--mem-fraction-static`; a request's own field by its name (`the request's ...`)."""
    return f"the request's {knob}" if knob in REQUEST_FIELDS else "--" + knob.replace("_", "-")
