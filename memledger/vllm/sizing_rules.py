"""vLLM's KV-cache sizing, step by step and release by release, as data.

The same shape as `memledger/sglang/sizing_rules.py` (`SizingRule`: id, title, formula, first,
last, source `vX path:line`). `memledger.vllm.sizing` applies them to a log's printed numbers;
a rule whose release range does not hold the log's release (or era, when the release is not
printed) is not applied. Releases read: 0.5.4, 0.6.4.post1, 0.7.3, 0.10.2, 0.11.0, 0.29.0.
"""

from __future__ import annotations

from memledger.sglang.releases import ReleaseRange
from memledger.sglang.rule_record import SizingRule

REDUNDANCY_BUFFER_BYTES = 150 * (1 << 20)
"""The 150 MiB the `--kv-cache-memory` suggestion leaves (v0.10.2 gpu_worker.py:360)."""

DEFAULT_BLOCK_SIZE = 16
"""Tokens per KV block on CUDA unless `--block-size` says otherwise (v0.10.2
vllm/platforms/cuda.py:138; a hybrid or MLA model may use another)."""

RULES: tuple[SizingRule, ...] = (
    SizingRule(
        "usable",
        "The budget",
        "budget = total_gpu_memory x gpu_memory_utilization (ceil since 0.21.0)",
        ReleaseRange(None),
        "v0.7.3 vllm/worker/worker.py:233-234; v0.10.2 vllm/v1/worker/gpu_worker.py:176-177; "
        "v0.29.0 vllm/v1/worker/utils.py:521",
    ),
    SizingRule(
        "budget_peak",
        "KV budget from the profiled peak (V0, one-line profiling)",
        "kv = total_gpu_memory x gpu_memory_utilization - (peak_torch_memory + non_torch_memory)"
        " (peak_torch_memory includes the weights)",
        ReleaseRange("0.6.3", "0.6.4.post1"),
        "v0.6.4.post1 vllm/worker/worker.py:200-216",
    ),
    SizingRule(
        "budget_v0",
        "KV budget from the profile's parts (V0)",
        "kv = total_gpu_memory x gpu_memory_utilization - (weights + non_torch + activation_peak)",
        ReleaseRange("0.6.5"),
        "v0.7.3 vllm/worker/worker.py:233-238 (non_kv_cache_memory: vllm/utils.py "
        "memory_profiling)",
    ),
    SizingRule(
        "budget_v1",
        "KV budget from the profile's parts (V1)",
        "kv = requested (total x gpu_memory_utilization) - (weights + non_torch + activation_peak)",
        ReleaseRange("0.8.0", "0.20.0"),
        "v0.10.2 vllm/v1/worker/gpu_worker.py:176-177, 274-275",
    ),
    SizingRule(
        "budget_graph",
        "KV budget less the CUDA-graph estimate (V1, default since 0.21.0)",
        "kv = ceil(total x gpu_memory_utilization) - (weights + non_torch + activation_peak) - "
        "cudagraph_estimate (unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)",
        ReleaseRange("0.21.0"),
        "v0.29.0 vllm/v1/worker/gpu_worker.py:603-607; vllm/v1/worker/utils.py:520 (ceil)",
    ),
    SizingRule(
        "kv_bytes_given",
        "KV budget set by kv_cache_memory_bytes (profiling skipped)",
        "kv = kv_cache_memory_bytes (gpu_memory_utilization not applied)",
        ReleaseRange("0.10.2"),
        "v0.10.2 vllm/v1/worker/gpu_worker.py:235-251; v0.29.0 vllm/v1/worker/gpu_worker.py:533",
    ),
    SizingRule(
        "blocks_v0",
        "GPU blocks (V0)",
        "blocks = floor(kv / (block_size x layers x 2 x kv_heads x head_dim x dtype_bytes))",
        ReleaseRange(None),
        "v0.6.4.post1 vllm/worker/worker.py:220-223, vllm/worker/cache_engine.py:101-119",
    ),
    SizingRule(
        "blocks_v1",
        "GPU blocks (V1, one attention type)",
        "blocks = kv // page_size // layers; page_size = block_size x 2 x kv_heads x head_dim x "
        "dtype_bytes",
        ReleaseRange("0.7.0"),
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:786-797",
    ),
    SizingRule(
        "tokens",
        "KV tokens from blocks",
        "tokens = blocks x block_size (x dcp_world_size)",
        ReleaseRange("0.8.0"),
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:855-864",
    ),
    SizingRule(
        "concurrency_v0",
        "Maximum concurrency (V0)",
        "concurrency = blocks x block_size / max_model_len",
        ReleaseRange("0.6.4"),
        "v0.7.3 vllm/executor/executor_base.py:113-116; v0.6.4.post1 "
        "vllm/executor/gpu_executor.py:115-117",
    ),
    SizingRule(
        "concurrency_v1",
        "Maximum concurrency (V1)",
        "concurrency = blocks / ceil(max_model_len / block_size) (full attention)",
        ReleaseRange("0.7.0"),
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:768-783; v0.29.0 "
        "vllm/v1/core/kv_cache_utils.py:2010-2020 (tokens = int(concurrency x max_model_len))",
    ),
    SizingRule(
        "max_len_v0",
        "One max-length request must fit (V0)",
        "error when max_model_len > block_size x blocks",
        ReleaseRange(None),
        "v0.6.4.post1 vllm/worker/worker.py:486-503 (raise_if_cache_size_invalid)",
    ),
    SizingRule(
        "max_len_v1",
        "One max-length request must fit (V1)",
        "error when ceil(max_model_len / block_size) x page_size x layers > kv; the estimate is "
        "the largest length that fits (binary search)",
        ReleaseRange("0.7.0"),
        "v0.10.2 vllm/v1/core/kv_cache_utils.py:690-714, vllm/v1/kv_cache_interface.py:87-95; "
        "v0.29.0 vllm/v1/core/kv_cache_utils.py:853-886",
    ),
    SizingRule(
        "free_check",
        "Free memory must cover the requested share at startup",
        "error when free < total x gpu_memory_utilization",
        ReleaseRange("0.9.0"),
        "v0.10.2 vllm/v1/worker/gpu_worker.py:176-189; v0.29.0 vllm/v1/worker/utils.py:515-533",
    ),
    SizingRule(
        "suggestion",
        "The --kv-cache-memory suggestion",
        "to_requested = requested - (weights + non_torch + activation_peak + graph) - 150 MiB; "
        "to_gpu = free_at_start - (same) - 150 MiB",
        ReleaseRange("0.10.0", "0.20.0"),
        "v0.10.2 vllm/v1/worker/gpu_worker.py:355-389",
    ),
    SizingRule(
        "suggestion_graph_twice",
        "The --kv-cache-memory suggestion once the graph estimate is in the activation peak",
        "to_requested = requested - (consumed + activation_peak[includes graph estimate] + graph)"
        " - 150 MiB: the graph is subtracted twice (vllm#57936)",
        ReleaseRange("0.21.0"),
        "v0.29.0 vllm/v1/worker/gpu_worker.py:599-601 (peak includes the estimate), :825-837",
    ),
)

RULE = {rule.id: rule for rule in RULES}
