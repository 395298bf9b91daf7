"""Memory texts read from SGLang's source (v0.4.6, v0.5.3, v0.5.8, v0.5.23) and torch_memory_saver's
(0.0.10) that memledger read as a bare crash, as host RAM with no lever, or as an OOM that never
happened: each a table row (memledger.sglang.failure_rules.CRASH_CAUSES, memledger.sglang.errors),
checked here in the paste shapes people use: the text alone, in a sentence, as a log line with
SGLang's prefix, that log line cut at 120 columns, and as the exception line of a scheduler's
traceback. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import pytest

from memledger.errors import InputError
from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of

PREFIX = "[2026-02-03 04:05:06 TP1] "
FRAME = (
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3021, in '
    "run_scheduler_process"
)

# (finding, the text as SGLang prints it, outcome, phase or "" where nothing places it, levers)
CASES: tuple[tuple[str, str, str, str, list[tuple[str, str]]], ...] = (
    (
        "hicache_host_memory",
        "ValueError: Not enough host memory for DSA indexer hierarchical cache. Requesting 96.00 "
        "GB but only have 40.25 GB free.",
        "crash",
        "",
        [("hicache_size", "lower"), ("hicache_ratio", "lower")],
    ),
    (
        "hicache_host_memory",
        "ValueError: Not enough host memory for V4 paged pool c4_kv. Requesting 50.00 GB but only "
        "have 20.00 GB free.",
        "crash",
        "",
        [("hicache_size", "lower"), ("hicache_ratio", "lower")],
    ),
    (
        "decode_offload_host_pool_full",
        "Not enough host memory for request 7d3e91c0aa",
        "oom",
        "serving",
        [("hicache_size", "raise"), ("hicache_ratio", "raise")],
    ),
    (
        "decode_host_pool_too_small",
        "ValueError: SWA host pool must hold a retraction and a receive page; increase "
        "--hicache-size or --hicache-ratio",
        "crash",
        "memory_pool",
        [("hicache_size", "raise"), ("hicache_ratio", "raise")],
    ),
    (
        "hicache_host_below_device",
        "AssertionError: The host memory should be larger than the device memory with the "
        "current protocol",
        "crash",
        "memory_pool",
        [("hicache_size", "raise"), ("hicache_ratio", "raise")],
    ),
    (
        "swa_pool_below_one_request",
        "ValueError: SWA pool (8192 tokens) cannot hold even one request: the prefill admission "
        "floor is sliding_window_size (8192) + page_size (1). Increase --swa-full-tokens-ratio "
        "or the total KV budget.",
        "oom",
        "kv_sizing",
        [("swa_full_tokens_ratio", "raise"), ("mem_fraction_static", "raise")],
    ),
    (
        "detokenizer_states_evicted",
        "RuntimeError: Decode status not found for request 41b0. It may be due to the request "
        "being evicted from the decode status due to memory pressure.",
        "crash",
        "serving",
        [],
    ),
    (
        "memory_saver_resume_partial",
        "RuntimeError: torch_memory_saver.resume(tag='weights') partially failed (code 2); some "
        "allocations remain paused. Retry after resolving the failure (e.g. free device memory).",
        "crash",
        "resume",
        [("mem_fraction_static", "lower")],
    ),
    (
        "int8_mamba_checkpoint_pool",
        "RuntimeError: int8 mamba checkpoint pool needs ~9.75GB but only 3.40GB HBM is free. "
        "Lower --int8-mamba-ckpt-size (currently 1024) or --mem-fraction-static.",
        "oom",
        "memory_pool",
        [("int8_mamba_ckpt_size", "lower"), ("mem_fraction_static", "lower")],
    ),
    (
        "deepep_v2_decode_graph_cap",
        "ValueError: DeepEP v2 per-rank decode CUDA graph exceeds "
        "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK: required=1024, capacity=256 "
        "(requests=256, tokens/request=4). Raise the environment value or lower "
        "--cuda-graph-max-bs-decode.",
        "crash",
        "",
        [("cuda_graph_max_bs_decode", "lower")],
    ),
    (
        "disagg_staging_pool",
        "[Staging] a chunk exceeds the staging ring; failing affected requests. Increase "
        "SGLANG_DISAGG_STAGING_POOL_SIZE_MB or reduce chunked_prefill_size.",
        "crash",
        "",
        [("chunked_prefill_size", "lower")],
    ),
    (
        "flydsl_megamoe_decode_cap",
        "ValueError: SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR=128 must cover the largest decode / "
        "verify forward on one rank: max running requests per DP rank x tokens per request = "
        "384. Raise it to a power of two of at least 384 or lower --max-running-requests.",
        "crash",
        "",
        [("max_running_requests", "lower")],
    ),
    (
        "lora_pinned_slots",
        "ValueError: Failed to load LoRA adapter a7 as a pinned adapter. It is not allowed to pin "
        "all slots in the LoRA memory pool to avoid starvation for unpinned adapters and base "
        "models. Please increase your `--max-loras-per-batch` or load it as unpinned LoRA "
        "adapters.",
        "crash",
        "",
        [("max_loras_per_batch", "raise")],
    ),
    (
        "lora_rank_over_pool",
        "ValueError: LoRA adapter a7 with rank 128 is incompatible with the current LoRA memory "
        "pool configuration. Please ensure that the LoRA adapter's rank is within the configured "
        "`--max-lora-rank`.",
        "crash",
        "",
        [("max_lora_rank", "raise")],
    ),
)


def _shapes(text: str) -> dict[str, str]:
    said = text.split(": ", 1)[1] if text.split(": ", 1)[0].endswith("Error") else text
    shapes = {f"prose{i}": shape.format(s=said) + "\n" for i, shape in enumerate(PROSE_SHAPES)}
    shapes["alone"] = text + "\n"
    shapes["log line"] = PREFIX + text + "\n"
    shapes["cut at 120"] = (PREFIX + text)[:120] + "\n"
    if said != text:  # an exception: also as the last line of the scheduler's traceback
        shapes["traceback"] = (
            PREFIX
            + "Scheduler hit an exception: Traceback (most recent call last):\n"
            + FRAME
            + "\n"
            + text
            + "\n"
        )
    return shapes


@pytest.mark.parametrize(("finding", "text", "outcome", "phase", "levers"), CASES)
def test_a_source_text_is_read_in_every_paste_shape(
    finding: str, text: str, outcome: str, phase: str, levers: list[tuple[str, str]]
) -> None:
    for shape, paste in _shapes(text).items():
        result = diagnose_paste(paste)
        assert finding in [str(f.id) for f in result.findings], (shape, paste)
        assert result.outcome == outcome, (shape, paste)
        if phase:
            assert result.phase == phase, (shape, paste)
        assert knobs_of(result)[: len(levers)] == levers, (shape, paste)
        assert "not a memory problem" not in result.verdict, (shape, paste)


def test_host_memory_for_a_request_is_the_offload_pool_not_the_host_ram() -> None:
    # the PD decode offload's own host pool was full (its write got no slots): a bigger pool is
    # the lever, never "more RAM for the host" alone
    result = diagnose_paste(PREFIX + "Not enough host memory for request 7d3e91c0aa\n")
    assert ("hicache_size", "raise") in knobs_of(result)
    assert ("hicache_size", "lower") not in knobs_of(result)


CPU_WARNINGS = (
    "The total number of ranks (6) is larger than numa node number (2), in this case the "
    "available memory amount of each rank cannot be determined in prior. Please set proper "
    "`--max-total-tokens` to avoid the out-of-memory error.",
    "TP size (4)is larger than numa node number (2), in this case the available memory amount "
    "of each rank cannot be determined in prior. Please set proper `--max-total-tokens` to avoid "
    "the out-of-memory error.",
    "SGLANG_CPU_OMP_THREADS_BIND is set for explicit control of CPU cores for each TP rank."
    "Please beware that in this case the available memory amounts of the ranks cannot be "
    "determined in prior.You need to set proper --max-total-tokens to avoid the out-of-memory "
    "error.",
)
READY = (
    "[2026-02-03 04:05:00 TP0] Load weight begin. avail mem=250.00 GB\n"
    "{warning}\n"
    "[2026-02-03 04:05:30 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
    "avail mem=236.00 GB, mem usage=14.00 GB.\n"
    "[2026-02-03 04:05:40] The server is fired up and ready to roll!\n"
)


@pytest.mark.parametrize("warning", CPU_WARNINGS)
def test_the_cpu_backends_launch_warning_is_no_oom(warning: str) -> None:
    # printed at every CPU launch with more ranks than NUMA nodes: it names the out-of-memory
    # error as a risk, so neither alone nor in a log that came up is it an OOM
    alone = diagnose_paste(PREFIX + warning + "\n")
    assert alone.outcome != "oom"
    ready = diagnose_paste(READY.format(warning=PREFIX + warning))
    assert ready.outcome == "ready"


@pytest.mark.parametrize(
    "text",
    (
        "RuntimeError: [IpcModelLoader] Weight cache daemon not available at /run/wc.sock. In "
        "daemon mode, fallback to disk loading is disabled because the daemon process already "
        "holds weights on the same GPU — loading from disk would cause OOM.",
        "HiCacheFile: filesystem hosting /mnt/kv would fall below min_free=1073741824 B after "
        "writing 4194304 B; refusing 9a1f to avoid OOM/ENOSPC.",
        "Merging LoRA for transformer with FSDP-sharded weights may require full-gather and can "
        "OOM.",
        "Triton kernel '_fwd_kernel' device-loaded after serving started (free device mem: 0.62 "
        "GiB). Pre-load it during engine init to avoid CUDA OOM.",
        "RuntimeError: natten has no compiled neighborhood-attention kernel for torch.float16 on "
        "cuda:1 (head_dim 32) and would fall back to its eager FlexAttention path, which "
        "materializes a dense score matrix and runs out of memory on the LiDAR range image",
    ),
)
def test_an_oom_named_as_a_risk_is_no_oom(text: str) -> None:
    assert diagnose_paste(PREFIX + text + "\n").outcome != "oom"
    try:
        alone = diagnose_paste(text + "\n")
    except InputError:
        return  # a warning alone that is no SGLang line and no failure: nothing to diagnose
    assert alone.outcome != "oom"
