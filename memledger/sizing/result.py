"""The sizing verdict of one log: SGLang's arithmetic beside what the log printed."""

from __future__ import annotations

import math
from dataclasses import replace

from memledger.model.sizing import Prediction, Settings, SizingResult
from memledger.sglang.fraction_rules import (
    CAPACITY_CAP_MIB,
    MFS_VLM_BASE,
    MFS_VLM_FACTOR_MAX,
    MFS_VLM_FACTOR_MIN,
)
from memledger.sizing.capacity import capacities_giving
from memledger.sizing.defaults import (
    capacities_of_logged_defaults,
    capacity_pieces,
    may_be_multimodal,
)
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.mamba import full_memory_ratio
from memledger.sizing.model import predict
from memledger.sizing.requests import req_to_token, spec_headroom, table_rule_notes
from memledger.sizing.settings import base_settings
from memledger.units import GIB, MIB, int_or

TOLERANCE = 0.005
"""A prediction within 0.5 % of the logged value (or inside its printing range) is a match."""


def _whole_ratio_share(
    inputs: SizingInputs, pred: Prediction, logged: int
) -> tuple[int, int] | None:
    """(share, tokens) when taking the whole Mamba ratio share explains the logged pool."""
    mamba = inputs.mamba
    radix_off = inputs.knobs.get("disable_radix_cache") or (
        inputs.knobs.get("disaggregation_mode") == "decode"
    )
    if (
        mamba is None
        or radix_off
        or inputs.knobs.get("max_mamba_cache_size") is not None
        or pred.rest_bytes is None
        or not pred.cell_bytes
    ):
        return None
    m = full_memory_ratio(inputs)
    share = round(pred.rest_bytes * m / (1 + m))
    alt = int((pred.rest_bytes - share - mamba.intermediate_bytes) // pred.cell_bytes)
    return (share, alt) if abs(alt - logged) <= TOLERANCE * logged else None


def _npu_miss_reason(inputs: SizingInputs, pred: Prediction, logged: int, off: float) -> str:
    """What an Ascend log lacks for the NPU rules (npu_printed_rest, npu_spec_headroom)."""
    assert pred.tokens is not None
    head = f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %)"
    applied = any(t.name == "speculative headroom" for t in pred.terms)
    page = base_settings(inputs).page_size
    if inputs.knobs.get("speculative_algorithm") and not applied and page > 0:
        extra = spec_headroom(inputs, base_settings(inputs), pred.tokens)
        alt = (pred.tokens + extra) // page * page
        if abs(alt - logged) <= TOLERANCE * logged:
            return (
                f"{head}: with 0.5.6's speculative headroom (+{extra:,} tokens, rule "
                f"spec_headroom) it gives {alt:,} ({(alt - logged) / logged * 100:+.2f} %); the "
                f"log's release ({inputs.version.text}) does not say whether its build keeps it, "
                "and it prints no rest of its own (rule npu_printed_rest)"
            )
    if inputs.logged_rest is None and pred.cell_bytes:
        gap = (pred.tokens - logged) * pred.cell_bytes / GIB
        seen = inputs.ranks_seen
        world = (int_or(inputs.knobs.get("tp_size"), 0) or 1) * (
            int_or(inputs.knobs.get("pp_size"), 0) or 1
        )
        if seen >= world > 1 and gap > 0:
            return (
                f"{head}: this log prints no rest of its own (rule npu_printed_rest), and all "
                f"{world} ranks print their readings: SGLang read {gap:.2f} GiB less free when "
                "it sized than their load-end readings show (memory taken in between, which "
                "the log does not print)"
            )
        ranks = f"it shows {seen} rank{'s' if seen != 1 else ''}" if seen else "its ranks"
        return (
            f"{head}: SGLang divides the rest over every rank's minimum free memory, and this "
            f"log prints no rest of its own (rule npu_printed_rest; {ranks}): it fits if a rank "
            f"had {abs(gap):.2f} GiB {'less' if gap > 0 else 'more'} free when SGLang sized "
            "than the readings this log shows"
        )
    return (
        f"{head}: the Ascend pool's bytes per token differ from the KV line's; the NPU sizing "
        "is not modelled"
    )


