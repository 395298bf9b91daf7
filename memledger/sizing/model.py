"""SGLang's pool sizing redone from a log's numbers: a pure function of SizingInputs and Settings.

Each step applies one rule of memledger.sglang.sizing_rules, chosen by the log's release range;
a step whose rule the range cannot decide says so in `notes` and uses the newer rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from memledger.sglang.sizing_rules import (
    DEFAULT_MAMBA_SLOTS_NO_RADIX,
    KV_DTYPE_BYTES,
    RULE,
    version_code,
)
from memledger.sizing.inputs import KVPool, SizingInputs, kv_element_bytes
from memledger.sizing.requests import default_mem_fraction_static, req_to_token, spec_headroom
from memledger.sizing.settings import Settings, Term, base_settings, dp_of
from memledger.units import GIB

EAGLE_FAMILY = {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "MTP"}


class Prediction(BaseModel):
    """What SGLang's arithmetic gives for these inputs and settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int | None = None
    """max_total_num_tokens per rank (the full-attention pool for hybrid SWA models)."""
    tokens_low: int | None = None
    tokens_high: int | None = None
    """The range the printing precision of the inputs allows."""
    swa_tokens: int | None = None
    tokens_per_dp_group: int | None = None
    tokens_per_instance: int | None = None
    slack_bytes: int | None = None
    rest_bytes: int | None = None
    kv_budget_bytes: int | None = None
    state_bytes: int | None = None
    """Mamba/linear-attention state taken out of the budget before the KV pool."""
    mamba_slots: int | None = None
    per_slot_bytes: int | None = None
    cell_bytes: float | None = None
    kv_bytes: int | None = None
    max_num_reqs: int | None = None
    req_to_token_rows: int | None = None
    req_to_token_cols: int | None = None
    req_to_token_bytes: int | None = None
    terms: list[Term] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    missing: str | None = None
    """Why there is no token prediction (None when there is one)."""


def _rule(inputs: SizingInputs, rule_id: str, notes: list[str]) -> bool:
    """Whether a rule holds for this log's releases; undecided -> True, with a note."""
    verdict = inputs.version.within(RULE[rule_id])
    if verdict is None:
        rule = RULE[rule_id]
        notes.append(
            f"release {inputs.version.text} may predate or follow rule '{rule_id}' "
            f"({rule.first or '?'} .. {rule.last or 'now'}); applied it"
        )
        return True
    return verdict


@dataclass(frozen=True)
class _Cell:
    bytes: float
    half: float
    """± from the printed KV sizes."""
    full_tokens_pool: KVPool | None
    swa_ratio: float | None
    note: str


def _pad_rows(inputs: SizingInputs, page_size: int) -> int:
    return page_size if inputs.version.within(RULE["kv_buffer_rows"]) is not False else 1


