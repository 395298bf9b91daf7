"""The request table and the defaults SGLang derives from the token count (pure)."""

from __future__ import annotations

from memledger.sglang.sizing_rules import (
    MAMBA_EXTRA_BUFFER_NO_OVERLAP,
    MAMBA_EXTRA_BUFFER_OVERLAP,
    MAMBA_REQS_RATIO,
    MAX_NUM_REQS_CAP,
    MAX_NUM_REQS_FLOOR,
    MAX_NUM_REQS_PER_CONTEXT,
    PD_PREALLOC_SMALL,
    REQ_TO_TOKEN_BYTES,
    REQ_TO_TOKEN_EXTRA_COLS,
    RULE,
    SPEC_HEADROOM_CONST,
    version_code,
)
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.settings import Settings, dp_of


def max_num_reqs(
    inputs: SizingInputs, settings: Settings, tokens: int, slots: int | None = None
) -> int | None:
    """Request-table size per worker; Mamba models cap it at K // ratio."""
    reqs = _max_num_reqs_uncapped(inputs, settings, tokens)
    if reqs is None or slots is None:
        return reqs
    return min(reqs, slots // mamba_ratio(inputs))


def mamba_ratio(inputs: SizingInputs) -> int:
    """State slots per running request (rules mamba_ratio_v057 / _spec / _overlap)."""
    knobs = inputs.knobs
    if knobs.get("disable_radix_cache") or knobs.get("disaggregation_mode") == "decode":
        return 1
    strategy = str(
        knobs.get("mamba_scheduler_strategy") or knobs.get("mamba_radix_cache_strategy") or ""
    )
    extra = strategy.startswith("extra_buffer")
    spec = str(knobs.get("speculative_algorithm") or "").upper() not in ("", "NONE")
    version = inputs.version
    if version.within(RULE["mamba_ratio_v057"]) is True:
        return MAMBA_REQS_RATIO + (MAMBA_EXTRA_BUFFER_NO_OVERLAP if extra and spec else 2)
    if not extra:
        return MAMBA_REQS_RATIO
    if version.within(RULE["mamba_ratio_spec"]) is True:
        return MAMBA_REQS_RATIO + (
            MAMBA_EXTRA_BUFFER_NO_OVERLAP if spec else MAMBA_EXTRA_BUFFER_OVERLAP
        )
    one = bool(knobs.get("disable_overlap_schedule")) or strategy == "extra_buffer_lazy"
    return MAMBA_REQS_RATIO + (MAMBA_EXTRA_BUFFER_NO_OVERLAP if one else MAMBA_EXTRA_BUFFER_OVERLAP)


def _max_num_reqs_uncapped(inputs: SizingInputs, settings: Settings, tokens: int) -> int | None:
    ctx = settings.context_length
    mrr = settings.max_running_requests
    newer = inputs.version.within(RULE["req_to_token_global"]) is False
    dp = dp_of(inputs)
    if mrr is not None:
        if not newer:
            return mrr
        return min(max(1, mrr // dp), tokens // 2)
    if ctx is None or ctx <= 0:
        return None
    estimate = min(
        max(int(tokens / ctx * MAX_NUM_REQS_PER_CONTEXT), MAX_NUM_REQS_FLOOR), MAX_NUM_REQS_CAP
    )
    return min(estimate, tokens // 2) if newer else estimate


def req_to_token(
    inputs: SizingInputs, settings: Settings, tokens: int, slots: int | None, pred: dict[str, int]
) -> None:
    reqs = max_num_reqs(inputs, settings, tokens, slots)
    ctx = settings.context_length
    if reqs is None or ctx is None:
        return
    per_dp = inputs.version.within(RULE["req_to_token_per_dp"])
    plus_one = inputs.version.within(RULE["req_to_token_plus_one"])
    rows = reqs + (1 if per_dp is not False or plus_one is True else 0)
    if inputs.knobs.get("disaggregation_mode") == "decode":
        if inputs.version.first is not None and inputs.version.first >= version_code("0.5.14"):
            rows += settings.disaggregation_decode_extra_slots or 0
        elif reqs <= PD_PREALLOC_SMALL:
            rows += 2 * reqs
    draft = inputs.knobs.get("speculative_num_draft_tokens")
    spec = inputs.knobs.get("speculative_algorithm")
    cols = ctx + REQ_TO_TOKEN_EXTRA_COLS + (draft if spec and isinstance(draft, int) else 0)
    pred["max_num_reqs"] = reqs
    pred["req_to_token_rows"] = rows
    pred["req_to_token_cols"] = cols
    pred["req_to_token_bytes"] = rows * cols * REQ_TO_TOKEN_BYTES


def spec_headroom(inputs: SizingInputs, settings: Settings, tokens: int) -> int:
    """Tokens 0.4.4 - 0.5.6 add for concurrent draft and verify tokens (shared pool)."""
    reqs = max_num_reqs(inputs, settings, tokens)
    knobs = inputs.knobs

    def num(name: str) -> int:
        value = knobs.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if reqs is None:
        return 0
    steps, topk, draft = (
        num("speculative_num_steps"),
        num("speculative_eagle_topk"),
        num("speculative_num_draft_tokens"),
    )
    return reqs * steps * topk + reqs * draft + SPEC_HEADROOM_CONST
