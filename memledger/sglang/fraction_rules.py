"""SGLang's mem_fraction_static rules as data: its default by release and GPU, and the scaling
applied to it before the KV pool is sized (multimodal models, aiter attention).

Part of memledger.sglang.sizing_rules (whose RULES holds these too; same conventions: release
range, source line as `vX path:line` under `python/sglang/srt/` of that release's wheel).
"""

from __future__ import annotations

from memledger.sglang.releases import ReleaseRange
from memledger.sglang.rule_record import SizingRule

FRACTION_RULES: tuple[SizingRule, ...] = (
    SizingRule(
        id="mfs_default",
        title="mem_fraction_static default from GPU capacity (inferred when not printed)",
        formula=(
            "reserved = 512 + max(chunked_prefill, 2048) x 1.5 + cuda_graph_max_bs x 2 "
            "+ tp x pp / 8 x 1024 (+ DP-attention terms) (+ piecewise graphs: #tokens x 8, "
            "MLA 1536, 0.5.10+); >60 GiB GPU: max(reserved, 10240); + speculative 2048 "
            "(4096 from 0.5.10; STANDALONE 6144); mfs = round((gpu_mib - reserved) / gpu_mib, 3)"
        ),
        releases=ReleaseRange("0.5.3", "0.5.13"),
        source="v0.5.8 server_args.py:988-1031; v0.5.10 server_args.py:1280-1329",
    ),
    SizingRule(
        id="mfs_default_tp",
        title="mem_fraction_static default by tensor-parallel size alone (no GPU capacity)",
        formula="tp >= 16: 0.79; >= 8: 0.81; >= 4: 0.85; >= 2: 0.87; else 0.88",
        releases=ReleaseRange("0.4.0", "0.4.5"),
        source=(
            "v0.4.1 server_args.py:170-180; v0.4.5 :233-243 (v0.3.6 :156-166 has 0.82 at "
            "tp >= 8); memledger.sglang.mfs_defaults"
        ),
    ),
    SizingRule(
        id="mfs_default_tp_80g",
        title="mem_fraction_static default by tp x pp on GPUs up to 80 GiB",
        formula=(
            "G <= 80 GiB: the mfs_default_tp step of tp x pp (0.4.7: x 0.95 with speculative "
            "decoding); above 80 GiB each post release differs: not modelled"
        ),
        releases=ReleaseRange("0.4.6", "0.4.7"),
        source=(
            "v0.4.6 server_args.py:224-238; v0.4.6.post2 :226-247; v0.4.7 :253-282 "
            "(0.4.7.post1 already has mfs_default_buckets); memledger.sglang.mfs_defaults"
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
        releases=ReleaseRange("0.4.7", "0.5.2"),
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
            "vision_config num_hidden_layers (24 when absent), hidden_size (1024 when absent); "
            "only the default (a given value is kept); 0.4.10 prints the result"
        ),
        releases=ReleaseRange("0.4.10"),
        source=(
            "v0.5.10 server_args.py:6396-6431 (adjust_mem_fraction_for_vlm), applied at "
            ":1331-1334 when model_config.is_multimodal and not language_only; v0.4.10 :335 "
            "(first applied), :1981-1985 (the only release that logs it); v0.5.9 :5483, "
            "v0.5.13 :7774, v0.5.16 :4093-4095,7954 (same code); v0.5.23 "
            "arg_groups/memory_hook.py:281-287,330-336,417-462 (not on PD decode; 8 GiB flat "
            "with post-capture KV sizing)"
        ),
    ),
    SizingRule(
        id="mfs_multimodal_runner",
        title="ModelRunner scales a multimodal model's mem_fraction_static after server_args",
        formula=(
            "mfs_used = mfs x 0.95 (0.3.0 - 0.4.4), x 0.90 (0.4.5 - 0.4.8), given or default; "
            "0.4.2 - 0.4.8 print 'Automatically reduce --mem-fraction-static to X' (3 places), "
            "0.3.0 - 0.4.0 'Automatically turn off --chunked-prefill-size and adjust "
            "--mem-fraction-static' without X, 0.4.1 nothing"
        ),
        releases=ReleaseRange("0.3.0", "0.4.8"),
        source=(
            "v0.3.0 model_executor/model_runner.py:102-107; v0.4.0 :113-118; v0.4.1 :119-120; "
            "v0.4.2 :129-134; v0.4.4 :242-247; v0.4.5 :273-278 (x 0.90); v0.4.8 :414-419; "
            "gone in v0.4.9 (:453-459 keeps only the chunked-prefill switch)"
        ),
    ),
    SizingRule(
        id="mfs_aiter_runner",
        title="aiter attention, context over 8,192: ModelRunner scales mfs by 0.85 after "
        "server_args",
        formula=(
            "mfs_used = printed mfs x 0.85 when attention_backend == 'aiter' and context_len > "
            "8192 (on ROCm an unset backend becomes aiter for MHA models, in ModelRunner)"
        ),
        releases=ReleaseRange("0.4.9", "0.5.4"),
        source=(
            "v0.4.9 model_executor/model_runner.py:470-472; v0.5.2 :568-570 (auto aiter "
            ":450-472); v0.5.4 :646-648"
        ),
    ),
    SizingRule(
        id="mfs_aiter_args",
        title="aiter attention, context over 8,192: ServerArgs scales mfs by 0.85 before it "
        "is printed",
        formula=(
            "printed mfs = (given or default) x 0.85 when attention_backend == 'aiter' and "
            "context_len > 8192: a value passed as --mem-fraction-static is scaled too "
            "(0.5.23: unless SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION)"
        ),
        releases=ReleaseRange("0.5.5"),
        source=(
            "v0.5.5 server_args.py:1270-1272; v0.5.8 :1786-1788; v0.5.16 :5040-5042; "
            "v0.5.19 arg_groups/attention_hook.py:178-199; v0.5.23 "
            "arg_groups/attention_hook.py:244-269"
        ),
    ),
    SizingRule(
        id="mfs_default_platform",
        title="The default's GPU capacity on ROCm and Ascend (same reserve formula)",
        formula=(
            "gpu_mem: nvidia-smi memory.total (CUDA), rocm-smi VRAM total (ROCm), "
            "torch.npu.mem_get_info()[1] // 2^20 (Ascend; SGLANG_ZBAL_LOCAL_MEM_SIZE if set); "
            "piecewise (prefill) graphs are off on ROCm and Ascend, so their reserve is 0"
        ),
        releases=ReleaseRange("0.5.3"),
        source=(
            "v0.5.10 utils/common.py:1441-1512 (amdgpu), :1583-1592 (npu), :1673-1690 "
            "(get_device_memory_capacity); v0.5.16 utils/common.py:704-713; v0.5.10 "
            "server_args.py:1100-1102 (is_hip or is_npu: disable_piecewise_cuda_graph)"
        ),
    ),
    SizingRule(
        id="bench_one_batch_graphs",
        title="bench_one_batch: the default saw the GPU's cuda_graph_max_bs, not --batch-size",
        formula=(
            "ServerArgs defaults (mem_fraction_static included) first, then cuda_graph_max_bs = "
            "max(--batch-size): the captured graphs are the bench's batch sizes"
        ),
        releases=ReleaseRange("0.5.3", "0.5.14"),
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
        releases=ReleaseRange("0.5.14"),
        source=(
            "v0.5.16 server_args.py:4053-4088 (main), :4164-4196 (reserve_for_graph_mb), "
            ":4198-4210 (DeepEP)"
        ),
    ),
)