def _cell(inputs: SizingInputs, settings: Settings, notes: list[str]) -> _Cell | None:
    """Bytes per token SGLang divided the budget by, from the KV lines this log printed."""
    pools = inputs.target_kv
    if not pools:
        return None
    base_page = base_settings(inputs).page_size
    pad = _pad_rows(inputs, base_page)

    def per_token(pool: KVPool, tokens: int | None) -> tuple[float, float] | None:
        count = pool.tokens if pool.tokens is not None else tokens
        if not count:
            return None
        return pool.bytes / (count + pad), pool.half_ulp / (count + pad)

    ratio = inputs.knobs.get("swa_full_tokens_ratio")
    swa_ratio = (
        float(ratio) if isinstance(ratio, int | float) and not isinstance(ratio, bool) else 0.8
    )
    full_pool: KVPool | None = None
    if inputs.swa_full_tokens is not None and len(pools) >= 2:
        full_pool = next((p for p in pools if p.tokens == inputs.swa_full_tokens), None)
        swa_pool = next((p for p in pools if p.tokens == inputs.swa_swa_tokens), None)
        if full_pool is None or swa_pool is None or full_pool is swa_pool:
            notes.append("sliding-window pools could not be told apart: split not modelled")
            return None
        if inputs.version.within(RULE["swa_split"]) is False:
            notes.append("sliding-window split before 0.5.12 (token-based) is not modelled")
            return None
        full = per_token(full_pool, None)
        swa = per_token(swa_pool, None)
        assert full is not None and swa is not None
        value = full[0] + swa_ratio * swa[0]
        half = full[1] + swa_ratio * swa[1]
        note = (
            f"full {full[0]:.0f} B + {swa_ratio:g} x SWA {swa[0]:.0f} B "
            f"({RULE['swa_split'].source})"
        )
    else:
        first = pools[0]
        same = [p for p in pools if p.tokens == first.tokens]
        parts = [per_token(p, inputs.logged_tokens) for p in same]
        if any(part is None for part in parts):
            return None
        value = sum(part[0] for part in parts if part is not None)
        half = sum(part[1] for part in parts if part is not None)
        rows = f"#tokens + {pad}" if pad > 1 else "#tokens + 1"
        note = f"KV bytes / ({rows} rows)"
        full_pool = first
    target_tokens = full_pool.tokens if full_pool is not None else inputs.logged_tokens
    algo = str(inputs.knobs.get("speculative_algorithm") or "").upper()
    if inputs.draft_kv and inputs.version.within(RULE["draft_in_cell"]):
        draft = inputs.draft_kv[0]
        proportional = draft.tokens is not None and draft.tokens == target_tokens
        swa_excludes = inputs.swa_full_tokens is not None and algo not in EAGLE_FAMILY
        if proportional and not swa_excludes:
            part = per_token(draft, None)
            assert part is not None
            value += part[0]
            half += part[1]
            note += f" + draft {part[0]:.0f} B ({RULE['draft_in_cell'].source})"
        elif not proportional:
            notes.append(
                "the draft KV pool does not hold the target's token count: sized by its own "
                "rule, kept out of the cell"
            )
    elif inputs.draft_kv:
        notes.append(
            f"draft KV is outside the budget in this release ({RULE['draft_outside'].source})"
        )
    old_elem = kv_element_bytes(
        inputs.logged_kv_dtype, inputs.knobs.get("kv_cache_dtype"), _model_elem(inputs)
    )
    base_dtype = base_settings(inputs).kv_cache_dtype
    if settings.kv_cache_dtype is not None and settings.kv_cache_dtype != base_dtype:
        new_elem = (
            _model_elem(inputs)
            if settings.kv_cache_dtype == "auto"
            else KV_DTYPE_BYTES.get(settings.kv_cache_dtype)
        )
        if new_elem is None or old_elem is None:
            notes.append(
                f"kv_cache_dtype={settings.kv_cache_dtype}: bytes per element not modelled "
                "(fp4 packs scales; unknown dtype); cell kept"
            )
        else:
            value *= new_elem / old_elem
            half *= new_elem / old_elem
            note += f" x {new_elem:g}/{old_elem:g} B per element"
    return _Cell(value, half, full_pool, swa_ratio if inputs.swa_full_tokens else None, note)


def _model_elem(inputs: SizingInputs) -> float | None:
    if inputs.model_dtype is None:
        return None
    return KV_DTYPE_BYTES.get(inputs.model_dtype.removeprefix("torch."))