def _cap_reason(inputs: SizingInputs, pred: Prediction, logged: int, head: str) -> str | None:
    """The logged count is the --max-total-tokens cap while the KV line's cell gives fewer
    tokens from the rest (rule max_total_tokens): SGLang's profiled count reached the cap, so
    the build sized with a smaller cell than its pool allocates; the log prints no sizing cell,
    so the profiled count is not predicted."""
    cap = inputs.knobs.get("max_total_tokens")
    page = max(base_settings(inputs).page_size, 1)
    if (
        not isinstance(cap, int)
        or isinstance(cap, bool)
        or pred.tokens is None
        or not pred.tokens < logged == cap // page * page
        or not inputs.target_kv
        or pred.kv_budget_bytes is None
    ):
        return None
    pool = sum(p.bytes for p in inputs.target_kv)
    over = pool - pred.kv_budget_bytes
    where = f"{inputs.server_args_source} {inputs.server_args_line}"
    text = (
        f"{head}: the logged count is the --max-total-tokens cap ({cap:,}, {where}; rule "
        f"max_total_tokens), which SGLang's profiled count reached, but the KV line's "
        f"{pred.cell_bytes or 0:,.0f} B/token give only {pred.tokens:,} from the "
        f"{pred.kv_budget_bytes / GIB:.2f} GiB it divides"
    )
    if over > 0:
        text += (
            f", and the logged pool ({pool / GIB:.2f} GiB) is {over / GIB:.2f} GiB more than "
            "that: the build sized with a smaller cell than it allocates, which the log does "
            "not print"
        )
    if any(note.startswith("rule npu_hybrid_all_layers") for note in pred.notes):
        text += (
            " (rule npu_hybrid_all_layers: the Ascend pool holds every layer, SGLang sized it "
            "over the full-attention ones; --model-config with full_attention_interval counts "
            "them)"
        )
    return text


def _miss_reason(inputs: SizingInputs, pred: Prediction, logged: int) -> str:
    assert pred.tokens is not None and pred.rest_bytes is not None
    off = (pred.tokens - logged) / logged * 100 if logged else 0.0
    capped = _cap_reason(
        inputs, pred, logged, f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %)"
    )
    if capped is not None:
        return capped
    rest_logged = inputs.logged_rest
    if rest_logged is not None and logged and inputs.state_logged_bytes > rest_logged.bytes:
        sized_cell = rest_logged.bytes / logged
        return (
            f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %): the log prints a "
            f"rest of {rest_logged.bytes / GIB:.2f} GiB (line {rest_logged.line}), which holds "
            f"{logged:,} tokens only at ~{sized_cell:,.0f} B/token, but its KV line shows "
            f"{pred.cell_bytes or 0:,.0f} B/token: this backend sizes with a smaller cell than it "
            "allocates (not modelled)"
        )
    # a pool allocated wider than it is sized (rule npu_dsa_pool) is not over the budget by that
    alloc = next((t.value for t in pred.terms if t.name == "bytes/token (KV line)"), None)
    wider = 0.0
    if isinstance(alloc, int | float) and pred.cell_bytes and alloc > pred.cell_bytes:
        wider = (alloc - pred.cell_bytes) * (logged + base_settings(inputs).page_size)
    over = inputs.state_logged_bytes - wider - (pred.rest_bytes if pred.rest_bytes > 0 else 0)
    if over > 0.02 * GIB and over > 0.05 * max(pred.rest_bytes, 1):
        return (
            f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %): the logged pools "
            f"exceed SGLang's budget by {over / GIB:.2f} GiB, so this build sizes them by its "
            "own rule (a fork or a backend-specific pool)"
        )
    whole = _whole_ratio_share(inputs, pred, logged)
    a = inputs.budget_avail
    if whole is not None and a is not None:
        share, alt = whole
        alt_off = (alt - logged) / logged * 100
        gap = (pred.tokens - logged) * pred.cell_bytes / GIB if pred.cell_bytes else 0.0
        state_rule = next((t.rule for t in pred.terms if t.name == "state taken first"), None)
        return (
            f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %): SGLang's "
            f"arithmetic (rule {state_rule}: {(pred.state_bytes or 0) / GIB:.2f} GiB of "
            "Mamba state first) gives the logged pool only with "
            f"{abs(gap):.2f} GiB {'less' if gap > 0 else 'more'} free when it sized than the "
            f"load-end readings (line {a.line}) show: memory held between those readings and "
            "the sizing, which the log does not print (taking the whole ratio share rest x "
            f"m/(1+m) = {share / GIB:.2f} GiB would give {alt_off:+.2f} %, but no release "
            "0.5.4 - 0.5.23 does: K slots to 0.5.16, K + 1 from 0.5.17)"
        )
    device = str(inputs.knobs.get("device") or "")
    if device == "npu":
        return _npu_miss_reason(inputs, pred, logged, off)
    if a is not None and pred.cell_bytes and pred.slack_bytes is not None:
        implied = logged * pred.cell_bytes + (pred.state_bytes or 0) + pred.slack_bytes
        gap = (a.bytes - implied) / GIB
        return (
            f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %): the logged pool "
            f"fits only if {abs(gap):.2f} GiB {'less' if gap > 0 else 'more'} was free when "
            "SGLang sized it than the load-end "
            f"reading (line {a.line}) shows: memory taken in between, or a rule of release "
            f"{inputs.version.text} this model lacks"
        )
    return (
        f"predicted {pred.tokens:,} vs logged {logged:,} ({off:+.1f} %), outside the printing "
        "range: an adjustment this model does not know"
    )


