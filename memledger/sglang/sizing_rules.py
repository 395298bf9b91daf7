"""SGLang's KV-pool sizing arithmetic as data: one rule per step, with release range and source.

Every rule names the SGLang release range it holds for (`first`..`last`, None = open) and the
source line it was read from, as `vX path:line` with the path under `python/sglang/srt/` of that
release's wheel (`pip download sglang==X --no-deps`). memledger.sizing applies these rules; the
numbers here (constants, tables) are the only SGLang knowledge it uses. A new release that moves a
rule gets a new entry with its own range; the old entry keeps its `last`.
"""

from __future__ import annotations

from dataclasses import dataclass

# re-exported: the sizing model and its tests read the release helpers from here too
from memledger.sglang.release_markers import version_code as version_code


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
        last="0.5.16",
        source=(
            "v0.5.4 model_executor/model_runner.py:1474-1480; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:141-142,199-204; "
            "v0.5.11 :126-131; v0.5.15 :238-243; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1549-1550,1808-1813"
        ),
    ),
    SizingRule(
        id="mamba_padding_ring",
        title="Mamba state taken with its padding slot (and the ReplaySSM ring per slot)",
        formula=(
            "rest -= (K + 1) x (per_req + ring_per_req); ratio split: K = int((share - per_slot)"
            " // per_slot)"
        ),
        first="0.5.17",
        last="0.5.19",
        source=(
            "v0.5.17 mem_cache/kv_cache_configurator.py:1950-1956 (K), :1977-1982 (taken); "
            "v0.5.19 :2344-2350, :2371-2376"
        ),
    ),
    SizingRule(
        id="mamba_padding_slot",
        title="Mamba state taken with its padding slot, the ReplaySSM ring and its fixed part",
        formula=(
            "rest -= (K + 1) x (per_req + extra_per_slot) + replayssm_fixed_bytes; ratio split: "
            "K = int((share - replayssm_fixed_bytes - per_slot) // per_slot)"
        ),
        first="0.5.20",
        last=None,
        source=(
            "v0.5.20 mem_cache/kv_cache_configurator.py:2509-2515 (K), :2535-2540 (taken); "
            "v0.5.23 :3379-3385, :3405-3409"
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
        first="0.5.11",
        last=None,
        source=(
            "v0.5.11 model_executor/pool_configurator.py:191-236,275-279; "
            "v0.5.16 model_executor/pool_configurator.py:376-425"
        ),
    ),
    SizingRule(
        id="swa_split_memory",
        title="Hybrid SWA before the configurator: tokens as if one pool, then split by memory",
        formula=(
            "T = rest // (F x n_full + S x n_swa); full = page_floor(int(T x (F x n_full + "
            "S x n_swa) / (F x n_full + r x S x n_swa))); swa = page_floor(int(full x r))"
        ),
        first="0.5.9",
        last="0.5.10",
        source=(
            "v0.5.9 model_executor/model_runner_kv_cache_mixin.py:86-95 (cell), :251-333 "
            "(split); v0.5.10 model_executor/model_runner_kv_cache_mixin.py:287-371"
        ),
    ),
    SizingRule(
        id="swa_split_layers",
        title="Hybrid SWA split by layer count (every layer sized as a full layer)",
        formula=(
            "T = rest // (F x n_layers); full = page_floor(int(T x n_layers / (r x n_swa + "
            "n_full))); swa = page_floor(int(full x r))"
        ),
        first="0.5.2",
        last="0.5.8",
        source=(
            "v0.5.2 model_executor/model_runner.py:1142-1222 (set_num_token_hybrid); "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:206-249"
        ),
    ),
    SizingRule(
        id="fp4_cell",
        title="fp4_e2m1 KV cache: packed 4-bit elements plus one scale byte per 16",
        formula="cell = cell_1B // 2 + elements / 16 (9/16 B per element, K and V alike)",
        first="0.5.6",
        last=None,
        source=(
            "v0.5.6 model_executor/model_runner.py:1392-1399 (MLA), :1427-1434 (MHA); "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:56-67,88-96; "
            "v0.5.23 model_executor/pool_configurator.py:387-396"
        ),
    ),
    SizingRule(
        id="dsa_indexer_cell",
        title="DSA (DeepSeek V3.2) sizing cell adds the indexer keys as uint8 with scales",
        formula=(
            "cell = (kv_lora_rank + rope) x L x e + (index_head_dim + index_head_dim / 128 x 4)"
            " x L x 1 B"
        ),
        first="0.5.4",
        last=None,
        source=(
            "v0.5.4 model_executor/model_runner.py:1400-1416; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:70-79; "
            "v0.5.16 model_executor/pool_configurator.py:205-215"
        ),
    ),
    SizingRule(
        id="npu_dsa_pool",
        title="Ascend DSA pool keeps the indexer keys in the KV dtype (sized as uint8)",
        formula=(
            "allocated cell = (kv_lora_rank + rope + index_head_dim) x L x e, while the tokens "
            "come from the dsa_indexer_cell (bf16: 1,408 B vs 1,284 B per layer)"
        ),
        first="0.5.4",
        last="0.5.16",
        source=(
            "v0.5.4 mem_cache/memory_pool.py:1574-1584; "
            "v0.5.8 hardware_backend/npu/memory_pool_npu.py:224-235; "
            "v0.5.16 hardware_backend/npu/memory_pool_npu.py:347-355 (v0.5.23 "
            "model_executor/pool_configurator.py:575-580 sizes the NPU indexer in bf16)"
        ),
    ),
    SizingRule(
        id="mamba_ratio_v057",
        title="Mamba requests cap K // 5 (K // 4 with extra_buffer and speculative decoding)",
        formula="ratio = 3 + (1 if extra_buffer and speculative else 2); 1 without radix cache",
        first="0.5.7",
        last="0.5.7",
        source="v0.5.7 model_executor/model_runner_kv_cache_mixin.py:289-302",
    ),
    SizingRule(
        id="mamba_ratio_spec",
        title="Mamba requests cap K // ratio, extra_buffer adds 2 slots (1 with spec)",
        formula=(
            "ratio = 3 + (extra_buffer ? (1 if speculative else 2) : 0); 1 without radix cache"
        ),
        first="0.5.8",
        last="0.5.9",
        source="v0.5.8 model_executor/model_runner_kv_cache_mixin.py:268-281",
    ),
    SizingRule(
        id="mamba_ratio_overlap",
        title="Mamba requests cap K // ratio, extra_buffer adds 2 slots (1 without overlap)",
        formula=(
            "ratio = 3 + (extra_buffer ? (1 if disable_overlap_schedule or lazy else 2) : 0); "
            "1 without radix cache"
        ),
        first="0.5.10",
        last="0.5.16",
        source=(
            "v0.5.10 model_executor/model_runner_kv_cache_mixin.py:373-386; "
            "v0.5.13 :233-252 (extra_buffer_lazy); "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1572-1592"
        ),
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
        id="req_to_token_plus_one",
        title="Request table with one row beyond the request count",
        formula="rows = max_num_reqs + 1; cols = context_len + 4",
        first="0.3.6",
        last="0.4.6",
        source=(
            "v0.3.6 model_executor/model_runner.py:478-480; v0.4.1 :537-539; v0.4.6.post2 "
            ":823-825 (ReqToTokenPool(size=max_num_reqs + 1)); v0.4.7 :926 (size=max_num_reqs)"
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
            "+ tp x pp / 8 x 1024 (+ DP-attention terms) (+ piecewise graphs: #tokens x 8, "
            "MLA 1536, 0.5.10+); >60 GiB GPU: max(reserved, 10240); + speculative 2048 "
            "(4096 from 0.5.10; STANDALONE 6144); mfs = round((gpu_mib - reserved) / gpu_mib, 3)"
        ),
        first="0.5.3",
        last="0.5.13",
        source="v0.5.8 server_args.py:988-1031; v0.5.10 server_args.py:1280-1329",
    ),
    SizingRule(
        id="mfs_default_tp",
        title="mem_fraction_static default by tensor-parallel size alone (no GPU capacity)",
        formula="tp >= 16: 0.79; >= 8: 0.81; >= 4: 0.85; >= 2: 0.87; else 0.88",
        first="0.4.0",
        last="0.4.5",
        source=(
            "v0.4.1 server_args.py:170-180; v0.4.5 :233-243 (v0.3.6 :156-166 has 0.82 at "
            "tp >= 8); memledger.sglang.legacy_defaults"
        ),
    ),
    SizingRule(
        id="mfs_default_tp_80g",
        title="mem_fraction_static default by tp x pp on GPUs up to 80 GiB",
        formula=(
            "G <= 80 GiB: the mfs_default_tp step of tp x pp (0.4.7: x 0.95 with speculative "
            "decoding); above 80 GiB each post release differs: not modelled"
        ),
        first="0.4.6",
        last="0.4.7",
        source=(
            "v0.4.6 server_args.py:224-238; v0.4.6.post2 :226-247; v0.4.7 :253-282 "
            "(0.4.7.post1 already has mfs_default_buckets); memledger.sglang.legacy_defaults"
        ),
    ),
    SizingRule(
        id="mfs_default_buckets",
        title="mem_fraction_static default from a reserve per GPU-capacity bucket",
        formula=(
            "reserved GiB: G < 35 GiB: 2.8 + tp x pp / 10; < 90: 9.5 + tp x pp / 2; < 160: "
            "12 + tp x pp / 2; else 32; + 2 speculative (STANDALONE 6), + 4 DP attention; "
            "mfs = round((G - reserved) / G, 3)"
        ),
        first="0.4.7",
        last="0.5.2",
        source=(
            "v0.4.7.post1 server_args.py:261-300 (code 0.4.7 also holds mfs_default_tp_80g); "
            "v0.4.8 :274-315; v0.4.10 :286-327; v0.5.2 :452-498"
        ),
    ),
    SizingRule(
        id="mfs_vlm_factor",
        title="A multimodal model's default mem_fraction_static is scaled by its ViT size",
        formula=(
            "mfs x 0.95 x clamp(1 - 0.1 x (L x H^2 / (24 x 1024^2) - 1), 0.8, 1.05); L, H: "
            "vision_config num_hidden_layers (24 when absent), hidden_size (1024 when absent)"
        ),
        first="0.4.10",
        last="0.5.13",
        source=(
            "v0.5.10 server_args.py:6396-6431 (adjust_mem_fraction_for_vlm), applied at "
            ":1331-1334 when model_config.is_multimodal and not language_only; v0.4.10 :335 "
            "(first applied), v0.5.9 :5483, v0.5.13 :7774 (same code)"
        ),
    ),
    SizingRule(
        id="bench_one_batch_graphs",
        title="bench_one_batch: the default saw the GPU's cuda_graph_max_bs, not --batch-size",
        formula=(
            "ServerArgs defaults (mem_fraction_static included) first, then cuda_graph_max_bs = "
            "max(--batch-size): the captured graphs are the bench's batch sizes"
        ),
        first="0.5.3",
        last="0.5.14",
        source=(
            "v0.5.9 bench_one_batch.py:801 (ServerArgs.from_cli_args), :754 (then "
            "cuda_graph_max_bs = max(batch_size)), :266 (the bare max_total_num_tokens= print); "
            "v0.5.13 :943; v0.5.14 :956 (cuda_graph_config decode max_bs)"
        ),
    ),
    SizingRule(
        id="mfs_default_graphs",
        title="mem_fraction_static default with the graph reserve, no speculative reserve",
        formula=(
            "reserved = 512 + activation_tokens x 1.5 + tp x pp / 8 x 1024 + graphs "
            "(decode max_bs x 2 unless PD prefill; DP attention max_bs x dp x 3 (+1.5 when "
            "max_bs > 300); prefill graphs #tokens x 8, MLA 1536, unless PD decode); >60 GiB GPU: "
            "max(reserved, 10240); + DeepEP 2048; activation_tokens = max(chunked_prefill, 2048) "
            "(PD decode: max(max_running_requests x draft_tokens, 2048))"
        ),
        first="0.5.14",
        last=None,
        source=(
            "v0.5.16 server_args.py:4053-4088 (main), :4164-4196 (reserve_for_graph_mb), "
            ":4198-4210 (DeepEP)"
        ),
    ),
)

