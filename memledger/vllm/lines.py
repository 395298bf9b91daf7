"""Every vLLM log line memledger reads: one `VllmLine` per wording, with the releases that print it.

Mirrors `memledger/sglang/lines.py` (one spec per line kind), for an engine whose lines are read
by regular expressions on the message rather than a grammar: vLLM's memory lines are few, fixed
sentences, and the prefix before them varies (below). Each entry:

* `kind`: what the line is (a reading kind; several wordings of one line share it);
* `pattern`: a regex searched in the message; each named group is a fact, typed by its name's
  suffix (`_gib`, `_gb`, `_mib`: sizes; `_bytes`: an integer of bytes; `_n`: a count, thousands
  separators allowed; anything else: a float as printed);
* `words`: case-sensitive substrings one of which the physical line must hold (the prefilter);
* `first`/`last`: the first and last release read that prints this wording (None: older than /
  still in the oldest / newest wheel read: 0.5.4, 0.6.4.post1, 0.7.3, 0.10.2, 0.11.0, 0.29.0);
* `source`: the wheel line that prints it, `vX path:line`.

The `file.py:N` tag in vLLM's prefix is never read: it moves with every release (the same
`Available KV cache memory` line is gpu_worker.py:276, :298, :358, :508, :563 or :642).
Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass

NUM = r"-?\d+(?:\.\d+)?"
"""A number as vLLM prints it (%.2f, %.4f, format_gib's round(x, 2), a negative KV budget)."""
COUNT = r"\d{1,3}(?:,\d{3})+|\d+"
"""A count, with or without thousands separators (`42,656`, since v0.8 `f"{n:,}"`)."""
SIZE = r"-?\d+(?:\.\d+)? [KMG]iB"
"""A size with its unit (PyTorch's OOM text prints MiB or GiB)."""


@dataclass(frozen=True)
class VllmLine:
    """One wording of one vLLM log line."""

    kind: str
    pattern: str
    words: tuple[str, ...]
    first: str | None
    last: str | None
    source: str
    engine: str = "any"
    """`v0`, `v1` or `any`: the engine generation that prints it (dates a log)."""


LINES: tuple[VllmLine, ...] = (
    # ---- weights
    VllmLine(
        "weights",
        rf"Loading model weights took (?P<weights_gb>{NUM}) GB",
        ("Loading model weights took",),
        None,
        "0.7.3",
        "v0.6.4.post1 vllm/worker/model_runner.py:1077 (model_memory_usage / 2**30: GiB, "
        "printed 'GB'); v0.7.3 vllm/v1/worker/gpu_model_runner.py:1060 (early V1)",
    ),
    VllmLine(
        "weights",
        rf"Model loading took (?P<weights_gib>{NUM}) (?:GiB|GB)(?: memory)? and",
        ("Model loading took",),
        "0.8.0",
        None,
        "v0.10.2 vllm/v1/worker/gpu_model_runner.py:2392 ('%.4f GiB and'); "
        "v0.29.0 vllm/v1/worker/gpu_model_runner.py:5472 ('%s GiB memory and')",
    ),
    # ---- V0 profiling (vllm/worker/worker.py determine_num_available_blocks)
    VllmLine(
        "profile",
        rf"Memory profiling results: total_gpu_memory=(?P<total_gpu_gib>{NUM})GiB"
        rf" initial_memory_usage=(?P<initial_memory_usage_gib>{NUM})GiB"
        rf" peak_torch_memory=(?P<peak_torch_memory_gib>{NUM})GiB"
        rf"(?: memory_usage_post_profile=(?P<memory_usage_post_profile_gib>{NUM})GiB)?"
        rf"(?: non_torch_memory=(?P<non_torch_gib>{NUM})GiB)?"
        rf"(?: kv_cache_size=(?P<kv_cache_gib>{NUM})GiB)?"
        rf"(?: gpu_memory_utilization=(?P<gpu_memory_utilization>{NUM}))?",
        ("Memory profiling results:",),
        "0.6.3",
        "0.6.4.post1",
        "v0.6.4.post1 vllm/worker/worker.py:232",
        "v0",
    ),
    VllmLine(
        "usable",
        rf"the current vLLM instance can use\s+total_gpu_memory \((?P<total_gpu_gib>{NUM}) ?GiB\)"
        rf" x gpu_memory_utilization \((?P<gpu_memory_utilization>{NUM})\)"
        rf" = (?P<usable_gib>{NUM}) ?GiB",
        ("the current vLLM instance can use",),
        "0.6.5",
        None,
        "v0.7.3 vllm/worker/worker.py:251-256; v0.10.2 vllm/worker/worker.py:274-279",
        "v0",
    ),
    VllmLine(
        "breakdown",
        rf"model weights take (?P<weights_gib>{NUM})GiB; non_torch_memory takes "
        rf"(?P<non_torch_gib>{NUM})GiB; PyTorch activation peak memory takes "
        rf"(?P<activation_peak_gib>{NUM})GiB; the rest of the memory reserved for KV Cache is "
        rf"(?P<kv_cache_gib>{NUM})GiB",
        ("model weights take",),
        "0.6.5",
        None,
        "v0.7.3 vllm/worker/worker.py:258-265 (available = usable - non_kv_cache_memory)",
        "v0",
    ),
    VllmLine(
        "profile_table",
        rf"(?:^|[\]\s])(?:total_gpu_memory\s+(?P<total_gpu_gib>{NUM}) ?GiB"
        rf"|gpu_memory_utilization\s+(?P<gpu_memory_utilization>{NUM})"
        rf"|the current vLLM instance can use\s+(?P<usable_gib>{NUM}) ?GiB"
        rf"|model weights take\s+(?P<weights_gib>{NUM}) ?GiB"
        rf"|non_torch_memory\s+(?P<non_torch_gib>{NUM}) ?GiB"
        rf"|PyTorch activation peak memory\s+(?P<activation_peak_gib>{NUM}) ?GiB"
        rf"|available_kv_cache_memory\s+(?P<kv_cache_gib>{NUM}) ?GiB)\s*$",
        (
            "total_gpu_memory",
            "gpu_memory_utilization",
            "the current vLLM instance can use",
            "model weights take",
            "non_torch_memory",
            "PyTorch activation peak memory",
            "available_kv_cache_memory",
        ),
        "0.6.5",
        "0.6.5",
        "vllm PR #10511 branch (Dec 2024) vllm/worker/worker.py: the profile as a table, one "
        "figure a line (not in a release wheel read; the figures are those of v0.7.3 "
        "vllm/worker/worker.py:251-265)",
        "v0",
    ),
    VllmLine(
        "blocks",
        rf"(?:# )?(?P<device>GPU|cuda|\w+) blocks: (?P<gpu_blocks_n>{COUNT}), "
        rf"# CPU blocks: (?P<cpu_blocks_n>{COUNT})",
        (" blocks: ",),
        None,
        None,
        "v0.5.4 vllm/executor/gpu_executor.py:102; v0.6.4.post1 "
        "vllm/executor/distributed_gpu_executor.py:57; v0.7.3 vllm/executor/executor_base.py:111 "
        "('# %s blocks', the device name: 'cuda')",
        "v0",
    ),
    VllmLine(
        "blocks",
        rf"# GPU blocks: (?P<gpu_blocks_n>{COUNT})\s*$",
        ("# GPU blocks: ",),
        "0.7.0",
        "0.7.3",
        "v0.7.3 vllm/v1/core/kv_cache_utils.py:522 (early V1: no CPU blocks)",
        "v1",
    ),
    # ---- V1 profiling (vllm/v1/worker/gpu_worker.py determine_available_memory)
    VllmLine(
        "kv_available",
        rf"Available KV cache memory: (?P<kv_cache_gib>{NUM}) GiB",
        ("Available KV cache memory:",),
        "0.8.0",
        None,
        "v0.10.2 vllm/v1/worker/gpu_worker.py:298; v0.29.0 vllm/v1/worker/gpu_worker.py:626",
        "v1",
    ),
    VllmLine(
        "kv_reserved",
        rf"Initial free memory (?P<initial_free_gib>{NUM}) ?GiB, reserved "
        rf"(?P<kv_cache_gib>{NUM}) ?GiB memory for KV Cache as specified by kv_cache_memory_bytes",
        ("as specified by kv_cache_memory_bytes",),
        "0.10.2",
        None,
        "v0.10.2 vllm/v1/worker/gpu_worker.py:240-250; v0.29.0 vllm/v1/worker/gpu_worker.py:533",
        "v1",
    ),
    VllmLine(
        "kv_tokens",
        rf"GPU KV cache size: (?P<kv_tokens_n>{COUNT}) tokens",
        ("GPU KV cache size:",),
        "0.8.0",
        None,
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:864; v0.29.0 "
        "vllm/v1/core/kv_cache_utils.py:2033 (one line with the concurrency)",
        "v1",
    ),
    VllmLine(
        "concurrency",
        rf"Maximum concurrency for (?P<max_model_len_n>{COUNT}) tokens(?: per request)?"
        rf"(?:: (?P<max_concurrency>{NUM})x)?",
        ("Maximum concurrency for",),
        "0.6.4",
        None,
        "v0.6.4.post1 vllm/executor/gpu_executor.py:117; v0.7.3 "
        "vllm/executor/executor_base.py:116, vllm/v1/core/kv_cache_utils.py:525; "
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:868; v0.29.0 vllm/v1/core/kv_cache_utils.py:2034",
    ),
    VllmLine(
        "num_gpu_blocks",
        rf"num_gpu_blocks is: (?P<num_gpu_blocks_n>{COUNT})",
        ("num_gpu_blocks is:",),
        "0.10.0",
        None,
        "v0.11.0 vllm/v1/metrics/loggers.py:149",
        "v1",
    ),
    VllmLine(
        "encoder_budget",
        rf"Encoder cache will be initialized with a budget of (?P<encoder_cache_budget_n>{COUNT})"
        r" tokens",
        ("Encoder cache will be initialized",),
        "0.9.0",
        None,
        "v0.10.2 vllm/v1/worker/gpu_model_runner.py:3001; "
        "v0.29.0 vllm/v1/worker/gpu_model_runner.py:6547",
        "v1",
    ),
    # ---- CUDA graphs
    VllmLine(
        "graph_begin",
        r"Capturing the model for CUDA graphs|Capturing cudagraphs for decoding"
        r"|Capturing CUDA graphs \(",
        ("Capturing the model for CUDA graphs", "Capturing cudagraphs", "Capturing CUDA graphs"),
        None,
        None,
        "v0.5.4 vllm/worker/model_runner.py:1024; v0.7.3 vllm/worker/model_runner.py:1434; "
        "v0.10.2 vllm/v1/worker/gpu_model_runner.py:3134 (tqdm description)",
    ),
    VllmLine(
        "graph_done",
        rf"Graph capturing finished in (?P<graph_secs>{NUM}) secs(?:, took (?P<graph_gib>{NUM}) "
        r"GiB)?",
        ("Graph capturing finished",),
        None,
        None,
        "v0.5.4 vllm/worker/model_runner.py:1225 (no size); v0.6.4.post1 "
        "vllm/worker/model_runner.py:1518; v0.10.2 vllm/v1/worker/gpu_model_runner.py:3118; "
        "v0.29.0 vllm/v1/worker/gpu_model_runner.py:7002",
    ),
    VllmLine(
        "graph_sizes",
        r"Profiling CUDA graph memory: (?P<graph_modes>[A-Z_]+=\d+ \(largest=\d+\)"
        r"(?:, [A-Z_]+=\d+ \(largest=\d+\))*)",
        ("Profiling CUDA graph memory:",),
        "0.21.0",
        None,
        "v0.29.0 vllm/v1/worker/gpu_model_runner.py:6756-6769",
        "v1",
    ),
    VllmLine(
        "graph_estimate",
        rf"Estimated CUDA graph memory: (?P<graph_estimate_gib>{NUM}) GiB total",
        ("Estimated CUDA graph memory:",),
        "0.21.0",
        None,
        "v0.29.0 vllm/v1/worker/gpu_model_runner.py:6895",
        "v1",
    ),
    VllmLine(
        "graph_profiling",
        rf"CUDA graph memory profiling is enabled .*?--gpu-memory-utilization="
        rf"(?P<gpu_memory_utilization>{NUM}) is equivalent to --gpu-memory-utilization="
        rf"(?P<equivalent_gpu_memory_utilization>{NUM}) .*?increase --gpu-memory-utilization to "
        rf"(?P<suggested_gpu_memory_utilization>{NUM})",
        ("CUDA graph memory profiling is enabled",),
        "0.21.0",
        None,
        "v0.29.0 vllm/v1/worker/gpu_worker.py:641-652",
        "v1",
    ),
    VllmLine(
        "graph_profiling_off",
        rf"CUDA graph memory profiling is disabled .*?increasing --gpu-memory-utilization from "
        rf"(?P<gpu_memory_utilization>{NUM}) to (?P<suggested_gpu_memory_utilization>{NUM})",
        ("CUDA graph memory profiling is disabled",),
        "0.21.0",
        None,
        "v0.29.0 vllm/v1/worker/gpu_worker.py:658-667",
        "v1",
    ),
    # ---- the post-capture summary with the --kv-cache-memory suggestion
    VllmLine(
        "summary",
        rf"Free memory on device \((?P<free_gib>{NUM})/(?P<total_gpu_gib>{NUM}) GiB\) on startup\."
        rf" Desired GPU memory utilization is \((?P<gpu_memory_utilization>{NUM}), "
        rf"(?P<requested_gib>{NUM}) GiB\)\. Actual usage is (?P<weights_gib_summary>{NUM}) GiB for "
        rf"weight, (?P<activation_peak_gib>{NUM}) GiB for peak activation, "
        rf"(?P<non_torch_gib>{NUM}) GiB for non-torch memory, and (?P<graph_gib>{NUM}) GiB for "
        r"CUDAGraph memory\. Replace gpu_memory_utilization config with `--kv-cache-memory="
        r"(?P<suggested_kv_cache_memory_bytes>\d+)`"
        r"(?: to fit into requested memory, or `--kv-cache-memory="
        r"(?P<suggested_kv_cache_memory_bytes_full>\d+)`)?"
        r"(?: to fully utilize gpu memory\. Current kv cache memory in use is "
        r"(?P<kv_cache_memory_in_use_bytes>\d+) bytes)?",
        ("Free memory on device (",),
        "0.10.0",
        "0.20.0",
        "v0.10.2 vllm/v1/worker/gpu_worker.py:373-389",
        "v1",
    ),
    VllmLine(
        "summary",
        rf"Free memory on device \((?P<free_gib>{NUM})/(?P<total_gpu_gib>{NUM}) GiB\) on startup\."
        rf" Desired GPU memory utilization is \((?P<gpu_memory_utilization>{NUM}), "
        rf"(?P<requested_gib>{NUM}) GiB\)\. Actual usage is (?P<consumed_gib>{NUM}) GiB for "
        rf"consumed memory \(weights \+ non-torch\), (?P<activation_peak_gib>{NUM}) GiB for peak "
        rf"activation, and (?P<graph_gib>{NUM}) GiB for CUDAGraph memory\. Replace "
        r"gpu_memory_utilization config with `--kv-cache-memory="
        r"(?P<suggested_kv_cache_memory_bytes>\d+)`"
        rf"(?: \({NUM} GiB\) to fit into requested memory, or `--kv-cache-memory="
        r"(?P<suggested_kv_cache_memory_bytes_full>\d+)`)?"
        rf"(?: \({NUM} GiB\) to fully utilize gpu memory\. Current kv cache memory in use is "
        rf"(?P<kv_cache_gib>{NUM}) GiB)?",
        ("Free memory on device (",),
        "0.21.0",
        None,
        "v0.29.0 vllm/v1/worker/gpu_worker.py:839-857 (peak activation includes the graph "
        "estimate: :599-601)",
        "v1",
    ),
    # ---- the engine's configuration line (version, model, max_seq_len, parallel sizes)
    VllmLine(
        "config",
        r"Initializing a(?:n| V1) LLM engine (?:\(v(?P<version>[0-9][0-9A-Za-z.+_-]{0,60})\) )?"
        r"with config:",
        ("LLM engine ",),
        None,
        None,
        "v0.6.4.post1 vllm/engine/llm_engine.py:250; v0.10.2 vllm/v1/engine/core.py:76; "
        "v0.29.0 vllm/v1/engine/core.py:124",
    ),
)
"""Every memory line read, in the order a startup prints them."""
