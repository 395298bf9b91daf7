"""How many Mamba/linear-attention state slots SGLang keeps and which rule takes their memory
out of the KV budget, by release (pure; the rules are memledger.sglang.sizing_rules)."""

from __future__ import annotations

from memledger.model.sizing import Settings
from memledger.sglang.sizing_rules import DEFAULT_MAMBA_SLOTS_NO_RADIX, GDN_MODEL_PREFIXES, RULE
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.settings import dp_of
from memledger.units import GIB, float_or, int_or


def mamba_slots_rule(
    inputs: SizingInputs,
    settings: Settings,
    rest_gib: float,
    per_req: float,
    padded_slot: float | None = None,
) -> int | None:
    """K as SGLang picks it (None: the rule needs an input this log lacks); `padded_slot`: the
    per-slot bytes when the release takes K + 1 slots (rules mamba_padding_ring/_slot)."""
    knobs = inputs.knobs
    fixed = int_or(knobs.get("max_mamba_cache_size"), None)
    dp = dp_of(inputs)
    radix_off = (
        bool(knobs.get("disable_radix_cache")) or knobs.get("disaggregation_mode") == "decode"
    )
    extra = 0
    if knobs.get("disaggregation_mode") == "decode":
        extra = settings.disaggregation_decode_extra_slots or 0
    if fixed is not None:
        return fixed // dp
    old_split = old_spec_split(inputs)
    if old_split is not None:
        return _mamba_slots_v054(inputs, settings, rest_gib, per_req, old_split)
    if radix_off:
        if settings.max_running_requests is not None:
            return max(1, settings.max_running_requests // dp) + extra
        if inputs.version.within(RULE["mamba_slots_no_radix"]) is True:
            return DEFAULT_MAMBA_SLOTS_NO_RADIX // dp
        return None
    m = full_memory_ratio(inputs)
    if per_req <= 0:
        return None
    share = rest_gib * m / (1 + m) * GIB
    if padded_slot:
        return int((share - padded_slot) // padded_slot)
    return int(share // per_req)


def draft_tokens(inputs: SizingInputs) -> int:
    """--speculative-num-draft-tokens when speculative decoding is on, else 0."""
    if not inputs.knobs.get("speculative_algorithm"):
        return 0
    return int_or(inputs.knobs.get("speculative_num_draft_tokens"), 0)


def full_memory_ratio(inputs: SizingInputs) -> float:
    """m of rule mamba_ratio: --mamba-full-memory-ratio, else SGLang's default 0.9 (v0.5.8
    server_args.py:498)."""
    return float_or(inputs.knobs.get("mamba_full_memory_ratio"), 0.9)


def old_spec_split(inputs: SizingInputs) -> int | None:
    """The draft-token count 0.5.4 - 0.5.6 size each Mamba slot with (rule mamba_spec_ratio:
    0 without speculative decoding); None where the release has another rule or may have."""
    if inputs.version.within(RULE["mamba_spec_ratio"]) is not True:
        return None
    return draft_tokens(inputs)


def per_slot_intermediates(
    inputs: SizingInputs, settings: Settings, k: int, per_req: float
) -> bool:
    """Where the release range leaves rule mamba_spec_ratio open: whether the printed
    intermediate states hold K + 1 slots x draft tokens (0.5.4 - 0.5.6: v0.5.6
    mem_cache/memory_pool.py:196-220) rather than one per request (0.5.7+: the pool's
    mamba_spec_state_size = max_num_reqs, v0.5.8 model_executor/model_runner_kv_cache_mixin.py
    :373-384), judged by which count the printed size is nearer."""
    draft = draft_tokens(inputs)
    mamba = inputs.mamba
    if (
        not draft
        or mamba is None
        or not mamba.intermediate_bytes
        or per_req <= 0
        or inputs.version.within(RULE["mamba_spec_ratio"]) is not None
    ):
        return False
    slots = mamba.intermediate_bytes / (draft * per_req)
    mrr = settings.max_running_requests or 0
    reqs = mrr // dp_of(inputs) if inputs.knobs.get("enable_dp_attention") else mrr
    return abs(slots - (k + 1)) < abs(slots - (reqs + 1))


def undecided_slot_rules(inputs: SizingInputs) -> list[str]:
    """The Mamba slot rules this log's release range leaves open and its settings would use
    (speculative decoding, a GDN model under DP attention)."""
    spec = bool(draft_tokens(inputs))
    gdn_dp = is_gdn_model(inputs) and bool(inputs.knobs.get("enable_dp_attention"))
    uses = {"mamba_spec_ratio": spec, "mamba_gdn_dp": gdn_dp, "mamba_spec_reserve": spec}
    return [rid for rid, used in uses.items() if used and inputs.version.within(RULE[rid]) is None]


def is_gdn_model(inputs: SizingInputs) -> bool:
    """A hybrid GDN model by the load-end class (v0.5.6 model_executor/model_runner.py
    :1500-1504: Qwen3NextConfig, JetNemotronConfig, JetVLMConfig)."""
    return (inputs.model_type or "").startswith(GDN_MODEL_PREFIXES)


def _mamba_slots_v054(
    inputs: SizingInputs, settings: Settings, rest_gib: float, per_req: float, draft: int
) -> int | None:
    """K as 0.5.4 - 0.5.6 pick it: the fixed count undivided, or the ratio share per slot and
    its draft tokens' intermediate states (rule mamba_spec_ratio); a GDN model's K is then
    divided among the DP-attention workers (rule mamba_gdn_dp)."""
    knobs = inputs.knobs
    if knobs.get("disable_radix_cache") or per_req <= 0:
        mrr = settings.max_running_requests
        k = mrr if mrr is not None else DEFAULT_MAMBA_SLOTS_NO_RADIX
    else:
        m = full_memory_ratio(inputs)
        share = rest_gib * m / (1 + m) * GIB
        k = int(share // per_req // (1 + draft))
    if is_gdn_model(inputs) and knobs.get("enable_dp_attention"):
        k //= dp_of(inputs)
    return k


def mamba_state_rule(inputs: SizingInputs, notes: list[str] | None) -> str:
    """Which Mamba accounting this release uses: K or K + 1 slots taken out of the budget."""
    first = inputs.version.within(RULE["mamba_first"])
    ring = inputs.version.within(RULE["mamba_padding_ring"])
    slot = inputs.version.within(RULE["mamba_padding_slot"])
    if slot is True:
        return "mamba_padding_slot"
    if ring is True:
        return "mamba_padding_ring"
    if first is False and ring is None and slot is None:
        # 0.5.17+ (a `record_len=` ReplaySSM line dates a log so), but not which side of 0.5.20
        if notes is not None:
            notes.append(_padding_rules_note(inputs))
        return "mamba_padding_ring"
    if (ring is None or slot is None) and notes is not None:
        notes.append(
            f"release {inputs.version.text} may take K + 1 Mamba slots out of the budget "
            "(0.5.17+, rules mamba_padding_ring/_slot) instead of K (rule mamba_first); K "
            "applied"
        )
    return "mamba_first"


def _padding_rules_note(inputs: SizingInputs) -> str:
    """Rules mamba_padding_ring (0.5.17 - 0.5.19) and mamba_padding_slot (0.5.20+) both take
    (K + 1) x (state + ring per slot), the latter plus the ring's fixed part: the printed
    ReplaySSM total holds both parts, so the state taken is the same; only the ratio split's K
    differs (0.5.20+ takes the fixed part out of the share first)."""
    text = (
        f"release {inputs.version.text} takes the Mamba state by rule mamba_padding_ring "
        "(0.5.17 - 0.5.19) or mamba_padding_slot (0.5.20+), which this log cannot tell apart: "
        "both take K + 1 slots with the ReplaySSM ring the log prints (its fixed part "
        "included)"
    )
    if slot_rule_of(inputs) == "mamba_slots_fixed":
        return f"{text}, and K is fixed here: the figures are the same under either"
    return (
        f"{text}; K here divides the ratio share by the per-slot state (0.5.17 - 0.5.19), "
        "0.5.20+ first takes out the ring's fixed part, which the log does not print apart "
        "(K may be lower)"
    )


def slot_rule_of(inputs: SizingInputs) -> str:
    """How this log's Mamba slots are counted: fixed (radix cache off, PD decode) or ratio."""
    radix_off = inputs.knobs.get("disable_radix_cache") or (
        inputs.knobs.get("disaggregation_mode") == "decode"
    )
    return "mamba_slots_fixed" if radix_off else "mamba_ratio_split"