MFS_VLM_BASE = 0.95
MFS_VLM_SENSITIVITY = 0.1
MFS_VLM_FACTOR_MIN = 0.8
MFS_VLM_FACTOR_MAX = 1.05
MFS_VLM_BASELINE_LAYERS = 24
MFS_VLM_BASELINE_HIDDEN = 1024
"""adjust_mem_fraction_for_vlm: v0.5.10 server_args.py:6396-6431 (the same code 0.5.9 - 0.5.13)."""
CAPACITY_CAP_MIB = 288 * 1024
"""The largest capacity the default's range is reported up to (an MI355X: 288 GiB)."""

# Ascend DSA geometry (DeepSeek-V3.2 config.json: kv_lora_rank 512, qk_rope_head_dim 64,
# index_head_dim 128) and the indexer's quant block: v0.5.8 mem_cache/memory_pool.py:1677
# (NSATokenToKVPool.quant_block_size = 128, 4 scale bytes per block).
DSA_KV_LORA_RANK = 512
DSA_ROPE_DIM = 64
DSA_INDEX_HEAD_DIM = 128
DSA_QUANT_BLOCK = 128
DSA_SCALE_BYTES = 4

# fp4_e2m1: half a byte per element plus one scale byte per 16 elements (rule fp4_cell).
FP4_BYTES_PER_ELEMENT = 0.5 + 1 / 16