def _default_span(inputs: SizingInputs, settings: Settings, logged: int | None) -> str | None:
    """What SGLang's default could have been for every capacity this log allows (P <= G)."""
    p = inputs.load_begin
    if p is None or inputs.budget_avail is None or settings.gpu_memory_mib is not None:
        return None  # without A the default would not give a prediction either
    allowed = capacities_of_logged_defaults(inputs, math.ceil(p.bytes / MIB), CAPACITY_CAP_MIB)
    pieces = capacity_pieces(inputs, settings, allowed.start, allowed.stop - 1) if allowed else []
    if not pieces:
        return None
    ends = [piece.default_at(g) for piece in pieces for g in (piece.first_mib, piece.last_mib)]
    top = f"{CAPACITY_CAP_MIB // 1024} GiB"
    if pieces[-1].last_mib < CAPACITY_CAP_MIB:
        top = (
            f"{pieces[-1].last_mib:,} MiB (above it SGLang's bucket defaults are not the logged "
            f"chunked_prefill_size {inputs.logged_chunked_prefill_size} and decode-graph max "
            f"batch size {inputs.logged_max_capture_bs}, had those been defaults)"
        )
    text = (
        f"for a capacity from {pieces[0].first_mib:,} MiB (P, free before the weights, is a "
        f"lower bound) to {top} SGLang's default (rule "
        f"{pieces[0].rule}) ranges {min(ends):.3f} - {max(ends):.3f}: it grows with the "
        "capacity inside every bucket of its tables, so this log does not determine it"
    )
    if may_be_multimodal(inputs):
        low, high = MFS_VLM_BASE * MFS_VLM_FACTOR_MIN, MFS_VLM_BASE * MFS_VLM_FACTOR_MAX
        return (
            f"{text}; a multimodal model's default is {low:.2f} - {high:.4f} times that "
            "(rule mfs_vlm_factor), from a vision_config the log does not show"
        )
    if logged is None:
        return text
    at_least = fitted_mem_fraction_static(inputs, settings, math.ceil(logged * (1 - TOLERANCE)))
    beyond = fitted_mem_fraction_static(inputs, settings, int(logged * (1 + TOLERANCE)) + 1)
    if at_least is None:
        return text
    spans = capacities_giving(pieces, at_least, beyond if beyond is not None else 1.0)
    if not spans:
        return (
            f"{text}; no capacity's default reproduces the logged tokens within 0.5 %: "
            "mem_fraction_static was probably given"
        )
    shown = ", ".join(f"{span.start:,} - {span.stop - 1:,} MiB" for span in spans)
    return (
        f"{text}; its default reproduces the logged tokens (within 0.5 %) only for a GPU of {shown}"
    )


FIT_STEPS = 24
FIT_LOW, FIT_HIGH = 0.01, 0.999


