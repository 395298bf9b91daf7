"""The knobs a sizing prediction takes, and the terms of its arithmetic."""

from __future__ import annotations

from memledger.record import ConfigDict, Record
from memledger.sizing.inputs import SizingInputs


class Settings(Record):
    """The knobs a what-if may change (None: not given, SGLang's default applies)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mem_fraction_static: float | None = None
    max_running_requests: int | None = None
    disaggregation_decode_extra_slots: int | None = None
    context_length: int | None = None
    cuda_graph_max_bs: int | None = None
    kv_cache_dtype: str | None = None
    max_total_tokens: int | None = None
    page_size: int = 1
    gpu_memory_mib: int | None = None
    """GPU capacity (nvidia-smi MiB): lets SGLang's mem_fraction_static default be inferred."""


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)


class Term(Record):
    """One number of the arithmetic, with where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: int | float | str | None
    unit: str
    """`bytes`, `tokens`, `slots`, `rows`, `fraction`, `bytes/token`."""
    kind: str
    """`measured` (a log line), `given` (server_args), `modelled` (a rule), `inferred`."""
    source: str
    rule: str | None = None
    """The sizing_rules id the value follows (its citation is RULE[rule].source)."""


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
        context_length=num("context_length") or inputs.logged_context_len,
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