# Mamba requests-per-slot ratio terms: v0.5.8 model_executor/model_runner_kv_cache_mixin.py:37-39.
MAMBA_EXTRA_BUFFER_OVERLAP = 2
MAMBA_EXTRA_BUFFER_NO_OVERLAP = 1

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
CHUNKED_PREFILL_NO_GPU = 4096

# cuda_graph_max_bs default by GPU capacity (MiB upper bound -> (tp < 4, tp >= 4)): v0.5.10
# server_args.py:1166-1226, v0.5.16 server_args.py:3928-3981 (same table); above: 512.
CUDA_GRAPH_MAX_BS_BY_GPU: tuple[tuple[int, int, int], ...] = (
    (20 * 1024, 8, 8),
    (35 * 1024, 24, 80),
    (60 * 1024, 32, 160),
    (90 * 1024, 256, 512),
    (160 * 1024, 256, 512),
)
CUDA_GRAPH_MAX_BS_LARGE_GPU = 512
CUDA_GRAPH_MAX_BS_TP_SPLIT = 4

# Piecewise (prefill) graph token sizes as (start, stop, step) ranges, capped at the max tokens
# (chunked_prefill_size; 2048 for MLA): v0.5.10 server_args.py:1397-1413.
PIECEWISE_TOKEN_RANGES: tuple[tuple[int, int | None, int], ...] = (
    (4, 33, 4),
    (48, 257, 16),
    (288, 513, 32),
    (576, 1025, 64),
    (1280, 4097, 256),
    (4608, None, 512),
)
PIECEWISE_MLA_MAX_TOKENS = 2048

