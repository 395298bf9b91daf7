"""What an unexplained residual most likely is: hints, not rows.

A cost memledger can derive is a formula (`data/formulas.toml`); one it can only suspect is a
hint on the residual row ("likely: ...", with the reason), so no residual over
`HINT_THRESHOLD_BYTES` (or `HINT_THRESHOLD_SHARE` of usable memory) is silently absorbed.

Each hint holds only where its condition does (the interval, the sign, what the log says about
the platform, the backend and the rows the ledger could not size), and names SGLang's source for
what it suspects: `vX path:line` under `python/sglang/srt/` at tag vX (the PyPI wheel). The first
hint whose condition holds is used; the last one always does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memledger.model.events import EventKind

HINT_THRESHOLD_BYTES = (1 << 30) // 10
"""0.1 GiB: residuals below it (and below `HINT_THRESHOLD_SHARE` of usable) are not hinted."""

HINT_THRESHOLD_SHARE = 0.005
"""0.5 % of usable memory: on a small GPU a residual under 0.1 GiB can still matter."""

MIB = 1 << 20
FLASHINFER_DEFAULT_WORKSPACE = 384 * MIB
"""SGLANG_FLASHINFER_WORKSPACE_SIZE's default (v0.5.10 environ.py:349)."""


INTEGRATED_READING_ERROR = (1 << 30) // 4
"""± bytes added to every avail reading on an integrated GPU. SGLang's source bounds nothing
here (host RAM moves with page cache and other processes); memledger's choice, so that one
interval (two readings, ±0.5 GiB) covers the largest movement the real GB10 logs show: single/005's
KV pool logged 0.40 GiB above its interval's drop."""

INTEGRATED_RELEASE_NOTE = (
    "within the host-RAM movement of an integrated GPU (±0.5 GiB an interval): not shown to be "
    "a weight release"
)

INTEGRATED_NOTE = (
    "integrated GPU (nvidia-smi reported no memory total, line {line}: GB10-style unified "
    "memory): SGLang reads avail as the host's available RAM, psutil.virtual_memory().available "
    "(v0.5.16 utils/common.py:414-419, from 0.5.9), which page cache and other processes move; "
    "every reading's error is widened by ±0.25 GiB and residuals within it are host movement "
    "as much as GPU allocations"
)


@dataclass(frozen=True)
class Residual:
    """What a hint may look at: one interval's residual and what the log says around it."""

    end_kind: EventKind
    """The kind of the interval's closing checkpoint."""
    bytes: int
    unknown_rows: frozenset[str] = frozenset()
    """Formula rows the ledger could not size (unknown rows)."""
    platform: str = "cuda"
    """`cuda`, `rocm` or `ascend` (sglang.rows.platform_of)."""
    integrated: bool = False
    """The GPU shares host memory (GB10, Jetson): SGLang reads host RAM as avail."""
    end_at_floor: bool = False
    """The interval's closing reading is 0.00: free memory bottomed out."""
    attention_backend: str | None = None
    """server_args' attention_backend (None: not given, or the log has no server_args)."""
    request_rows: int | None = None
    """The req_to_token table's rows when known (its columns may still be unknown)."""
    kv_line: bool = True
    """The log has a `KV Cache is allocated` line (False: 0.4.1 and older print none)."""


@dataclass(frozen=True)
class ResidualHint:
    name: str
    """Stable id (tests and docs refer to hints by it)."""
    text: str
    """`likely: ...` and why, with the SGLang source it rests on."""
    holds: Callable[[Residual], bool]


_MAX_CONTEXT = 1 << 20
"""Upper bound of a context length in tokens (1 M): bounds a table whose columns are unknown."""


def _req_to_token_could_be(r: Residual) -> bool:
    """req_to_token is unknown and could be this big (rows x context x 4 B, int32)."""
    if "req_to_token" not in r.unknown_rows or r.end_kind != EventKind.MEMORY_POOL_END:
        return False
    return r.request_rows is None or r.request_rows * (_MAX_CONTEXT + 8) * 4 >= r.bytes // 2


def _default_backend_may_be_flashinfer(r: Residual) -> bool:
    return (
        r.end_kind == EventKind.CAPTURE_BEGIN
        and r.attention_backend is None
        and r.platform == "cuda"
        and r.bytes >= FLASHINFER_DEFAULT_WORKSPACE * 9 // 10
    )


