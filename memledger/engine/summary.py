"""The headline figures (`Summary`): totals of the partition rows by group and by figure, the
target load's weights, slots and KV token capacity."""

from __future__ import annotations

from collections.abc import Callable

from memledger.engine.assemble import Assembled
from memledger.engine.audit import Audit
from memledger.engine.carve import Figure
from memledger.engine.chain import Chain
from memledger.engine.loads import LoadRows
from memledger.engine.variables import Variables
from memledger.model.ledger import (
    FIXED_OVERHEAD_GROUPS,
    GroupTotal,
    Row,
    RowGroup,
    Summary,
    group_totals,
)
from memledger.model.model_config import ModelDims


def groups(assembled: Assembled) -> list[GroupTotal]:
    """The group totals the renderers, explain, diff and check read (never re-added there)."""
    return group_totals(assembled.rows)


def summarise(
    chain: Chain,
    assembled: Assembled,
    usable: int | None,
    loads: LoadRows,
    variables: Variables,
    model: ModelDims | None,
    audit: Audit,
) -> Summary:
    rows = assembled.rows
    partition = [row for row in rows if row.in_partition and row.bytes is not None]

    def total(predicate: Callable[[Row], bool]) -> int | None:
        chosen = [row.bytes for row in partition if predicate(row) and row.bytes is not None]
        return sum(chosen) if chosen else None

    def by_id(*row_ids: str) -> int | None:
        return total(lambda row: _base_id(row.id) in row_ids)

    def by_figure(figure: Figure) -> int | None:
        return total(lambda row: assembled.figures.get(row.id) == figure)

    # The article's weights figures: the target load's peak (load-end usage, staging
    # included), what it gave back right after, and the difference.
    target = loads.target()
    peak = None if target is None else target.usage
    released = None if target is None or target.release is None else -target.release.bytes
    resident = None if peak is None else peak - (released or 0)
    kv_pool = by_figure(Figure.KV_POOL)
    per_slot_state = by_figure(Figure.PER_SLOT_STATE)
    slots = variables.log("slots")
    mamba_slots = variables.log("max_mamba_cache_size")
    # The Mamba line's slots never stand in for unknown request slots: SGLang sizes the two
    # apart (at most max_mamba_cache_size // ratio requests: v0.5.8 model_runner_kv_cache_mixin.py
    # :268-281, v0.5.11 :711-715), so 39 Mamba slots may serve 12 requests.
    if isinstance(slots, int) and isinstance(mamba_slots, int) and mamba_slots + 1 != slots:
        audit.note(
            f"slots {slots} (the req_to_token rows: requests + extra + padding) differ from the "
            "Mamba pool's "
            f"max_mamba_cache_size {mamba_slots} + 1"
        )
    # Per-slot state divides by the state pool's own slots (K + 1 padding slot) when the
    # Mamba line prints K: with a ratio-split pool that differs from the request slots.
    state_slots = mamba_slots + 1 if isinstance(mamba_slots, int) else slots
    state_per_slot = (
        per_slot_state / state_slots
        if per_slot_state is not None and isinstance(state_slots, int) and state_slots > 0
        else None
    )
    req_to_token = next(
        (row.bytes for row in rows if row.id == "req_to_token" and row.bytes is not None), None
    )
    mfs = variables.log("mem_fraction_static")
    tokens_rank = _kv_tokens(chain, kv_pool, variables, model, audit)
    dcp = variables.log("dcp_size", 1)
    dp = variables.log("dp_size", 1)
    tokens_group = None if tokens_rank is None else tokens_rank * dcp
    tokens_instance = None if tokens_group is None else tokens_group * dp
    return Summary(
        usable=usable,
        nccl_init=by_id("nccl_init"),
        weights_load_peak=peak,
        weights_released=released,
        weights_resident=resident,
        weight_staging=by_id("weight_staging"),
        draft_weights=by_figure(Figure.DRAFT_WEIGHTS),
        draft_staging=by_id("draft_staging"),
        cuda_graph=total(lambda row: row.group == RowGroup.CUDA_GRAPH),
        cuda_graph_largest_bucket=by_id("cuda_graph_largest_bucket"),
        cuda_graph_static=by_id("cuda_graph_static"),
        workspace=total(lambda row: row.group in (RowGroup.WORKSPACE, RowGroup.UNEXPLAINED)),
        runtime_headroom=by_id("runtime_headroom"),
        fixed_overhead=total(lambda row: row.group in FIXED_OVERHEAD_GROUPS),
        state_pool=total(lambda row: row.group == RowGroup.STATE_POOL),
        kv_pool=kv_pool,
        draft_kv=by_figure(Figure.DRAFT_KV),
        state_per_slot=None if state_per_slot is None else round(state_per_slot),
        slots=slots if isinstance(slots, int) else None,
        req_to_token=req_to_token,
        mem_fraction_static=float(mfs) if isinstance(mfs, int | float) else None,
        kv_tokens_per_rank=tokens_rank,
        kv_tokens_per_dp_group=tokens_group,
        kv_tokens_per_instance=tokens_instance,
    )


def _kv_tokens(
    chain: Chain,
    kv_pool: int | None,
    variables: Variables,
    model: ModelDims | None,
    audit: Audit,
) -> int | None:
    """Per-rank KV capacity: the KV line's #tokens, else pool bytes / bytes per token."""
    tokens = variables.log("kv_tokens")
    if isinstance(tokens, int):
        return tokens
    if kv_pool is None:
        return None
    per_token = kv_bytes_per_token(chain, variables, model)
    if per_token is None:
        audit.note(
            "KV tokens unknown: no #tokens in the log; pass --model-config to derive them "
            "from the pool size"
        )
        return None
    audit.note(f"KV tokens per rank = KV pool bytes / {per_token} B per token (from model dims)")
    return kv_pool // per_token


def kv_bytes_per_token(chain: Chain, variables: Variables, model: ModelDims | None) -> int | None:
    """One token's KV cell on this rank, from model dims (MLA or MHA), or None."""
    if model is None:
        return None
    dtype = str(chain.args.get("kv_cache_dtype") or "auto")
    element = 1 if "fp8" in dtype or "int8" in dtype else model.dtype_bytes or 2
    if model.kv_lora_rank is not None and model.qk_rope_head_dim is not None:
        layers = model.mla_layers or model.num_hidden_layers
        if layers is None:
            return None
        return int((model.kv_lora_rank + model.qk_rope_head_dim) * layers * element)
    heads = model.num_key_value_heads or model.num_attention_heads
    layers = model.num_hidden_layers
    head_dim = model.head_dim or (
        model.hidden_size // model.num_attention_heads
        if model.hidden_size and model.num_attention_heads
        else None
    )
    if heads is None or layers is None or head_dim is None:
        return None
    dp = variables.log("dp_size", 1)
    tp = variables.log("tp_size", 1)
    attn_tp = max(1, tp // dp) if chain.args.get("enable_dp_attention") else tp
    per_rank = max(1, heads // attn_tp)
    v_dim = model.v_head_dim or head_dim
    return int(per_rank * (head_dim + v_dim) * layers * element)


def _base_id(row_id: str) -> str:
    """A row id without the `.interval` suffix that keeps ids unique."""
    return row_id.split(".", 1)[0]
