"""The settings a log ran with, read from its knobs (the record is memledger.model.sizing's)."""

from __future__ import annotations

from memledger.model.sizing import Settings
from memledger.sizing.inputs import SizingInputs


def base_settings(inputs: SizingInputs) -> Settings:
    """The settings the log itself ran with (server_args; else what the log printed)."""
    knobs = inputs.knobs

    def num(name: str) -> int | None:
        value = knobs.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    mfs = knobs.get("mem_fraction_static")
    dtype = knobs.get("kv_cache_dtype")
    return Settings(
        mem_fraction_static=float(mfs)
        if isinstance(mfs, int | float) and not isinstance(mfs, bool)
        else None,
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
    dp = inputs.knobs.get("dp_size")
    if inputs.knobs.get("enable_dp_attention") and isinstance(dp, int) and dp > 1:
        return dp
    return 1
