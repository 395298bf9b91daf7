"""Intervals whose whole remainder SGLang's lifecycle names: measured phase rows.

Between two avail readings SGLang runs a known sequence of steps. Where every allocation of an
interval belongs to one phase of that sequence (lifecycle.py), what the interval leaves after
its logged rows and formulas is that phase's own memory, measured by the two readings: a row
named for the phase, not `unexplained`. Where part of the phase is a formula of known inputs
(the FlashInfer workspace, the LoRA pool with --model-config), the formula is carved first and
the measured row holds the rest.

An entry holds only for its interval (the closing checkpoint and the checkpoints it may open
at) and, when it has one, its condition on the log. A measured row is made only from a
remainder that is not negative beyond the interval's reading error (a release is not a phase's
allocation) and from a closing reading above 0.00 (free memory that bottomed out caps the drop):
otherwise it stays an unexplained row. Formula rows of the interval that could not be sized
stay inside the measured row, and its note names them.

Each entry cites SGLang's source for what runs between the two readings: `vX path:line`
under `python/sglang/srt/` at tag vX (the PyPI wheel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memledger.model.events import EventKind
from memledger.model.ledger import RowGroup
from memledger.sglang.releases import ReleaseRange

FIRST_CAPTURE = "first_capture_begin"
"""The closing checkpoint `first capture begin, whatever its prefix`: an entry's `ends_at`, and
a formula's `interval` alias (the attention backends are built right before the first capture,
whichever kind)."""

HYBRID_STATE_CLASSES: tuple[str, ...] = (
    # v0.5.8 model_executor/model_runner.py:1479-1516 (hybrid_gdn_config, mamba2_config,
    # kimi_linear_config); v0.5.23 configs/hybrid_arch.py:39-155 (mambaish_config).
    "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM",
    "FalconH1ForCausalLM",
    "NemotronHForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "KimiLinearForCausalLM",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Lfm2VlForConditionalGeneration",
    "MambaForCausalLM",
    "Mamba2ForCausalLM",
    "FalconMambaForCausalLM",
    "JetNemotronForCausalLM",
    "BailingMoeV2_5ForCausalLM",
)
"""Model classes (the `type=` of the target's load-end line, or config.json's architecture)
whose config SGLang gives a Mamba/linear-attention state pool (`mambaish_config`): their pool
interval holds that pool."""

HYBRID_CONFIG_KEYS: tuple[str, ...] = (
    "linear_num_value_heads",  # Qwen3-Next / Qwen3.5 GDN (v0.5.23 configs/qwen3_next.py:246)
    "mamba_d_state",  # Falcon-H1 (v0.5.23 configs/falcon_h1.py:231)
    "ssm_state_size",  # NemotronH, Mamba2 (v0.5.23 configs/nemotron_h.py:361)
    "conv_L_cache",  # LFM2's short-conv state (v0.5.23 configs/lfm2.py:72)
)
"""config.json keys only a model with a per-request recurrent state has (besides
`linear_attn_config`, which --model-config reads as linear_attn_layers)."""


def hybrid_config(architecture: str | None, keys: set[str], linear_layers: int | None) -> bool:
    """Whether --model-config describes a model with a Mamba/linear-attention state pool."""
    return (
        architecture in HYBRID_STATE_CLASSES
        or bool(linear_layers)
        or any(key in keys for key in HYBRID_CONFIG_KEYS)
    )


@dataclass(frozen=True)
class SpanFacts:
    """What an entry's condition may look at: the log's server_args and what it printed."""

    args: dict[str, object] = field(default_factory=dict)
    model_type: str | None = None
    """The class on the target's load-end line (`type=Qwen3NextForCausalLM`)."""
    state_pool_line: bool = False
    """The log printed the Mamba/SSM pool's own size line (`Mamba Cache is allocated`)."""
    hybrid_config: bool = False
    """--model-config describes linear-attention or Mamba layers."""
    lora_line: bool = False
    """The log printed the LoRA manager's `Using X as backend of LoRA kernels.` line."""


@dataclass(frozen=True)
class MeasuredSpan:
    """One interval whose remainder is a named phase's own memory."""

    row_id: str
    label: str
    ends_at: str
    """The closing checkpoint id (`memory_pool_end`) or `FIRST_CAPTURE`."""
    opens_at: frozenset[EventKind]
    """The kinds of checkpoint the interval may start at."""
    group: RowGroup
    allocates: str
    """What SGLang runs between the two readings: the row's note."""
    releases: ReleaseRange
    source: str
    applies: Callable[[SpanFacts], bool] = lambda facts: True
    stands_for: str | None = None
    """A formula id this row takes the place of when the formula could not be sized (its
    unknown row is then not repeated)."""


def _lora_enabled(facts: SpanFacts) -> bool:
    # --lora-paths enables LoRA (v0.5.16 server_args.py:7772-7777); --enable-lora from 0.4.9;
    # a paste without server_args shows it by the LoRA manager's own line (v0.5.8
    # lora/lora_manager.py:83, built by init_lora_manager before the pool).
    return (
        bool(facts.args.get("enable_lora")) or bool(facts.args.get("lora_paths")) or facts.lora_line
    )


