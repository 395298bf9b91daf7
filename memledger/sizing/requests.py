"""The request table and the defaults SGLang derives from the token count (pure)."""

from __future__ import annotations

from memledger.sglang.sizing_rules import (
    CHUNKED_PREFILL_BY_GPU,
    CHUNKED_PREFILL_LARGE_GPU,
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
    radix_off = bool(inputs.knobs.get("disable_radix_cache")) or (
        inputs.knobs.get("disaggregation_mode") == "decode"
    )
    return min(reqs, slots // (1 if radix_off else MAMBA_REQS_RATIO))


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
    rows = reqs + (1 if per_dp is not False else 0)
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


def default_mem_fraction_static(inputs: SizingInputs, settings: Settings) -> float | None:
    """SGLang's mem_fraction_static default for a GPU of `gpu_memory_mib` (0.5.3 - 0.5.13)."""
    gpu = settings.gpu_memory_mib
    if gpu is None or gpu <= 0 or inputs.version.within(RULE["mfs_default"]) is False:
        return None
    knobs = inputs.knobs

    def num(name: str, default: int) -> int:
        value = knobs.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    by_gpu = next(
        (c for bound, c in CHUNKED_PREFILL_BY_GPU if gpu < bound), CHUNKED_PREFILL_LARGE_GPU
    )
    chunked = num("chunked_prefill_size", inputs.logged_chunked_prefill_size or by_gpu)
    prefill = num("max_prefill_tokens", 16384)
    max_bs = settings.cuda_graph_max_bs or inputs.logged_max_capture_bs or 0
    reserved = 512.0 + max(chunked if chunked > 0 else prefill, 2048) * 1.5 + max_bs * 2
    reserved += num("tp_size", 1) * num("pp_size", 1) / 8 * 1024
    dp = num("dp_size", 1)
    if knobs.get("enable_dp_attention"):
        reserved += max_bs * dp * 3
        if max_bs > 300:
            reserved += max_bs * dp * 1.5
    if gpu > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    algo = str(knobs.get("speculative_algorithm") or "").upper()
    if algo == "STANDALONE":
        reserved += 6 * 1024
    elif algo and algo != "NGRAM" and algo != "NONE":
        reserved += 2 * 1024
    return round((gpu - reserved) / gpu, 3)
