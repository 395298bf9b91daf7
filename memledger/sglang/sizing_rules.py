"""SGLang's KV-pool sizing arithmetic as data: one rule per step, with release range and source.

Every rule names the SGLang release range it holds for (`first`..`last`, None = open) and the
source line it was read from, as `vX path:line` with the path under `python/sglang/srt/` of that
release's wheel (`pip download sglang==X --no-deps`). memledger.sizing applies these rules; the
numbers here (constants, tables) are the only SGLang knowledge it uses. A new release that moves a
rule gets a new entry with its own range; the old entry keeps its `last`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizingRule:
    """One step of SGLang's pool sizing, valid for a release range."""

    id: str
    title: str
    formula: str
    first: str | None
    """First release the rule holds for (None: since the oldest release read)."""
    last: str | None
    """Last release the rule holds for (None: still in the newest release read, 0.5.23)."""
    source: str


RULES: tuple[SizingRule, ...] = (
    SizingRule(
        id="budget",
        title="KV budget after the weights",
        formula="rest = A - P x (1 - mem_fraction_static)",
        first="0.4.1",
        last=None,
        source=(
            "v0.4.1 model_executor/model_runner.py:487-490; v0.4.6.post2 :736-739; "
            "v0.5.2 model_executor/model_runner.py:1123-1125; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:138-140; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1538-1548; v0.5.23 :3007/3038"
        ),
    ),
    SizingRule(
        id="world_min",
        title="P and A are the minimum over all ranks",
        formula="A = min over ranks (get_available_gpu_memory(distributed=True))",
        first="0.4.1",
        last=None,
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:112-117; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1531-1536"
        ),
    ),
    SizingRule(
        id="tokens",
        title="Tokens from the budget",
        formula="max_total_num_tokens = int(rest x 2^30) // cell_size",
        first="0.4.1",
        last=None,
        source=(
            "v0.4.1 model_executor/model_runner.py:490; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:144; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1570 (bytes, then // cell)"
        ),
    ),
    SizingRule(
        id="kv_buffer_rows",
        title="KV buffers hold page_size padding rows",
        formula="KV size = (#tokens + page_size) x cell_size (size + 1 rows before 0.4.4)",
        first="0.4.4",
        last=None,
        source=(
            "v0.5.8 mem_cache/memory_pool.py:765,773 (MHA), :1387 (MLA); v0.4.1 "
            "mem_cache/memory_pool.py:197,205 (size + 1)"
        ),
    ),
    SizingRule(
        id="mamba_first",
        title="Mamba/linear-attention state is taken out of the budget first",
        formula="rest -= max_mamba_cache_size x per_req (the pool itself has K+1 slots)",
        first="0.5.2",
        last="0.5.19",
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:141-142,199-204; "
            "v0.5.11 :126-130; v0.5.16 mem_cache/kv_cache_configurator.py:1549-1550,1809-1813"
        ),
    ),
    SizingRule(
        id="mamba_padding_slot",
        title="Mamba state taken with its padding slot and the ReplaySSM ring",
        formula="rest -= (K + 1) x (per_req + extra_per_slot) + replayssm_fixed_bytes",
        first="0.5.20",
        last=None,
        source=(
            "v0.5.23 mem_cache/kv_cache_configurator.py:3405-3409 (first release per the catalog "
            "§3.4)"
        ),
    ),
    SizingRule(
        id="mamba_slots_fixed",
        title="Mamba slots from max_running_requests when radix cache is off",
        formula=(
            "K = max_running_requests // dp (512 when unset, <= 0.5.9); PD decode adds extra slots"
        ),
        first="0.5.4",
        last=None,
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:168-181; "
            "v0.5.16 disaggregation/decode.py:135; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1733-1750"
        ),
    ),
    SizingRule(
        id="mamba_ratio_split",
        title="Mamba slots from the memory ratio when radix cache is on",
        formula="K = int(rest x m/(1+m) x 2^30 // per_req), m = mamba_full_memory_ratio",
        first="0.5.4",
        last=None,
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:182-197; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1751-1791"
        ),
    ),
    SizingRule(
        id="swa_split",
        title="Hybrid SWA: one cell for both pools, SWA tokens = ratio x full",
        formula=(
            "cell = F x n_full + r x S x n_swa; full = page_floor(rest // cell); swa = "
            "page_floor(int(full x r))"
        ),
        first="0.5.12",
        last=None,
        source="v0.5.16 model_executor/pool_configurator.py:376-425",
    ),
    SizingRule(
        id="draft_in_cell",
        title="Draft KV inside the budget (cell scaled by the draft's layers)",
        formula="cell = target_cell x (1 + draft_layers / L); SWA models: EAGLE/STANDALONE only",
        first="0.5.14",
        last=None,
        source=(
            "v0.5.16 model_executor/pool_configurator.py:135-170 (EAGLE, DFLASH); "
            ":349-374 (SWA configurator: EAGLE/STANDALONE only)"
        ),
    ),
    SizingRule(
        id="draft_outside",
        title="Draft KV outside the budget (the draft pool reuses the target's token count)",
        formula="draft pool size = target max_total_num_tokens; its bytes come out of the slack",
        first="0.5.7",
        last="0.5.13",
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:291-297 (draft_runner_cache_size)"
        ),
    ),
    SizingRule(
        id="spec_headroom",
        title="Speculative headroom added to the target's tokens",
        formula="T' = T + R x steps x topk + R x draft_tokens + 100 (R = max_num_reqs)",
        first="0.4.4",
        last="0.5.6",
        source=(
            "v0.4.6.post2 model_executor/model_runner.py:779-799 (before the --max-total-tokens "
            "cap)"
        ),
    ),
    SizingRule(
        id="max_total_tokens",
        title="--max-total-tokens caps the profiled value",
        formula="T = min(T, max_total_tokens)",
        first="0.4.1",
        last=None,
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:299-306; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1599-1608"
        ),
    ),
    SizingRule(
        id="page_round",
        title="Tokens rounded down to a whole page",
        formula="T = T // page_size x page_size",
        first="0.4.6",
        last=None,
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:308-312; "
            "v0.5.16 model_executor/pool_configurator.py:415-424"
        ),
    ),
    SizingRule(
        id="dcp_scope",
        title="Tokens are per rank; a DCP group holds dcp_size times as many",
        formula=(
            "per DP group = per rank x dcp_size; instance = per DP group x dp_size (DP attention)"
        ),
        first="0.5.20",
        last=None,
        source=(
            "v0.5.23 managers/tp_worker.py:553,576 and model_executor/model_runner.py:1486-1492 "
            "(0.5.23 prints the logical capacity: per rank x dcp)"
        ),
    ),
    SizingRule(
        id="max_num_reqs_default",
        title="Request-table size when --max-running-requests is not given",
        formula="max_num_reqs = min(max(int(T / context_len x 512), 2048), 4096)",
        first="0.3.2",
        last=None,
        source=(
            "v0.4.1 model_executor/model_runner.py:526-531; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:254-263; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1626-1635 (then min(., T // 2))"
        ),
    ),
    SizingRule(
        id="req_to_token_global",
        title="Request table sized with the global --max-running-requests",
        formula="rows = max_running_requests (not // dp); cols = context_len + 4 + draft_tokens",
        first="0.5.2",
        last="0.5.9",
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:253,336-338; "
            "mem_cache/memory_pool.py:137"
        ),
    ),
    SizingRule(
        id="req_to_token_per_dp",
        title="Request table per DP worker, one padding row",
        formula=(
            "rows = max_running_requests // dp + 1 (+ extra slots on PD decode); cols = "
            "context_len + 4 + draft_tokens"
        ),
        first="0.5.11",
        last=None,
        source=(
            "v0.5.11 mem_cache/memory_pool.py:150; v0.5.16 mem_cache/memory_pool.py:263; "
            "v0.5.16 disaggregation/decode.py:135 (size + pre_alloc_size + 1)"
        ),
    ),
    SizingRule(
        id="mfs_default",
        title="mem_fraction_static default from GPU capacity (inferred when not printed)",
        formula=(
            "reserved = 512 + max(chunked_prefill, 2048) x 1.5 + cuda_graph_max_bs x 2 "
            "+ tp x pp / 8 x 1024 (+ DP-attention terms); >60 GiB GPU: max(reserved, 10240); "
            "+ speculative 2048 (STANDALONE 6144); mfs = round((gpu_mib - reserved) / gpu_mib, 3)"
        ),
        first="0.5.3",
        last="0.5.13",
        source="v0.5.8 server_args.py:988-1031",
    ),
)

