"""SGLang's pool sizing redone from a log's numbers: a pure function of SizingInputs and Settings.

Each step applies one rule of memledger.sglang.sizing_rules, chosen by the log's release range;
a step whose rule the range cannot decide says so in `notes` and uses the newer rule.
"""

from __future__ import annotations

import math
from dataclasses import replace

from memledger.model.sizing import Prediction, Settings, Term
from memledger.record import record
from memledger.sglang.sizing_rules import RULE, SPEC_HEADROOM_ALGORITHMS
from memledger.sizing.cell import build_cell, pad_rows
from memledger.sizing.defaults import default_mem_fraction_static
from memledger.sizing.fraction import used_fraction
from memledger.sizing.gpu import GpuCapacity
from memledger.sizing.inputs import Reading, SizingInputs
from memledger.sizing.mamba import (
    draft_tokens,
    mamba_slots_rule,
    mamba_state_rule,
    old_spec_split,
    per_slot_intermediates,
    slot_rule_of,
    undecided_slot_rules,
)
from memledger.sizing.requests import req_to_token, spec_headroom
from memledger.sizing.settings import base_settings, dp_of
from memledger.units import GIB, MIB, count_or


def _rule(inputs: SizingInputs, rule_id: str, notes: list[str]) -> bool:
    """Whether a rule holds for this log's releases; undecided -> True, with a note."""
    verdict = inputs.version.within(RULE[rule_id])
    if verdict is None:
        rule = RULE[rule_id]
        notes.append(
            f"release {inputs.version.text} may predate or follow rule '{rule_id}' "
            f"({rule.releases.first or '?'} .. {rule.releases.last or 'now'}); applied it"
        )
        return True
    return verdict


def _headroom_rule(inputs: SizingInputs, notes: list[str]) -> str | None:
    """Which rule adds the speculative headroom to the tokens (None: no headroom). An Ascend
    build between 0.5.6.post2 and 0.5.7 keeps it in the 0.5.3 - 0.5.8 formats, also where its
    server_args date it after 0.5.6 (rule npu_spec_headroom): its own print of the rest shows the
    build, and so do its server_args (fields of both releases), where the print is not pasted."""
    algorithm = str(inputs.knobs.get("speculative_algorithm") or "").upper()
    if algorithm not in SPEC_HEADROOM_ALGORITHMS:
        return None
    verdict = inputs.version.within(RULE["spec_headroom"])
    if verdict is True:
        return "spec_headroom"
    npu = inputs.knobs.get("device") == "npu" or inputs.knobs.get("attention_backend") == "ascend"
    shown = "prints its rest" if inputs.logged_rest is not None else ""
    if not shown and npu and inputs.snapshot_056_057:
        shown = "holds fields of 0.5.6.post2 and 0.5.7 in its server_args"
    if shown and inputs.version.within(RULE["npu_spec_headroom"]) is not False:
        when = "may predate or follow" if verdict is None else "follows"
        notes.append(
            f"release {inputs.version.text} {when} 0.5.6's speculative headroom; an Ascend "
            f"build that {shown} keeps it (rule npu_spec_headroom)"
        )
        return "npu_spec_headroom"
    return None


def _page_floor(tokens: int, page: int, applies: bool) -> int:
    return tokens // page * page if applies and page > 1 else tokens


def _log_capacity(inputs: SizingInputs, settings: Settings, notes: list[str]) -> GpuCapacity | None:
    """The GPU capacity the log shows, when --set gives none; one below P is not this GPU's."""
    capacity, p = inputs.gpu_capacity, inputs.load_begin
    if capacity is None or settings.gpu_memory_mib is not None:
        return None
    notes.extend(capacity.notes)
    if capacity.mib and p is not None and capacity.mib * MIB < p.bytes - p.half_ulp:
        notes.append(
            f"the GPU capacity {capacity.mib:,} MiB of line {capacity.line} is less than the "
            f"free memory before the weights (P, line {p.line}): not this GPU's, not used"
        )
        return None
    return capacity


