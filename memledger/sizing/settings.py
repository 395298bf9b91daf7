"""The settings a log ran with, read from its knobs (the record is memledger.model.sizing's)."""

from __future__ import annotations

from memledger.model.sizing import Settings
from memledger.sizing.inputs import SizingInputs
from memledger.units import count_or, float_or, int_or


def base_settings(inputs: SizingInputs) -> Settings:
    """The settings the log itself ran with (server_args; else what the log printed)."""
    knobs = inputs.knobs

    def num(name: str) -> int | None:
        return int_or(knobs.get(name), None)

    dtype = knobs.get("kv_cache_dtype")
    return Settings(
        mem_fraction_static=float_or(knobs.get("mem_fraction_static"), None),
        max_running_requests=num("max_running_requests"),
        disaggregation_decode_extra_slots=num("disaggregation_decode_extra_slots"),
        context_length=num("context_length")
        or inputs.logged_context_len
        or inputs.model_context_len,
        cuda_graph_max_bs=num("cuda_graph_max_bs"),
        kv_cache_dtype=dtype if isinstance(dtype, str) else None,
        max_total_tokens=num("max_total_tokens"),
        page_size=num("page_size") or 1,
    )


def dp_of(inputs: SizingInputs) -> int:
    return (
        count_or(inputs.knobs.get("dp_size"), 1) if inputs.knobs.get("enable_dp_attention") else 1
    )
