"""vLLM's memory knobs: what each one moves, its flag and default, and where vLLM reads it.

One `Knob` per setting the diagnosis may name (`errors.VllmError.knobs` holds these ids). The
diagnosis (`memledger.diagnosis.vllm`) computes a value only from numbers the log printed and
says how; a knob without a computable value is named with its direction.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    """One vLLM setting that changes GPU memory at startup."""

    id: str
    flag: str
    moves: str
    """What it changes in the account (which row grows or shrinks)."""
    default: str
    source: str


KNOBS: tuple[Knob, ...] = (
    Knob(
        "gpu_memory_utilization",
        "--gpu-memory-utilization",
        "the budget (total x fraction): the KV cache gets what the budget leaves after weights, "
        "non-torch memory, the activation peak (and, since 0.21.0, the CUDA-graph estimate)",
        "0.9",
        "v0.10.2 vllm/config/cache.py (gpu_memory_utilization: float = 0.9)",
    ),
    Knob(
        "max_model_len",
        "--max-model-len",
        "the KV one request must fit (ceil(len / block_size) blocks); also the profiled shapes",
        "the model's context length",
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:694-714 (the check it must pass)",
    ),
    Knob(
        "max_num_batched_tokens",
        "--max-num-batched-tokens",
        "the profiling forward pass's size, so the activation peak held out of the budget",
        "8192 for the API server; 16384 on a GPU of 160 GiB or more since vllm#51726",
        "v0.10.2 vllm/v1/worker/gpu_model_runner.py profile_run (_dummy_run of max_num_tokens)",
    ),
    Knob(
        "max_num_seqs",
        "--max-num-seqs",
        "the largest decode batch, so the largest CUDA graph captured and the sampler's buffers",
        "256 (V0); 1024 on large GPUs for the V1 API server",
        "v0.10.2 vllm/config/scheduler.py max_num_seqs",
    ),
    Knob(
        "kv_cache_memory_bytes",
        "--kv-cache-memory",
        "sets the KV cache in bytes and skips profiling (gpu_memory_utilization is not applied)",
        "unset",
        "v0.10.2 vllm/v1/worker/gpu_worker.py:235-251",
    ),
    Knob(
        "enforce_eager",
        "--enforce-eager",
        "no CUDA graphs: their memory (and, since 0.21.0, their estimate in the budget) is gone",
        "False",
        "v0.10.2 vllm/config/__init__.py ModelConfig.enforce_eager",
    ),
    Knob(
        "cudagraph_capture_sizes",
        "--cuda-graph-sizes / compilation_config.cudagraph_capture_sizes",
        "fewer or smaller captured batch sizes: less CUDA-graph memory",
        "up to max_num_seqs (512 at most)",
        "v0.10.2 vllm/config/compilation.py cudagraph_capture_sizes",
    ),
    Knob(
        "kv_cache_dtype",
        "--kv-cache-dtype",
        "bytes per KV element (fp8: half of bf16), so tokens per GiB of KV",
        "auto (the model's dtype)",
        "v0.6.4.post1 vllm/worker/cache_engine.py:114-118",
    ),
)

KNOB = {knob.id: knob for knob in KNOBS}