def _mamba_slots_rule(
    inputs: SizingInputs, settings: Settings, rest_gib: float, per_req: float
) -> int | None:
    """K as SGLang picks it (None: the rule needs an input this log lacks)."""
    knobs = inputs.knobs
    fixed = knobs.get("max_mamba_cache_size")
    dp = dp_of(inputs)
    radix_off = (
        bool(knobs.get("disable_radix_cache")) or knobs.get("disaggregation_mode") == "decode"
    )
    extra = 0
    if knobs.get("disaggregation_mode") == "decode":
        extra = settings.disaggregation_decode_extra_slots or 0
    if isinstance(fixed, int) and not isinstance(fixed, bool):
        return fixed // dp
    if radix_off:
        if settings.max_running_requests is not None:
            return max(1, settings.max_running_requests // dp) + extra
        if inputs.version.last is not None and inputs.version.last <= version_code("0.5.9"):
            return DEFAULT_MAMBA_SLOTS_NO_RADIX // dp
        return None
    ratio = knobs.get("mamba_full_memory_ratio")
    m = float(ratio) if isinstance(ratio, int | float) and not isinstance(ratio, bool) else 0.9
    if per_req <= 0:
        return None
    return int(rest_gib * m / (1 + m) * GIB // per_req)


def _page_floor(tokens: int, page: int, applies: bool) -> int:
    return tokens // page * page if applies and page > 1 else tokens


def predict(inputs: SizingInputs, settings: Settings | None = None) -> Prediction:
    """SGLang's max_total_num_tokens (and what follows from it) for these settings."""
    settings = settings or base_settings(inputs)
    notes: list[str] = []
    terms: list[Term] = []
    p, a, mfs = inputs.load_begin, inputs.budget_avail, settings.mem_fraction_static
    inferred = False
    if mfs is None:
        mfs = default_mem_fraction_static(inputs, settings)
        inferred = mfs is not None
    budget = RULE["budget"].source
    if p is None:
        return Prediction(missing="the log has no load-begin avail reading (P)", notes=notes)
    if a is None:
        return Prediction(missing="the log has no load-end avail reading (A)", notes=notes)
    terms.append(
        Term(
            name="P (free before weights)",
            value=p.bytes,
            unit="bytes",
            kind="measured",
            source=f"line {p.line}, {p.note}",
        )
    )
    terms.append(
        Term(
            name="A (free when sized)",
            value=a.bytes,
            unit="bytes",
            kind="measured",
            source=f"line {a.line}, {a.note}",
        )
    )
    if mfs is None:
        why = (
            "mem_fraction_static is not in the log, and SGLang's default depends on the GPU "
            "capacity, which the log does not print"
        )
        if settings.gpu_memory_mib is not None:
            why = (
                f"SGLang's mem_fraction_static default is modelled for 0.5.3 - 0.5.13 only; "
                f"this log's release is {inputs.version.text}"
            )
        return Prediction(
            missing=why,
            terms=terms,
            notes=notes,
        )
    given = mfs == base_settings(inputs).mem_fraction_static
    terms.append(
        Term(
            name="mem_fraction_static",
            value=mfs,
            unit="fraction",
            kind="inferred" if inferred else ("given" if given else "what-if"),
            source=(
                f"SGLang's default for a {settings.gpu_memory_mib} MiB GPU "
                f"({RULE['mfs_default'].source})"
                if inferred
                else (f"server_args line {inputs.server_args_line}" if given else "--set")
            ),
        )
    )
    cell = _cell(inputs, settings, notes)
    slack = round(p.bytes * (1 - mfs))
    rest = a.bytes - slack
    terms.append(
        Term(
            name="slack P x (1 - mfs)",
            value=slack,
            unit="bytes",
            kind="modelled",
            source=budget,
            rule="budget",
        )
    )
    terms.append(
        Term(
            name="rest A - slack",
            value=rest,
            unit="bytes",
            kind="modelled",
            source=budget,
            rule="budget",
        )
    )

    def state_for(rest_bytes: int, per_slot: float, k_logged: int) -> tuple[int, int]:
        """(slots, bytes taken out of the budget) under the rule of this release."""
        assert inputs.mamba is not None
        per_req = inputs.mamba.bytes / (k_logged + 1)
        k_model = _mamba_slots_rule(inputs, settings, rest_bytes / GIB, per_req)
        k = k_logged if k_model is None else k_model
        if k_model is None:
            notes.append(
                "state slots: the rule needs an input this log lacks; the logged K is kept"
            )
        padded = inputs.version.within(RULE["mamba_padding_slot"]) is True or (
            bool(inputs.mamba.replay_bytes) and _rule(inputs, "mamba_padding_slot", notes)
        )
        slots_taken = k + 1 if padded else k
        return k, round(slots_taken * per_slot) + inputs.mamba.intermediate_bytes

    state = 0
    k: int | None = None
    per_slot = 0.0
    if inputs.mamba is not None:
        per_slot = (inputs.mamba.bytes + inputs.mamba.replay_bytes) / (inputs.mamba.slots + 1)
        k, state = state_for(rest, per_slot, inputs.mamba.slots)
        radix_off = inputs.knobs.get("disable_radix_cache") or (
            inputs.knobs.get("disaggregation_mode") == "decode"
        )
        slot_rule = "mamba_slots_fixed" if radix_off else "mamba_ratio_split"
        state_rule = (
            "mamba_padding_slot"
            if inputs.version.within(RULE["mamba_padding_slot"]) is not False
            and inputs.mamba.replay_bytes
            or inputs.version.within(RULE["mamba_padding_slot"]) is True
            else "mamba_first"
        )
        terms.append(
            Term(
                name="state slots K",
                value=k,
                unit="slots",
                kind="modelled",
                source=RULE[slot_rule].source,
                rule=slot_rule,
            )
        )
        terms.append(
            Term(
                name="state per slot",
                value=round(per_slot),
                unit="bytes",
                kind="measured",
                source=f"line {inputs.mamba.line}, state / (K + 1)",
            )
        )
        terms.append(
            Term(
                name="state taken first",
                value=state,
                unit="bytes",
                kind="modelled",
                source=RULE[state_rule].source,
                rule=state_rule,
            )
        )
    if cell is None:
        return Prediction(
            missing="the log has no KV pool line to take the bytes per token from",
            slack_bytes=slack,
            rest_bytes=rest,
            terms=terms,
            notes=notes,
        )
    terms.append(
        Term(
            name="bytes/token (KV line)",
            value=round(cell.bytes, 1),
            unit="bytes/token",
            kind="measured",
            source=cell.note,
        )
    )
    kv_budget = rest - state
    pad = _pad_rows(inputs, settings.page_size)
    page_applies = inputs.version.within(RULE["page_round"]) is not False

    spec = inputs.knobs.get("speculative_algorithm")
    headroom = bool(spec) and inputs.version.within(RULE["spec_headroom"]) is True

    def tokens_of(kv_budget_bytes: float, cell_bytes: float) -> int:
        raw = max(0, math.floor(kv_budget_bytes / cell_bytes)) if cell_bytes > 0 else 0
        if headroom:
            raw += spec_headroom(inputs, settings, raw)
        if settings.max_total_tokens is not None:
            raw = min(raw, settings.max_total_tokens)
        return _page_floor(raw, settings.page_size, page_applies)

    tokens = tokens_of(kv_budget, cell.bytes)
    # the ± range: every printed input at the end of its rounding interval
    slack_hi = round((p.bytes + p.half_ulp) * (1 - mfs))
    slack_lo = round((p.bytes - p.half_ulp) * (1 - mfs))
    state_half = 0
    if inputs.mamba is not None and k is not None:
        state_half = round(
            (inputs.mamba.half_ulp + inputs.mamba.replay_half_ulp)
            / (inputs.mamba.slots + 1)
            * (k + 1)
        )
    high = tokens_of(a.bytes + a.half_ulp - slack_lo - state + state_half, cell.bytes - cell.half)
    low = tokens_of(a.bytes - a.half_ulp - slack_hi - state - state_half, cell.bytes + cell.half)
    swa_tokens = None
    if cell.swa_ratio is not None:
        swa_tokens = _page_floor(int(tokens * cell.swa_ratio), settings.page_size, True)
    dcp = inputs.knobs.get("dcp_size")
    dcp_n = dcp if isinstance(dcp, int) and not isinstance(dcp, bool) and dcp > 1 else 1
    per_group = tokens * dcp_n
    instance = per_group * dp_of(inputs)
    extra: dict[str, int] = {}
    req_to_token(inputs, settings, tokens, k, extra)
    kv_bytes = round((tokens + pad) * cell.bytes)
    terms.append(
        Term(
            name="KV tokens per rank",
            value=tokens,
            unit="tokens",
            kind="modelled",
            source=f"{RULE['tokens'].source}; {RULE['page_round'].source}",
            rule="tokens",
        )
    )
    return Prediction(
        tokens=tokens,
        tokens_low=min(low, tokens),
        tokens_high=max(high, tokens),
        swa_tokens=swa_tokens,
        tokens_per_dp_group=per_group,
        tokens_per_instance=instance,
        slack_bytes=slack,
        rest_bytes=rest,
        kv_budget_bytes=kv_budget,
        state_bytes=state if inputs.mamba is not None else None,
        mamba_slots=k,
        per_slot_bytes=round(per_slot) if inputs.mamba is not None else None,
        cell_bytes=cell.bytes,
        kv_bytes=kv_bytes,
        max_num_reqs=extra.get("max_num_reqs"),
        req_to_token_rows=extra.get("req_to_token_rows"),
        req_to_token_cols=extra.get("req_to_token_cols"),
        req_to_token_bytes=extra.get("req_to_token_bytes"),
        terms=terms,
        notes=notes,
    )