# mem_fraction_static default terms (MiB): v0.5.10 server_args.py:1280-1329,
# v0.5.16 server_args.py:4053-4210.
MFS_BASE_MIB = 512
MFS_ACTIVATION_MIB_PER_TOKEN = 1.5
MFS_ACTIVATION_MIN_TOKENS = 2048
MFS_GRAPH_MIB_PER_BS = 2
MFS_DP_MIB_PER_BS = 3
MFS_DP_LARGE_BS = 300
MFS_DP_LARGE_MIB_PER_BS = 1.5
MFS_PIECEWISE_MIB_PER_SIZE = 8
MFS_PIECEWISE_MLA_MIB = 1536
MFS_LARGE_GPU_MIB = 60 * 1024
MFS_LARGE_GPU_FLOOR_MIB = 10 * 1024
MFS_SPEC_MIB_OLD = 2048
"""Speculative reserve before 0.5.10 (v0.5.8 server_args.py:1019-1025)."""
MFS_SPEC_MIB = 4096
"""Speculative reserve 0.5.10 - 0.5.13 (v0.5.10 server_args.py:1316-1322)."""
MFS_STANDALONE_MIB = 6144
MFS_DEEPEP_MIB = 2048
MFS_PIECEWISE_SINCE = "0.5.10"

RULE: dict[str, SizingRule] = {rule.id: rule for rule in RULES}

# --- constants the rules use -------------------------------------------------------------------
MAX_NUM_REQS_PER_CONTEXT = 512
MAX_NUM_REQS_FLOOR = 2048
MAX_NUM_REQS_CAP = 4096
REQ_TO_TOKEN_BYTES = 4  # int32
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
    "fp4_e2m1": FP4_BYTES_PER_ELEMENT,
    "float4_e2m1fn_x2": FP4_BYTES_PER_ELEMENT,
}
"""fp4_e2m1 is 9/16 B per element (rule fp4_cell): the packed nibble plus its share of a scale."""
