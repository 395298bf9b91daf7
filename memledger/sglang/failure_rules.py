"""What a failed startup's traceback and milestones mean: SGLang's startup phases, which functions
run each phase, and the rule SGLang picks its default `--mem-fraction-static` by.

Startup order (v0.5.8 model_executor/model_runner.py: `initialize` :414 -> `load_model` :805 ->
`init_memory_pool` (model_runner_kv_cache_mixin.py:252) -> `init_cublas` :1587 /
`init_attention_backend` :1596 / `kernel_warmup` :1688 (FlashInfer autotune :1726) ->
`init_device_graphs` :1979 -> `init_piecewise_cuda_graphs` :2018; then the HTTP server's
`_execute_server_warmup` (entrypoints/http_server.py:1496) and "The server is fired up" :1665).
v0.5.23 names: model_executor/model_runner.py `init_torch_distributed` :1261, `load_model` :1270,
`init_attention_backends` :1105, `init_decode_cuda_graph` :1605, `init_prefill_cuda_graph` :1678;
mem_cache/kv_cache_configurator.py `configure` :457; distributed/bootstrap.py
`init_parallel_runtime` :90; distributed/device_communicators/pynccl_allocator.py
`prealloc_symmetric_memory_pool` :510; managers/scheduler.py `run_event_loop` :1975.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from memledger.sglang.releases import version_code

if TYPE_CHECKING:  # stdlib only at run time: memledger.sglang.lines imports this module
    from memledger.model.events import Event


class Phase(StrEnum):
    """Where in the startup something happened (issue 11's vocabulary, in startup order)."""

    DIST_INIT = "dist_init"
    DEVICE_CHECK = "device_check"
    """vLLM refused to start: less free memory than its budget asks (vLLM only)."""
    LOAD = "load"
    PROFILE = "profile"
    """vLLM's profiling forward pass, before the KV cache is sized (vLLM only)."""
    KV_SIZING = "kv_sizing"
    """SGLang refused to size the KV pool (no room left under --mem-fraction-static)."""
    MEMORY_POOL = "memory_pool"
    AFTER_POOL = "after_pool"
    """Attention backends, workspaces, symmetric memory, autotuning: pool end -> first capture."""
    GRAPH_CAPTURE = "graph_capture"
    DRAFT = "draft"
    """The speculative draft worker's own startup (dist init, weights, pools, graphs), after the
    target's graphs (v0.5.8 speculative/eagle_worker.py:80-201)."""
    WARMUP = "warmup"
    SERVING = "serving"
    RESUME = "resume"
    """An RL framework resuming SGLang's released memory through torch_memory_saver (v0.5.8
    managers/scheduler_update_weights_mixin.py:154)."""
    UNKNOWN = "unknown"


PHASE_TEXT: dict[Phase, str] = {
    Phase.DIST_INIT: "distributed init",
    Phase.DEVICE_CHECK: "the free-memory check at startup",
    Phase.LOAD: "weight loading",
    Phase.PROFILE: "the profiling forward pass",
    Phase.KV_SIZING: "KV-cache sizing",
    Phase.MEMORY_POOL: "memory-pool allocation",
    Phase.AFTER_POOL: "setup after the memory pool",
    Phase.GRAPH_CAPTURE: "CUDA-graph capture",
    Phase.DRAFT: "the speculative draft worker's startup",
    Phase.WARMUP: "warmup",
    Phase.SERVING: "serving",
    Phase.RESUME: "resuming memory released for training (torch_memory_saver)",
    Phase.UNKNOWN: "an unknown phase",
}


class PhaseFrame(NamedTuple):
    """A traceback frame that places a failure in a lifecycle phase: the function, a fragment its
    file's path must contain ("" for any file), the phase, and where SGLang defines it."""

    function: str
    fragment: str
    phase: Phase
    source: str


_F = PhaseFrame
PHASE_FRAMES: tuple[PhaseFrame, ...] = (
    # the speculative draft worker's own startup, ahead of the target's rows of the same function
    # names (the draft worker calls them too): its constructor (dist init, weights), its pools,
    # backends and graphs (v0.5.8 speculative/eagle_worker.py:80-201, v0.5.23 managers/
    # scheduler.py:1035-1126 drives them apart from the target's)
    _F(
        "__init__", "speculative/eagle_worker", Phase.DRAFT, "v0.5.8 speculative/eagle_worker.py:80"
    ),
    _F(
        "__init__",
        "speculative/multi_layer_eagle_worker",
        Phase.DRAFT,
        "v0.5.8 speculative/multi_layer_eagle_worker_v2.py:66",
    ),
    _F(
        "__init__",
        "speculative/standalone_worker",
        Phase.DRAFT,
        "v0.5.8 speculative/standalone_worker_v2.py:38",
    ),
    _F(
        "__init__",
        "speculative/dflash_worker",
        Phase.DRAFT,
        "v0.5.23 speculative/dflash_worker_v2.py:388",
    ),
    _F(
        "__init__", "speculative/ngram_worker", Phase.DRAFT, "v0.5.8 speculative/ngram_worker.py:25"
    ),
    _F(
        "__init__",
        "speculative/eagle_draft",
        Phase.DRAFT,
        "v0.5.8 speculative/eagle_draft_cuda_graph_runner.py:38",
    ),
    _F("init_lm_head", "speculative/", Phase.DRAFT, "v0.5.8 speculative/eagle_worker_v2.py:192"),
    _F(
        "alloc_memory_pool",
        "speculative/",
        Phase.DRAFT,
        "v0.5.23 speculative/eagle_worker_v2.py:243",
    ),
    _F(
        "init_attention_backend",
        "speculative/",
        Phase.DRAFT,
        "v0.5.8 speculative/eagle_worker.py:209",
    ),
    _F(
        "init_attention_backends",
        "speculative/",
        Phase.DRAFT,
        "v0.5.23 speculative/eagle_worker_v2.py:276",
    ),
    _F("init_cuda_graphs", "speculative/", Phase.DRAFT, "v0.5.8 speculative/eagle_worker.py:228"),
    _F(
        "_capture_cuda_graphs",
        "speculative/",
        Phase.DRAFT,
        "v0.5.23 speculative/eagle_worker_v2.py:476",
    ),
    _F(
        "capture",
        "speculative/",
        Phase.DRAFT,
        "v0.5.8 speculative/eagle_draft_cuda_graph_runner.py:178",
    ),
    _F(
        "capture_one_batch_size",
        "speculative/",
        Phase.DRAFT,
        "v0.5.8 speculative/eagle_draft_cuda_graph_runner.py:181",
    ),
    _F(
        "capture_one_shape",
        "speculative/",
        Phase.DRAFT,
        "v0.5.23 speculative/eagle_draft_cuda_graph_runner.py:380",
    ),
    _F("maybe_init_draft_worker", "", Phase.DRAFT, "v0.5.23 managers/scheduler.py:1035"),
    # the draft-only model classes (NextN/MTP heads, EAGLE/EAGLE3 drafts, DFlash), built and
    # loaded only by the draft worker
    _F("__init__", "_nextn.py", Phase.DRAFT, "v0.5.8 models/deepseek_nextn.py:192"),
    _F("load_weights", "_nextn.py", Phase.DRAFT, "v0.5.8 models/deepseek_nextn.py:247"),
    _F("__init__", "_mtp.py", Phase.DRAFT, "v0.5.8 models/qwen3_next_mtp.py:38"),
    _F("load_weights", "_mtp.py", Phase.DRAFT, "v0.5.8 models/qwen3_next_mtp.py:105"),
    _F("__init__", "_eagle", Phase.DRAFT, "v0.5.8 models/llama_eagle3.py:187"),
    _F("load_weights", "_eagle", Phase.DRAFT, "v0.5.8 models/llama_eagle3.py:229"),
    _F("__init__", "models/dflash", Phase.DRAFT, "v0.5.23 models/dflash.py:687"),
    _F("load_weights", "models/dflash", Phase.DRAFT, "v0.5.23 models/dflash.py:886"),
    # distributed init: process groups, NCCL and custom all-reduce buffers, the balance check
    _F("init_torch_distributed", "", Phase.DIST_INIT, "v0.5.8 model_executor/model_runner.py:693"),
    _F(
        "init_distributed_environment",
        "",
        Phase.DIST_INIT,
        "v0.5.8 distributed/parallel_state.py:1471",
    ),
    _F(
        "initialize_model_parallel",
        "",
        Phase.DIST_INIT,
        "v0.5.8 distributed/parallel_state.py:1537",
    ),
    _F(
        "__init__",
        "distributed/parallel_state",
        Phase.DIST_INIT,
        "v0.5.8 distributed/parallel_state.py:212",
    ),
    _F(
        "__init__",
        "device_communicators/custom_all_reduce",
        Phase.DIST_INIT,
        "v0.5.8 distributed/device_communicators/custom_all_reduce.py:52",
    ),
    _F(
        "__init__",
        "device_communicators/pynccl.py",
        Phase.DIST_INIT,
        "v0.5.8 distributed/device_communicators/pynccl.py:29",
    ),
    _F("init_parallel_runtime", "", Phase.DIST_INIT, "v0.5.23 distributed/bootstrap.py:90"),
    _F(
        "measure_pre_model_load_memory", "", Phase.DIST_INIT, "v0.5.23 distributed/bootstrap.py:193"
    ),
    # weights: the loader, each layer's weight_loader, the model's and the quantization's
    # post-load steps (requantisation, MoE weight shuffles, MLA absorption); LoRA's adapters and
    # pool come right after the base weights, before KV sizing (v0.5.8
    # model_executor/model_runner.py:533-535)
    _F("load_model", "", Phase.LOAD, "v0.5.8 model_executor/model_runner.py:805"),
    _F("load_weights_and_postprocess", "", Phase.LOAD, "v0.5.8 model_loader/loader.py:669"),
    _F("_initialize_model", "model_loader", Phase.LOAD, "v0.5.8 model_loader/loader.py:229"),
    _F("default_weight_loader", "", Phase.LOAD, "v0.5.8 model_loader/weight_utils.py:993"),
    _F(
        "safetensors_weights_iterator",
        "",
        Phase.LOAD,
        "v0.5.8 model_loader/weight_utils.py:715",
    ),
    _F("weight_loader", "srt/layers/", Phase.LOAD, "v0.5.8 layers/linear.py:236"),
    _F("weight_loader_v2", "srt/layers/", Phase.LOAD, "v0.5.8 layers/linear.py:414"),
    _F(
        "process_weights_after_loading",
        "",
        Phase.LOAD,
        "v0.5.8 layers/quantization/fp8.py:417",
    ),
    _F(
        "process_weights_after_loading_block_quant",
        "",
        Phase.LOAD,
        "v0.5.8 layers/quantization/fp8.py:366",
    ),
    _F(
        "requant_weight_ue8m0_inplace",
        "",
        Phase.LOAD,
        "v0.5.8 layers/quantization/fp8_utils.py:651",
    ),
    _F("post_load_weights", "", Phase.LOAD, "v0.5.8 model_loader/utils.py:119"),
    _F(
        "maybe_apply_post_load_model_transforms",
        "",
        Phase.LOAD,
        "v0.5.23 model_executor/model_runner.py:826",
    ),
    _F(
        "maybe_precompile_model_kernels_after_loading",
        "",
        Phase.LOAD,
        "v0.5.23 model_executor/model_runner.py:1436",
    ),
    _F(
        "start_startup_weight_load",
        "",
        Phase.LOAD,
        "v0.5.23 model_executor/model_runner.py:1412",
    ),
    _F(
        "finalize_startup_weight_load",
        "",
        Phase.LOAD,
        "v0.5.23 model_executor/model_runner.py:1416",
    ),
    _F("init_tp_model_worker", "", Phase.LOAD, "v0.5.23 managers/scheduler.py:1018"),
    # building the model creates its weights: a model's or a layer's constructor, a quantization
    # method's create_weights (v0.5.8 model_loader/loader.py _initialize_model -> models/*.py)
    _F("__init__", "srt/models/", Phase.LOAD, "v0.5.8 models/llama.py:454"),
    # a MoE layer and its kernel's state built with the model (FusedMoE.__init__): weight
    # loading, whatever CUDA-graph memory the OOM text shows
    _F(
        "__init__", "srt/layers/moe/", Phase.LOAD, "v0.5.8 layers/moe/fused_moe_triton/layer.py:152"
    ),
    _F("create_weights", "srt/layers/", Phase.LOAD, "v0.5.8 layers/quantization/fp8.py:274"),
    _F("load_weights", "srt/models/", Phase.LOAD, "v0.5.8 models/llama.py:599"),
    _F("init_lora_manager", "", Phase.LOAD, "v0.5.8 model_executor/model_runner.py:1411"),
    _F("maybe_init_lora_manager", "", Phase.LOAD, "v0.5.23 model_executor/model_runner.py:831"),
    _F("init_memory_pool", "srt/lora/", Phase.LOAD, "v0.5.8 lora/lora_manager.py:508"),
    _F("init_buffers", "srt/lora/", Phase.LOAD, "v0.5.8 lora/mem_pool.py:202"),
    _F("__init__", "srt/lora/", Phase.LOAD, "v0.5.8 lora/mem_pool.py:49"),
    # the KV budget, the request table and the KV (Mamba, SWA) pools
    _F(
        "init_memory_pool",
        "",
        Phase.MEMORY_POOL,
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252",
    ),
    _F(
        "profile_max_num_token",
        "",
        Phase.MEMORY_POOL,
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:111",
    ),
    _F(
        "configure",
        "kv_cache_configurator",
        Phase.MEMORY_POOL,
        "v0.5.23 mem_cache/kv_cache_configurator.py:457",
    ),
    _F("alloc_memory_pool", "", Phase.MEMORY_POOL, "v0.5.23 model_executor/model_runner.py:971"),
    _F("init_target_memory_pool", "", Phase.MEMORY_POOL, "v0.5.23 managers/scheduler.py:1078"),
    _F("init_memory_pools", "", Phase.MEMORY_POOL, "v0.5.23 managers/scheduler.py:1098"),
    _F(
        "post_capture_resize_kv_pool",
        "",
        Phase.MEMORY_POOL,
        "v0.5.23 model_executor/model_runner.py:1061",
    ),
    _F(
        "__init__",
        "mem_cache/memory_pool.py",
        Phase.MEMORY_POOL,
        "v0.5.8 mem_cache/memory_pool.py:120",
    ),
    _F("_create_buffers", "mem_cache/", Phase.MEMORY_POOL, "v0.5.8 mem_cache/memory_pool.py:754"),
    _F("_init_mamba_pool", "mem_cache/", Phase.MEMORY_POOL, "v0.5.8 mem_cache/memory_pool.py:411"),
    _F("__init__", "mem_cache/allocator", Phase.MEMORY_POOL, "v0.5.8 mem_cache/allocator.py:120"),
    # after the pool: cuBLAS, attention backends and their workspaces, kernel warmup/autotune,
    # symmetric memory
    _F("init_cublas", "", Phase.AFTER_POOL, "v0.5.8 model_executor/model_runner.py:1587"),
    _F(
        "init_attention_backend", "", Phase.AFTER_POOL, "v0.5.8 model_executor/model_runner.py:1596"
    ),
    # the model's own attention-side modules, built with the model: a vision tower's attention,
    # Mamba mixers, linear-attention norms, a sparse-attention indexer (not backends)
    _F("__init__", "layers/attention/vision", Phase.LOAD, "v0.5.8 layers/attention/vision.py:520"),
    _F(
        "__init__",
        "layers/attention/mamba/",
        Phase.LOAD,
        "v0.5.8 layers/attention/mamba/mamba.py:126",
    ),
    _F("__init__", "layers/attention/fla/", Phase.LOAD, "v0.5.8 layers/attention/fla/kda.py:438"),
    _F(
        "__init__",
        "layers/attention/nsa/nsa_indexer",
        Phase.LOAD,
        "v0.5.8 layers/attention/nsa/nsa_indexer.py:128",
    ),
    # an attention backend's constructor allocating its workspace (v0.5.8
    # layers/attention/flashinfer_backend.py:196-206; aiter_backend.py, sglang PR #20888)
    _F(
        "__init__",
        "layers/attention/",
        Phase.AFTER_POOL,
        "v0.5.8 layers/attention/flashinfer_backend.py:115",
    ),
    _F(
        "init_attention_backends",
        "",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/model_runner.py:1105",
    ),
    _F("init_all_attention_backends", "", Phase.AFTER_POOL, "v0.5.23 managers/scheduler.py:1113"),
    _F("init_flashinfer", "", Phase.AFTER_POOL, "v0.2.13 model_executor/model_runner.py:294"),
    _F(
        "init_flash_infer",
        "",
        Phase.AFTER_POOL,
        "v0.1.18 managers/controller/model_runner.py:384",
    ),
    _F("kernel_warmup", "", Phase.AFTER_POOL, "v0.5.8 model_executor/model_runner.py:1688"),
    # v0.5.23's kernel warmup and autotune (DeepGEMM's among them) run once from the first
    # graph runner's capture, before its graphs (model_executor/runner/base_runner.py:253-297)
    _F(
        "warmup",
        "runner/base_runner",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/runner/base_runner.py:253",
    ),
    _F(
        "_warmup",
        "runner/base_runner",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/runner/base_runner.py:257",
    ),
    _F(
        "_dummy_run",
        "runner/base_runner",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/runner/base_runner.py:465",
    ),
    _F(
        "pp_parallel_deep_gemm_warmup",
        "",
        Phase.AFTER_POOL,
        "v0.5.23 layers/deep_gemm_wrapper/compile_utils.py:534",
    ),
    _F("_flashinfer_autotune", "", Phase.AFTER_POOL, "v0.5.8 model_executor/model_runner.py:1726"),
    _F(
        "_dummy_run",
        "model_executor/model_runner",
        Phase.AFTER_POOL,
        "v0.5.8 model_executor/model_runner.py:1737",
    ),
    _F(
        "_autotune_buffers",
        "",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/runner/decode_cuda_graph_runner.py:704",
    ),
    _F(
        "prealloc_symmetric_memory_pool",
        "",
        Phase.AFTER_POOL,
        "v0.5.23 distributed/device_communicators/pynccl_allocator.py:510",
    ),
    _F(
        "_prepare_replicated_q_proj",
        "",
        Phase.AFTER_POOL,
        "v0.5.23 model_executor/model_runner.py:1133",
    ),
    # the target's graphs
    _F(
        "init_cuda_graphs",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.4.6.post5 model_executor/model_runner.py:1082",
    ),
    _F("init_device_graphs", "", Phase.GRAPH_CAPTURE, "v0.5.8 model_executor/model_runner.py:1979"),
    _F(
        "init_piecewise_cuda_graphs",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/model_runner.py:2018",
    ),
    _F(
        "init_decode_cuda_graph",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/model_runner.py:1605",
    ),
    _F(
        "init_prefill_cuda_graph",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/model_runner.py:1678",
    ),
    _F("init_all_cuda_graphs", "", Phase.GRAPH_CAPTURE, "v0.5.23 managers/scheduler.py:1122"),
    _F(
        "capture_decode_graph",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/model_runner_components/cuda_graph_setup.py:703",
    ),
    _F(
        "capture_prefill_graph",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/model_runner_components/cuda_graph_setup.py:472",
    ),
    _F(
        "capture",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/cuda_graph_runner.py:472",
    ),
    _F(
        "capture_one_batch_size",
        "",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/cuda_graph_runner.py:552",
    ),
    _F(
        "run_once",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/cuda_graph_runner.py:696",
    ),
    _F(
        "capture_one_shape",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/runner/decode_cuda_graph_runner.py:1368",
    ),
    _F(
        "_capture_one_stream",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.23 model_executor/runner/decode_cuda_graph_runner.py:1318",
    ),
    _F(
        "warmup_torch_compile",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/piecewise_cuda_graph_runner.py:285",
    ),
    _F(
        "__init__",
        "graph_runner",
        Phase.GRAPH_CAPTURE,
        "v0.5.8 model_executor/cuda_graph_runner.py:237",
    ),
    # the HTTP server's warmup request, the sampler's prewarm after the graphs
    _F("_execute_server_warmup", "", Phase.WARMUP, "v0.5.8 entrypoints/http_server.py:1496"),
    _F("_wait_and_warmup", "", Phase.WARMUP, "v0.5.8 entrypoints/http_server.py:1649"),
    _F("prewarm_sampling", "", Phase.WARMUP, "v0.5.23 model_executor/model_runner.py:1165"),
    # an RL framework resuming what SGLang released (torch_memory_saver entrypoint.py resume)
    _F(
        "resume_memory_occupation",
        "",
        Phase.RESUME,
        "v0.5.8 managers/scheduler_update_weights_mixin.py:154",
    ),
    _F(
        "resume",
        "torch_memory_saver",
        Phase.RESUME,
        "v0.5.23 utils/torch_memory_saver_adapter.py:76",
    ),
    # the embedding frameworks' own calls that resume SGLang's memory (memledger.sglang.frameworks)
    _F(
        "wake_up",
        "sglang_rollout/async_sglang_server",
        Phase.RESUME,
        "verl-project/verl@1dda039 verl/workers/rollout/sglang_rollout/async_sglang_server.py:480",
    ),
    _F("onload", "ray/rollout.py", Phase.RESUME, "THUDM/slime@624b824 slime/ray/rollout.py:211"),
    _F(
        "onload_weights",
        "ray/rollout.py",
        Phase.RESUME,
        "THUDM/slime@624b824 slime/ray/rollout.py:343",
    ),
    _F(
        "load_states",
        "strategy/sglang_strategy",
        Phase.RESUME,
        "alibaba/ROLL@8eb27cc roll/distributed/strategy/sglang_strategy.py:359",
    ),
    # the serving loop: a batch being scheduled, run, sampled (or the warmup request). These
    # frames are weaker than any startup frame above (memledger.diagnosis.phase): the serving
    # loop calls no startup step, so a startup frame in the same traceback is where it failed
    _F("run_event_loop", "", Phase.SERVING, "v0.5.23 managers/scheduler.py:1975"),
    _F("event_loop_normal", "", Phase.SERVING, "v0.5.8 managers/scheduler.py:1068"),
    _F("event_loop_overlap", "", Phase.SERVING, "v0.5.8 managers/scheduler.py:1095"),
    _F("get_next_batch_to_run", "scheduler", Phase.SERVING, "v0.5.8 managers/scheduler.py:1805"),
    _F("run_batch", "scheduler", Phase.SERVING, "v0.5.8 managers/scheduler.py:2244"),
    _F("process_batch_result", "scheduler", Phase.SERVING, "v0.5.8 managers/scheduler.py:2413"),
    _F(
        "forward_batch_generation",
        "",
        Phase.SERVING,
        "v0.5.8 managers/tp_worker.py:429, speculative/eagle_worker_v2.py:639",
    ),
    _F(
        "forward_batch_speculative_generation",
        "",
        Phase.SERVING,
        "v0.5.1 speculative/eagle_worker.py:352",
    ),
    _F(
        "forward_thread_func_",
        "tp_worker",
        Phase.SERVING,
        "v0.4.6.post5 managers/tp_worker_overlap_thread.py:125",
    ),
    _F(
        "forward_thread_func",
        "tp_worker_overlap_thread",
        Phase.SERVING,
        "v0.4.6.post5 managers/tp_worker_overlap_thread.py:115",
    ),
    _F(
        "forward",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2221",
    ),
    _F(
        "_forward_raw",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2277",
    ),
    _F(
        "forward_extend",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2151",
    ),
    _F(
        "forward_decode",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2128",
    ),
    _F(
        "sample",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2362",
    ),
    _F(
        "compute_logprobs_only",
        "model_runner.py",
        Phase.SERVING,
        "v0.5.8 model_executor/model_runner.py:2400",
    ),
    # the sampler runs on a served batch (model_runner.sample), and under a draft's capture or
    # the sampling prewarm, whose frames outrank it
    _F("forward", "layers/sampler", Phase.SERVING, "v0.5.8 layers/sampler.py:67"),
    # releases 0.1-0.2: the tensor-parallel server's loop (managers/controller/tp_worker.py in
    # 0.1.x) and the model runner's prefill
    _F("exposed_step", "tp_worker", Phase.SERVING, "v0.2.13 managers/tp_worker.py:202"),
    _F("forward_step", "tp_worker", Phase.SERVING, "v0.2.13 managers/tp_worker.py:229"),
    _F("forward_prefill_batch", "tp_worker", Phase.SERVING, "v0.2.13 managers/tp_worker.py:439"),
    _F(
        "forward_fill_batch",
        "tp_worker",
        Phase.SERVING,
        "v0.1.18 managers/controller/tp_worker.py:437",
    ),
    _F("forward_decode_batch", "tp_worker", Phase.SERVING, "v0.2.13 managers/tp_worker.py:573"),
    _F(
        "forward_prefill",
        "model_runner.py",
        Phase.SERVING,
        "v0.1.18 managers/controller/model_runner.py:417",
    ),
    # a decode batch retracting requests for room (v0.5.8 managers/schedule_batch.py:3451), a PD
    # decode worker pre-allocating for a request in transfer
    _F("retract_decode", "", Phase.SERVING, "v0.5.8 managers/schedule_batch.py:1846"),
    _F("_pre_alloc", "disaggregation", Phase.SERVING, "v0.5.8 disaggregation/decode.py:656"),
    _F("alloc", "mem_cache/", Phase.SERVING, "v0.5.8 mem_cache/memory_pool.py:148"),
    _F(
        "handle_request",
        "entrypoints",
        Phase.SERVING,
        "v0.5.8 entrypoints/openai/serving_base.py:86",
    ),
    _F(
        "generate_request",
        "tokenizer_manager",
        Phase.SERVING,
        "v0.5.8 managers/tokenizer_manager.py:486",
    ),
)
"""Which function (in which file) places a traceback in which phase. Each frame takes the first
row it matches; the traceback's phase is its innermost startup frame's, the draft worker's when a
draft frame encloses a target step, and a serving frame's only when no startup frame is there
(memledger.diagnosis.phase). Not listed on purpose: code that runs in whichever phase first calls
it, whose phase the enclosing frames give: DeepGEMM's JIT compile (v0.5.8
layers/deep_gemm_wrapper/compile_utils.py:291 deep_gemm_execution_hook), DeepEP's buffers
(allocated at the first dispatch), the models' and layers' forward code (capture, warmup and
serving all run it)."""
PREFILL_FRAMES = ("forward_extend", "run_batch_prefill")
"""Functions whose frame runs a prefill (extend) forward, the serving stage's prefill: v0.5.10
model_executor/model_runner.py:2645 `forward_extend` (`run_batch_prefill` is not in that wheel;
kept from the rule's first version)."""
WARMUP_CONTEXT = "warmup error"
"""`Initialization failed. warmup error: Traceback ...` (v0.5.8 entrypoints/http_server.py:1516)."""
WARMUP_REQUESTS = 1
"""Requests the warmup gives a rank: one (v0.1.12 server.py:497-508; v0.5.8 entrypoints/
http_server.py:1531-1542, one per DP rank). A serving batch holding more (its new, running and
queued requests) served real requests: the startup was over, whether or not a ready line came
(SGLang 0.1 printed none: v0.1.12 server.py:495-520)."""
BATCH_REQUESTS = ("new_seq", "running_req", "queue_req")
"""The serving-batch numbers (memledger.sglang.lines.SERVING_BATCH_FIELDS) that count requests."""
SERVED = (Phase.WARMUP, Phase.SERVING)
"""The phases that serve requests: the warmup's, then the users'."""


def beyond_warmup(batch: Event | None) -> bool:
    """A serving-batch line holds more requests than the warmup gives a rank."""
    values = batch.values if batch is not None else {}
    return sum(n for k in BATCH_REQUESTS if isinstance(n := values.get(k), int)) > WARMUP_REQUESTS


CAPTURE_ORDER_CITATION = (
    "graphs are captured largest batch first: v0.5.8 model_executor/cuda_graph_runner.py:485, "
    "v0.5.23 model_executor/runner/decode_cuda_graph_runner.py:1326 (reversed(capture_bs))"
)
BUDGET_SOURCES: tuple[tuple[str, str], ...] = (
    ("0.4.1", "model_executor/model_runner.py:487-490"),
    ("0.4.6.post2", "model_executor/model_runner.py:736-739"),
    ("0.5.2", "model_executor/model_runner.py:1123-1125"),
    ("0.5.8", "model_executor/model_runner_kv_cache_mixin.py:138-140"),
    ("0.5.20", "mem_cache/kv_cache_configurator.py:2165, :2179"),
    ("0.5.23", "mem_cache/kv_cache_configurator.py:3007, :3038"),
)
"""Where each release computes the KV budget rest = A - P x (1 - mfs) (the domain review read each
wheel), oldest first: a log is cited at the release nearest its own (`nearest_source`)."""


def nearest_source(sources: tuple[tuple[str, str], ...], first: int, last: int) -> str:
    """`vX path:line` of the newest release in `sources` at or below the log's newest possible
    release (`last`, else `first`; version codes, 0 = unknown), the oldest when all are newer, and
    v0.5.8's when the log's release is unknown."""
    bound = last or first
    if not bound:
        release, where = next((r, w) for r, w in sources if r == "0.5.8")
        return f"v{release} {where}"
    fitting = [(r, w) for r, w in sources if version_code(r) <= bound] or [sources[0]]
    release, where = fitting[-1]
    return f"v{release} {where}"


COUNT_SHAPES = frozenset({"asked", "available", "available_full", "available_swa"})
"""`pool_exhausted` count lines under a Prefill/Decode raise: details of it, not failures."""
COUNT_LINES = 6
"""The count lines follow their raise within this many lines (v0.5.8 mem_cache/common.py:283-287,
:500-516: up to five)."""
SERVING_SHAPES = frozenset(
    {
        "too_long",
        "retract",
        "prefill",
        "decode",
        "alloc_req_slots",
        "alloc_token_slots",
        "admitted",
    }
)
"""`pool_exhausted` shapes SGLang prints only while scheduling requests."""
POOL_RAN_OUT_CITATION = (
    "v0.5.8 mem_cache/common.py:284 (prefill), :321 (alloc_req_slots), :413 (decode)"
)
MAX_REQ_INPUT_LEN_SOURCES: tuple[tuple[str, str], ...] = (
    ("0.2.13", "managers/tp_worker.py:134-137: min(context_len - 1, max_total_num_tokens - 1)"),
    ("0.4.0", "managers/tp_worker.py:100-104: min(context_len - 1, max_total_num_tokens - 1) - 5"),
    ("0.4.6", "managers/tp_worker.py:120-124: min(context_len - 1, max_total_num_tokens - 1) - 5"),
    ("0.5.2", "managers/tp_worker.py:151-155: min(context_len - 1, max_total_num_tokens - 1) - 5"),
    ("0.5.8", "managers/tp_worker.py:286-290: min(context_len - 1, max_total_num_tokens - 1) - 5"),
    ("0.5.23", "managers/tp_worker.py:568-572: min(context_len - 1, kv_capacity - 1) - 5"),
)
"""Where each release computes max_req_input_len, the longest request it accepts, and how (read in
each wheel), oldest first: cited at the release nearest the log's own (`nearest_source`)."""
REQ_TO_TOKEN_CITATION = (
    "v0.5.8 mem_cache/memory_pool.py:136 torch.zeros((size, max_context_len), int32), sized in "
    "model_executor/model_runner_kv_cache_mixin.py:336-386"
)
REQ_TO_TOKEN_EXTRA_LEN = 4
"""max_context_len = context_len + 4 (+ speculative draft tokens), v0.5.8
model_runner_kv_cache_mixin.py:336-338."""
REQ_TO_TOKEN_BYTES_PER_SLOT = 4
"""int32 entries."""
REQ_TO_TOKEN_MIN_ROWS = 2048
"""SGLang's default request slots, max_num_reqs = min(max(max_total_num_tokens / context_len x
512, 2048), 4096): the floor 2048 whenever the context is over a quarter of the KV pool, as a
table larger than the GPU's free memory implies (v0.4.6.post2 model_executor/model_runner.py:
765-774, v0.5.8 model_runner_kv_cache_mixin.py:257-266; v0.4.6.post2 allocates size + 1 rows,
:823-826)."""
REQ_TO_TOKEN_ORDER_CITATION = (
    "the table is allocated after the KV budget was profiled, before the KV pool: v0.4.6.post2 "
    "model_executor/model_runner.py:763-826, v0.5.8 model_runner_kv_cache_mixin.py:252-386"
)
MFS_STEP = 0.01
"""Suggested --mem-fraction-static values are rounded to this step (away from the failure)."""


class LoadSite:
    """A frame that explains a load-time OOM better than the byte count does."""

    def __init__(
        self,
        path: str,
        function: str,
        finding_id: str,
        message: str,
        headline: str,
        *,
        more_ranks_help: bool,
        needs_quantization: bool = False,
    ) -> None:
        self.path = path
        self.function = function
        self.finding_id = finding_id
        self.message = message
        self.headline = headline
        """The verdict's words for the root cause, ahead of the byte count's levers."""
        self.more_ranks_help = more_ranks_help
        self.needs_quantization = needs_quantization


LOAD_SITES: tuple[LoadSite, ...] = (
    LoadSite(
        "srt/models/transformers.py",
        "__init__",
        "unsharded_fallback",
        "the model is built by SGLang's Transformers fallback, which creates the whole model on "
        "every GPU before sharding it (v0.5.8 models/transformers.py:157-168: "
        "AutoModel.from_config, then tensor_parallel): more ranks or CPU offload do not lower "
        "that peak; a native SGLang implementation of the model (a newer release) does",
        "the Transformers fallback builds the whole model on each GPU",
        more_ranks_help=False,
    ),
    LoadSite(
        "srt/layers/quantization/unquant.py",
        "create_weights",
        "unquantized_layer",
        "quantization={quantization} is set, but the failing layer's weights are created "
        "unquantized (srt/layers/quantization/unquant.py create_weights): that layer takes "
        "full-precision bytes; check that the checkpoint's quantization covers it",
        "likely cause: quantization={quantization} is set, but the failing layer is built "
        "unquantized (full-precision bytes): check that the checkpoint's quantization covers it",
        more_ranks_help=True,
        needs_quantization=True,
    ),
)


class CrashCause:
    """A known error text that ends a startup without a GPU out-of-memory, and its fix."""

    def __init__(
        self,
        finding_id: str,
        pattern: str,
        message: str,
        fix: str,
        source: str,
        *,
        own_pool: bool = False,
        gpu_memory: bool = False,
        maybe_memory: bool = False,
        phase: Phase | None = None,
        numbers: str = "",
        standalone: bool = False,
        knobs: tuple[tuple[str, str], ...] = (),
        words: tuple[str, ...] = (),
        frames: tuple[tuple[str, str], ...] = (),
        example: str,
    ) -> None:
        self.finding_id = finding_id
        self.pattern = re.compile(pattern)
        self.message = message
        self.fix = fix
        """The change, short enough for the verdict."""
        self.source = source
        self.own_pool = own_pool
        """One of SGLang's own pools (KV tokens, mamba slots) had no room: not a GPU allocation,
        and no bug either; the fix is a bigger pool or fewer requests in it."""
        self.gpu_memory = gpu_memory
        """GPU memory ran out behind an error text that is no allocator OOM (a communication
        library's buffer): the fix is more room after the pool."""
        self.maybe_memory = maybe_memory
        """The text is a kernel error or an out-of-memory the runtime reported so: the verdict
        says "possibly GPU memory", and the fix is the OOM's."""
        self.phase = phase
        """The lifecycle phase that prints the text, when nothing else in the paste places it."""
        self.numbers = re.compile(numbers) if numbers else None
        """The text's own numbers, each named group a value key of the traceback event the input
        layer makes (memledger.sglang.lines.ERROR_KEYS; GB as SGLang prints them): the finding."""
        self.knobs = knobs
        """(server-arg name, `raise`/`lower`) of the fix's launch flags, in its order (no value:
        the text does not show the pool's size)."""
        self.standalone = standalone
        """The text is a library's own error line, not a Python exception, or one distinct enough
        that a reporter quoting it mid-sentence still means it: a line holding it is an error of
        its own (a traceback event of no frames) wherever it stands."""
        self.words = words
        """A standalone text's words: every match of `pattern` holds one (case-sensitive). The
        prefilter and the quiet-line test let a line holding one through to the reader
        (memledger.sglang.errors `standalone_cause`)."""
        self.frames = frames
        """(function, a fragment of its file's path) of the traceback frames that run only this
        cause's check: a traceback cut off before its exception line that passes one is this
        cause's (memledger.input.error_texts)."""
        self.example = example
        """A line in the text's shape (synthetic): tests/sglang/test_crash_causes.py diagnoses it
        alone, and quoted in a sentence when the cause is standalone."""


CRASH_CAUSES: tuple[CrashCause, ...] = (
    CrashCause(
        "unbalanced_memory",
        r"memory capacity is unbalanced",
        "SGLang's per-rank balance check at distributed init: the world minimum of free memory "
        "(min_per_gpu_memory) is below 0.9 x this rank's (local_gpu_memory), so some rank's GPU "
        "holds memory this one does not: another process on it, GPUs of different sizes, or, "
        "after the target's graphs, the speculative draft worker's own check seeing what the "
        "target left unevenly (v0.4.1 model_executor/model_runner.py init_torch_distributed "
        "raises ValueError; v0.5.8 :789-798 skips it for the draft worker and only warns unless "
        "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK is set; sglang PR #5426)",
        "free the other process's memory on the fullest GPU (nvidia-smi), use GPUs of one size, "
        "or upgrade past the draft worker's check",
        "https://github.com/sgl-project/sglang/issues/1533 (maintainer: kill the processes that "
        "occupy GPU memory), https://github.com/sgl-project/sglang/pull/5426",
        phase=Phase.DIST_INIT,
        numbers=(
            r"min_per_gpu_memory=(?P<min_per_gpu_memory>\d+(?:\.\d+)?).{0,40}?"
            r"local_gpu_memory=(?P<local_gpu_memory>\d+(?:\.\d+)?)"
        ),
        standalone=True,
        words=("memory capacity is unbalanced",),
        example=(
            "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
            "processes. min_per_gpu_memory=60.00, local_gpu_memory=78.00, local_gpu_memory * "
            "0.9=70.20"
        ),
    ),
    CrashCause(
        "memory_saver_hip_vmm",
        r"torch_memory_saver_hip\.cpp",
        "on ROCm, torch_memory_saver's hipMemCreate fails with code 2 (hipErrorOutOfMemory) also "
        "when HIP's virtual-memory allocator cannot create one large allocation in a piece, not "
        "only for lack of free memory; torch_memory_saver's releases create them chunk-wise",
        "upgrade torch_memory_saver (chunk-wise HIP allocation), then lower SGLang's share if it "
        "still fails",
        "https://github.com/fzyzcjy/torch_memory_saver/issues/9, "
        "https://github.com/fzyzcjy/torch_memory_saver/pull/14",
        example=(
            "[torch_memory_saver.cpp] hipError_t error  result=2 "
            "file=csrc/torch_memory_saver_hip.cpp func=cu_mem_create line=103"
        ),
    ),
    CrashCause(
        "memory_saver_expandable",
        r"TorchMemorySaver is disabled for the current process because "
        r"(?:PYTORCH_CUDA_ALLOC_CONF is set to expandable_segments|expandable_segments is not)",
        "torch_memory_saver refuses PyTorch's expandable segments: SGLang's release pauses only "
        "what it allocated in its tagged regions, and with expandable_segments:True PyTorch maps "
        "memory outside them, so a pause would free nothing (its issue #24); not an "
        "out-of-memory",
        "unset expandable_segments in PYTORCH_CUDA_ALLOC_CONF for SGLang's process: "
        "torch_memory_saver does not support it",
        "torch_memory_saver 13d6461 torch_memory_saver/__init__.py (its PR #25); 4a43c97 "
        "torch_memory_saver/entrypoint.py:397-401 (_sanity_checks); "
        "https://github.com/fzyzcjy/torch_memory_saver/issues/24",
        example=(
            "RuntimeError: TorchMemorySaver is disabled for the current process because "
            "expandable_segments is not supported yet."
        ),
    ),
    CrashCause(
        "memory_saver_driver_error",
        # the line itself, or the traceback event the input layer makes of it (`tag: text`)
        r"torch_memory_saver\.cpp\]?:? (?:CUresult error\s+result=|(?:cudaError|hipError_t) "
        r"error:?\s*)(?!2\b)\d+",
        "torch_memory_saver's driver call (cuMemCreate, cuMemMap, cuMemSetAccess when SGLang's "
        "memory is paused or resumed) failed with a code other than 2, the only out-of-memory "
        "code (CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory): not an out-of-memory; code 1, "
        "CUDA_ERROR_INVALID_VALUE, is a bad argument to the driver from the saver "
        "itself, which its releases fixed",
        "upgrade torch_memory_saver: its driver call failed on an invalid argument, not for lack "
        "of memory",
        "https://github.com/fzyzcjy/torch_memory_saver/issues/35 (result=1 in resume, fixed in "
        "torch_memory_saver), https://github.com/fzyzcjy/torch_memory_saver/issues/4 (result=2 "
        "is the out-of-memory)",
        numbers=r"(?:result=|error:?\s*)(?P<result_code>\d+)",
        standalone=True,
        words=("torch_memory_saver",),
        example=(
            "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/core.cpp func=resume "
            "line=150"
        ),
    ),
    CrashCause(
        "other_rank_load_failed",
        r"could finish the model loading, but there are other ranks that didn't finish loading",
        "this rank loaded its weights, but another rank did not reach the barrier after loading "
        "within UNBALANCED_MODEL_LOADING_TIMEOUT_S (480 s in v0.5.8): that rank failed or stalled "
        "while loading, most often out of memory (SGLang's own words: 'e.g., OOM') or a slow "
        "node (v0.4.6 model_executor/model_runner.py:484-493, v0.5.8 :980-990, :227); the "
        "failing rank's own log holds the cause",
        "read the log of the rank that did not finish loading",
        "v0.4.6 model_executor/model_runner.py:484-493, v0.5.8 model_executor/model_runner.py:989",
        phase=Phase.LOAD,
        standalone=True,
        words=("could finish the model loading",),
        example=(
            "ValueError: TP rank 1 could finish the model loading, but there are other ranks that "
            "didn't finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow "
            "node."
        ),
    ),
    # ---- SGLang reading the card's total memory at launch, before anything is allocated (to
    # pick its memory defaults): a failed read ends the launch with no memory short
    CrashCause(
        "capacity_query_failed",
        r"(?:nvidia|rocm|hl)-smi not found\. Ensure|mthreads-gmi not found\. Ensure"
        r"|(?:nvidia|rocm|hl)-smi error:|No GPU memory values found"
        # said in prose: the query's function named with the crash, the tool said not to answer
        r"|\bget_(?:nv|amd)gpu_memory_capacity\b[^\n]{0,60}?(?:crash|fail|error|raise)"
        r"|\b(?:nvidia|rocm)-smi (?:is not|isn't|doesn't|does not|don't|do not|won't|can't"
        r"|cannot) (?:\w+ )?(?:work\w*|show \w+ memory|report \w+ memory|show memory"
        r"|report memory|return memory|give memory)",
        "SGLang reads the card's total memory at launch, before anything is allocated, to pick "
        "its memory defaults (ServerArgs: `nvidia-smi --query-gpu=memory.total`, rocm-smi on "
        "ROCm, hl-smi on Gaudi), and stops the launch when the tool is missing, fails, or prints "
        "no number (a MIG slice's `[Insufficient Permissions]`, a Jetson's `[N/A]`); no memory "
        "was short, and no memory flag skips the read (v0.4.2.post1 server_args.py:179-187, "
        "utils.py:893-922; v0.5.8 server_args.py:707, utils/common.py:1663-1699 falls back to "
        "torch.cuda.mem_get_info() only when nvidia-smi printed no number; v0.5.16 "
        "utils/common.py:602-671 also when it is missing or fails; rocm-smi and hl-smi still "
        "raise in v0.5.23 utils/common.py:682-711, :840-868)",
        "SGLang could not read the card's total memory at launch: upgrade (0.5.16 asks "
        "torch.cuda.mem_get_info() when nvidia-smi cannot answer), or make nvidia-smi / rocm-smi "
        "answer inside the container",
        "v0.4.2.post1 utils.py:893-922; https://github.com/sgl-project/sglang/pull/8167 (MIG: "
        "fall back to torch.cuda.mem_get_info), https://github.com/sgl-project/sglang/pull/18957 "
        "(nvidia-smi missing or failing)",
        standalone=True,
        words=(
            "smi not found. Ensure",
            "gmi not found. Ensure",
            "smi error:",
            "No GPU memory values found",
            "gpu_memory_capacity",
            "-smi ",
        ),
        example=(
            "RuntimeError: nvidia-smi not found. Ensure NVIDIA drivers are installed and "
            "accessible."
        ),
    ),
    CrashCause(
        "capacity_none_compared",
        # the read returning None (CPU with SGLANG_CPU_OMP_THREADS_BIND, a device SGLang cannot
        # size) and ServerArgs comparing it, said in prose
        r"(?:gpu[_ ]mem\w*|[Mm]emory capacity|device[_ ]memory\w*|get[_ ]device[_ ]memory\w*)"
        r"[^\n]{0,80}?\b(?:returns None|return None|is None|was None|gets None|becomes None)\b"
        r"[^\n]{0,200}?"
        r"(?:compar|mem[-_ ]fraction|TypeError|NoneType)",
        "SGLang's read of the device's memory returns None on --device cpu with "
        "SGLANG_CPU_OMP_THREADS_BIND set (v0.5.3 utils/common.py:1510-1513) and on devices it "
        "cannot size; ServerArgs compares that figure only while it picks a default "
        "--mem-fraction-static (the branch runs when the flag is not given: v0.5.3 "
        "server_args.py:637-675, which guards the comparison and falls back to 0.88), and a "
        "release without the guard stops the launch with a TypeError before anything is "
        "allocated: no memory was short (sglang PR #11105 adds the guard)",
        "pass --mem-fraction-static explicitly (the comparison runs only to pick its default), "
        "or upgrade",
        "v0.5.3 server_args.py:637-675, utils/common.py:1510-1513; "
        "https://github.com/sgl-project/sglang/pull/11105",
        standalone=True,
        words=(
            "returns None",
            "return None",
            "is None",
            "was None",
            "gets None",
            "becomes None",
        ),
        example=(
            "on the CPU device the gpu_mem it reads returns None, and the server args compare "
            "it with an int when --mem-fraction-static is not given"
        ),
    ),
    # ---- SGLang 0.5.23's fixed-capacity buffers: sized at startup (an environment variable or a
    # launch flag), checked before a batch would write past them; no GPU out-of-memory
    CrashCause(
        "pplx_dispatch_cap",
        r"exceeds num_max_dispatch_tokens_per_rank|SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
        "PPLX's all-to-all got more tokens a rank than its buffer is sized for "
        "(SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK, default 128: v0.5.23 environ.py:1453; "
        "asserted at v0.5.23 layers/moe/token_dispatcher/pplx.py:291, :376), not a GPU "
        "out-of-memory: raise that variable above the per-rank batch, or lower the per-rank "
        "decode batch and --chunked-prefill-size",
        "raise SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK, or lower --chunked-prefill-size",
        "v0.5.23 layers/moe/token_dispatcher/pplx.py:291",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=("exceeds num_max_dispatch_tokens_per_rank", "SGLANG_PPLX_NUM_MAX_DISPATCH"),
        example=(
            "AssertionError: num_tokens (512) exceeds num_max_dispatch_tokens_per_rank (128); "
            "raise SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK or lower the per-rank decode "
            "batch / chunked-prefill size."
        ),
    ),
    CrashCause(
        "deepep_v2_decode_graph_cap",
        r"DeepEP v2 per-rank decode CUDA graph exceeds",
        "SGLang's startup check found the largest decode CUDA graph's tokens a rank (its batch x "
        "tokens a request) over DeepEP v2's dispatch buffer "
        "(SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK, default 128: v0.5.23 "
        "environ.py:1441; the check at arg_groups/moe_hook.py:694-705): not a GPU "
        "out-of-memory; SGLang's own advice is the variable raised to the required count or the "
        "decode graphs' largest batch lowered",
        "lower --cuda-graph-max-bs-decode, or raise "
        "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK to the required count",
        "v0.5.23 arg_groups/moe_hook.py:700",
        knobs=(("cuda_graph_max_bs_decode", "lower"),),
        standalone=True,
        words=("DeepEP v2 per-rank decode CUDA graph exceeds",),
        example=(
            "ValueError: DeepEP v2 per-rank decode CUDA graph exceeds "
            "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK: required=512, capacity=128 "
            "(requests=128, tokens/request=4). Raise the environment value or lower "
            "--cuda-graph-max-bs-decode."
        ),
    ),
    CrashCause(
        "flydsl_megamoe_decode_cap",
        r"SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR=\d+ must cover the largest decode",
        "on AMD, the FlyDSL MegaMoE decode buffer holds SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR "
        "tokens a rank, and SGLang's startup check found the largest decode / verify forward "
        "(max running requests a DP rank x tokens a request) over it (v0.5.23 "
        "arg_groups/mega_moe_hook.py:151-158): a buffer's size, not a GPU out-of-memory",
        "lower --max-running-requests, or raise SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR to a power "
        "of two of at least the forward's tokens",
        "v0.5.23 arg_groups/mega_moe_hook.py:152",
        knobs=(("max_running_requests", "lower"),),
        standalone=True,
        words=("must cover the largest decode",),
        example=(
            "ValueError: SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR=256 must cover the largest "
            "decode / verify forward on one rank: max running requests per DP rank x tokens per "
            "request = 512. Raise it to a power of two of at least 512 or lower "
            "--max-running-requests."
        ),
    ),
    CrashCause(
        "deepep_v2_dispatch_cap",
        r"DeepEP v2 (?:dispatch input|per-rank prefill budget) exceeds",
        "DeepEP v2's dispatch buffer holds a fixed number of tokens a rank "
        "(SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK, default 128: v0.5.23 "
        "environ.py:1441): a batch got more (v0.5.23 layers/moe/token_dispatcher/"
        "deepep_v2.py:282), or the startup check found the prefill chunk or the decode graphs' "
        "batch over it (arg_groups/moe_hook.py:689, :700); not a GPU out-of-memory: raise the "
        "variable to the required count, or lower --chunked-prefill-size (prefill) or "
        "--cuda-graph-max-bs-decode (decode graphs)",
        "raise SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK, or lower --chunked-prefill-size",
        "v0.5.23 layers/moe/token_dispatcher/deepep_v2.py:282, arg_groups/moe_hook.py:689",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=("DeepEP v2 ",),
        example=(
            "ValueError: DeepEP v2 dispatch input exceeds the per-rank buffer capacity 128, got "
            "512. Increase SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK or lower the active "
            "prefill/decode batch limit."
        ),
    ),
    CrashCause(
        "flashinfer_a2a_workspace",
        r"FlashInfer A2A runtime token geometry exceeds|FlashInfer MoE A2A per-rank token budget "
        r"exceeds",
        "FlashInfer's MoE all-to-all workspace holds a fixed number of tokens a rank "
        "(SGLANG_FLASHINFER_NUM_MAX_DISPATCH_TOKENS_PER_RANK; unset, the larger of the prefill "
        "buffer and 4096: v0.5.23 arg_groups/overrides.py:1886-1894) and does not grow: a batch "
        "(a prefill chunk, a graph's decode or verify batch) needs more (v0.5.23 "
        "layers/moe/token_dispatcher/flashinfer.py:512 asserts before it becomes an illegal "
        "memory access; the startup check: arg_groups/moe_hook.py:767); not a GPU "
        "out-of-memory: raise the variable to the required count, or lower "
        "--chunked-prefill-size and the CUDA-graph max batch sizes",
        "raise SGLANG_FLASHINFER_NUM_MAX_DISPATCH_TOKENS_PER_RANK, or lower --chunked-prefill-size",
        "v0.5.23 layers/moe/token_dispatcher/flashinfer.py:512, arg_groups/moe_hook.py:767",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=("FlashInfer A2A runtime token geometry", "FlashInfer MoE A2A per-rank token budget"),
        example=(
            "AssertionError: FlashInfer A2A runtime token geometry exceeds its fixed workspace: "
            "runtime_max_tokens_per_rank=9216 > max_num_tokens=8192. Increase "
            "SGLANG_FLASHINFER_NUM_MAX_DISPATCH_TOKENS_PER_RANK to cover the largest mixed "
            "prefill and speculative-verify batch."
        ),
    ),
    CrashCause(
        "mega_moe_token_cap",
        r"mega MoE: num_tokens=\d+ exceeds|Muse MegaMoE needs \d+ tokens per rank"
        r"|MegaMoE received \d+ tokens per rank",
        "the mega-MoE kernels' symmetric buffers hold a fixed number of tokens a rank "
        "(SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK, default 8192: v0.5.23 "
        "environ.py:1470): a batch got more (v0.5.23 layers/moe/mega_moe.py:443; "
        "models/kimi_k3.py:819, which has no fallback; layers/moe/"
        "flashinfer_megamoe_autotune.py:363), or the startup check found the prefill budget "
        "over it (arg_groups/layernorm_sp_hook.py:205); not a GPU out-of-memory: raise the "
        "variable, or lower --chunked-prefill-size and --cuda-graph-max-bs-decode",
        "raise SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK, or lower "
        "--chunked-prefill-size",
        "v0.5.23 layers/moe/mega_moe.py:443, models/kimi_k3.py:819, "
        "arg_groups/layernorm_sp_hook.py:205, layers/moe/flashinfer_megamoe_autotune.py:363",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=("mega MoE: num_tokens=", "Muse MegaMoE needs ", "MegaMoE received "),
        example=(
            "AssertionError: mega MoE: num_tokens=16384 exceeds cap "
            "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=8192; raise the env var or "
            "lower --cuda-graph-max-bs-decode / --chunked-prefill-size accordingly"
        ),
    ),
    CrashCause(
        "trtllm_semaphore_rows",
        r"query rows exceeds the persistent semaphore capacity",
        "DeepSeek-V4's trtllm-gen attention keeps a persistent semaphore buffer whose rows are "
        "sized at startup from --chunked-prefill-size, --max-prefill-tokens and "
        "--max-running-requests; a launch with more query rows would write past it, so SGLang "
        "raises (v0.5.23 layers/attention/deepseek_v4_trtllm_backend.py:134); not a GPU "
        "out-of-memory: lower --chunked-prefill-size, as the text says",
        "lower --chunked-prefill-size",
        "v0.5.23 layers/attention/deepseek_v4_trtllm_backend.py:134",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=("query rows exceeds the persistent semaphore capacity",),
        example=(
            "RuntimeError: trtllm-gen launch with 20480 query rows exceeds the persistent "
            "semaphore capacity of 16384 rows derived from --chunked-prefill-size / "
            "--max-prefill-tokens / --max-running-requests; lower --chunked-prefill-size."
        ),
    ),
    CrashCause(
        "disagg_staging_pool",
        r"Chunk staging allocation permanently failed|\[STAGING_REQ\] alloc failed"
        r"|a chunk exceeds the staging ring",
        "PD disaggregation's staging ring buffer (SGLANG_DISAGG_STAGING_POOL_SIZE_MB, default "
        "4096: v0.5.23 environ.py:860) is smaller than one KV chunk to transfer (v0.5.23 "
        "disaggregation/nixl/conn.py:2668 raises; common/staging_handler.py:868 logs the "
        "failed allocation; mooncake/conn.py:618 warns and fails the requests, 'Increase "
        "SGLANG_DISAGG_STAGING_POOL_SIZE_MB or reduce chunked_prefill_size'); not the GPU's free "
        "memory: raise the variable, or a smaller prefill chunk",
        "raise SGLANG_DISAGG_STAGING_POOL_SIZE_MB, or lower --chunked-prefill-size",
        "v0.5.23 disaggregation/nixl/conn.py:2668, disaggregation/common/staging_handler.py:868, "
        "disaggregation/mooncake/conn.py:618",
        knobs=(("chunked_prefill_size", "lower"),),
        standalone=True,
        words=(
            "Chunk staging allocation permanently failed",
            "[STAGING_REQ] alloc failed",
            "a chunk exceeds the staging ring",
        ),
        example=(
            "RuntimeError: [Staging] Chunk staging allocation permanently failed: chunk exceeds "
            "ring buffer total size (room=42). Increase SGLANG_DISAGG_STAGING_POOL_SIZE_MB."
        ),
    ),
    CrashCause(
        "embedding_pool",
        r"EmbeddingPool: requested \d+MB exceeds pool capacity",
        "an encoder-disaggregated server's embedding pool (SGLANG_EMBEDDING_POOL_SIZE_MB, "
        "default 4096: v0.5.23 environ.py:1704) is smaller than one request's multimodal "
        "embeddings (v0.5.23 disaggregation/encoder/receiver.py:1749); not the GPU's free "
        "memory: raise the variable",
        "raise SGLANG_EMBEDDING_POOL_SIZE_MB",
        "v0.5.23 disaggregation/encoder/receiver.py:1749",
        standalone=True,
        words=("EmbeddingPool: requested ",),
        example=(
            "EmbeddingPool: requested 6144MB exceeds pool capacity 4096MB. Raise "
            "SGLANG_EMBEDDING_POOL_SIZE_MB."
        ),
    ),
    CrashCause(
        "npu_sparse_kv_buffer",
        r"Failed to allocate sparse KV buffer",
        "the Ascend sparse-KV offload allocates a device buffer of req_capacity x "
        "sparse_context_len rows at startup, and the device had no room for it (v0.5.23 "
        "hardware_backend/npu/sparsity_driven_kv_offload/manager.py:218); SGLang's advice: a "
        "smaller --max-running-requests for sparse KV offload",
        "lower --max-running-requests",
        "v0.5.23 hardware_backend/npu/sparsity_driven_kv_offload/manager.py:218",
        gpu_memory=True,
        knobs=(("max_running_requests", "lower"),),
        standalone=True,
        words=("Failed to allocate sparse KV buffer",),
        example=(
            "RuntimeError: Failed to allocate sparse KV buffer k_cache: req_capacity=256, "
            "max_context_len=131072, sparse_context_len=2048. The sparse KV request capacity may "
            "be too large; set a smaller --max-running-requests for sparse KV offload."
        ),
    ),
    CrashCause(
        "dsv4_compress_ring",
        r"compress state ring can keep resident",
        "DeepSeek-V4's compressed-attention state ring keeps a fixed number of draft tokens "
        "resident (v0.5.23 model_executor/pool_configurator.py:1302 asserts when "
        "--speculative-num-draft-tokens asks more); not GPU memory: lower the draft count",
        "lower --speculative-num-draft-tokens",
        "v0.5.23 model_executor/pool_configurator.py:1302",
        phase=Phase.MEMORY_POOL,
        knobs=(("speculative_num_draft_tokens", "lower"),),
        standalone=True,
        words=("compress state ring can keep resident",),
        example=(
            "AssertionError: speculative_num_draft_tokens=8 exceeds what the c4 compress state "
            "ring can keep resident (ring_size=8 serves at most 4 draft tokens). Lower the draft "
            "count, or grow the ring in get_compress_state_ring_size()."
        ),
    ),
    CrashCause(
        "mlx_aux_state_pool",
        r"MLX auxiliary-state cache is too small to serve any",
        "on Apple silicon (MLX) the hybrid model's auxiliary-state pool "
        "(--max-mamba-cache-size) backs fewer than one request a DP worker (v0.5.23 "
        "hardware_backend/mlx/model_runner_stub.py:231): raise --max-mamba-cache-size to the "
        "minimum the text gives, or leave it unset to size the pool from the concurrency cap",
        "raise --max-mamba-cache-size",
        "v0.5.23 hardware_backend/mlx/model_runner_stub.py:231",
        own_pool=True,
        phase=Phase.MEMORY_POOL,
        knobs=(("max_mamba_cache_size", "raise"),),
        standalone=True,
        words=("MLX auxiliary-state cache is too small",),
        example=(
            "RuntimeError: MLX auxiliary-state cache is too small to serve any requests: "
            "max_mamba_cache_size=2 backs only 0 concurrent requests per attention-DP worker "
            "(per-worker auxiliary-state cap=2, 3 slots per request). Increase "
            "--max-mamba-cache-size to at least 3, or leave it unset to size the pool from the "
            "concurrency cap."
        ),
    ),
    # ---- SGLang's warnings that report memory it lacked and go on: pasted alone they are the
    # report, in a log that reached ready the model's own reading answers (memledger.diagnosis)
    CrashCause(
        "kv_pool_below_context",
        r"KV pool holds \d+ tokens, fewer than --context-length",
        "SGLang warned that the KV pool holds fewer tokens than one request of the full context "
        "(v0.5.23 managers/tp_worker.py:559, from the final served pool): long requests will be "
        "refused or truncated while serving; lower --context-length to the pool, or raise "
        "--mem-fraction-static (or free what other processes hold) for a bigger pool",
        "lower --context-length, or raise --mem-fraction-static",
        "v0.5.23 managers/tp_worker.py:559",
        own_pool=True,
        knobs=(("context_length", "lower"), ("mem_fraction_static", "raise")),
        standalone=True,
        words=("KV pool holds ",),
        example=(
            "KV pool holds 30000 tokens, fewer than --context-length 131072. One full-length "
            "request cannot fit, so long requests will be refused or truncated at serving time. "
            "Lower --context-length, raise --mem-fraction-static, or free memory taken before "
            "the pool is sized."
        ),
    ),
    CrashCause(
        "deepgemm_warmup_budget",
        r"less than required memory [\d.]+\s?GB for warmup",
        "SGLang warned that DeepGEMM's kernel warmup (after the KV pool, before the graphs) had "
        "less free GPU memory than it wanted and shrank its largest M to fit (v0.5.8 "
        "layers/deep_gemm_wrapper/compile_utils.py:157, v0.5.23 :238); SGLang goes on, with "
        "little room after the pool: lower --mem-fraction-static for more",
        "lower --mem-fraction-static",
        "v0.5.8 layers/deep_gemm_wrapper/compile_utils.py:157; v0.5.23 :238",
        gpu_memory=True,
        phase=Phase.AFTER_POOL,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("less than required memory",),
        example=(
            "Available memory 1.2GB is less than required memory 3.5GB for warmup, reducing max_m "
            "to 4096 to avoid out of memory"
        ),
    ),
    CrashCause(
        "dflash_graph_disabled",
        r"Disable DFLASH draft cuda graph because only",
        "SGLang warned that less than 1 GB was free after the target's backend and graphs, so "
        "the DFLASH draft runs without CUDA graphs (v0.5.23 speculative/dflash_worker_v2.py:736): "
        "the draft decodes eagerly, slower; lower --mem-fraction-static to leave the draft's "
        "graphs room",
        "lower --mem-fraction-static",
        "v0.5.23 speculative/dflash_worker_v2.py:736",
        gpu_memory=True,
        phase=Phase.DRAFT,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("Disable DFLASH draft cuda graph",),
        example=(
            "Disable DFLASH draft cuda graph because only 0.80 GB GPU memory is available after "
            "target backend initialization."
        ),
    ),
    CrashCause(
        "multimodal_preprocess_cpu",
        r"Multimodal preprocessing ran out of GPU memory",
        "SGLang warned that multimodal preprocessing ran out of GPU memory and retried on the "
        "CPU (v0.5.23 multimodal/processors/base_processor.py:948): the request goes on, slower; "
        "the GPU had no room beside the pools: lower --mem-fraction-static for more",
        "lower --mem-fraction-static",
        "v0.5.23 multimodal/processors/base_processor.py:948",
        gpu_memory=True,
        phase=Phase.SERVING,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("Multimodal preprocessing ran out of GPU memory",),
        example="Multimodal preprocessing ran out of GPU memory on cuda:0; retrying on CPU",
    ),
    CrashCause(
        "deepep_dispatch_cap",
        r"num_max_dispatch_tokens_per_rank",
        "DeepEP's low-latency dispatch got more tokens a rank than its buffer is sized for "
        "(SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK, default 128: v0.5.8 environ.py:342), "
        "not a GPU "
        "out-of-memory: raise that variable above the per-rank decode batch, or cap "
        "--max-running-requests and --cuda-graph-max-bs at it",
        "raise SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
        "https://github.com/sgl-project/sglang/pull/28985 (recipes raise the value or cap "
        "--max-running-requests to dodge the assertion), "
        "https://github.com/NVIDIA/srt-slurm/issues/44",
        example=(
            "RuntimeError: Failed: Assertion error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:1058 "
            "'num_tokens <= num_max_dispatch_tokens_per_rank'"
        ),
    ),
    CrashCause(
        "torch_compile_quantized",
        r"FakeScriptObject|(?:gptq|awq)_marlin_gemm\(\) Expected a value",
        "torch.compile cannot trace the GPTQ/AWQ Marlin kernel, so graph capture fails at any "
        "--mem-fraction-static: drop --enable-torch-compile (or use an unquantized checkpoint)",
        "drop --enable-torch-compile",
        "https://github.com/sgl-project/sglang/issues/1522 (maintainer: torch.compile is not "
        "compatible with awq or gptq)",
        example=(
            "RuntimeError: gptq_marlin_gemm() Expected a value of type 'Tensor' for argument "
            "'b_scales' but instead found type 'FakeScriptObject'."
        ),
    ),
    CrashCause(
        "flashinfer_workspace",
        r"batch_prefill_tmp_[vs]|in AlignedAllocator|Increase the workspace buffer size",
        "FlashInfer's fixed workspace buffer is too small for this prefill batch "
        "(SGLANG_FLASHINFER_WORKSPACE_SIZE, 384 MiB by default, 512 MiB for Qwen3: v0.5.8 "
        "environ.py:309, layers/attention/flashinfer_backend.py:172, :196-206), not free GPU "
        "memory: raise SGLANG_FLASHINFER_WORKSPACE_SIZE above the bytes the text asks for, or "
        "lower --chunked-prefill-size",
        "raise SGLANG_FLASHINFER_WORKSPACE_SIZE, or lower --chunked-prefill-size",
        "https://github.com/sgl-project/sglang/issues/2102, "
        "https://github.com/sgl-project/sglang/issues/1405",
        standalone=True,
        knobs=(("chunked_prefill_size", "lower"),),
        words=("batch_prefill_tmp_", "AlignedAllocator", "Increase the workspace buffer size"),
        example=(
            "RuntimeError: Error in function 'aligned_alloc' at "
            "/workspace/include/flashinfer/allocator.h:49: Buffer overflow when allocating memory "
            "for batch_prefill_tmp_v with size 566231040 and alignment 16, but only 402653184 "
            "bytes available in AlignedAllocator. Increase the workspace buffer size."
        ),
    ),
    CrashCause(
        "not_capturable",
        r"operation not permitted when stream is capturing|during CUDA graph capture",
        "a kernel that cannot run inside a CUDA-graph capture was captured (seen with "
        "--enable-torch-compile), not GPU memory: drop --enable-torch-compile, or "
        "--disable-cuda-graph",
        "drop --enable-torch-compile or set --disable-cuda-graph",
        "https://github.com/sgl-project/sglang/issues/7918, "
        "https://github.com/sgl-project/sglang/issues/6342; CUDA runtime API, error 900 "
        "cudaErrorStreamCaptureUnsupported: 'the operation is not permitted when the stream is "
        "capturing' (raised only while a stream captures)",
        # the text says a capture was under way: it places the crash when no frame does (a
        # chained traceback cut before its capture frames' exception)
        phase=Phase.GRAPH_CAPTURE,
        example=("RuntimeError: CUDA error: operation not permitted when stream is capturing"),
    ),
    CrashCause(
        "capture_invalidated",
        # the runtimes' capture errors 901 and 907 (CUDA and HIP print the same strings)
        r"hipErrorStreamCaptureInvalidated|cudaErrorStreamCaptureInvalidated|"
        r"operation failed due to a previous error during capture|"
        r"hipErrorCapturedEvent|cudaErrorCapturedEvent|"
        r"operation not permitted on an event last recorded in a capturing stream",
        "a kernel or an event on a stream outside the graph being captured invalidates the "
        "capture: on AMD most often AITER's custom all-reduce, SGLang's default there "
        "(SGLANG_USE_AITER_AR defaults to true: v0.5.23 "
        "distributed/device_communicators/custom_all_reduce.py:421; its flush_graph_buffers "
        "also meets a HIP runtime bug of ROCm 7.2.0 and earlier, fixed in 7.2.2); not GPU "
        "memory: set SGLANG_USE_AITER_AR=0 (SGLang's own all-reduce respects the capture "
        "stream), or --disable-cuda-graph",
        "set SGLANG_USE_AITER_AR=0 (AMD) or --disable-cuda-graph",
        "https://github.com/sgl-project/sglang/issues/23580, "
        "https://github.com/sgl-project/sglang/pull/23581, "
        "https://github.com/sgl-project/sglang/issues/24011 (hipErrorCapturedEvent in "
        "AiterCustomAllreduce.flush_graph_buffers on ROCm 7.2.0; the ROCm 7.2.2 image fixed it)",
        phase=Phase.GRAPH_CAPTURE,
        example=(
            "RuntimeError: HIP error: operation failed due to a previous error during capture"
        ),
    ),
    CrashCause(
        "illegal_memory_access",
        r"an illegal memory access was encountered",
        "CUDA's illegal memory access is a kernel error, or an out-of-memory that CUDA reported "
        "this way instead of 'out of memory' (SGLang's troubleshooting guide): if memory was "
        "tight, lower --mem-fraction-static (or the framework's name for it); else file the "
        "kernel error",
        "if memory was tight, lower --mem-fraction-static; else a kernel error",
        "sgl-project/sglang docs/references/troubleshooting.md 'CUDA Error: Illegal Memory Access "
        "Encountered' (v0.5.8)",
        maybe_memory=True,
        knobs=(("mem_fraction_static", "lower"),),
        example="RuntimeError: CUDA error: an illegal memory access was encountered",
    ),
    CrashCause(
        "hip_memory_access_fault",
        # ROCm's own line for a GPU page fault, and reporters' name for it (`Memory access fault
        # occurs when using EP on MI300`)
        r"Memory access fault|memory access fault",
        "ROCm's runtime caught a GPU page fault (a kernel read or wrote an address no "
        "allocation backs): the HIP counterpart of CUDA's illegal memory access, so a kernel "
        "error, or an out-of-memory reported this way as SGLang's troubleshooting guide says of "
        "the CUDA text: if memory was tight, lower --mem-fraction-static (or the framework's "
        "name for it); else file the kernel error",
        "if memory was tight, lower --mem-fraction-static; else a kernel error",
        "ROCR-Runtime src/core/runtime/runtime.cpp Runtime::VMFaultHandler (`Memory access "
        "fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason: %s.`); "
        "sgl-project/sglang docs/references/troubleshooting.md 'CUDA Error: Illegal Memory "
        "Access Encountered' (v0.5.8)",
        maybe_memory=True,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("Memory access fault", "memory access fault"),
        example=(
            "Memory access fault by GPU node-2 (Agent handle: 0x55d3c1a2b3c0) on address "
            "0x7f1c2e000000. Reason: Page not present or supervisor privilege."
        ),
    ),
    CrashCause(
        "kernel_shared_memory",
        # Triton's OutOfResources names the resource: `shared memory`, `threads` (a block's warps),
        # `tensor memory` (python/triton/compiler/compiler.py _init_handles, runtime/errors.py);
        # XLA names a TPU kernel's on-chip vector memory `vmem` (memledger.sglang.errors tpu_vmem)
        r"out of resource: (?:shared memory|threads|tensor memory)"
        r"|Ran out of memory in memory space vmem|#allocation\d+ [^\n]*?space=vmem",
        "a kernel asked for more of a chip's on-chip resource per block than it has: a Triton "
        "kernel's shared memory or threads on a GPU (the `Required` vs `Hardware limit` it "
        "prints), a TPU kernel's VMEM scratch under XLA: not GPU/HBM memory, no memory flag "
        "changes it; a kernel config tuned for this chip (SGLang's fused-MoE tuning script, "
        "smaller kernel blocks or pages) or another backend does",
        "tune the kernel config for this GPU (or TPU)",
        "https://github.com/sgl-project/sglang/issues/6001; triton-lang/triton "
        "python/triton/runtime/errors.py OutOfResources; XLA docs/errors/error_1000.md, "
        "error_1001.md (vmem); sgl-project/sglang-jax#408 (a KV-update kernel's tiles)",
        standalone=True,
        words=("out of resource: ", "memory space vmem", "space=vmem"),
        example=(
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "147456, Hardware limit: 101376. Reducing block sizes or `num_stages` may help."
        ),
    ),
    CrashCause(
        "kernel_tile_no_stages",
        # triton_kernels' matmul (the MXFP4/FP8 MoE of gpt-oss and others) when no pipeline depth
        # fits its tiles in a block's shared memory (not a ResNet's `num_stages >= 1 and ...`)
        r"num_stages >= 1(?! and)",
        "a Triton MoE kernel (triton_kernels' matmul_ogs, SGLang's --moe-runner-backend "
        "triton_kernel) found no pipeline depth whose tiles fit a block's shared memory: the "
        "block sizes picked for this GPU are too large (SM120 cards, the RTX PRO 6000 and RTX "
        "50xx, have less shared memory a block than the data-center GPUs the defaults were set "
        "for); not GPU/HBM memory, and no memory flag changes it",
        "upgrade past sglang PR #20040 (block_k=128 for SM120's MXFP4 MoE), or another "
        "--moe-runner-backend",
        "triton-lang/triton python/triton_kernels/triton_kernels/matmul_ogs_details/opt_flags.py "
        "make_default_opt_flags_nvidia (`assert num_stages >= 1` after compute_num_stages); "
        "https://github.com/sgl-project/sglang/pull/20040",
        knobs=(("moe_runner_backend", "enable"),),
        standalone=True,
        words=("num_stages >= 1",),
        example="    assert num_stages >= 1\nAssertionError",
    ),
    CrashCause(
        "piecewise_graph_failed",
        # the error line SGLang logs around any exception inside its piecewise (prefill) graph
        # context, at capture or at replay, and the workaround line of its advice block
        r"Piecewise CUDA Graph failed with error|add --disable-piecewise-cuda-graph to your",
        "SGLang's piecewise (prefill) CUDA graph failed, at capture or at a replay while serving: "
        "SGLang logs the error with its own advice, that piecewise graphs are on by default as an "
        "experimental feature and --disable-piecewise-cuda-graph works around it (v0.5.11 "
        "compilation/piecewise_context_manager.py:42-55, :121-125, wrapping capture and replay "
        "at model_executor/piecewise_cuda_graph_runner.py:303, :803). The error it names is a "
        "kernel or model path the piecewise graph does not support (a DSA indexer kernel given a "
        "padded token count: sglang PR #23351), not GPU memory unless it is an out-of-memory text",
        "add --disable-piecewise-cuda-graph (SGLang's own workaround; decode graphs stay), or "
        "upgrade past the fix of the failing path",
        "https://github.com/sgl-project/sglang/pull/23351 (piecewise graphs with NSA)",
        knobs=(("disable_piecewise_cuda_graph", "enable"),),
        standalone=True,
        words=("Piecewise CUDA Graph failed", "--disable-piecewise-cuda-graph to your"),
        example=(
            "Piecewise CUDA Graph failed with error: Tensor match failed for Tensor<4>[strides=<1>"
            ", dtype=int64] at kernels/store_cache.cuh:88"
        ),
    ),
    CrashCause(
        "custom_allreduce_graph_registration",
        # the IPC registration of the buffers a captured graph's all-reduce reads: v2's jit
        # kernel check (`custom_all_reduce.cuh:37: CUDA error: invalid argument`), v1's
        # register_graph_buffers, AITER's `invalid device pointer` on ROCm
        r"custom_all_reduce(?:_v2)?\.(?:cuh|py)\S*\s*(?:CUDA error: |hip\w*: )?"
        r"(?:invalid argument|invalid device pointer)"
        r"|register_graph_buffers.{0,200}(?:invalid argument|invalid device pointer)",
        "custom all-reduce's IPC registration of the buffers a CUDA graph captured failed "
        "(cudaIpcGetMemHandle: v0.5.11 jit_kernel/include/sgl_kernel/distributed/"
        "custom_all_reduce.cuh:37, called from share_graph_inputs at the end of capture, "
        "srt/distributed/device_communicators/custom_all_reduce_v2.py:95-110; v1: v0.5.8 "
        "custom_all_reduce.py:237-249 register_graph_buffers). It fails when the buffers are no "
        "plain cudaMalloc memory: torch_memory_saver's VMM allocations when an RL framework "
        "colocates SGLang (--enable-memory-saver; v0.5.23 custom_all_reduce_v2.py:203-204 takes "
        "the unregistered path then: sglang PRs #19162, #27948), or PyTorch's expandable "
        "segments; not GPU memory that ran out, and SGLang's capture advice to lower the fraction "
        "does not apply",
        "set --disable-custom-all-reduce, or upgrade (the memory saver's unregistered graph-input "
        "path); no memory flag changes it",
        "https://github.com/sgl-project/sglang/pull/27948, "
        "https://github.com/sgl-project/sglang/pull/19162",
        knobs=(("disable_custom_all_reduce", "enable"),),
        standalone=True,
        words=("custom_all_reduce", "register_graph_buffers"),
        example=(
            "Exception: Capture cuda graph failed: Runtime check failed at /opt/sglang/python/"
            "sglang/jit_kernel/include/sgl_kernel/distributed/custom_all_reduce.cuh:37: CUDA "
            "error: invalid argument"
        ),
    ),
    CrashCause(
        "index_out_of_bounds",
        # PyTorch's device-side index asserts: gpu_index_kernel's `index out of bounds`
        # (aten/src/ATen/native/cuda/IndexKernel.cu), index_select's `srcIndex <
        # srcSelectDimSize` (Indexing.cu), the vectorized gather's `... index out of bounds`
        r"index out of bounds|srcIndex < srcSelectDimSize",
        "a CUDA kernel's device-side assert: an index past the end of a tensor. In SGLang these "
        "came from a table or pool sized smaller than the indices written into it, engine bugs "
        "each fixed by a release: a speculative draft's KV pool sized before the hybrid SWA "
        "split, smaller than the target's full pool (sglang PR #17630), a multimodal request's "
        "pad ids gathered inside the draft's prefill graph (PR #38330): not GPU memory that ran "
        "out, and no memory flag changes it",
        "an engine bug (an index past a pool or table's end): upgrade, or run "
        "without the feature on that path (speculative decoding, the hybrid SWA pool); "
        "CUDA_LAUNCH_BLOCKING=1 names the kernel",
        "PyTorch aten/src/ATen/native/cuda/IndexKernel.cu gpu_index_kernel "
        '(`CUDA_KERNEL_ASSERT(-sizes[i] <= index && index < sizes[i] && "index out of '
        'bounds")`), Indexing.cu indexSelectLargeIndex (`srcIndex < srcSelectDimSize`); '
        "https://github.com/sgl-project/sglang/pull/17630, "
        "https://github.com/sgl-project/sglang/pull/38330",
        standalone=True,
        words=("index out of bounds", "srcIndex < srcSelectDimSize"),
        example=(
            "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [12,0,0], "
            'thread: [7,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of '
            'bounds"` failed.'
        ),
    ),
    CrashCause(
        "deepep_buffer_memory",
        # and NVSHMEM's own lines when the heap's physical memory cannot be created (status 2 is
        # CUDA_ERROR_OUT_OF_MEMORY from cuMemCreate; 7 the heap setup failing after it:
        # nvshmem src/host/mem/mem_heap.cpp, deepseek-ai/DeepEP#157)
        r"deep_ep\.cpp:\d+ 'invalid argument'"
        r"|mem_heap\.cpp:\d+: non-zero status: 2 cuMemCreate failed"
        r"|allocate_physical_memory_to_heap failed",
        "DeepEP's buffer could not be set up (`Buffer::sync` at its first use, lazily during "
        "graph capture or the first MoE dispatch): this `invalid argument` is also what NVSHMEM's "
        "physical allocation failing for lack of free GPU memory looks like (sglang#29942: a "
        "21.33 GiB buffer a rank failed with 19.20 GiB free and worked on an empty GPU); the "
        "buffer is allocated after the KV pool, out of the P x (1 - mfs) SGLang leaves, and its "
        "low-latency part grows with SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK; a version "
        "mismatch of DeepEP and NVSHMEM fails the same way, so check free memory first",
        "lower --mem-fraction-static (more room after the pool) or "
        "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
        "https://github.com/sgl-project/sglang/issues/29942",
        gpu_memory=True,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("deep_ep.cpp", "cuMemCreate failed", "allocate_physical_memory_to_heap failed"),
        example=(
            "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:304 'invalid "
            "argument'"
        ),
    ),
    CrashCause(
        "deepep_devcomm_in_capture",
        # NCCL's error when DeepEP v2 sets up its device communicator: SGLang builds the buffer at
        # the first MoE dispatch, which for a decode graph is inside the capture
        r"DevComm setup failed",
        "DeepEP v2's ElasticBuffer could not set up NCCL's device communicator (ncclDevCommCreate, "
        "DeepEP csrc/kernels/backend/nccl.cu:188): SGLang builds the buffer at the first MoE "
        "dispatch (token_dispatcher/deepep_v2.py:329), which for a decode CUDA graph happens "
        "inside the capture, where the setup's allocation and synchronisation are illegal; the "
        "same construction succeeds outside the capture. Not GPU memory, although SGLang's "
        "capture advice names memory flags, and not NCCL's GIN settings the message names",
        "not a setting: SGLang's fix builds the buffer before the capture (sglang PR #39078); "
        "no memory flag changes it",
        "https://github.com/sgl-project/sglang/pull/39078",
        standalone=True,
        words=("DevComm setup failed",),
        example=(
            "Exception: Capture cuda graph failed: NCCL exception (/opt/DeepEP/csrc/kernels/"
            "backend/nccl.cu:188): 3 (GIN: DevComm setup failed on all available backends)"
        ),
    ),
    CrashCause(
        "nvshmem_teams",
        r"No more teams available",
        "NVSHMEM ran out of team slots (NVSHMEM_MAX_TEAMS), not memory, although it reports it as "
        "NVSHMEMX_ERROR_OUT_OF_MEMORY: DeepEP's low-latency mode on NVSHMEM 3.x creates more teams "
        "than the default allows; no memory flag changes it",
        "raise NVSHMEM_MAX_TEAMS (the error's own advice)",
        "nvshmem src/host/team/team_internal.cpp ('No more teams available (max = N), try setting "
        "NVSHMEM_MAX_TEAMS environment variable'); https://github.com/NVIDIA/nvshmem/issues/100",
        standalone=True,
        words=("No more teams available",),
        example=(
            "/src/host/team/team_internal.cpp:1821: error status: 2 (NVSHMEMX_ERROR_OUT_OF_MEMORY) "
            "No more teams available (max = 7), try setting NVSHMEM_MAX_TEAMS environment variable"
        ),
    ),
    CrashCause(
        "blas_handle_memory",
        r"CUBLAS_STATUS_NOT_INITIALIZED when calling .(?:cublas|cublasLt)Create"
        r"|HIPBLAS_STATUS_NOT_INITIALIZED when calling .hipblasCreate",
        "cuBLAS (hipBLAS on ROCm) could not create its handle: cublasCreate reports "
        "CUBLAS_STATUS_NOT_INITIALIZED when the CUDA runtime under it fails, most often for lack "
        "of free GPU memory for the handle and its workspace; PyTorch creates it at the first "
        "matmul, which SGLang runs right after the KV pool (init_cublas: v0.3.0 "
        "model_executor/model_runner.py:116, v0.4.6 :220, v0.5.8 :1587), so the pool left too "
        "little",
        "lower --mem-fraction-static (more room after the pool)",
        "cuBLAS docs, cublasCreate() return values; the maintainers' reading in "
        "https://github.com/QwenLM/Qwen/issues/120 and https://github.com/OpenBMB/VisCPM/issues/3 "
        "(out of GPU memory)",
        gpu_memory=True,
        phase=Phase.AFTER_POOL,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("CUBLAS_STATUS_NOT_INITIALIZED", "HIPBLAS_STATUS_NOT_INITIALIZED"),
        example=(
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
            "`cublasCreate(handle)`"
        ),
    ),
    CrashCause(
        "hicache_host_memory",
        # printed at v0.4.6 mem_cache/memory_pool.py:755, v0.5.3 mem_cache/memory_pool_host.py:85,
        # v0.5.8 :173, v0.5.23 mem_cache/pool_host/base.py:253, pool_host/mamba.py:189; 0.5.23
        # names the host pool in its own words for the pools beside HiCache's KV pool
        # (pool_host/dsa.py:225, mha.py:950, minimax_m3_nvfp4.py:90, unified.py:131,
        # mem_cache/memory_pool_host.py:293, :818, hybrid_cache/hybrid_pool_assembler.py:2635);
        # `for request` is the PD decode offload's, below
        r"Not enough host memory (?:available|for (?!request\b)[^\n]{1,80}?"
        r"(?:cache|caches|pool \S+|backing)\b)",
        "SGLang's HiCache host-pool check at startup: the host pool of each rank (--hicache-size "
        "GB, else --hicache-ratio x its GPU KV pool) must fit in the host's available RAM less a "
        "10 GiB reserve, and the `free` figure it prints already has the reserve taken off "
        "(HostKVCache.__init__: mem_cache/memory_pool_host.py, later "
        "mem_cache/pool_host/base.py HICACHE_HOST_MEMORY_RESERVE_BYTES); host memory, not GPU "
        "memory: every rank of the node pins its own host pool, so the node needs about the "
        "ranks x the pool",
        "lower --hicache-size or --hicache-ratio (or free host RAM); hugepages reserved for "
        "the pool are not counted as free",
        "https://github.com/sgl-project/sglang/pull/20136 (the check counts one rank's pool "
        "against the host's available RAM less the reserve; TP/PP ranks each pin one); the free "
        "figure is psutil's available RAM (v0.5.8 mem_cache/memory_pool_host.py:166-170, v0.5.23 "
        "mem_cache/host_memory.py:136-138), the kernel's MemAvailable, which leaves out reserved "
        "hugepages, while with SGLANG_HUGEPAGE_SIZE the pool is mapped from them (v0.5.23 "
        "mem_cache/storage/mmap/mmap_allocator.py:163-185): a host whose RAM is reserved as "
        "hugepages for the pool is refused although the pool fits (fixes credit the hugetlb pool: "
        "sglang PRs #35048, #38208); 0.5.23 checks its other host pools alike (v0.5.23 "
        "mem_cache/pool_host/dsa.py:225, pool_host/mha.py:950)",
        numbers=(
            r"Requesting (?P<requested_gb>\d+(?:\.\d+)?) GB but only have "
            r"(?P<free_gb>\d+(?:\.\d+)?) GB free"
        ),
        knobs=(("hicache_size", "lower"), ("hicache_ratio", "lower")),
        standalone=True,
        words=("Not enough host memory ",),
        example=(
            "ValueError: Not enough host memory available. Requesting 200.00 GB but only have "
            "120.50 GB free. Please reduce the size of the hierarchical cache."
        ),
    ),
    # ---- more of SGLang's own refusals and pools, read from its source (every memory text
    # SGLang prints at v0.4.6, v0.5.3, v0.5.8, v0.5.23: the list is in the commit that added these)
    CrashCause(
        "decode_offload_host_pool_full",
        r"Not enough host memory for request\b",
        "a PD decode worker that offloads finished KV to the host "
        "(--disaggregation-decode-enable-offload-kvcache) found its HiCache host pool full: the "
        "cache controller's write returned no host slots, so that request's KV is not offloaded "
        "(v0.5.3 disaggregation/decode_kvcache_offload_manager.py:111, v0.5.8 :130, v0.5.23 "
        ":246); the host pool SGLang sized (--hicache-size GB, else --hicache-ratio x the GPU "
        "pool), not the host's RAM running out",
        "raise --hicache-size or --hicache-ratio (as far as the host's RAM allows)",
        "v0.5.8 disaggregation/decode_kvcache_offload_manager.py:130; v0.5.23 :246",
        own_pool=True,
        phase=Phase.SERVING,
        knobs=(("hicache_size", "raise"), ("hicache_ratio", "raise")),
        standalone=True,
        words=("Not enough host memory for request",),
        example="Not enough host memory for request 5d1c2e7a9b",
    ),
    CrashCause(
        "decode_host_pool_too_small",
        r"(?:SWA )?[Hh]ost pool must hold a retraction and a receive page",
        "a PD decode worker that backs retracted requests up to the host "
        "(--disaggregation-decode-retraction-backup=host_pool) checks at startup that its host "
        "pool holds one retraction (the longest request the decode pool can retract) plus one "
        "receive page, and refuses to start when it does not (v0.5.23 disaggregation/decode.py:697-"
        "700; the SWA host pool :741-744): the host pool is sized by --hicache-size or "
        "--hicache-ratio",
        "raise --hicache-size or --hicache-ratio",
        "v0.5.23 disaggregation/decode.py:698, :742",
        phase=Phase.MEMORY_POOL,
        knobs=(("hicache_size", "raise"), ("hicache_ratio", "raise")),
        standalone=True,
        words=("ost pool must hold a retraction",),
        example=(
            "ValueError: Host pool must hold a retraction and a receive page; increase "
            "--hicache-size or --hicache-ratio"
        ),
    ),
    CrashCause(
        "swa_pool_below_one_request",
        r"SWA pool \(\d+ tokens\) cannot hold even one request",
        "SGLang refused to start a hybrid sliding-window model: the sliding-window pool is not "
        "larger than one request's admission floor (sliding_window_size + page_size), so no "
        "request could ever be admitted (v0.5.23 model_executor/pool_configurator.py:197-213, "
        "validate_swa_pool_size): that pool is --swa-full-tokens-ratio of the KV budget "
        "(default 0.8), and the budget is the fraction's",
        "raise --swa-full-tokens-ratio, or raise --mem-fraction-static for a bigger KV budget",
        "v0.5.23 model_executor/pool_configurator.py:211",
        own_pool=True,
        phase=Phase.KV_SIZING,
        knobs=(("swa_full_tokens_ratio", "raise"), ("mem_fraction_static", "raise")),
        standalone=True,
        words=("cannot hold even one request",),
        example=(
            "ValueError: SWA pool (4096 tokens) cannot hold even one request: the prefill "
            "admission floor is sliding_window_size (4096) + page_size (64). Increase "
            "--swa-full-tokens-ratio or the total KV budget."
        ),
    ),
    CrashCause(
        "int8_mamba_checkpoint_pool",
        r"int8 mamba checkpoint pool needs ~?[\d.]+ ?GB but only [\d.]+ ?GB HBM is free",
        "SGLang's int8 mamba checkpoint pool (--int8-mamba-ckpt-size slots) is allocated from "
        "the room --mem-fraction-static leaves outside the KV budget, not counted in "
        "max_total_num_tokens, and SGLang refuses to build it when its estimate is not below the "
        "free memory (v0.5.23 mem_cache/mamba_checkpoint_pool.py:342-360, :362-370)",
        "lower --int8-mamba-ckpt-size, or lower --mem-fraction-static for more room",
        "v0.5.23 mem_cache/mamba_checkpoint_pool.py:357",
        gpu_memory=True,
        phase=Phase.MEMORY_POOL,
        knobs=(("int8_mamba_ckpt_size", "lower"), ("mem_fraction_static", "lower")),
        standalone=True,
        words=("int8 mamba checkpoint pool needs",),
        example=(
            "RuntimeError: int8 mamba checkpoint pool needs ~6.20GB but only 2.10GB HBM is free. "
            "Lower --int8-mamba-ckpt-size (currently 512) or --mem-fraction-static."
        ),
    ),
    CrashCause(
        "detokenizer_states_evicted",
        r"Decode status not found for request",
        "the detokenizer keeps one decode state a request, at most SGLANG_DETOKENIZER_MAX_STATES "
        "(default 1 << 16), and evicted the state of a request still running (SGLang's 'memory "
        "pressure' is that cap, in host memory, not GPU memory): more requests in flight than "
        "states (v0.4.6 managers/detokenizer_manager.py:184-190, v0.5.8 :297-303, v0.5.23 "
        ":385-391; sglang#2812)",
        "raise SGLANG_DETOKENIZER_MAX_STATES above the requests in flight (no GPU memory flag)",
        "v0.5.8 managers/detokenizer_manager.py:297; https://github.com/sgl-project/sglang/"
        "issues/2812",
        phase=Phase.SERVING,
        standalone=True,
        words=("Decode status not found for request",),
        example=(
            "RuntimeError: Decode status not found for request 9f2c1e. It may be due to the "
            "request being evicted from the decode status due to memory pressure. Please "
            "increase the maximum number of requests by setting the SGLANG_DETOKENIZER_MAX_STATES "
            "environment variable to a bigger value than the default value."
        ),
    ),
    CrashCause(
        "memory_saver_resume_partial",
        r"torch_memory_saver\.resume\(tag=[^)\n]{0,40}\) partially failed",
        "torch_memory_saver could not map back some of the memory SGLang released (on Intel "
        "XPU it raises when its resume returns an error): most often the device had no room "
        "because the trainer beside SGLang still held it, as the saver's own words say "
        "('e.g. free device memory') (torch_memory_saver 0.0.10 entrypoint.py:338-348)",
        "free the trainer's memory before resuming, or lower SGLang's share",
        "torch_memory_saver 0.0.10 torch_memory_saver/entrypoint.py:344",
        maybe_memory=True,
        phase=Phase.RESUME,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=("partially failed",),
        example=(
            "RuntimeError: torch_memory_saver.resume(tag='kv_cache') partially failed (code 2); "
            "some allocations remain paused. Retry after resolving the failure (e.g. free "
            "device memory)."
        ),
    ),
    CrashCause(
        "hicache_host_below_device",
        r"host memory should be larger than the device memory",
        "SGLang's HiCache host pool must hold more tokens than the GPU KV pool it backs, and "
        "the check stops the launch when it does not (HostKVCache.__init__: v0.4.6 "
        "mem_cache/memory_pool.py:744-746, v0.5.3 mem_cache/memory_pool_host.py:73-75, v0.5.8 "
        ":161-163): the host pool is --hicache-size GB, else --hicache-ratio (default 2.0) x "
        "the GPU pool, so a --hicache-size below the GPU pool's bytes, or a ratio of 1 or less, "
        "is refused; host memory, not GPU memory",
        "raise --hicache-size above the GPU KV pool's size (or --hicache-ratio above 1)",
        "v0.5.8 mem_cache/memory_pool_host.py:161",
        phase=Phase.MEMORY_POOL,
        knobs=(("hicache_size", "raise"), ("hicache_ratio", "raise")),
        standalone=True,
        words=("host memory should be larger than the device memory",),
        example=(
            "AssertionError: The host memory should be larger than the device memory with the "
            "current protocol"
        ),
    ),
    CrashCause(
        "lora_pinned_slots",
        r"Failed to load LoRA adapter \S+ as a pinned adapter",
        "SGLang's LoRA memory pool holds --max-loras-per-batch adapters on the GPU, and a pinned "
        "adapter keeps its slot; SGLang refuses to pin the last free slot, so at most "
        "max_loras_per_batch - 1 adapters can be pinned (v0.5.3 lora/lora_manager.py:172, v0.5.8 "
        ":184, v0.5.23 :378-383): a slot count, not GPU memory running out",
        "raise --max-loras-per-batch (each slot takes GPU memory), or load the adapter unpinned",
        "v0.5.8 lora/lora_manager.py:184",
        knobs=(("max_loras_per_batch", "raise"),),
        standalone=True,
        words=("as a pinned adapter",),
        example=(
            "ValueError: Failed to load LoRA adapter sql as a pinned adapter. It is not allowed "
            "to pin all slots in the LoRA memory pool to avoid starvation for unpinned adapters "
            "and base models."
        ),
    ),
    CrashCause(
        "lora_rank_over_pool",
        r"with rank \d+ is incompatible with the current LoRA",
        "SGLang's LoRA memory pool is sized at launch for --max-lora-rank and "
        "--lora-target-modules (inferred from --lora-paths when unset), and an adapter of a "
        "higher rank or other modules does not fit its buffers (v0.5.3 lora/lora_manager.py:164, "
        "v0.5.8 :176, v0.5.23 :370-374): a launch setting, not GPU memory running out",
        "raise --max-lora-rank to the adapter's rank (or add its modules to --lora-target-modules)",
        "v0.5.8 lora/lora_manager.py:176",
        knobs=(("max_lora_rank", "raise"),),
        standalone=True,
        words=("is incompatible with the current LoRA",),
        example=(
            "ValueError: LoRA adapter sql with rank 64 is incompatible with the current LoRA "
            "memory pool configuration. Please ensure that the LoRA adapter's rank is within the "
            "configured `--max-lora-rank` and that the target modules are included in "
            "`--lora-target-modules`."
        ),
    ),
    CrashCause(
        "pool_leak_check",
        # the raises only: 0.3's `KV cache pool leak detected!` was a warning the server went on
        # after (v0.3.0 managers/tp_worker.py:305-324), no crash
        r"memory leak detected!|Mem Leak Detected!"
        # said in prose: the check's function named with the leak it reported (0.5 releases)
        r"|memory leak (?:error|detection|check)[^\n]{0,120}?\bself_check_during_idle\b"
        r"|\bself_check_during_idle\b[^\n]{0,120}?memory leak",
        "SGLang's self-check of its pools when no batch is running: every KV slot and request "
        "slot must then be free or held by the prefix cache, and some were neither, so a code "
        "path freed fewer slots than it allocated: SGLang's own accounting, not GPU memory that "
        "ran out, and no memory flag fixes it. The check raises ValueError from 0.4 on while "
        "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE is on, its default (v0.4.6.post5 "
        "managers/scheduler.py:1241-1267; v0.5.8 managers/scheduler_runtime_checker_mixin.py:"
        "234-248, environ.py:212; v0.5.23 managers/scheduler_components/invariant_checker.py:"
        "438-458, `pool memory leak detected!` for the hybrid pools from scheduler.py:5296); "
        "the leaks SGLang fixed came from speculative decoding's over-allocated draft slots "
        "(sglang PRs #13826, #31616) and their release with HiCache (PR #19518)",
        "an SGLang accounting bug, not a memory setting: upgrade, or run without the feature on "
        "the leaking path (speculative decoding, HiCache); SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_"
        "IDLE=0 only turns the raise into a warning, the slots stay lost",
        "https://github.com/sgl-project/sglang/pull/13826 (EAGLE's paged draft slots never "
        "released), https://github.com/sgl-project/sglang/pull/31616 (EAGLE's unaligned "
        "allocation length), https://github.com/sgl-project/sglang/pull/19518 (spec v2 with "
        "decode-side HiCache); the frames that raise it: check_memory (v0.5.8 "
        "managers/scheduler_runtime_checker_mixin.py:234), its hybrid and mamba checks "
        "_check_hybrid_memory / _check_mamba_memory (the same file, sglang#12432), and "
        "_report_leak (the same file in 2026, sglang PR #26941's traceback)",
        phase=Phase.SERVING,
        standalone=True,
        words=("leak detected!", "Leak Detected!", "self_check_during_idle"),
        frames=(
            ("check_memory", "scheduler"),
            ("_check_hybrid_memory", "scheduler"),
            ("_check_mamba_memory", "scheduler"),
            ("_report_leak", "scheduler"),
        ),
        example=(
            "ValueError: token_to_kv_pool_allocator memory leak detected! "
            "self.max_total_num_tokens=50000, available_size=49872, evictable_size=0, "
            "protected_size=0"
        ),
    ),
    CrashCause(
        "kernel_image_missing",
        r"no kernel image is available for execution on the device"
        r"|cudaErrorNoKernelImageForDevice",
        "the CUDA runtime found no kernel built for this GPU's architecture (compute capability) "
        "in the library that launched it (cudaErrorNoKernelImageForDevice, error 209; HIP prints "
        "the same text): that library's build does not cover the card, as FlashInfer's 0.1 "
        "wheels had no sm_75 kernels for the T4 and RTX 20xx, and sgl-kernel or PyTorch builds "
        "without the card's arch do the same; when the first launch is in graph capture SGLang "
        "wraps it as 'Capture cuda graph failed' with its memory hints (v0.2.9 "
        "model_executor/model_runner.py:312-319, v0.5.8 model_executor/cuda_graph_runner.py:369, "
        ":931-938), which do not apply: no memory is short",
        "a build without this GPU's kernels: run without that library (FlashInfer: "
        "--attention-backend triton and --sampling-backend pytorch; 0.2-era "
        "--disable-flashinfer --disable-flashinfer-sampling) or install a build compiled for "
        "the card's compute capability",
        "https://github.com/flashinfer-ai/flashinfer/issues/421 (sm_75 not yet supported by "
        "FlashInfer), https://github.com/sgl-project/sglang/issues/931 (T4: run with "
        "--disable-flashinfer --disable-flashinfer-sampling); v0.2.9 server_args.py:357-362 "
        "(the flags); CUDA runtime API, cudaErrorNoKernelImageForDevice = 209",
        standalone=True,
        words=("no kernel image is available", "cudaErrorNoKernelImageForDevice"),
        example=(
            "CUDA Error: no kernel image is available for execution on the device (209) "
            "/tmp/build/flashinfer-0.1.4/include/flashinfer/attention/handler.cuh: line 169 at "
            "function cudaOccupancyMaxActiveBlocksPerMultiprocessor(&num_blocks_per_sm, kernel, "
            "num_threads, smem_size)"
        ),
    ),
    CrashCause(
        "mamba_slots",
        r"Not enough space for mamba (?:ping pong idx|cache)|Can not alloc mamba cache",
        "the hybrid model's mamba state pool had no free slot for a request: one slot a running "
        "request, plus a ping-pong track buffer of 2 (1 with speculative decoding) under "
        "--mamba-scheduler-strategy extra_buffer (v0.5.8 mem_cache/memory_pool.py:397-399, "
        ":455-483); SGLang's hint --mamba-full-memory-ratio sizes the pool only when "
        "--max-mamba-cache-size is unset and the radix cache is on (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:168-196), and under DP attention the "
        "size is divided by --dp-size (:178-180); a PD decode worker before sglang#19002 "
        "ignored --max-mamba-cache-size; the radix cache asserts 'Can not alloc mamba cache' "
        "when even eviction frees no slot (v0.5.8 mem_cache/mamba_radix_cache.py:460, :645-651; "
        "v0.5.23 mem_cache/unified_cache/components/mamba.py:221, :552), which admission that "
        "did not reserve the handoff slot let happen under memory pressure (sglang PR #33773)",
        "raise --max-mamba-cache-size (3 x --max-running-requests with extra_buffer) or lower "
        "--max-running-requests",
        "https://github.com/sgl-project/sglang/pull/19002",
        own_pool=True,
        knobs=(("max_mamba_cache_size", "raise"), ("max_running_requests", "lower")),
        standalone=True,
        words=("Not enough space for mamba", "Can not alloc mamba cache"),
        example=(
            "AssertionError: Not enough space for mamba cache, try to increase "
            "--mamba-full-memory-ratio or --max-mamba-cache-size."
        ),
    ),
    CrashCause(
        "retract_one_left",
        r"No space left for only one request|Out of memory even after retracting all other",
        "the KV pool could not hold the next tokens of even one running request after SGLang "
        "retracted all the others (v0.5.3 managers/schedule_batch.py:1536-1542 asserts, v0.5.8 "
        ":1886-1892 raises): one request's context plus its decode reservation is about the "
        "whole pool; a PD decode worker also holds pre-allocated requests being transferred, "
        "each reserving at most SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION new tokens (4096: v0.5.8 "
        "disaggregation/decode.py:73); since sglang#19881 the request is aborted instead",
        "a bigger KV pool (raise --mem-fraction-static or --max-total-tokens) or a shorter "
        "--context-length",
        "https://github.com/sgl-project/sglang/pull/14948, "
        "https://github.com/sgl-project/sglang/pull/19881",
        own_pool=True,
        knobs=(
            ("mem_fraction_static", "raise"),
            ("max_total_tokens", "raise"),
            ("context_length", "lower"),
        ),
        standalone=True,
        words=("No space left for only one request", "Out of memory even after retracting"),
        example=("AssertionError: No space left for only one request"),
    ),
    CrashCause(
        "cuda_error_cut",
        # the lines PyTorch puts after a CUDA (HIP) error's own line, read when that line is cut
        # off; a dump that holds its error line names that error (the chosen traceback, first)
        r"(?:CUDA|HIP) kernel errors might be asynchronously reported"
        r"|consider passing (?:CUDA_LAUNCH_BLOCKING|AMD_SERIALIZE_KERNEL)="
        r"|Compile with `TORCH_USE_(?:CUDA|HIP)_DSA`|c10_cuda_check_implementation",
        "the tail of PyTorch's CUDA error dump without the error line it follows (`CUDA error: "
        "...`): which error is not in the paste; the common ones in SGLang threads are an "
        "out-of-memory, an illegal memory access (a kernel error, or an OOM CUDA reported so: "
        "SGLang's troubleshooting guide) and a device-side assert",
        "if memory was tight, lower --mem-fraction-static; else add the `CUDA error:` line above "
        "the dump (CUDA_LAUNCH_BLOCKING=1 names the kernel)",
        "PyTorch c10/cuda/CUDAMiscFunctions.cpp get_cuda_check_suffix (`CUDA kernel errors might "
        "be asynchronously reported ...`, `For debugging consider passing CUDA_LAUNCH_BLOCKING=1`"
        "), c10/cuda/CUDAException.cpp c10_cuda_check_implementation (`Compile with "
        "`TORCH_USE_CUDA_DSA` to enable device-side assertions.`)",
        maybe_memory=True,
        knobs=(("mem_fraction_static", "lower"),),
        standalone=True,
        words=(
            "kernel errors might be asynchronously",
            "consider passing",
            "Compile with `TORCH_USE_",
            "c10_cuda_check_implementation",
        ),
        example="For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    ),
)
"""Matched against the failing traceback's `exception: message` text (the input layer does, and
names the cause in the traceback event: memledger.input.error_texts)."""
DRIVER_RESULTS: dict[int, str] = {
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    101: "CUDA_ERROR_INVALID_DEVICE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    999: "CUDA_ERROR_UNKNOWN",
}
"""The CUDA driver's result codes by number (cuda.h `enum cudaError_enum`; HIP's hipError_t
numbers the first four the same), for a driver error printed as a number."""
CRASH_CAUSE: dict[str, CrashCause] = {cause.finding_id: cause for cause in CRASH_CAUSES}
"""Each cause by its finding id (a traceback event's `cause`)."""

SHM_SHAPE = "shm"
HEADROOM_DOCS_CAP_GIB = 5
"""SGLang's tuning guide: 'reserving 5-8 GB of memory for activations is typically sufficient',
read off the logs just before the server is ready (docs/advanced_features/hyperparameter_tuning.md,
https://github.com/sgl-project/sglang/pull/9083)."""
LARGE_GPU_MIB = 96 * 1024
"""SGLang's "large GPU" bound: above it, its default keeps a fixed reserve outside the static
pool and captures CUDA graphs up to bs 256 (v0.4.6.post2 server_args.py:241,
cuda_graph_runner.py:141)."""
LARGE_GPU_CONTEXT_ALLOWANCE_GIB = 1
"""SGLang's reserve is of the GPU's capacity, which also holds the CUDA context and NCCL's buffers
the log's free memory no longer shows: a shortfall up to this much is not flagged."""
OVERSIZE_FACTOR = 4
"""An allocation this many times the GPU's capacity is a size computed wrong, not a fit problem."""
KV_REFUSAL_OUTCOME = "oom"
"""How a startup ends when SGLang refuses to size the KV pool (the weights left it no memory):
`Not enough memory. Please try to increase --mem-fraction-static`, raised when
max_total_num_tokens <= 0, which `max_total_tokens=N is larger than the profiled value -M`
announces (v0.4.8 model_executor/model_runner.py:914-931; v0.5.8
model_executor/model_runner_kv_cache_mixin.py:299-305, :328-331), or v0.5.23's `Loaded weights
leave no GPU memory for the KV cache` (mem_cache/kv_cache_configurator.py:3042-3058). An OOM
outcome, as diagnose reports it (the `kv_sizing` phase)."""
KV_REFUSAL_REASON = "SGLang refused to size the KV cache"

OTHER_PROCESS_MIN_GIB = 1
"""Memory the OOM text shows held outside this process (capacity - free - `this process has`)
at or above this much, and at least the bytes that were missing, is named as the cause: the
allocator's own numbers say another process holds it (MinerU#3418). Below it, the driver's own
reservation can explain the difference."""
SMALL_PROCESS_TENANTS = (
    "a pipeline's own models beside it, MinerU or a TTS stack, or SGLang's own front end "
    "preprocessing a vision model's images on the GPU (fast image processors run on cuda: v0.4.6 "
    "managers/multimodal_processors/base_processor.py:81-85, v0.5.8 multimodal/processors/"
    "base_processor.py:329-336; --disable-fast-image-processor keeps them on the CPU: v0.4.6 "
    "managers/tokenizer_manager.py:188)"
)
"""What runs out beside an SGLang server holding most of the GPU, when the process that ran out
holds little (the OOM text's own numbers)."""
OWN_FROM_PYTORCH = "as the text lists every process by PID and none as this one"
"""torch c10/cuda/CUDACachingAllocator.cpp prints `Process N has X memory in use` for each of the
GPU's processes and `Including non-PyTorch memory, this process has X` only for its own PID, which
a container's PID namespace hides: then the process's PyTorch reserve (allocated + reserved but
unallocated) stands for its own use, a lower bound (no CUDA context)."""
OWN_BELOW_PYTORCH = "as its `this process has` figure is below its own PyTorch reserve"
"""torch c10/cuda/CUDACachingAllocator.cpp takes `this process has X memory in use` from NVML's
per-process usage of the GPU, which a container or a virtualised GPU can report as 0 bytes while
the same text says PyTorch itself allocated tens of GiB: a figure below the process's own PyTorch
reserve (allocated + reserved but unallocated) is not its use, and the reserve is the lower bound
that stands for it; the rest of the card is then not shown to be another process's."""
HEADROOM_FLOOR_MIN_GIB = 40
"""From this GPU capacity up, SGLang's own default keeps more than HEADROOM_DOCS_CAP_GIB outside
the static pool (v0.5.8 server_args.py:988-999: 512 MiB + max(chunk, 2048) x 1.5 MiB with a
4096-token chunk at 40 GiB, + graphs), so after an OOM while serving the tuning guide's 5 GiB is a
floor for the free memory to restore; on smaller GPUs the default keeps less and no floor is
claimed."""
AFTER_POOL_DROP_MIN_GIB = 4
"""Free memory that fell this much between `Memory pool end` and the first graph capture reading
is named: what SGLang itself sizes there is small (FlashInfer's workspace 384-512 MiB, v0.5.8
environ.py:309; cuBLAS's a few MiB), so several GiB is a buffer sized by the pool or the batch
outside the KV budget, like the AITER attention backend's workspace (51.75 GB on an MI300-class
GPU with a 1.67M-token pool: https://github.com/sgl-project/sglang/pull/18263)."""
GRAPH_MEMORY_NOTE_GIB = 3
"""CUDA graphs taking more than this (`Capture cuda graph end. ... mem usage=X`) are more than
SGLang's own default plans for them: '3GB for cuda graph' at bs 256 on a large GPU
(v0.4.6.post2 server_args.py:241-247)."""
DECODE_GRAPH_FLAG_CITATION = (
    "from 0.5.16 the decode graphs' cap is --cuda-graph-max-bs-decode (--cuda-graph-max-bs is a "
    "deprecated alias, v0.5.16 server_args.py:7200-7207), and the capture failure says so: 'set "
    "--cuda-graph-max-bs-decode to a smaller value (e.g., 16)' (v0.5.23 "
    "model_executor/runner_backend_utils/__init__.py:14-21)"
)
DECODE_GRAPH_RUNNER = "runner/decode_cuda_graph_runner.py"
"""The decode graph runner's file from 0.5.16 on (model_executor/runner/); before, it was
model_executor/cuda_graph_runner.py."""
FORWARD_ASK_MIN_GIB = 16
"""An allocation at least this large while serving, with FORWARD_FREE_MIN_GIB or more still free,
is one forward's working set sized by its tokens, not the pools' slack running thin: a long
prefill chunk (a decode step holds one token a request). sglang#37712: 73.65 GiB asked with
50.40 GiB free, the DSA indexer's [chunk tokens x KV rows] fp32 logits, bounded by chunking them
in https://github.com/sgl-project/sglang/pull/38507 ('with chunked_prefill_size=8192 and a
348k-row pooled kv batch, that is a single 10.62 GiB allocation')."""
FORWARD_FREE_MIN_GIB = 8
LATE_RELEASE_CAUSE = (
    "most often a speculative draft's own embed/lm_head, dropped after the target pool was "
    "sized: v0.5.23 speculative/eagle_worker_v2.py:243-258, :336-378; sglang PR #37155 shares "
    "them before it"
)
"""Why free memory rises after `Memory pool end` on a speculative startup."""
DRAFT_BEFORE_POOL_CAUSE = (
    "from 0.5.16 the draft worker is built right after the target's load, before the pools are "
    "sized (v0.5.16 managers/scheduler.py:845-851): the draft's own embed_tokens/lm_head count "
    "as used while the KV pool is sized and are dropped for the target's only after it (v0.5.23 "
    "speculative/eagle_worker_v2.py:243-258 alloc_memory_pool, then init_lm_head), so the pool "
    "comes out smaller by their bytes; sglang PR #37155 shares them before sizing"
)
"""Why a draft load logged before the KV pool's lines leaves the pool short."""
DRAFT_OWN_HEAD_TYPE = re.compile(r"eagle|nextn|mtp", re.IGNORECASE)
"""`type=` classes of drafts that load an embed/lm_head of their own and take the target's after
the pool (EAGLE, NextN/MTP: v0.5.23 speculative/eagle_worker_v2.py:243-258); a DFlash draft has
no head of its own (v0.5.23 speculative/dflash_worker_v2.py:138)."""
CAPTURE_FAILED_TEXT = "Capture cuda graph failed"
"""How SGLang re-raises any error of its graph capture (v0.5.8
model_executor/cuda_graph_runner.py:369, v0.5.23
model_executor/runner/decode_cuda_graph_runner.py:603): the phase, when no frame or startup line
gives it."""
SUMMARY_LINE_SOURCES: tuple[tuple[str, str], ...] = (
    ("0.2.13", "managers/tp_worker.py:141-147"),
    ("0.3.0", "managers/tp_worker.py:148-153"),
    ("0.4.0", "managers/scheduler.py:222-227"),
    ("0.4.6", "managers/scheduler.py:305-311"),
    ("0.5.2", "managers/scheduler.py:411-418"),
    ("0.5.8", "managers/scheduler.py:590-597"),
    ("0.5.23", "managers/scheduler.py:1268-1276"),
)
"""Where each release prints the scheduler's summary line, max_total_num_tokens=...
max_running_requests=... context_len=... (read in each wheel), oldest first: where a ready log
states the KV pool's tokens and the request cap SGLang settled on."""
