"""SGLang log lines that become ledger rows or parameters as printed (engine-side data).

The KV, staging, load and capture lines depend on role and labels and are turned into rows by
`memledger.engine.lines`; every other line that prints an allocation is one entry here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memledger.model.events import EventKind
from memledger.model.ledger import RowGroup
from memledger.sglang import lines

AVAIL_KINDS = frozenset(EventKind(kind) for kind in lines.AVAIL_KINDS)
"""Kinds whose `avail` reading is a checkpoint (the `checkpoint` flag of memledger.sglang.lines)."""

DRAFT_TYPE = re.compile(r"eagle|nextn|mtp|draft|dflash|dspark|medusa|lookahead", re.IGNORECASE)
"""`type=` class names of draft models (EAGLE, MTP/NextN, DFlash/DSpark, Medusa, ...)."""

PARAMETER_KEYS = re.compile(
    r"^(mem_fraction_static|tp_size|dp_size|ep_size|pp_size|dcp_size|decode_context_parallel_size"
    r"|dcp_replicate_q_proj|attn_cp_size|moe_dp_size|enable_dp_attention|enable_dp_lm_head"
    r"|max_running_requests|max_total_tokens|max_prefill_tokens|chunked_prefill_size"
    r"|context_length|page_size|kv_cache_dtype|dtype|quantization|load_format|disable_radix_cache"
    r"|disable_cuda_graph|cuda_graph_max_bs\w*|cuda_graph_bs\w*|disable_custom_all_reduce"
    r"|enable_symm_mem|enable_two_batch_overlap|enable_hierarchical_cache|enable_memory_saver"
    r"|enable_piecewise_cuda_graph|disable_piecewise_cuda_graph|piecewise_cuda_graph_max_tokens"
    r"|mamba_full_memory_ratio|max_mamba_cache_size|mamba_ssm_dtype|swa_full_tokens_ratio"
    r"|disaggregation_mode|disaggregation_decode_extra_slots|speculative_algorithm"
    r"|speculative_num_draft_tokens|speculative_num_steps|speculative_eagle_topk"
    r"|speculative_\w*block_size|speculative_draft_model_path|moe_a2a_backend|deepep_mode"
    r"|moe_runner_backend|model_path|device|nnodes|cpu_offload_gb)$"
)
"""The server_args keys a ledger copies into `parameters` (memory-relevant ones, for diffs)."""

BUDGET_GROUPS = frozenset({RowGroup.WEIGHTS, RowGroup.DRAFT_WEIGHTS, RowGroup.STATE_POOL})
"""Row groups mem_fraction_static holds: the weights and the pools (v0.5.x
srt/model_executor/model_runner.py profile_max_num_token: rest_memory = avail - total x
(1 - mem_fraction_static), the pools' share; the weights are taken before it). Everything else
(NCCL, staging, workspaces, CUDA graphs, headroom) lives in the 1 - mem_fraction_static."""

SECRET_KEYS = re.compile(r"key|secret|password|token(?!s)|credential", re.IGNORECASE)
"""server_args keys never copied, whatever PARAMETER_KEYS says."""


@dataclass(frozen=True)
class LineRow:
    """How one kind of log line becomes a row: which printed sizes it adds up."""

    row_id: str
    """`{draft}` becomes `draft_` in the draft's pool interval."""
    label: str
    group: RowGroup
    keys: tuple[str, ...]
    fallback: str | None = None
    """A size key used when none of `keys` was printed (e.g. a total)."""
    informational: str | None = None
    """Set for sizes that are not allocations of this GPU: the note shown; never summed."""
    per_slot_state: bool = False
    """Part of the per-request-slot state (Mamba/SSM) the summary divides by the slots."""


_STATE = RowGroup.STATE_POOL
_COMM = RowGroup.COMMUNICATION

LINE_ROWS: dict[EventKind, tuple[LineRow, ...]] = {
    EventKind.MAMBA_ALLOCATED: (
        LineRow(
            "{draft}mamba_conv_state",
            "Mamba/KDA conv state",
            _STATE,
            ("conv_state",),
            per_slot_state=True,
        ),
        LineRow(
            "{draft}mamba_ssm_state",
            "Mamba/KDA SSM state",
            _STATE,
            ("ssm_state",),
            per_slot_state=True,
        ),
        LineRow(
            "{draft}mamba_intermediate_ssm",
            "intermediate SSM state (speculative)",
            _STATE,
            ("intermediate_ssm",),
            per_slot_state=True,
        ),
        LineRow(
            "{draft}mamba_intermediate_conv",
            "intermediate conv window (speculative)",
            _STATE,
            ("intermediate_conv",),
            per_slot_state=True,
        ),
    ),
    EventKind.REPLAY_SSM: (
        LineRow(
            "{draft}replay_ssm",
            "ReplaySSM ring buffers",
            _STATE,
            ("d", "k", "g", "rawv", "rawk", "beta"),
            fallback="total",
            per_slot_state=True,
        ),
    ),
    EventKind.SWA_POOL: (
        LineRow("{draft}swa_kv_pool", "SWAKVPool (full + SWA KV)", _STATE, ("usage",)),
    ),
    EventKind.ALL_REDUCE_CONFIG: (
        LineRow(
            "all_reduce_buffers",
            "custom all-reduce buffers (symmetric + local)",
            _COMM,
            ("symmetric_memory", "local_buffer"),
        ),
    ),
    EventKind.SYMM_PREALLOC: (
        LineRow("symmetric_memory_pool", "symmetric memory pool", _COMM, ("size",)),
    ),
    EventKind.DEEPEP_BUFFER: (LineRow("deepep_buffer", "DeepEP buffer", _COMM, ("num_bytes",)),),
    EventKind.DSPARK_RECLAIMED: (
        LineRow(
            "dspark_reclaimed",
            "DSpark SWA draft KV reclaimed",
            _STATE,
            ("reclaimed",),
            informational="compared with a hypothetical proportional draft KV: not an allocation",
        ),
    ),
    EventKind.HICACHE_HOST: (
        LineRow(
            "hicache_host",
            "HiCache host pool",
            _STATE,
            ("host",),
            informational="host RAM, not GPU memory",
        ),
    ),
    EventKind.ASCEND_KV_AVAIL: (
        LineRow(
            "ascend_kv_budget",
            "memory available for KV cache (Ascend)",
            _STATE,
            ("avail_kv",),
            informational="the KV budget the runtime computed, not an allocation",
        ),
    ),
    EventKind.DSV4_CALC: (
        LineRow(
            "dsv4_available",
            "DSV4 pool budget",
            _STATE,
            ("available_bytes",),
            informational="the DeepSeek V4 pools' budget as computed; the pools are logged apart",
        ),
    ),
}
"""Lines whose sizes become rows as they are (`memledger.engine.lines` reads them)."""


@dataclass(frozen=True)
class PlatformWords:
    """What a platform calls the things rows are about (labels only; row ids stay)."""

    graphs: str
    collectives: str


PLATFORM_WORDS: dict[str, PlatformWords] = {
    "cuda": PlatformWords("CUDA graphs", "NCCL"),
    # torch_npu captures ACL graphs ("NPU graph" in SGLang's lines); collectives are HCCL.
    "ascend": PlatformWords("NPU graphs", "HCCL"),
    # ROCm: torch.cuda graphs are HIP graphs, collectives RCCL.
    "rocm": PlatformWords("HIP graphs", "RCCL"),
}


def platform_of(
    args: dict[str, object], oom_devices: set[str], markers: frozenset[str] = frozenset()
) -> str:
    """`ascend` (--device npu, an Ascend-only line), `rocm` (HIP OOM text, aiter backends, a
    ROCm-only line: sglang.lines.PLATFORM_MARKERS) or `cuda`."""
    if args.get("device") == "npu" or "ascend" in markers:
        return "ascend"
    if (
        "rocm" in markers
        or "HIP" in oom_devices
        or args.get("attention_backend") == "aiter"
        or args.get("enable_aiter_allreduce_fusion") is True
    ):
        return "rocm"
    return "cuda"


@dataclass(frozen=True)
class LogSetting:
    """A setting no server_args field holds but a log line reveals: `log.<name>` in parameters."""

    name: str
    kind: EventKind
    keys: tuple[str, ...] = ()
    """Keys of the first matching line: a value as printed, a size as its printed text
    (`28.01 MB`); several keys are joined with `/` (`1/5`)."""
    role: str | None = None
    """Only lines whose `role` value is this (`target` / `draft`)."""
    count: bool = False
    """The number of matching lines instead of a value (one line per instance)."""
    unless_arg: str | None = None
    """Not recorded when server_args already holds the same value under this name."""


LOG_SETTINGS: tuple[LogSetting, ...] = (
    # SGLANG_K3_WEIGHT_SHARD_LAYERS / the fork's weight sharding (target and draft).
    LogSetting("weight_sharded_layers", EventKind.WEIGHT_SHARD_INFO, ("sharded_layers",), "target"),
    LogSetting("weight_shard_group_size", EventKind.WEIGHT_SHARD_INFO, ("group_size",), "target"),
    LogSetting("requant_then_shard", EventKind.WEIGHT_SHARD_INFO, ("requant_then_shard",)),
    LogSetting("requant_then_shard_weights", EventKind.WEIGHT_SHARD_INFO, ("requant_weights",)),
    LogSetting("hoisted_ag", EventKind.WEIGHT_SHARD_INFO, ("hoisted", "hoisted_of"), "target"),
    # SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD: `DFlash draft: N weight-sharded layers`.
    LogSetting(
        "draft_weight_sharded_layers", EventKind.WEIGHT_SHARD_INFO, ("sharded_layers",), "draft"
    ),
    LogSetting("draft_hoisted_ag", EventKind.WEIGHT_SHARD_INFO, ("hoisted", "hoisted_of"), "draft"),
    # SGLANG_DSPARK_SWA_POOL_MULTIPLIER and the window slots each request reserves.
    LogSetting("dspark_slots_per_req", EventKind.DSPARK_SLOT_MAP, ("slots_per_req",)),
    LogSetting("dspark_swa_pool_multiplier", EventKind.DSPARK_SLOT_MAP, ("multiplier",)),
    # One `All Reduce config` line per CustomAllReduceV2 instance (one per intra-node group).
    LogSetting("custom_all_reduce_instances", EventKind.ALL_REDUCE_CONFIG, count=True),
    LogSetting(
        "custom_all_reduce_symmetric_memory", EventKind.ALL_REDUCE_CONFIG, ("symmetric_memory",)
    ),
    LogSetting("custom_all_reduce_local_buffer", EventKind.ALL_REDUCE_CONFIG, ("local_buffer",)),
    # SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK (DeepEP v2 prints it; v1 does not).
    LogSetting(
        "deepep_max_dispatch_tokens_per_rank",
        EventKind.DEEPEP_BUFFER,
        ("max_dispatch_tokens_per_rank",),
    ),
    LogSetting("deepep_use_fp8_dispatch", EventKind.DEEPEP_BUFFER, ("use_fp8_dispatch",)),
    # `auto` in server_args resolves to a torch dtype (0.5.3-0.5.12 line, else the KV line).
    LogSetting("kv_cache_dtype", EventKind.KV_DTYPE, ("dtype",)),
    LogSetting("kv_cache_dtype", EventKind.KV_ALLOCATED, ("dtype",)),
    # The batch sizes captured when server_args left them to SGLang (or differ from it).
    LogSetting(
        "cuda_graph_bs", EventKind.CAPTURE_BS, ("bs",), "target", unless_arg="cuda_graph_bs"
    ),
    LogSetting(
        "cuda_graph_bs", EventKind.CAPTURE_BEGIN, ("bs",), "target", unless_arg="cuda_graph_bs"
    ),
)
"""Settings the log reveals only indirectly, by line kind and key. The first entry of a name that
finds a line wins; a setting whose line is absent is not recorded (never guessed)."""