def _state_pool_unprinted(facts: SpanFacts) -> bool:
    hybrid = facts.hybrid_config or facts.model_type in HYBRID_STATE_CLASSES
    return hybrid and not facts.state_pool_line


MEASURED_SPANS: tuple[MeasuredSpan, ...] = (
    MeasuredSpan(
        "attention_backend_init",
        "attention backend init (pool end -> first capture begin)",
        FIRST_CAPTURE,
        frozenset({EventKind.MEMORY_POOL_END}),
        RowGroup.WORKSPACE,
        "what SGLang builds between `Memory pool end` and the first graph capture's reading, "
        "none of it printed with a size: on CUDA init_cublas (a 16x16 matmul: the cuBLAS "
        "handle and PyTorch's cuBLAS workspace), the attention backend(s) (FlashInfer's "
        "wrappers each keep an 8 MiB int workspace, flashinfer 0.2.5 prefill.py:1087 / "
        "decode.py:643, and an 'auto' paged-prefill wrapper a 64 MiB index buffer, "
        ":1076-1083; the triton, FA3 and hybrid linear-attention backends' metadata buffers), "
        "kernel_warmup (FlashInfer autotune) and the kernel modules loaded on first use; "
        "before them the routed-experts capturer when --enable-return-routed-experts (v0.5.8 "
        "model_runner.py:568-569), after them DCP's replicated Q projection (formula "
        "dcp_q_replica, v0.5.23 model_runner.py:1130-1131)",
        ReleaseRange("0.4.0"),
        "v0.4.6.post5 model_executor/model_runner.py:303-305 (init_cublas, "
        "init_attention_backend, init_cuda_graphs; the capture's reading :1094); v0.5.8 "
        "model_executor/model_runner.py:571-575 (+ kernel_warmup :1688), reading :1998; v0.5.23 "
        "model_executor/model_runner_components/attention_backend_setup.py:82 (init_cublas in "
        "build_attention_backends), model_executor/model_runner.py:1105-1131",
    ),
    MeasuredSpan(
        "lora_pool",
        "LoRA adapter memory pool (measured: the pool interval's remainder)",
        "memory_pool_end",
        frozenset({EventKind.LOAD_END}),
        RowGroup.WORKSPACE,
        "with LoRA on, SGLang builds the LoRA manager and its memory pool (A/B buffers of "
        "max_loras_per_batch adapters x max_lora_rank for every target module of every layer) "
        "after the weights and before the KV pool, and prints no size: the pool interval's "
        "remainder after the logged pools and the formulas; --enable-lora-overlap-loading adds "
        "pinned host memory only (v0.5.16 lora/mem_pool.py:700-727); from 0.5.16 the MoE LoRA "
        "graph buffers are made here too (lora_manager.py:141-154). With --model-config and "
        "server_args' max_lora_rank and lora_target_modules the pool is the lora_pool formula",
        ReleaseRange("0.4.0"),
        "v0.5.8 model_executor/model_runner.py:534-535 (init_lora_manager) before "
        "init_memory_pool :555; v0.5.8 lora/mem_pool.py:202-240 (init_buffers); v0.5.23 "
        "model_executor/model_runner.py:733 (maybe_init_lora_manager)",
        _lora_enabled,
        stands_for="lora_pool",
    ),
    MeasuredSpan(
        "mamba_state_unprinted",
        "Mamba/SSM state pool (no size line: the pool interval's remainder)",
        "memory_pool_end",
        frozenset({EventKind.LOAD_END}),
        RowGroup.STATE_POOL,
        "a hybrid (Mamba/GDN/KDA) model's state pool is built with the KV pool, sized from the "
        "same budget (mamba_full_memory_ratio of it unless --max-mamba-cache-size or a "
        "disabled radix cache fixes the slots), but this log has no `Mamba Cache is "
        "allocated` line to read it from (bench_one_batch builds the same ModelRunner: "
        "v0.5.8 bench_one_batch.py:253-266): the pool interval's remainder after the logged "
        "KV pool and the formulas",
        ReleaseRange("0.5.2"),
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:141-204 (handle_max_mamba_cache), "
        ":370-380 (the Mamba pool with the request table); v0.5.10 mem_cache/memory_pool.py:"
        "268-323 (the pool and its size line)",
        _state_pool_unprinted,
    ),
)


def measured_span(ends_at: str, opens_at: EventKind, facts: SpanFacts) -> MeasuredSpan | None:
    """The entry naming the interval that ends at `ends_at` and opens at a checkpoint of kind
    `opens_at`, when its condition holds (the first such entry)."""
    for entry in MEASURED_SPANS:
        if entry.ends_at == ends_at and opens_at in entry.opens_at and entry.applies(facts):
            return entry
    return None
