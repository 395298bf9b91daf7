"""What a parameter change plausibly moves in a ledger: SGLang knowledge as data.

`PARAM_EFFECTS` names server_args parameters (and the `log.*` settings the engine reads from log
lines, `sglang.rows.LOG_SETTINGS`) with the rows, row-id prefixes and groups they move; `memledger
diff` lists each changed parameter next to the rows that moved with it.

Adding an effect: one `ParamEffect` entry (an fnmatch pattern on the name, the rows it moves and
why); the diff tests check every entry names rows or groups that exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from memledger.model.ledger import LEDGER_PARAM_PREFIX, LOG_PARAM_PREFIX, RowGroup

ParamSource = Literal["server_args", "log", "ledger"]
"""Where a parameter was read: server_args, log lines (`log.*`), or derived (`ledger.*`)."""


@dataclass(frozen=True)
class ParamEffect:
    """Which rows a server_args parameter plausibly moves (fnmatch pattern on the name)."""

    pattern: str
    row_ids: tuple[str, ...] = ()
    row_prefixes: tuple[str, ...] = ()
    groups: tuple[RowGroup, ...] = ()
    why: str = ""


PARAM_EFFECTS: tuple[ParamEffect, ...] = (
    ParamEffect(
        "mem_fraction_static",
        groups=(RowGroup.RUNTIME_HEADROOM, RowGroup.STATE_POOL),
        why="(1 - mem_fraction_static) is left to the runtime; the rest sizes the state pool",
    ),
    ParamEffect(
        "cuda_graph_max_bs", groups=(RowGroup.CUDA_GRAPH,), why="the largest captured batch"
    ),
    ParamEffect(
        "cuda_graph_bs", groups=(RowGroup.CUDA_GRAPH,), why="which batch sizes are captured"
    ),
    ParamEffect("disable_cuda_graph*", groups=(RowGroup.CUDA_GRAPH,), why="no graphs captured"),
    ParamEffect("*cuda_graph*", groups=(RowGroup.CUDA_GRAPH,), why="CUDA graph capture settings"),
    ParamEffect(
        "dcp_size",
        row_ids=("dcp_q_replica", "req_to_token", "draft_slot_map"),
        groups=(RowGroup.COMMUNICATION, RowGroup.CUDA_GRAPH),
        why="DCP replicates the Q projection, multiplies global KV slots and adds a comm group",
    ),
    ParamEffect(
        "dcp_replicate_q_proj", row_ids=("dcp_q_replica",), why="full-head Q projection per card"
    ),
    ParamEffect(
        "max_running_requests",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="slots = max_running_requests + extra slots + 1; per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "disaggregation_decode_extra_slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="extra decode slots add per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "extra_slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="extra decode slots add per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="per-slot state and req_to_token rows scale with the slot count",
    ),
    ParamEffect(
        "context_len*", row_ids=("req_to_token",), why="req_to_token columns = context length"
    ),
    ParamEffect("kv_tokens", groups=(RowGroup.STATE_POOL,), why="KV pool size in tokens"),
    ParamEffect(
        "enable_dp_lm_head",
        groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION),
        why="lm_head replicated per DP rank instead of vocab-parallel",
    ),
    ParamEffect(
        "speculative_*",
        row_prefixes=("draft",),
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="draft model weights, KV, graphs and slot map",
    ),
    ParamEffect(
        "dp_size",
        groups=(
            RowGroup.WEIGHTS,
            RowGroup.WEIGHT_STAGING,
            RowGroup.COMMUNICATION,
            RowGroup.CUDA_GRAPH,
        ),
        why="per-card share of weights, rows per card in graphs, communication groups",
    ),
    ParamEffect(
        "enable_dp_attention",
        groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION, RowGroup.CUDA_GRAPH),
        why="attention weights replicated per DP rank",
    ),
    ParamEffect(
        "tp_size", groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION), why="per-card weight share"
    ),
    ParamEffect(
        "ep_size", groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION), why="per-card expert share"
    ),
    ParamEffect("kv_cache_dtype", groups=(RowGroup.STATE_POOL,), why="bytes per KV token"),
    ParamEffect("max_total_tokens", groups=(RowGroup.STATE_POOL,), why="caps the KV pool"),
    ParamEffect("page_size", groups=(RowGroup.STATE_POOL,), why="KV pool granularity"),
    ParamEffect("max_mamba_cache_size", groups=(RowGroup.STATE_POOL,), why="Mamba/KDA state slots"),
    ParamEffect(
        "chunked_prefill_size", groups=(RowGroup.WORKSPACE,), why="prefill activation workspace"
    ),
    ParamEffect("quantization", groups=(RowGroup.WEIGHTS,), why="weight bytes per parameter"),
    ParamEffect("*weight_shard*", groups=(RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING), why="shards"),
    ParamEffect(
        "*DRAFT_WEIGHT_SHARD*",
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="draft weight shard staging pool",
    ),
    ParamEffect(
        "*DEEPEP*", groups=(RowGroup.CUDA_GRAPH,), why="DeepEP buffer, allocated in graph warmup"
    ),
    ParamEffect(
        "*SWA_POOL_MULTIPLIER*", row_prefixes=("draft",), why="draft SWA pool size multiplier"
    ),
    ParamEffect(
        "*custom_all_reduce*", groups=(RowGroup.COMMUNICATION,), why="custom all-reduce buffers"
    ),
    # Settings the log reveals (`log.<name>`, from `memledger.engine.LOG_SETTINGS`).
    ParamEffect(
        "log.weight_shard*",
        row_ids=("weights", "weight_staging"),
        groups=(RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING),
        why="sharded layers keep 1/group of their weights and all-gather through the staging pool",
    ),
    ParamEffect(
        "log.requant_then_shard*",
        row_ids=("weights_load_peak", "weights_released", "weights"),
        why="sharded weights are loaded full, requantised, then sharded: a higher load peak",
    ),
    ParamEffect(
        "log.draft_weight_shard*",
        row_ids=("draft_weights", "draft_staging"),
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD: draft layers sharded, plus a draft staging pool",
    ),
    ParamEffect(
        "log.draft_hoisted_ag",
        row_ids=("draft_staging",),
        row_prefixes=("draft_cuda_graph",),
        why="draft all-gathers hoisted out of the CUDA graph run outside graph memory",
    ),
    ParamEffect(
        "log.hoisted_ag",
        row_ids=("weight_staging",),
        row_prefixes=("cuda_graph",),
        why="all-gathers hoisted out of the CUDA graph run outside graph memory",
    ),
    ParamEffect(
        "log.dspark_*",
        row_ids=("draft_kv", "draft_slot_map"),
        why="SGLANG_DSPARK_SWA_POOL_MULTIPLIER x window slots per request size the draft SWA pool",
    ),
    ParamEffect(
        "log.custom_all_reduce_*",
        row_ids=("nccl_init", "all_reduce_buffers"),
        why="one CustomAllReduceV2 (symmetric + local buffers) per intra-node group at dist init",
    ),
    ParamEffect(
        "log.deepep_*",
        row_ids=("deepep_buffer", "cuda_graph_largest_bucket"),
        why="SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK sizes the DeepEP buffer, allocated "
        "lazily in the largest graph's warmup",
    ),
    ParamEffect(
        "log.kv_cache_dtype",
        row_ids=("kv_pool", "swa_kv_pool"),
        why="bytes per KV token: the dtype the pool was allocated with",
    ),
    ParamEffect(
        "log.cuda_graph_bs",
        groups=(RowGroup.CUDA_GRAPH,),
        why="the batch sizes actually captured (server_args left them to SGLang)",
    ),
)
"""Entries whose pattern starts with `log.` match `log.*` names and win over the others; the
others match the name without its `ledger.`/`log.` prefix, first match wins. A parameter with
no entry is listed with no known effect."""


DERIVED_ALIASES = {
    "extra_slots": "disaggregation_decode_extra_slots",
    "context_len": "context_length",
}
"""Derived values named differently from the server_args they restate."""


def param_source(name: str) -> ParamSource:
    """Where a parameter was read: `log` lines, `ledger` (derived by the engine) or server_args."""
    if name.startswith(LOG_PARAM_PREFIX):
        return "log"
    if name.startswith(LEDGER_PARAM_PREFIX):
        return "ledger"
    return "server_args"


def param_effect(name: str) -> ParamEffect | None:
    """The `PARAM_EFFECTS` entry for `name`: a `log.` entry for a `log.` name, else the first
    entry matching the name without its `ledger.`/`log.` prefix."""
    if name.startswith(LOG_PARAM_PREFIX):
        exact = (e for e in PARAM_EFFECTS if e.pattern.startswith(LOG_PARAM_PREFIX))
        found = next((e for e in exact if fnmatchcase(name, e.pattern)), None)
        if found is not None:
            return found
    bare = name.removeprefix(LEDGER_PARAM_PREFIX).removeprefix(LOG_PARAM_PREFIX)
    return next(
        (
            e
            for e in PARAM_EFFECTS
            if not e.pattern.startswith(LOG_PARAM_PREFIX) and fnmatchcase(bare, e.pattern)
        ),
        None,
    )