def predict(inputs: SizingInputs, settings: Settings | None = None) -> Prediction:
    """SGLang's max_total_num_tokens (and what follows from it) for these settings."""
    own_settings = settings is None or settings == base_settings(inputs)
    settings = settings or base_settings(inputs)
    notes: list[str] = []
    terms: list[Term] = []
    p, a, mfs = inputs.load_begin, inputs.budget_avail, settings.mem_fraction_static
    default = None
    printed = inputs.printed_fraction
    vlm_line = None
    if mfs is None and printed is not None and printed.shape == "vlm" and printed.value:
        if settings.gpu_memory_mib is None:
            mfs, vlm_line = printed.value, printed.line
    capacity = _log_capacity(inputs, settings, notes) if mfs is None else None
    capacity_term: Term | None = None
    if mfs is None:
        default_settings = settings
        if capacity is not None and capacity.mib:
            # the log's own GPU capacity (memledger.sizing.gpu), unless --set gives one
            default_settings = replace(settings, gpu_memory_mib=capacity.mib)
            capacity_term = Term(
                name="GPU capacity",
                value=capacity.mib,
                unit="MiB",
                kind=capacity.kind,
                source=capacity.source,
            )
        default = default_mem_fraction_static(inputs, default_settings)
        if default is not None:
            mfs = default.value
            notes.extend(default.notes)
    budget = RULE["budget"].source
    # a fork's own print of the rest (Ascend) stands in for P, A and mfs when one is missing
    printed_rest = inputs.logged_rest if own_settings else None
    if p is None and printed_rest is None:
        return Prediction(missing="the log has no load-begin avail reading (P)", notes=notes)
    if a is None and printed_rest is None:
        return Prediction(missing="the log has no load-end avail reading (A)", notes=notes)
    if p is not None and a is not None:
        terms.append(_reading_term("P (free before weights)", p))
        terms.append(_reading_term("A (free when sized)", a))
    if mfs is None and printed_rest is None:
        why = (
            "mem_fraction_static is not in the log (no server_args) and SGLang's default for it "
            "depends on the GPU capacity, which the log does not print (--set gpu_memory_mib=N "
            "infers it: rules mfs_default, mfs_default_graphs)"
        )
        if settings.gpu_memory_mib is not None or (capacity is not None and capacity.mib):
            why = (
                "SGLang's mem_fraction_static default is modelled for 0.4.0 - 0.4.5 and from "
                f"0.4.8 on (0.4.6 - 0.4.7 differ by post release); this log's release is "
                f"{inputs.version.text}"
            )
        return Prediction(
            missing=why,
            terms=terms,
            notes=notes,
        )
    base = base_settings(inputs)
    if p is None or a is None or mfs is None:
        assert printed_rest is not None
        return _tail(inputs, settings, _printed_budget(printed_rest, terms, notes), terms, notes)
    given = mfs == base.mem_fraction_static
    source = (
        f"{default.basis} ({RULE[default.rule].source})"
        if default
        else (f"{inputs.server_args_source} {inputs.server_args_line}" if given else "--set")
    )
    if vlm_line is not None:
        source = (
            f"line {vlm_line}, 0.4.10's ViT adjustment of the default "
            f"({RULE['mfs_vlm_factor'].source})"
        )
    if capacity_term is not None and default is not None:
        terms.append(capacity_term)
    terms.append(
        Term(
            name="mem_fraction_static",
            value=mfs,
            unit="fraction",
            kind="measured"
            if vlm_line is not None
            else ("inferred" if default else ("given" if given else "what-if")),
            source=source,
            rule="mfs_vlm_factor" if vlm_line is not None else (default.rule if default else None),
        )
    )
    used = used_fraction(
        inputs.version,
        dict(inputs.knobs),
        printed,
        mfs,
        own=settings.mem_fraction_static == base.mem_fraction_static,
        context_len=settings.context_length,
        base_context_len=base.context_length,
        inferred=default is not None or vlm_line is not None,
    )
    mfs_half = 0.0
    if used is not None:
        notes.extend(used.notes)
        terms.append(
            Term(
                name="mem_fraction_static used",
                value=used.value,
                unit="fraction",
                kind=used.kind,
                source=used.source,
                rule=used.rule,
            )
        )
        mfs, mfs_half = used.value, used.half_ulp
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
    # the ± range: every printed input at the end of its rounding interval
    slack_hi = round((p.bytes + p.half_ulp) * (1 - mfs + mfs_half))
    slack_lo = round((p.bytes - p.half_ulp) * (1 - mfs - mfs_half))
    window = Budget(
        rest=rest,
        high=a.bytes + a.half_ulp - slack_lo,
        low=a.bytes - a.half_ulp - slack_hi,
        slack=slack,
    )
    if printed_rest is not None:
        window = _world_rest(inputs, window, printed_rest, terms, notes)
    return _tail(inputs, settings, window, terms, notes)