HINTS: tuple[ResidualHint, ...] = (
    ResidualHint(
        "free_memory_at_floor",
        # A reading is free memory, which cannot go below 0: once it reads 0.00 the drop into it
        # is capped at what was free before (the WSL driver lets allocations continue in shared
        # system memory while reporting 0 free).
        "likely: free memory at its floor, not a sized allocation: avail read 0.00 at the end "
        "of this interval, so the drop is capped at what was free and allocations past that "
        "point are not seen (a positive residual is the free memory that was left, a negative "
        "one rows allocated past the floor)",
        lambda r: r.end_at_floor and r.bytes != 0,
    ),
    ResidualHint(
        "kv_pool_unprinted",
        # v0.4.1 model_executor/model_runner.py:493-575: init_memory_pool sizes the pool as
        # max_total_num_tokens cells (:511) and builds it (:566) with no size line; the
        # `KV Cache is allocated` line first appears in 0.4.2 (mem_cache/memory_pool.py).
        "likely: the KV cache itself, with the req_to_token table: the log has no `KV Cache is "
        "allocated` line (SGLang 0.4.1 and older print none and build the pool from "
        "max_total_num_tokens, v0.4.1 model_executor/model_runner.py:493-575; a fragment may "
        "have left it out) and no token count to size it (a `max_total_num_tokens=` line and "
        "--model-config would)",
        lambda r: r.end_kind == EventKind.MEMORY_POOL_END and not r.kv_line and r.bytes > 0,
    ),
    ResidualHint(
        "req_to_token_unsized",
        # v0.5.8 mem_cache/memory_pool.py:137: torch.zeros((size, max_context_len), int32);
        # rows default to min(max(int(T / ctx * 512), 2048), 4096) when --max-running-requests
        # is not given (v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252-265).
        "likely: the req_to_token table (request slots x (context_len + 4) x 4 B, int32; "
        "v0.5.8 mem_cache/memory_pool.py:137), built with the pools; the ledger cannot size it "
        "here (see its unknown row)",
        _req_to_token_could_be,
    ),
    ResidualHint(
        "kv_buffer_rounding_unsized",
        # v0.5.9 mem_cache/memory_pool.py:810-824: a K and a V tensor per layer; PyTorch's
        # caching allocator rounds each allocation of 10 MiB or more up to 2 MiB and keeps the
        # tail (c10/cuda/CUDACachingAllocator.cpp get_allocation_size; formula
        # kv_alloc_rounding sizes it where --model-config gives the buffers).
        "likely: the caching allocator's rounding of the KV pool's buffers, a K and a V "
        "tensor per layer (one for MLA; v0.5.9 mem_cache/memory_pool.py:810-824, :1057-1063), "
        "each rounded up to a multiple of 2 MiB with the tail kept: up to 2 MiB a buffer, which "
        "--model-config sizes (formula kv_alloc_rounding); and pool bookkeeping SGLang does not "
        "print (v0.5.10 mem_cache/memory_pool.py:327/511)",
        lambda r: (
            r.end_kind == EventKind.MEMORY_POOL_END
            and r.bytes > 0
            and "kv_alloc_rounding" in r.unknown_rows
        ),
    ),
    ResidualHint(
        "pool_release",
        "likely: memory returned inside the pool interval: a logged pool size above what was "
        "newly allocated, or a buffer freed before `Memory pool end` emptied the cache "
        "(get_available_gpu_memory empties it by default: v0.5.10 utils/common.py:498-516); on "
        "an integrated GPU (GB10) avail is host RAM and moves with it (v0.5.16 "
        "utils/common.py:414-419)",
        lambda r: r.end_kind == EventKind.MEMORY_POOL_END and r.bytes < 0,
    ),
    ResidualHint(
        "pool_bookkeeping",
        # Pool tensors SGLang does not print: v0.5.10 mem_cache/memory_pool.py:327 (Mamba
        # free_slots, int64), :511 (request -> mamba slot map, int32), v0.5.16
        # mem_cache/allocator/swa.py:82 (full -> SWA index map, int64 per full slot).
        "likely: pool bookkeeping SGLang does not print (free-slot lists, the request-to-mamba "
        "and full-to-SWA index maps: v0.5.10 mem_cache/memory_pool.py:327/511, v0.5.16 "
        "mem_cache/allocator/swa.py:82) and allocator block rounding; not sized from the log",
        lambda r: r.end_kind == EventKind.MEMORY_POOL_END,
    ),
    ResidualHint(
        "default_backend_flashinfer",
        # v0.5.10 server_args.py:2237-2258: for MHA models SGLang picks fa3 on Hopper, trtllm_mha
        # on SM100, else flashinfer when installed; flashinfer_backend.py:203-210 allocates its
        # 384 MiB workspace when the backend is built (model_runner.py:651-655).
        "likely: FlashInfer's 384 MiB workspace (v0.5.10 layers/attention/flashinfer_backend.py"
        ":203-210), if the attention backend SGLang chose by default was FlashInfer (its choice "
        "for MHA models on CUDA GPUs other than Hopper/Blackwell: v0.5.10 server_args.py:"
        "2237-2258); the log does not say which backend it chose",
        _default_backend_may_be_flashinfer,
    ),
    ResidualHint(
        "before_first_capture",
        # v0.5.10 model_executor/model_runner.py:651-655: init_cublas (a first matmul: the cuBLAS
        # handle and its workspace), init_attention_backend, kernel_warmup, then capture begins.
        "likely: what SGLang builds between the pools and the first capture without printing a "
        "size: the cuBLAS handle and workspace of init_cublas, the attention backend's buffers "
        "and kernel modules loaded on first use (v0.5.10 model_executor/model_runner.py:651-655)",
        lambda r: r.end_kind == EventKind.CAPTURE_BEGIN and r.bytes > 0,
    ),
    ResidualHint(
        "draft_runner_init",
        # v0.5.8 speculative/eagle_worker.py:140: the draft's ModelRunner is built (its own
        # device context, process groups) before its `Load weight begin`.
        "likely: the target's post-load steps and the draft worker's own start before its "
        "weights load, which print no size (EAGLE builds the draft ModelRunner there: v0.5.8 "
        "speculative/eagle_worker.py:140)",
        lambda r: r.end_kind == EventKind.LOAD_BEGIN and r.bytes > 0,
    ),
    ResidualHint(
        "unlogged_release",
        "likely: memory freed inside the interval (a release SGLang does not log, returned by "
        "torch.cuda.empty_cache before the next reading)",
        lambda r: r.bytes < 0,
    ),
    ResidualHint(
        "unlogged_allocation",
        "likely: an allocation SGLang does not log in this interval (not identified)",
        lambda r: True,
    ),
)


