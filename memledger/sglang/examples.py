"""The example lines: one or more real SGLang messages per line shape, and what each parses to.

Package data with two uses: tests/input/test_grammar.py checks the grammar against every example,
and `--grammar` extensions are refused when they change how any example parses (an extension
adds lines; it must not take built-in ones away). Each example: the message after the prefix, its
kind, its sizes as printed (exactly), and a subset of its values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memledger.model.events import EventKind


class Example(NamedTuple):
    """One example line and what it must parse to."""

    message: str
    kind: EventKind
    sizes: dict[str, str]
    """Every size of the parse, as printed (`Size.text`)."""
    values: dict[str, Any]
    """A subset of the parse's values."""


EXAMPLES: tuple[Example, ...] = (
    Example(
        "Init torch distributed begin.",
        EventKind.DIST_INIT_BEGIN,
        {},
        {"variant": "torch_distributed"},
    ),
    Example("Init nccl begin.", EventKind.DIST_INIT_BEGIN, {}, {"variant": "nccl"}),
    Example("Init parallel begin.", EventKind.DIST_INIT_BEGIN, {}, {"variant": "parallel"}),
    Example(
        "Init torch distributed ends. elapsed=0.23 s, mem usage=0.03 GB",
        EventKind.DIST_INIT_END,
        {"usage": "0.03 GB"},
        {"elapsed": 0.23},
    ),
    Example(
        "Memory baseline taken. mem usage=0.00 GB",
        EventKind.MEMORY_BASELINE,
        {"usage": "0.00 GB"},
        {},
    ),
    Example(
        "Load weight begin. avail mem=115.36 GB", EventKind.LOAD_BEGIN, {"avail": "115.36 GB"}, {}
    ),
    Example(
        "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=8.37 GB",
        EventKind.LOAD_END,
        {"avail": "8.37 GB"},
        {"type": "Qwen2ForCausalLM", "dtype": "torch.bfloat16"},
    ),
    Example(
        "Load weight end. elapsed=787.55 s, type=Qwen4ExpForConditionalGeneration, "
        "quant=modelopt_fp4, quant_algo=NVFP4, avail mem=29.01 GB, mem usage=82.97 GB.",
        EventKind.LOAD_END,
        {"avail": "29.01 GB", "usage": "82.97 GB"},
        {"elapsed": 787.55, "quant": "modelopt_fp4", "quant_algo": "NVFP4"},
    ),
    Example(
        "Load weight end. mem usage=-1.86 GB, avail mem=30.67 GB.",
        EventKind.LOAD_END,
        {"usage": "-1.86 GB", "avail": "30.67 GB"},
        {},
    ),
    Example(
        "Load weight end. Committed real weights after CUDA graph capture in 2.00 s "
        "(capture overlap window 1.00 s, startup overlap total 2.00 s)",
        EventKind.LOAD_END,
        {},
        {"overlap_commit": True},
    ),
    Example(
        "KV Cache is allocated. K size: 2.82 GB, V size: 2.82 GB.",
        EventKind.KV_ALLOCATED,
        {"k": "2.82 GB", "v": "2.82 GB"},
        {"va_upper_bound": False},
    ),
    Example(
        "KV Cache is allocated. #tokens: 2454421, KV size: 160.63 GB",
        EventKind.KV_ALLOCATED,
        {"kv": "160.63 GB"},
        {"tokens": 2454421},
    ),
    Example(
        "Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000, K size: 1.53 GB, "
        "V size: 1.53 GB",
        EventKind.KV_ALLOCATED,
        {"k": "1.53 GB", "v": "1.53 GB"},
        {"label": "Full", "dtype": "torch.bfloat16", "tokens": 400000},
    ),
    Example(
        "SWA KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 320000, KV size: 1.20 GB",
        EventKind.KV_ALLOCATED,
        {"kv": "1.20 GB"},
        {"label": "SWA", "va_upper_bound": True, "tokens": 320000},
    ),
    Example(
        "KV Cache skipped (no-op pool). Logical #tokens: 100, "
        "physical K/V size: ~12.5 KB placeholder",
        EventKind.KV_SKIPPED,
        {"kv": "12.5 KB"},
        {"tokens": 100},
    ),
    Example(
        "Using KV cache dtype: torch.float8_e4m3fn",
        EventKind.KV_DTYPE,
        {},
        {"dtype": "torch.float8_e4m3fn"},
    ),
    Example(
        "Mamba Cache is allocated. max_mamba_cache_size: 85292, conv_state size: 4.88GB, "
        "ssm_state size: 0.00GB ",
        EventKind.MAMBA_ALLOCATED,
        {"conv_state": "4.88 GB", "ssm_state": "0.00 GB"},
        {"max_mamba_cache_size": 85292},
    ),
    Example(
        "Mamba Cache is allocated. conv_state size: 0.03GB, ssm_state size: 2.74GB "
        "intermediate_ssm_state_cache size: 1.00GB intermediate_conv_window_cache size: 0.20GB ",
        EventKind.MAMBA_ALLOCATED,
        {
            "conv_state": "0.03 GB",
            "ssm_state": "2.74 GB",
            "intermediate_ssm": "1.00 GB",
            "intermediate_conv": "0.20 GB",
        },
        {},
    ),
    Example(
        "GDN ReplaySSM ring buffers allocated (record_len=4, fold=2): d=0.123GB, k=0.100GB, "
        "g=0.010GB rawv=0.2GB, rawk=0.1GB",
        EventKind.REPLAY_SSM,
        {"d": "0.123 GB", "k": "0.100 GB", "g": "0.010 GB", "rawv": "0.2 GB", "rawk": "0.1 GB"},
        {"record_len": 4, "fold": 2},
    ),
    Example(
        "Use Sliding window memory pool. full_layer_tokens=100, swa_layer_tokens=80",
        EventKind.SWA_SPLIT,
        {},
        {"full_layer_tokens": 100, "swa_layer_tokens": 80},
    ),
    Example(
        "Use sliding window memory pool (all SWA). swa_layer_tokens=80",
        EventKind.SWA_SPLIT,
        {},
        {"all_swa": True, "swa_layer_tokens": 80},
    ),
    Example(
        "SWAKVPool mem usage: 12.34567890123 GB, swa size: 148717, full size: 185897",
        EventKind.SWA_POOL,
        {"usage": "12.34567890123 GB"},
        {"swa_size": 148717, "full_size": 185897, "va_upper_bound": False},
    ),
    Example(
        "DSV4 memory calculation: bytes_per_full_token=1234.50, available_bytes=60.00 GB, "
        "c128_state_fixed=1.00 GB, full_token=12345",
        EventKind.DSV4_CALC,
        {"available_bytes": "60.00 GB", "c128_state_fixed": "1.00 GB"},
        {"bytes_per_full_token": 1234.5, "full_token": 12345},
    ),
    Example(
        "DSV4 pool sizes: full=1, swa=2, c4=3, c128=4, c4_state=5, c128_state=6",
        EventKind.DSV4_POOL_SIZES,
        {},
        {"full": 1, "swa": 2, "c4": 3, "c128": 4, "c4_state": 5, "c128_state": 6},
    ),
    Example(
        "Initialize DeepSeekV4TokenToKVPool with max_num_reqs=8 swa_size=164096 c4_size=1",
        EventKind.DSV4_POOL_INIT,
        {},
        {"max_num_reqs": 8, "swa_size": 164096, "c4_size": 1},
    ),
    Example(
        "The available memory for KV cache is 15.37 GB.",
        EventKind.ASCEND_KV_AVAIL,
        {"avail_kv": "15.37 GB"},
        {},
    ),
    Example(
        "Allocating MHA hierarchical KV host pool: 1000 tokens, 12.34 GB host memory.",
        EventKind.HICACHE_HOST,
        {"host": "12.34 GB"},
        {"tokens": 1000, "pool": "kv"},
    ),
    Example(
        "Memory pool end. avail mem=17.73 GB", EventKind.MEMORY_POOL_END, {"avail": "17.73 GB"}, {}
    ),
    Example("Init attention backend begin.", EventKind.ATTENTION_BACKEND_BEGIN, {}, {}),
    Example(
        "Init attention backend end. elapsed=0.03 s, avail mem=41.52 GB",
        EventKind.ATTENTION_BACKEND_END,
        {"avail": "41.52 GB"},
        {"elapsed": 0.03},
    ),
    Example(
        "Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "1.45 GB"},
        {
            "role": "target",
            "phase": "decode",
            "device": "cuda",
            "graph_named": True,
            "role_named": False,
        },
    ),
    Example(
        "Capture cuda graph end. Time elapsed: 26.07 s. mem usage=6.37 GB. avail mem=22.72 GB.",
        EventKind.CAPTURE_END,
        {"usage": "6.37 GB", "avail": "22.72 GB"},
        {"elapsed": 26.07},
    ),
    Example(
        "Capture cuda graph end. Time elapsed: 1.79 s. avail mem=1.00 GB. mem usage=0.50 GB.",
        EventKind.CAPTURE_END,
        {"usage": "0.50 GB", "avail": "1.00 GB"},
        {},
    ),
    Example(
        "Capture npu graph begin. This can take up to several minutes. avail mem=18.24 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "18.24 GB"},
        {"device": "npu"},
    ),
    Example(
        "Capture draft extend cuda graph begin (step 1). This can take up to several minutes. "
        "avail mem=1.00 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "1.00 GB"},
        {"role": "draft", "phase": "extend", "step": 1},
    ),
    Example(
        "Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, 12], "
        "avail mem=12.52 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "12.52 GB"},
        {"phase": "prefill", "backend": "breakable", "num_tokens": [4, 8, 12]},
    ),
    Example(
        "Capture target verify CUDA graph begin. backend=full, num_tokens_per_bs=6, "
        "bs=[1, 2, 3], avail mem=7.77 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "7.77 GB"},
        {"phase": "verify", "num_tokens_per_req": 6, "bs": [1, 2, 3], "role_named": True},
    ),
    Example(
        "Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=6.80 s, "
        "mem usage=0.61 GB, avail mem=11.69 GB.",
        EventKind.CAPTURE_END,
        {"usage": "0.61 GB", "avail": "11.69 GB"},
        {"bs": [1, 2, 4, 8], "elapsed": 6.8},
    ),
    Example(
        "Capture single-CG draft extend begin. This can take several minutes. avail mem=1.00 GB",
        EventKind.CAPTURE_BEGIN,
        {"avail": "1.00 GB"},
        {"role": "draft", "phase": "single_cg", "graph_named": False},
    ),
    Example(
        "Capture cuda graph bs [1, 2, 4, 8, 16]", EventKind.CAPTURE_BS, {}, {"bs": [1, 2, 4, 8, 16]}
    ),
    Example(
        "Capture cuda graph num tokens [4, 8]", EventKind.CAPTURE_BS, {}, {"num_tokens": [4, 8]}
    ),
    Example(
        "Capturing batches (bs=8 avail_mem=7.19 GB)",
        EventKind.CAPTURE_PROGRESS,
        {"avail": "7.19 GB"},
        {"bs": 8},
    ),
    Example(
        "Capturing batches (avail_mem=0.00 GB)",
        EventKind.CAPTURE_PROGRESS,
        {"avail": "0.00 GB"},
        {},
    ),
    Example(
        "Capturing num tokens (num_tokens=8192 avail_mem=12.06 GB)",
        EventKind.CAPTURE_PROGRESS,
        {"avail": "12.06 GB"},
        {"num_tokens": 8192},
    ),
    Example(
        "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 100, "
        "KV size: 1.00 GB, avail mem=2.00 GB",
        EventKind.POST_CAPTURE_KV,
        {"kv": "1.00 GB", "avail": "2.00 GB"},
        {"tokens": 100},
    ),
    Example(
        "max_total_num_tokens=980344, chunked_prefill_size=16384, max_prefill_tokens=16384, "
        "max_running_requests=3063, context_len=163840, available_gpu_mem=22.72 GB",
        EventKind.SUMMARY,
        {"available_gpu_mem": "22.72 GB"},
        {"max_total_num_tokens": 980344, "max_running_requests": 3063, "context_len": 163840},
    ),
    Example(
        "max_total_num_tokens=5000, chunked_prefill_size=None, max_prefill_tokens=16384",
        EventKind.SUMMARY,
        {},
        {"chunked_prefill_size": None},
    ),
    Example(
        # v0.4.6.post5 lora/lora_manager.py:68, v0.5.8 :83
        "Using triton as backend of LoRA kernels.",
        EventKind.LORA_BACKEND,
        {},
        {"backend": "triton"},
    ),
    Example(
        # v0.4.6.post5 model_executor/model_runner.py:349-351
        "Attention backend not set. Use flashinfer backend by default.",
        EventKind.ATTENTION_BACKEND_DEFAULT,
        {},
        {"backend": "flashinfer"},
    ),
    Example(
        # v0.5.2 model_executor/model_runner.py:498-500
        "Attention backend not explicitly specified. Use fa3 backend by default.",
        EventKind.ATTENTION_BACKEND_DEFAULT,
        {},
        {"backend": "fa3"},
    ),
    Example(
        # v0.5.8 server_args.py:1697-1699
        "Attention backend not specified. Use trtllm_mha backend by default.",
        EventKind.ATTENTION_BACKEND_DEFAULT,
        {},
        {"backend": "trtllm_mha"},
    ),
    Example(
        "All Reduce config: symmetric_memory = 28.01 MB, local_buffer = 8.00 MB, multicast = True",
        EventKind.ALL_REDUCE_CONFIG,
        {"symmetric_memory": "28.01 MB", "local_buffer": "8.00 MB"},
        {"multicast": True},
    ),
    Example(
        "Pre-allocating symmetric memory pool with 4 GiB",
        EventKind.SYMM_PREALLOC,
        {"size": "4 GiB"},
        {},
    ),
    Example(
        "Initialized DeepEP v2 ElasticBuffer: world_size=8 use_fp8_dispatch=True num_bytes=123456",
        EventKind.DEEPEP_BUFFER,
        {"num_bytes": "123456 B"},
        {"world_size": 8, "use_fp8_dispatch": True, "num_bytes": 123456},
    ),
    Example("ENV_VAR HCCL_BUFFSIZE:2100", EventKind.ENV_VAR, {}, {"HCCL_BUFFSIZE": 2100}),
    Example("Setting ENV_VAR HCCL_BUFFSIZE=650", EventKind.ENV_VAR, {}, {"HCCL_BUFFSIZE": 650}),
    Example(
        "dcp_replicate_q_proj: prepared full-head Q weights for 0 MLA layers",
        EventKind.DCP_Q_PREPARED,
        {},
        {"layers": 0},
    ),
    Example(
        "FlatAGStagingPool allocated: role=target, buffers=2, capacity=627048448, total=1196.0 MiB",
        EventKind.STAGING_POOL,
        {"capacity": "627048448 B", "total": "1196.0 MiB"},
        {"role": "target", "buffers": 2, "capacity": 627048448},
    ),
    Example(
        "Weight sharding: 92 weight-sharded layers (layers 1-92, group size 8)",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"sharded_layers": 92, "role": "target", "group_size": 8},
    ),
    Example(
        "DFlash draft: 5 weight-sharded layers",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"sharded_layers": 5, "role": "draft"},
    ),
    Example(
        "DFlash draft: 0 weight-sharded layers",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"sharded_layers": 0},
    ),
    Example(
        "DSpark draft: 3 weight sharded layers",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"sharded_layers": 3, "role": "draft", "draft_name": "DSpark"},
    ),
    Example(
        "target hoisted 2/8 layer AG(s) out of CUDA graph",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"hoisted": 2, "hoisted_of": 8, "role": "target"},
    ),
    Example(
        "draft KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5, KV size: 1.00 GB",
        EventKind.KV_ALLOCATED,
        {"kv": "1.00 GB"},
        {"label": "draft"},
    ),
    Example(
        "requant-then-shard: 276 block-FP8 weights kept full through post-load, "
        "sharded after requant",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"requant_then_shard": True, "requant_weights": 276},
    ),
    Example(
        "draft hoisted 1/5 layer AG(s) out of CUDA graph",
        EventKind.WEIGHT_SHARD_INFO,
        {},
        {"hoisted": 1, "hoisted_of": 5, "role": "draft"},
    ),
    Example(
        "DSpark SWA draft: reclaimed 16.37 GiB vs proportional draft KV",
        EventKind.DSPARK_RECLAIMED,
        {"reclaimed": "16.37 GiB"},
        {},
    ),
    Example(
        "DSpark draft SWA slot map: slots_per_req=4753, multiplier=3",
        EventKind.DSPARK_SLOT_MAP,
        {},
        {"slots_per_req": 4753, "multiplier": 3},
    ),
    Example(
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        "min_per_gpu_memory=72.50, local_gpu_memory=79.10, local_gpu_memory * 0.9=71.19",
        EventKind.IMBALANCE,
        {},
        {"min_per_gpu_memory": 72.5, "local_gpu_memory": 79.1},
    ),
    Example(
        "LoRA adapter loading starts: lora0. avail mem=10.00 GB",
        EventKind.LORA,
        {"avail": "10.00 GB"},
        {"phase": "starts"},
    ),
    Example(
        # v0.5.16 lora/lora_manager.py:264
        "LoRA adapter unloading completes: lora0. avail mem=10.00 GB",
        EventKind.LORA,
        {"avail": "10.00 GB"},
        {"phase": "unloading_completes"},
    ),
    Example(
        # v0.5.20 mem_cache/pool_host/base.py:186: a label, then `key=value`s of its own
        "Allocating MHA hierarchical KV host pool: 1000 tokens, 12.34 GB host memory, packed MTP "
        "KV layers: target_layers=61, draft_layers=1, total_layers=62.",
        EventKind.HICACHE_HOST,
        {"host": "12.34 GB"},
        {"tokens": 1000, "target_layers": 61, "draft_layers": 1, "total_layers": 62},
    ),
    Example(
        "Failed to get GPU memory capacity from nvidia-smi. Falling back to "
        "torch.cuda.mem_get_info(). Reported total GPU memory per device (MiB): [124546], "
        "using min: 124546 MiB.",
        EventKind.GPU_CAPACITY_FALLBACK,
        {"using_min": "124546 MiB"},
        {},
    ),
    Example(
        # v0.4.5 model_executor/model_runner.py:273-278 (x 0.90; allenai/olmocr#105)
        "Automatically reduce --mem-fraction-static to 0.720 because this is a multimodal model.",
        EventKind.MFS_REDUCED,
        {},
        {"mem_fraction_static": 0.72},
    ),
    Example(
        # v0.4.10 server_args.py:1981-1985 (adjust_mem_fraction_for_vlm)
        "Multimodal model: Dynamically adjusted --mem-fraction-static from: 0.871 to: 0.828.",
        EventKind.MFS_VLM_ADJUSTED,
        {},
        {"mem_fraction_static_before": 0.871, "mem_fraction_static": 0.828},
    ),
    Example(
        # v0.4.0 model_executor/model_runner.py:113-118 (x 0.95, the value not printed)
        "Automatically turn off --chunked-prefill-size and adjust --mem-fraction-static for "
        "multimodal models.",
        EventKind.MFS_REDUCED,
        {},
        {},
    ),
)