def _world_rest(
    inputs: SizingInputs, window: Budget, printed: Reading, terms: list[Term], notes: list[str]
) -> Budget:
    """Rule npu_printed_rest: the Ascend build prints the rest it divided, A all-reduced over
    every rank (the ranks a node's log does not show included), so it stands in for A - P x
    (1 - mfs) from the ranks the log shows. A hybrid model's print may be the rest before the
    Mamba state or what is left after it: _tail tells them apart (the gap note is then not
    about the ranks)."""
    if inputs.version.within(RULE["npu_printed_rest"]) is False:
        return window
    terms.append(
        Term(
            name="rest (printed)",
            value=printed.bytes,
            unit="bytes",
            kind="measured",
            source=f"line {printed.line}, every rank's minimum",
            rule="npu_printed_rest",
        )
    )
    off = printed.bytes - window.rest
    if inputs.mamba is None and (
        printed.bytes + printed.half_ulp < window.low
        or printed.bytes - printed.half_ulp > window.high
    ):
        notes.append(
            f"the rest the log prints (line {printed.line}, {printed.bytes / GIB:.2f} GiB) is "
            f"{abs(off) / GIB:.3f} GiB {'below' if off < 0 else 'above'} A - P x (1 - mfs) "
            "from the ranks this log shows: SGLang takes both over every rank, so a rank the "
            "log does not show read " + ("less" if off < 0 else "more") + " free memory; the "
            "printed rest is divided (rule npu_printed_rest)"
        )
    return Budget(
        rest=printed.bytes,
        high=printed.bytes + printed.half_ulp,
        low=printed.bytes - printed.half_ulp,
        slack=window.slack,
        modelled_rest=window.rest,
        printed_line=printed.line,
    )


@record
class Budget:
    """The rest SGLang divides into tokens, with the range the printing precision allows."""

    rest: int
    high: int
    low: int
    slack: int | None = None
    """P x (1 - mfs); None when the rest is the log's own print."""
    modelled_rest: int | None = None
    """A - P x (1 - mfs) from the readings, when `rest` is the log's print (rule
    npu_printed_rest)."""
    printed_line: int | None = None


def _reading_term(name: str, reading: Reading, why: str = "") -> Term:
    """A printed byte figure as a measured term, sourced at its line."""
    return Term(
        name=name,
        value=reading.bytes,
        unit="bytes",
        kind="measured",
        source=f"line {reading.line}, {reading.note}{why}",
    )


def _printed_budget(rest: Reading, terms: list[Term], notes: list[str]) -> Budget:
    """The rest as a fork prints it (`The available memory for KV cache is X GB`, Ascend)."""
    terms.append(_reading_term("rest (printed)", rest, " (stands in for A - P x (1 - mfs))"))
    notes.append(
        "P, A or mem_fraction_static is not in the log: the tokens are divided from the rest "
        "the log prints (its Ascend builds print SGLang's A - P x (1 - mfs))"
    )
    return Budget(rest=rest.bytes, high=rest.bytes + rest.half_ulp, low=rest.bytes - rest.half_ulp)