# v0.5.16 utils/common.py:414-419 (from 0.5.9, utils/common.py:528): when
# torch.cuda.get_device_properties(gpu).is_integrated, avail is psutil.virtual_memory().available.
INTEGRATED_HINT = (
    "likely: host-memory movement as much as a GPU allocation: on an integrated GPU SGLang "
    "reads avail as the host's available RAM (psutil.virtual_memory().available, v0.5.16 "
    "utils/common.py:414-419), which page cache and other processes move; otherwise"
)
"""Put before the interval's own hint when the GPU is integrated (GB10)."""


def hint_for(residual: Residual, usable: int | None) -> str | None:
    """The hint for a residual of this size at this interval, or None when it is noise."""
    share = abs(residual.bytes) / usable if usable else 0.0
    if abs(residual.bytes) <= HINT_THRESHOLD_BYTES and share <= HINT_THRESHOLD_SHARE:
        return None
    text = next(hint.text for hint in HINTS if hint.holds(residual))
    return f"{INTEGRATED_HINT} {text.removeprefix('likely: ')}" if residual.integrated else text


def hint_named(name: str) -> ResidualHint:
    """The hint with this name (tests and docs)."""
    return next(hint for hint in HINTS if hint.name == name)


# ---- the graph row that holds what the first forward allocates lazily -------------------------

DEEPEP_IN_GRAPH = (
    "includes the DeepEP buffer, created at the first MoE dispatch, i.e. in this bucket's "
    "warmup (v0.5.23 layers/moe/token_dispatcher/deepep.py:204-304, reached from _get_buffer "
    "at :733 and :963)"
)
DEEPEP_UNSIZED = {
    "npu": "Ascend's deep_ep (sgl-kernel-npu) has no buffer of its own: it dispatches through the "
    "TP group's HCCL communicator, whose 2 x HCCL_BUFFSIZE window (formula deepep_hccl_window) "
    "needs HCCL_BUFFSIZE, not in the log",
    "auto": "deepep_mode auto adds the normal-mode NVLink/RDMA buffers, not modelled",
    "model": "its size (formula deepep_ll_buffer) needs --model-config",
}
"""Why the DeepEP buffer is not split out of the graph row, by case."""


def deepep_graph_note(args: dict[str, object], sized: bool) -> str | None:
    """The note for the first capture's largest bucket when DeepEP is in use and not split out."""
    if args.get("moe_a2a_backend") != "deepep" or sized:
        return None
    if args.get("device") == "npu":
        why = DEEPEP_UNSIZED["npu"]
    elif args.get("deepep_mode", "auto") != "low_latency":
        why = DEEPEP_UNSIZED["auto"]
    else:
        why = DEEPEP_UNSIZED["model"]
    return f"{DEEPEP_IN_GRAPH}; not split out: {why}"