# chunked_prefill_size default by GPU capacity (MiB upper bound -> tokens): v0.5.8
# server_args.py:904-950 (_handle_gpu_memory_settings); above the last bound: 16384.
CHUNKED_PREFILL_BY_GPU: tuple[tuple[int, int], ...] = (
    (20 * 1024, 2048),
    (35 * 1024, 2048),
    (60 * 1024, 4096),
    (90 * 1024, 8192),
    (160 * 1024, 8192),
)
CHUNKED_PREFILL_LARGE_GPU = 16384

RULE: dict[str, SizingRule] = {rule.id: rule for rule in RULES}

# --- constants the rules use -------------------------------------------------------------------
MAX_NUM_REQS_PER_CONTEXT = 512
MAX_NUM_REQS_FLOOR = 2048
MAX_NUM_REQS_CAP = 4096
REQ_TO_TOKEN_EXTRA_COLS = 4
REQ_TO_TOKEN_BYTES = 4  # int32
PD_PREALLOC_SMALL = 32
"""max_num_reqs <= this pre-allocates 2 x max_num_reqs rows on PD decode (<= 0.5.13)."""
DEFAULT_MAMBA_SLOTS_NO_RADIX = 512
MAMBA_REQS_RATIO = 3
"""max_num_reqs <= K // 3 with radix cache (1 without): v0.5.11
model_executor/model_runner_kv_cache_mixin.py:44 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)."""
DEFAULT_MFS_WITHOUT_GPU = 0.88
SPEC_HEADROOM_CONST = 100

