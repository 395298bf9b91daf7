"""The request table and the defaults SGLang derives from the token count (pure)."""

from __future__ import annotations

from memledger.model.sizing import Settings
from memledger.sglang.request_table import (
    decode_extra_slots,
    default_max_num_reqs,
    extra_columns,
    extra_columns_by_release,
    pool_requests,
    pool_size,
    table_rows,
)
from memledger.sglang.sizing_rules import (
    MAMBA_EXTRA_BUFFER_NO_OVERLAP,
    MAMBA_EXTRA_BUFFER_OVERLAP,
    MAMBA_REQS_RATIO,
    REQ_TO_TOKEN_BYTES,
    RULE,
    SPEC_HEADROOM_CONST,
)
from memledger.sglang.versions import version_text
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.settings import dp_of
from memledger.units import int_or


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
    return default_max_num_reqs(tokens, ctx, halved=newer)


def table_release(inputs: SizingInputs) -> tuple[int, int]:
    """(lower bound, exclusive ceiling) of the release the table rule is applied at: the
    formats' bounds the ledger reads, tightened by sizing's own range where that is consistent
    (e.g. 0.4.2 - 0.4.3 logs, whose formats give no ceiling, keep 0.4.x's max_num_reqs + 1)."""
    release, ceiling = inputs.format_release, inputs.format_ceiling
    first, last = inputs.version.first, inputs.version.last
    if first is not None and last is not None and first > last:
        return release, ceiling  # inconsistent formats (a fork): the ledger's reading only
    if first is not None:
        release = max(release, first)
    if last is not None:
        ceiling = last + 1 if ceiling == 0 else min(ceiling, last + 1)
    return release, ceiling


def table_rule_notes(inputs: SizingInputs) -> list[str]:
    """A note when the releases this log allows size req_to_token's columns differently."""
    release, ceiling = table_release(inputs)
    dcp = inputs.knobs.get("dcp_size")
    by_release = extra_columns_by_release(release, ceiling, inputs.knobs, int_or(dcp, 1))
    if len(by_release) < 2:
        return []
    shown = ", ".join(f"{cols} at {version_text(code)}" for code, cols in by_release.items())
    return [
        f"req_to_token: the columns beyond context_len differ across releases "
        f"{version_text(release)} - {version_text(ceiling - 1)} ({shown}; "
        "sglang/request_table.py extra_columns), which this log cannot tell apart: the lower "
        "bound applied"
    ]


def req_to_token(
    inputs: SizingInputs,
    settings: Settings,
    tokens: int,
    slots: int | None,
    pred: dict[str, int],
    printed_requests: int | None = None,
) -> None:
    """The req_to_token table for `tokens`, by the one rule in sglang/request_table.py.

    `printed_requests`: the max_running_requests the log printed with these tokens (per DP; in
    0.3.6 - 0.4.6 already the pool's size), which is what the pool was sized by; without it the
    modelled max_num_reqs is."""
    reqs = max_num_reqs(inputs, settings, tokens, slots)
    ctx = settings.context_length
    if reqs is None or ctx is None:
        return
    release, ceiling = table_release(inputs)
    if printed_requests is not None:
        whole = settings.max_running_requests or printed_requests * dp_of(inputs)
        pool = pool_requests(release, ceiling, printed_requests, whole)
    else:
        pool = pool_size(release, ceiling, reqs)
    extra = 0
    if inputs.knobs.get("disaggregation_mode") == "decode":
        extra = decode_extra_slots(pool, settings.disaggregation_decode_extra_slots)
    dcp = inputs.knobs.get("dcp_size")
    cols = ctx + extra_columns(release, inputs.knobs, int_or(dcp, 1))
    rows = table_rows(release, pool, extra)
    pred["max_num_reqs"] = reqs
    pred["req_to_token_rows"] = rows
    pred["req_to_token_cols"] = cols
    pred["req_to_token_bytes"] = rows * cols * REQ_TO_TOKEN_BYTES


def spec_headroom(inputs: SizingInputs, settings: Settings, tokens: int) -> int:
    """Tokens 0.4.4 - 0.5.6 add for concurrent draft and verify tokens (shared pool)."""
    reqs = max_num_reqs(inputs, settings, tokens)
    if reqs is None:
        return 0
    steps, topk, draft = (
        int_or(inputs.knobs.get(name), 0)
        for name in (
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
        )
    )
    return reqs * steps * topk + reqs * draft + SPEC_HEADROOM_CONST
