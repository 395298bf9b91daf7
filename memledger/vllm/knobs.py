"""vLLM's memory knobs: what each one moves, its flag and default, and where vLLM reads it.

One `Knob` per setting the diagnosis may name, citing where vLLM reads it; `LEVERS`, the knobs
each failure is answered with, in the order to try, with the direction that helps and why. The
diagnosis (`memledger.diagnosis.vllm`) computes a value only from numbers the log printed and
says how, in place of the lever's why; a knob without a computable value is named with its
direction and the why.
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
        "v0.10.2 vllm/config/cache.py:42 (gpu_memory_utilization: float = 0.9)",
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
        "v0.10.2 vllm/v1/worker/gpu_model_runner.py:2981 profile_run (_dummy_run of "
        "max_num_tokens)",
    ),
    Knob(
        "max_num_seqs",
        "--max-num-seqs",
        "the largest decode batch, so the largest CUDA graph captured and the sampler's buffers",
        "256 (V0); 1024 on large GPUs for the V1 API server",
        "v0.10.2 vllm/config/scheduler.py:43 max_num_seqs",
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
        "v0.10.2 vllm/config/__init__.py:360 ModelConfig.enforce_eager",
    ),
    Knob(
        "cudagraph_capture_sizes",
        "--cuda-graph-sizes / compilation_config.cudagraph_capture_sizes",
        "fewer or smaller captured batch sizes: less CUDA-graph memory",
        "up to max_num_seqs (512 at most)",
        "v0.10.2 vllm/config/compilation.py:281 cudagraph_capture_sizes",
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


@dataclass(frozen=True)
class Lever:
    """One knob's move for one failure: a `KNOBS` id, the direction that helps, and why (what a
    suggestion without a value says; `{kv}` is the KV memory the log printed). A lever without a
    why is named only with a value."""

    knob: str
    direction: str
    why: str = ""


_PROFILE_PEAK = Lever(
    "max_num_batched_tokens",
    "lower",
    "a smaller profiling pass holds a smaller activation peak out of the budget",
)
_CAPTURE_LEVERS = (
    Lever("enforce_eager", "enable", "no CUDA graphs at all (slower decoding)"),
    Lever(
        "max_num_seqs", "lower", "the largest captured batch, so the largest graph, shrinks with it"
    ),
)

LEVERS: dict[str, tuple[Lever, ...]] = {
    "free_memory": (Lever("gpu_memory_utilization", "lower"),),
    "max_seq_len_v1": (
        Lever(
            "max_model_len",
            "lower",
            "the log cut the available KV figure: lower it until one request fits",
        ),
        Lever(
            "gpu_memory_utilization",
            "raise",
            "the budget must grow by the shortfall (not printed whole)",
        ),
        Lever(
            "max_num_batched_tokens",
            "lower",
            "the profiling pass runs max_num_batched_tokens tokens: its activation peak is held "
            "out of the KV budget, and shrinks with it (a 2026 default doubled it to 16384 on GPUs "
            "of 160 GiB or more)",
        ),
    ),
    "max_seq_len_v0": (
        Lever("max_model_len", "lower"),
        Lever("gpu_memory_utilization", "raise", "the budget must hold one max-length request"),
    ),
    "no_cache_memory": (
        Lever(
            "gpu_memory_utilization",
            "raise",
            "the budget (total x utilization) is smaller than weights + activation peak + "
            "non-torch memory",
        ),
        _PROFILE_PEAK,
    ),
    "kv_check": (
        Lever("max_model_len", "lower", "one request of max_model_len tokens must fit in {kv}"),
        Lever("gpu_memory_utilization", "raise", "a larger budget leaves more for the KV cache"),
        _PROFILE_PEAK,
    ),
    "graph_capture_oom": (
        Lever(
            "gpu_memory_utilization",
            "lower",
            "graphs are captured after the KV cache took the budget (before 0.21.0, or when the "
            "estimate missed): they need room outside it",
        ),
        *_CAPTURE_LEVERS,
    ),
    "oom": (
        Lever(
            "gpu_memory_utilization",
            "lower",
            "an allocation outside the budget failed: leave more headroom",
        ),
    ),
}
"""By failure (a `VllmError` id, `kv_check`: the engine stopped right after sizing the KV
cache, `graph_capture_oom` / `oom`: an out-of-memory text in graph capture / elsewhere)."""