MFS_RUNNER_FACTORS: tuple[tuple[ReleaseRange, float], ...] = (
    (ReleaseRange("0.3.0", "0.4.4"), 0.95),
    (ReleaseRange("0.4.5", "0.4.8"), 0.90),
)
"""Rule mfs_multimodal_runner: (releases, factor) (v0.4.4 model_runner.py:243,
v0.4.5 :274)."""
MFS_RUNNER_PRINTED_SINCE = "0.4.2"
"""The first release whose ModelRunner prints the reduced value (v0.4.2 model_runner.py:131)."""
MFS_PRINTED_HALF_ULP = 0.0005
"""The reduced value is printed with 3 decimals (`{:.3f}`)."""
MFS_AITER_FACTOR = 0.85
MFS_AITER_MIN_CONTEXT = 8192
"""Rules mfs_aiter_runner / mfs_aiter_args: x 0.85 when context_len > 8192."""
MFS_VLM_BASE = 0.95
MFS_VLM_SENSITIVITY = 0.1
MFS_VLM_FACTOR_MIN = 0.8
MFS_VLM_FACTOR_MAX = 1.05
MFS_VLM_BASELINE_LAYERS = 24
MFS_VLM_BASELINE_HIDDEN = 1024
"""adjust_mem_fraction_for_vlm: v0.5.10 server_args.py:6396-6431 (the same code 0.5.9 - 0.5.13)."""
CAPACITY_CAP_MIB = 288 * 1024
"""The largest capacity the default's range is reported up to (an MI355X: 288 GiB)."""

CHUNKED_PREFILL_SOURCE = (
    "v0.5.8 server_args.py:904-950, v0.5.10 :1166-1226 (_handle_gpu_memory_settings)"
)
"""Where SGLang picks chunked_prefill_size by GPU capacity when none is given (MiB upper bound ->
tokens, below); above the last bound: 16384."""
CHUNKED_PREFILL_BY_GPU: tuple[tuple[int, int], ...] = (
    (20 * 1024, 2048),
    (35 * 1024, 2048),
    (60 * 1024, 4096),
    (90 * 1024, 8192),
    (160 * 1024, 8192),
)
CHUNKED_PREFILL_LARGE_GPU = 16384
CHUNKED_PREFILL_NO_GPU = 4096

CUDA_GRAPH_MAX_BS_SOURCE = "v0.5.10 server_args.py:1166-1226, v0.5.16 server_args.py:3928-3981"
"""Where SGLang picks cuda_graph_max_bs by GPU capacity (MiB upper bound -> (tp < 4, tp >= 4),
below; the same table in both); above: 512."""
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
MFS_PIECEWISE = ReleaseRange("0.5.10")