# Bytes per KV element by --kv-cache-dtype (auto is the model dtype, read from the log).
KV_DTYPE_BYTES: dict[str, float] = {
    "bf16": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "uint8": 1,
    "float32": 4,
}
"""fp4_e2m1 is packed 4-bit plus scales (cell/2 + 1/16): not modelled here, said so instead."""

# The SGLang log-format markers that bound a log's release, as (marker, first, last).
# memledger.sizing.version checks each marker against the parsed events.
FORMAT_MARKERS: tuple[tuple[str, str | None, str | None], ...] = (
    ("kv_line_without_tokens", "0.4.2", "0.4.3"),
    ("kv_line_with_tokens_no_dtype", "0.4.4", "0.5.12"),
    ("kv_line_with_dtype", "0.5.13", None),
    ("kv_dtype_line", "0.5.3", "0.5.12"),
    ("load_end_without_usage", None, "0.4.3"),
    ("load_end_usage_no_elapsed", "0.4.4", "0.5.8"),
    ("load_end_elapsed_with_dtype", "0.5.9", "0.5.9"),
    ("load_end_elapsed_no_dtype", "0.5.10", None),
    ("summary_with_available_gpu_mem", "0.4.7", None),
    ("summary_without_available_gpu_mem", None, "0.4.6"),
    ("dist_end_elapsed", "0.5.9", "0.5.20"),
    ("memory_baseline", "0.5.21", None),
    ("server_args_dict", "0.5.19", None),
    ("capture_role_phase", "0.5.14", None),
    ("replay_ssm", "0.5.20", None),
)


def version_code(text: str) -> int:
    """`0.5.8` -> 5008 and so on; a suffix (`rc2`, `.post1`) is ignored."""
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]