def fitted_mem_fraction_static(
    inputs: SizingInputs, settings: Settings, logged: int
) -> float | None:
    """Bisect the mfs whose predicted tokens reach `logged` (tokens grow with mfs)."""

    def tokens(mfs: float) -> int | None:
        return predict(inputs, replace(settings, mem_fraction_static=mfs)).tokens

    low, high = FIT_LOW, FIT_HIGH
    at_low, at_high = tokens(low), tokens(high)
    if at_low is None or at_high is None or not at_low <= logged <= at_high:
        return None
    for _ in range(FIT_STEPS):
        middle = (low + high) / 2
        reached = tokens(middle)
        assert reached is not None
        if reached < logged:
            low = middle
        else:
            high = middle
    return round(high, 4)


def size_log(inputs: SizingInputs) -> SizingResult:
    """SGLang's sizing redone with this log's own numbers, beside the logged result."""
    settings = base_settings(inputs)
    pred = predict(inputs, settings)
    logged = inputs.logged_tokens
    p, a = inputs.load_begin, inputs.budget_avail
    min_mfs = (
        round(1 - a.bytes / p.bytes, 4) if p is not None and a is not None and p.bytes > 0 else None
    )
    implied = None
    if p is not None and a is not None and p.bytes > 0 and inputs.state_logged_bytes:
        implied = round(1 - (a.bytes - inputs.state_logged_bytes) / p.bytes, 4)
    mismatch: str | None = None
    fitted: float | None = None
    if pred.tokens is None:
        mismatch = pred.missing
        if settings.mem_fraction_static is None and logged is not None:
            fitted = fitted_mem_fraction_static(inputs, settings, logged)
        if fitted is not None:
            mismatch = (
                f"{mismatch}; SGLang's arithmetic gives the logged {logged:,} tokens with "
                f"mem_fraction_static ~ {fitted:.3f}"
            )
        elif implied is not None and settings.mem_fraction_static is None:
            mismatch = f"{mismatch}; the logged pools imply mem_fraction_static ~ {implied:.3f}"
        span = (
            _default_span(inputs, settings, logged)
            if settings.mem_fraction_static is None
            else None
        )
        if span is not None:
            mismatch = f"{mismatch}; {span}"
    elif logged is None:
        mismatch = None
    else:
        inside = (pred.tokens_low or 0) <= logged <= (pred.tokens_high or 0)
        close = abs(pred.tokens - logged) <= TOLERANCE * logged
        if not (inside or close):
            mismatch = _miss_reason(inputs, pred, logged)
    table: dict[str, int] = {}
    if logged is not None:
        slots = inputs.mamba.slots if inputs.mamba else None
        printed = inputs.logged_max_running_requests
        req_to_token(inputs, settings, logged, slots, table, printed)
    if table:
        pred = replace(pred, notes=[*pred.notes, *table_rule_notes(inputs)])
    used = None
    free = inputs.free_last.bytes if inputs.free_last is not None else None
    if a is not None and free is not None and inputs.state_logged_bytes:
        used = a.bytes - free - inputs.state_logged_bytes
    return SizingResult(
        predicted_max_total_num_tokens=pred.tokens,
        logged_max_total_num_tokens=logged,
        min_mem_fraction_static=min_mfs,
        slack_bytes=pred.slack_bytes,
        bytes_per_token=float(round(pred.cell_bytes, 1)) if pred.cell_bytes is not None else None,
        mismatch=mismatch,
        predicted_range=[pred.tokens_low, pred.tokens_high]
        if pred.tokens_low is not None and pred.tokens_high is not None
        else None,
        logged_source=(
            f"{inputs.logged_tokens_source} (line {inputs.logged_tokens_line})"
            if logged is not None
            else ""
        ),
        theoretical_bytes_per_token=inputs.theoretical_cell_bytes,
        theoretical_note=inputs.theoretical_cell_note,
        implied_mem_fraction_static=implied,
        fitted_mem_fraction_static=fitted,
        slack_used_bytes=used,
        free_last_bytes=free,
        logged_req_to_token_rows=table.get("req_to_token_rows"),
        logged_req_to_token_cols=table.get("req_to_token_cols"),
        logged_req_to_token_bytes=table.get("req_to_token_bytes"),
        version=inputs.version.text,
        prediction=pred,
        settings=settings,
    )