def _tail(
    inputs: SizingInputs,
    settings: Settings,
    budget: Budget,
    terms: list[Term],
    notes: list[str],
) -> Prediction:
    """State slots, cell, tokens and request table from the budget's rest."""
    own_settings = settings == base_settings(inputs)
    rest, slack = budget.rest, budget.slack
    high_rest, low_rest = budget.high, budget.low
    cell = build_cell(inputs, settings, notes)
    out = notes

    def state_for(
        rest_bytes: int, per_slot: float, k_logged: int, sink: list[str] | None = None
    ) -> tuple[int, int]:
        """(slots, bytes taken out of the budget) under the rule of this release; its notes go
        to `sink` (the prediction's notes by default)."""
        assert inputs.mamba is not None
        notes = out if sink is None else sink
        per_req = inputs.mamba.bytes / (k_logged + 1)
        padded = state_rule != "mamba_first"
        split_rest = rest_bytes
        if draft_tokens(inputs) and inputs.version.within(RULE["mamba_spec_reserve"]) is True:
            # rule mamba_spec_reserve: the intermediate states are reserved before the ratio
            # split; the Mamba line's intermediate sizes stand in for SGLang's per_req x
            # requests x draft tokens
            split_rest -= inputs.mamba.intermediate_bytes
        k_model = mamba_slots_rule(
            inputs, settings, split_rest / GIB, per_req, per_slot if padded else None
        )
        k = k_logged if k_model is None else k_model
        undecided = undecided_slot_rules(inputs)
        if k_model is None:
            notes.append(
                "state slots: the rule needs an input this log lacks; the logged K is kept"
            )
        elif k_model != k_logged and own_settings and undecided:
            k = k_logged
            notes.append(
                f"state slots: release {inputs.version.text} may or may not size them by "
                f"rule {' and '.join(undecided)}, which give another K than the newer rule "
                f"({k_model:,}); the log's K = {k_logged:,} is taken"
            )
        elif k_model != k_logged and own_settings:
            notes.append(
                f"state slots: rule {slot_rule_of(inputs)} gives K = {k_model:,} from the "
                f"printed readings, the log shows {k_logged:,}: SGLang sized from "
                f"{'less' if k_model > k_logged else 'more'} free memory than they show, or "
                f"release {inputs.version.text} splits by a rule not modelled"
            )
        draft = old_spec_split(inputs)
        if draft is None and per_slot_intermediates(inputs, settings, k, per_req):
            draft = draft_tokens(inputs)
            notes.append(
                f"the Mamba line's intermediate states are sized by the {k:,} state slots, as "
                "0.5.4 - 0.5.6 size them (not by the requests, as 0.5.7+ do): K x per_req x "
                "(1 + draft tokens) is taken (rule mamba_spec_ratio)"
            )
        if draft is not None:
            # rule mamba_spec_ratio: K x per_req x (1 + draft tokens), the intermediate
            # caches (which the pool sizes with K + 1 slots) inside that product
            return k, round(k * per_req * (1 + draft))
        slots_taken = k + 1 if padded else k
        return k, round(slots_taken * per_slot) + inputs.mamba.intermediate_bytes

    state = 0
    k: int | None = None
    per_slot = 0.0
    state_rule = mamba_state_rule(inputs, notes) if inputs.mamba is not None else "mamba_first"
    if inputs.mamba is not None:
        per_slot = (inputs.mamba.bytes + inputs.mamba.replay_bytes) / (inputs.mamba.slots + 1)
        modelled = budget.modelled_rest
        after = False
        if modelled is not None:
            # rule npu_printed_rest: is the print the rest before the state or what is left?
            _, probe = state_for(modelled, per_slot, inputs.mamba.slots, [])
            after = abs(rest - (modelled - probe)) < abs(rest - modelled)
        if after and modelled is not None:
            k, state = state_for(modelled, per_slot, inputs.mamba.slots)
            notes.append(
                f"the rest the log prints (line {budget.printed_line}) is what is left after "
                "the Mamba state: the KV pool is divided from it, the state sized from A - P x "
                "(1 - mfs) (rule npu_printed_rest)"
            )
            rest, high_rest, low_rest = rest + state, high_rest + state, low_rest + state
        else:
            k, state = state_for(rest, per_slot, inputs.mamba.slots)
        slot_rule = slot_rule_of(inputs)
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
    if cell.alloc_bytes is not None:
        terms.append(
            Term(
                name="bytes/token (KV line)",
                value=round(cell.alloc_bytes, 1),
                unit="bytes/token",
                kind="measured",
                source="KV bytes / (#tokens + page rows)",
            )
        )
    terms.append(
        Term(
            name="bytes/token (KV line)" if cell.alloc_bytes is None else "bytes/token (sized)",
            value=round(cell.bytes, 1),
            unit="bytes/token",
            kind="measured" if cell.alloc_bytes is None else "inferred",
            source=cell.note,
            rule=None if cell.alloc_bytes is None else "dsa_indexer_cell",
        )
    )
    kv_budget = rest - state
    pad = pad_rows(inputs, settings.page_size)
    page_applies = inputs.version.within(RULE["page_round"]) is not False

    headroom_rule = _headroom_rule(inputs, notes)
    headroom = headroom_rule is not None

    one_pool = cell.swa_one_pool
    # before 0.5.11 the tokens are profiled as one pool (F + S), then split by the ratio
    split = None if one_pool is None else one_pool / cell.bytes

    def tokens_of(kv_budget_bytes: float, cell_bytes: float) -> int:
        divisor = cell_bytes if split is None else cell_bytes * split
        raw = max(0, math.floor(kv_budget_bytes / divisor)) if divisor > 0 else 0
        if headroom:
            raw += spec_headroom(inputs, settings, raw)
        if settings.max_total_tokens is not None:
            raw = min(raw, settings.max_total_tokens)
        if split is not None:
            raw = int(raw * split)
        return _page_floor(raw, settings.page_size, page_applies)

    tokens = tokens_of(kv_budget, cell.bytes)
    # the ± range: every printed input at the end of its rounding interval
    state_half = 0
    if inputs.mamba is not None and k is not None:
        state_half = round(
            (inputs.mamba.half_ulp + inputs.mamba.replay_half_ulp)
            / (inputs.mamba.slots + 1)
            * (k + 1)
        )
    high = tokens_of(high_rest - state + state_half, cell.bytes - cell.half)
    low = tokens_of(low_rest - state - state_half, cell.bytes + cell.half)
    swa_tokens = None
    if cell.swa_ratio is not None:
        swa_tokens = _page_floor(int(tokens * cell.swa_ratio), settings.page_size, True)
    dcp_n = count_or(inputs.knobs.get("dcp_size"), 1)
    per_group = tokens * dcp_n
    instance = per_group * dp_of(inputs)
    extra: dict[str, int] = {}
    req_to_token(inputs, settings, tokens, k, extra)
    kv_bytes = round((tokens + pad) * cell.pool_bytes)
    if headroom_rule is not None:
        terms.append(
            Term(
                name="speculative headroom",
                value=spec_headroom(inputs, settings, tokens),
                unit="tokens",
                kind="modelled",
                source=RULE[headroom_rule].source,
                rule=headroom_rule,
            )
        )
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
        cell_bytes=float(cell.bytes),
        kv_bytes=kv_bytes,
        max_num_reqs=extra.get("max_num_reqs"),
        req_to_token_rows=extra.get("req_to_token_rows"),
        req_to_token_cols=extra.get("req_to_token_cols"),
        req_to_token_bytes=extra.get("req_to_token_bytes"),
        terms=terms,
        notes=notes,
    )
