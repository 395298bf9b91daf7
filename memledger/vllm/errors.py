"""vLLM's failure texts: one `VllmError` per wording, with the phase it stops and what to turn.

The same shape as `lines.VllmLine` (a regex whose named groups are facts, prefilter words, the
releases and the wheel line), plus the startup phase the failure belongs to; the knobs that
address it are `knobs.LEVERS[id]`. The diagnosis (`memledger.diagnosis.vllm`) reads these; the
wording decides the failure, never the prefix.

A V1 error raised in a worker is printed by the engine core inside a traceback
(`ERROR ... [core.py:N] ValueError: ...`), and since 2026 wraps its message over several
lines; the reader joins a wrapped message before matching (`memledger.input.vllm_reader`).
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.vllm.lines import COUNT, NUM, SIZE


@dataclass(frozen=True)
class VllmError:
    """One wording of one vLLM (or PyTorch) failure text."""

    id: str
    pattern: str
    words: tuple[str, ...]
    phase: str
    """`device_check` (before weights), `load`, `profile` (the dummy forward pass),
    `kv_sizing` (the KV budget is checked), `graph_capture`, `unknown` (from the traceback)."""
    first: str | None
    last: str | None
    source: str
    continued: str = ""
    """A regex for where the message starts when vLLM (or a paste) breaks it over lines: a line
    matching it is joined with the next lines before `pattern` is tried."""
    engine_neutral: bool = False
    """PyTorch's or the CUDA runtime's text, which any engine prints: read in a vLLM log, but no
    evidence that a log is vLLM's (a bare OOM line pasted alone stays SGLang's, memledger's
    default: issue 24, no OOM text is left unread)."""


ERRORS: tuple[VllmError, ...] = (
    VllmError(
        "no_cache_memory",
        r"No available memory for the cache blocks",
        ("No available memory for the cache blocks",),
        "kv_sizing",
        None,
        None,
        "v0.6.4.post1 vllm/worker/worker.py:493 (raise_if_cache_size_invalid: num_gpu_blocks <= "
        "0); v0.10.2 vllm/v1/core/kv_cache_utils.py:691 (available_memory <= 0); v0.29.0 "
        "vllm/v1/core/kv_cache_utils.py:860 (adds the CPU-backend note and a docs link)",
    ),
    VllmError(
        "max_seq_len_v0",
        rf"The model's max seq len \((?P<max_model_len_n>{COUNT})\) is larger than the maximum "
        rf"number of tokens that can be stored in KV cache \((?P<kv_tokens_n>{COUNT})\)",
        ("is larger than the maximum number of tokens",),
        "kv_sizing",
        None,
        None,
        "v0.6.4.post1 vllm/worker/worker.py:499-503 (max_model_len > block_size * num_gpu_blocks)",
    ),
    VllmError(
        "max_seq_len_v1",
        rf"To serve at least one request with the models?'s max seq len \((?P<max_model_len_n>"
        rf"{COUNT})\),\s*\(?(?P<kv_needed_gib>{NUM}) GiB KV cache is needed"
        rf"(?:, which is larger than the available KV cache memory \((?P<kv_cache_gib>{NUM}) "
        r"GiB\)\.)?"
        rf"(?:\s*Based on the available memory,\s*the estimated maximum model length is "
        rf"(?P<estimated_max_model_len_n>{COUNT}))?",
        ("To serve at least one request with the model",),
        "kv_sizing",
        "0.7.0",
        None,
        "v0.7.3 vllm/v1/core/kv_cache_utils.py:466 ('models's', no estimate); v0.10.2 "
        "vllm/v1/core/kv_cache_utils.py:706-714 (estimate, since PR #16168); v0.29.0 "
        "vllm/v1/core/kv_cache_utils.py:876-886 ('model's')",
        continued=r"To serve at least one request with the models?'s max seq len \(\d+\),\s*$",
    ),
    VllmError(
        "free_memory",
        rf"Free memory on device(?: (?P<device>[\w:]+))? \((?P<free_gib>{NUM})/"
        rf"(?P<total_gpu_gib>{NUM}) GiB\) on startup is less than desired GPU memory utilization "
        rf"\((?P<gpu_memory_utilization>{NUM}), (?P<requested_gib>{NUM}) GiB\)",
        ("is less than desired GPU memory utilization",),
        "device_check",
        "0.9.0",
        None,
        "v0.10.2 vllm/v1/worker/gpu_worker.py:181 (init_device); v0.29.0 "
        "vllm/v1/worker/utils.py:527 (request_memory, names the device)",
    ),
    VllmError(
        "torch_oom",
        rf"CUDA out of memory\. Tried to allocate (?P<oom_tried_to_allocate_size>{SIZE})\. "
        rf"GPU \d+ has a total capac(?:i|)ty of (?P<total_gpu_gib>{NUM}) GiB of which "
        rf"(?P<oom_free_size>{SIZE}) is free\.(?: Process \d+ has {SIZE} memory in use\.)?"
        rf"(?: Of the allocated memory (?P<oom_allocated_by_pytorch_size>{SIZE}) is allocated by "
        r"PyTorch)?",
        ("CUDA out of memory",),
        "unknown",
        None,
        None,
        "PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp), not vLLM; the phase "
        "comes from the last startup line before it",
        engine_neutral=True,
    ),
    VllmError(
        "cuda_error_oom",
        r"CUDA error: out of memory",
        ("CUDA error: out of memory",),
        "unknown",
        None,
        None,
        "the CUDA runtime through PyTorch (an allocation inside a kernel or graph capture)",
        engine_neutral=True,
    ),
    VllmError(
        "engine_failed",
        r"EngineCore failed to start",
        ("EngineCore failed to start",),
        "unknown",
        "0.8.0",
        None,
        "v0.29.0 vllm/v1/engine/core.py:1374 (logger.exception around the engine core's init)",
    ),
)
"""Every failure text read; the first that matches a line decides its kind."""


GRAPH_FRAMES: tuple[str, ...] = (
    "capture_model",
    "_capture_cudagraphs",
    "capture_end",
    "torch.cuda.graph",
    "cudagraph_capture",
)
"""Traceback frame words that put an OOM in CUDA-graph capture (v0.10.2
vllm/v1/worker/gpu_model_runner.py capture_model; torch/cuda/graphs.py capture_end)."""

PROFILE_FRAMES: tuple[str, ...] = ("profile_run", "determine_available_memory", "_dummy_run")
"""Frame words that put an OOM in the profiling forward pass (v0.10.2
vllm/v1/worker/gpu_worker.py determine_available_memory -> profile_run)."""

LOAD_FRAMES: tuple[str, ...] = ("load_model", "load_weights")
"""Frame words that put an OOM in weight loading."""
