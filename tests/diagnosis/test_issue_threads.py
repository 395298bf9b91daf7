"""diagnose on the fragments users pasted in SGLang issue threads (the lines that carry the
error, cut to what the answer needs), checked against what fixed each thread. One test a thread;
the thread's URL is the test's first comment. Public data; only the lines needed are kept. The
thread-by-thread verdicts before and after the rules these tests pin are in docs/diagnose.md
("Measured on SGLang threads").

Sections: errors that are or are not GPU memory (refusals, shared memory, kernels, capture);
speculative drafts, PD decode workers, page accounting and headroom on large GPUs; NPU and
serving OOMs, other processes, DP attention, mamba slots, decode batches, capture OOMs; where
graph memory places an OOM, FA3 page tables, prefill chunks, draft heads and workspaces."""

from __future__ import annotations

import io

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.input.parsing import parse_log
from memledger.render.diagnose import render_text
from memledger.units import GIB, MIB
from tests.conftest import SAMPLES, diagnose_paste
from tests.input.test_pasted_fragments import FRAGMENTS


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines, label="thread.log")


def _ids(result: Diagnosis) -> list[str]:
    return [f.id for f in result.findings]


def _knobs(result: Diagnosis) -> dict[str, object]:
    return {s.knob: s.value for s in result.suggestions}


THREAD_7691 = [
    "[2025-07-02 07:41:58 DP0 TP0] Load weight end. type=DeepseekV3ForCausalLM, "
    "dtype=torch.bfloat16, avail mem=21.73 GB, mem usage=166.59 GB.",
    "[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled "
    "value -561981. Use the profiled value instead.",
    "[2025-07-02 07:41:59 DP7 TP7] max_total_tokens=131072 is larger than the profiled "
    "value -561981. Use the profiled value instead.",
]
"""sglang#7691's fragment: the log ends on the negative-profile warning (read by
tests/input/test_outcome.py too)."""


def test_7691_a_negative_profiled_pool_is_sglangs_refusal() -> None:
    # https://github.com/sgl-project/sglang/issues/7691 (DeepSeek-R1 bf16 on 8 x MI300X, DP
    # attention): SGLang warns that --max-total-tokens exceeds a profiled pool of -561,981 tokens,
    # then refuses (v0.4.8 model_runner.py:914-932). A = 21.73 GB after 166.59 GB of weights, so
    # P = 188.32 GiB and the first fraction that leaves a budget is above 1 - A/P = 0.8846.
    result = _diagnose(THREAD_7691)
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    assert _knobs(result)["mem_fraction_static"] == 0.89
    (refused,) = [f for f in result.findings if f.id == "weights_exceed_budget"]
    assert "-561,981 tokens" in refused.message
    # 166.59 GB of weights a rank leave less than SGLang's own reserve at any viable fraction
    assert "no_fraction_fits" in _ids(result)
    assert "quantized checkpoint" in result.verdict
    # the paste's rank tags show DP7 TP7: tp is at least 8, so "more tp" means above 8
    assert "raise --tp-size above 8" in result.verdict


def test_7691_a_positive_profiled_value_is_no_refusal() -> None:
    result = _diagnose(
        [
            "[2025-07-02 07:41:59 TP0] max_total_tokens=131072 is larger than the profiled value "
            "93000. Use the profiled value instead.",
        ]
    )
    assert result.outcome != "oom"


def test_5096_nccl_shared_memory_segment_is_the_hosts_dev_shm() -> None:
    # https://github.com/sgl-project/sglang/issues/5096 (Llama-3.1-70B, 8 x H100, in a
    # container); SGLang's docker docs run with --shm-size 32g (pull/1986)
    result = _diagnose(
        [
            "./entrypoint.sh: line 48: 28 Killed python3 -m sglang.launch_server --port 8000",
            "[2025-04-05 00:01:19] Received sigquit from a child process. It usually means the "
            "child failed.",
            "Error while creating shared memory segment /dev/shm/nccl-lNPZ0f (size 7340384)",
        ]
    )
    assert result.outcome == "crash"
    (shm,) = [f for f in result.findings if f.id == "shared_memory"]
    assert shm.bytes == 7340384 and "--shm-size 32g" in shm.message
    assert "/dev/shm" in result.verdict and "--shm-size 32g" in result.verdict
    assert result.suggestions == []  # no GPU memory knob


def test_docs_5_an_nccl_error_pasted_alone_names_dev_shm() -> None:
    # https://github.com/sgl-project/sgl-project.github.io/issues/5: the NCCL text alone, no
    # SGLang line; the fix is a bigger /dev/shm (docker --shm-size, a Kubernetes emptyDir)
    result = _diagnose(
        [
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "NCCLUtils.cpp:81, unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "Last error:",
            "Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)",
        ]
    )
    assert result.outcome == "crash"
    assert "shared_memory" in _ids(result)
    assert "emptyDir" in next(f.message for f in result.findings if f.id == "shared_memory")


def test_a_bus_error_is_shared_memory_too() -> None:
    result = _diagnose(["Bus error (core dumped)"])
    assert "shared_memory" in _ids(result)


def test_5755_an_allocation_larger_than_the_gpu_is_no_fraction_problem() -> None:
    # https://github.com/sgl-project/sglang/issues/5755 (Llama-4 Scout, 8 x H100/H200): an
    # 80.04 GiB ask on a 79.10 GiB GPU, the request-to-token table of the model's 10M-token
    # context; fixed by --context-length 1000000 (the Llama-4 guide, pull/5133)
    result = _diagnose(
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.04 GiB. GPU 3 has a "
            "total capacity of 79.10 GiB of which 20.08 GiB is free. Process 806478 has 59.01 GiB "
            "memory in use. Of the allocated memory 56.90 GiB is allocated by PyTorch, and "
            "125.19 MiB is reserved by PyTorch but unallocated.",
        ]
    )
    assert result.outcome == "oom"
    assert "allocation_exceeds_gpu" in _ids(result)
    knobs = _knobs(result)
    assert "mem_fraction_static" not in knobs and "context_length" in knobs
    # no context in the paste: at SGLang's default floor of 2,048 request slots the 80.04 GiB ask
    # is a context of at most 80.04 GiB / 8 KiB - 4 = 10,490,998 tokens (Scout's 10,485,760); the
    # cut fits the slack of a 79.10 GiB GPU at tp >= 4 (GPU 3): 79.10 x 0.15 - 5 = 6.87 GiB
    (cut,) = [s for s in result.suggestions if s.knob == "context_length"]
    assert "at most 10,490,998 tokens" in cut.why and "tp >= 4 (GPU 3)" in cut.why
    assert knobs["context_length"] == 890_000  # the maintainers' 1,000,000 at tp 8
    assert "lower --context-length to 890000" in result.verdict


def test_5755_with_the_context_length_in_the_log_the_cut_has_a_value() -> None:
    result = _diagnose(
        [
            "[2025-04-25 10:00:00] server_args=ServerArgs(model_path='m', context_length=10485760,"
            " tp_size=8)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.04 GiB. GPU 3 has a "
            "total capacity of 79.10 GiB of which 20.08 GiB is free. Of the allocated memory "
            "56.90 GiB is allocated by PyTorch, and 125.19 MiB is reserved by PyTorch but "
            "unallocated.",
        ]
    )
    # the table scales with the context, and must fit the slack at tp 8's default 0.81 (v0.4.6.post2
    # server_args.py:228-240) less 5 GiB for activations: 79.10 x 0.19 - 5 = 10.03 GiB, since the
    # KV pool sized just before takes the rest of the 20.08 GiB free
    room = 79.10 * (1 - 0.81) - 5
    assert int(10485760 * room / 80.04) // 100_000 * 100_000 == 1_300_000
    assert _knobs(result)["context_length"] == 1_300_000


def test_27351_an_ask_many_times_the_gpu_is_a_size_computed_wrong() -> None:
    # https://github.com/sgl-project/sglang/issues/27351 (deep_ep dispatch on Ascend asking for
    # 5503 GiB of a 61 GiB NPU): no memory flag is the fix
    result = _diagnose(
        [
            "RuntimeError: NPU out of memory. Tried to allocate 5503.00 GiB (NPU 0; 60.96 GiB "
            "total capacity; 40.13 GiB already allocated; 40.13 GiB current active; 18.20 GiB "
            "free; 41.00 GiB reserved in total by PyTorch)",
        ]
    )
    assert "computed wrong" in result.verdict
    assert result.suggestions == []


def test_1522_torch_compile_with_a_marlin_kernel_is_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/1522: capture failed at every fraction >= 0.05;
    # the maintainer: torch.compile is not compatible with awq or gptq
    result = _diagnose(
        [
            "Exception: Capture cuda graph failed: _C::gptq_marlin_gemm() Expected a value of "
            "type '__torch__.torch.classes._core_C.ScalarType' for argument '_7' but instead "
            "found type 'FakeScriptObject'.",
        ]
    )
    assert result.outcome == "crash"
    assert "torch_compile_quantized" in _ids(result)
    assert "drop --enable-torch-compile" in result.verdict


def test_1522_a_bare_refusal_still_names_the_direction() -> None:
    # the same thread at --mem-fraction-static 0.01: SGLang's refusal, no numbers in the paste
    result = _diagnose(
        ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."]
    )
    (raise_mfs,) = result.suggestions
    assert (raise_mfs.knob, raise_mfs.direction.value, raise_mfs.value) == (
        "mem_fraction_static",
        "raise",
        None,
    )
    assert "raise --mem-fraction-static" in result.verdict


def test_25797_rocm_hsa_out_of_resources_is_a_gpu_oom() -> None:
    # https://github.com/sgl-project/sglang/issues/25797 (MI350X, the automatic fraction 0.917
    # left too little): the fix is a lower --mem-fraction-static
    result = _diagnose(
        [
            "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
            "resources.",
            "Available Free mem: 30 MB",
            "Fatal Python error: Aborted",
        ]
    )
    assert result.outcome == "oom"
    (lower,) = result.suggestions
    assert (lower.knob, lower.direction.value) == ("mem_fraction_static", "lower")
    assert "lower --mem-fraction-static" in result.verdict


def test_srt_slurm_44_the_deepep_dispatch_cap_is_not_memory() -> None:
    # https://github.com/NVIDIA/srt-slurm/issues/44 (SGLang decode workers): fixed by raising
    # SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
    result = _diagnose(
        [
            "RuntimeError: Failed: Assertion error /build/DeepEP/csrc/deep_ep.cpp:1233 "
            "'x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank'",
        ]
    )
    assert result.outcome == "crash" and "deepep_dispatch_cap" in _ids(result)
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in result.verdict
    assert result.suggestions == []


def test_deepep_165_the_same_cap_while_serving() -> None:
    # https://github.com/deepseek-ai/DeepEP/issues/165 (SGLang, low_latency mode, serving)
    result = _diagnose(
        [
            "[2025-05-14 03:58:33 DP0 TP0] TpModelWorkerClient hit an exception: Traceback (most "
            "recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py", line 181, in '
            "forward_batch_generation",
            "    logits_output = self.model_runner.forward(forward_batch)",
            "RuntimeError: Failed: Assertion error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:1025 "
            "'x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank'",
        ]
    )
    assert (result.outcome, result.phase.value) == ("crash", "serving")
    assert "deepep_dispatch_cap" in _ids(result)


def test_6001_triton_shared_memory_is_on_chip_not_gpu_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/6001 (DeepSeek-R1 on MI308): a Triton
    # kernel's block needs more shared memory than the chip has
    result = _diagnose(
        [
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "196608, Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
        ]
    )
    assert result.outcome == "crash" and "kernel_shared_memory" in _ids(result)
    assert result.suggestions == []


def test_2102_flashinfer_workspace_is_its_own_buffer() -> None:
    # https://github.com/sgl-project/sglang/issues/2102 and /issues/1405: FlashInfer's fixed
    # workspace (SGLANG_FLASHINFER_WORKSPACE_SIZE) was too small for a prefill batch
    result = _diagnose(
        [
            "[2024-11-20 16:40:55 TP0] Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1196, in '
            "run_scheduler_process",
            "RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 435814400 "
            "and alignment 16 in AlignedAllocator",
        ]
    )
    assert "flashinfer_workspace" in _ids(result)
    assert "SGLANG_FLASHINFER_WORKSPACE_SIZE" in result.verdict


def test_7918_and_6342_a_kernel_that_cannot_be_captured_is_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/7918 and /issues/6342: --enable-torch-compile
    # with CUDA graphs, an op not permitted while the stream is capturing
    for text in (
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Cannot call "
        "CUDAGeneratorImpl::current_seed during CUDA graph capture.",
    ):
        result = _diagnose([text])
        assert result.outcome == "crash" and "not_capturable" in _ids(result), text
        # the text says a stream was capturing: it places the crash, with no frame to say so
        assert result.phase == "graph_capture", text


def test_a_capture_error_under_a_chained_traceback_cut_before_its_frames_places_capture() -> None:
    # the first traceback's tail (its head cut off by the paste), then Python's chained-exception
    # line and the handler's traceback, cut before any frame that names a phase
    result = _diagnose(
        [
            '  File "/x/site-packages/sgl_kernel/moe.py", line 58, in moe_fused_gate',
            "    return torch.ops.sgl_kernel.moe_fused_gate.default(",
            "RuntimeError: CUDA error: operation not permitted when stream is capturing",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/x/site-packages/sglang/srt/managers/scheduler.py", line 2300, in '
            "run_scheduler_process",
        ]
    )
    assert (result.outcome, result.phase) == ("crash", "graph_capture")
    assert "--enable-torch-compile" in result.verdict


def test_4205_and_9706_other_capture_failures_are_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/4205 (gloo connection closed) and
    # /issues/9706 (custom all-reduce `invalid argument`): no memory text, no memory knob
    for lines in (
        [
            '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 239, in '
            "__init__",
            "Exception: Capture cuda graph failed: [../third_party/gloo/gloo/transport/tcp/"
            "pair.cc:534] Connection closed by peer",
        ],
        [
            '  File "/sgl/python/sglang/srt/distributed/device_communicators/custom_all_reduce.py"'
            ", line 307, in register_graph_buffers",
            "RuntimeError: invalid argument",
        ],
    ):
        result = _diagnose(lines)
        assert result.outcome == "crash" and "not_memory" in _ids(result)
        assert result.suggestions == []


def test_36583_a_request_longer_than_a_tiny_pool() -> None:
    # https://github.com/sgl-project/sglang/pull/36583: a KV pool of 1,741 tokens refused a
    # 3,034-token prompt (weight-loading memory still referenced when the pool was sized)
    result = _diagnose(
        [
            "Input length (3034 tokens) exceeds the maximum allowed length (1735 tokens). Use a "
            "shorter input or enable --allow-auto-truncate.",
        ]
    )
    assert "request_exceeds_pool" in _ids(result)
    assert "raise --mem-fraction-static" in result.verdict


def test_9083_the_headroom_target_is_sglangs_5_gb_on_a_large_gpu() -> None:
    # SGLang's tuning guide (docs/advanced_features/hyperparameter_tuning.md, pull/9083):
    # reserving 5-8 GB for activations is typically sufficient, read just before ready. On an
    # 80 GB GPU with 0.10 GiB left, the fraction drops by (5 - 0.10) / P
    result = _diagnose(
        [
            "[2025-08-11 10:00:00 TP0] Load weight begin. avail mem=78.50 GB",
            "[2025-08-11 10:00:10 TP0] Load weight end. type=LlamaForCausalLM, "
            "dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.",
            "[2025-08-11 10:00:10 TP0] KV Cache is allocated. #tokens: 900000, K size: 27.47 GB, "
            "V size: 27.47 GB",
            "[2025-08-11 10:00:10 TP0] Memory pool end. avail mem=8.00 GB",
            "[2025-08-11 10:00:20 TP0] Capture cuda graph end. Time elapsed: 9.00 s. mem "
            "usage=7.90 GB. avail mem=0.10 GB.",
            "[2025-08-11 10:00:30] The server is fired up and ready to roll!",
        ]
    )
    assert result.outcome == "starved"
    lower = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert "5.00 GiB free" in lower.why
    cap = next(s for s in result.suggestions if s.knob == "max_total_tokens")
    cell = round(2 * 27.47 * GIB) / 900000
    moved = 5 * GIB - round(0.10 * GIB)
    assert cap.value == 900000 - -(-moved // cell)


def test_what_to_set_is_a_flag_with_its_value() -> None:
    # "what should I set?": the text and markdown reports name the launch flags with values
    from memledger.render.diagnose import render_markdown, render_text

    result = _diagnose(
        [
            "[2025-07-02 07:41:58 TP0] Load weight end. type=DeepseekV3ForCausalLM, "
            "dtype=torch.bfloat16, avail mem=21.73 GB, mem usage=166.59 GB.",
            "[2025-07-02 07:41:59 TP0] max_total_tokens=131072 is larger than the profiled "
            "value -561981. Use the profiled value instead.",
        ]
    )
    assert "\ntry:     --mem-fraction-static 0.89\n" in render_text(result)
    assert "- **try**: --mem-fraction-static 0.89" in render_markdown(result)


def _events(lines: list[str]) -> list[object]:
    from memledger.model.events import EventKind

    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="p")
    return [e for e in parsed.startup.events if e.kind is not EventKind.CRASH]


def test_the_new_error_shapes_read_into_events() -> None:
    from memledger.model.events import Event, EventKind

    profiled, shm, lone, bare = (
        [
            e
            for e in _events([line])
            if isinstance(e, Event)
            and e.kind in (EventKind.KV_REFUSAL, EventKind.POOL_EXHAUSTED, EventKind.TRACEBACK)
        ]
        for line in (
            "[x TP0] max_total_tokens=131072 is larger than the profiled value -561981. Use the "
            "profiled value instead.",
            "failed to extend /dev/shm/nccl-H1dBqY to 9637892 bytes",
            "RuntimeError: invalid argument",
            "Exception: Capture cuda graph failed: boom",
        )
    )
    assert profiled[0].values == {
        "shape": "negative_profile",
        "profiled_tokens": -561981,
        "max_total_tokens": 131072,
    }
    assert (shm[0].values["pool"], shm[0].values["shape"]) == ("shm", "shm")
    assert (lone[0].values["exception"], lone[0].values["n_frames"]) == ("RuntimeError", 0)
    # a bare `Exception:` is an exception line too (SGLang raises Exception("Capture ..."))
    assert bare[0].values["exception"] == "Exception"


def test_rank_tags_bound_the_tp_size_a_paste_without_server_args_runs() -> None:
    # a load OOM pasted from rank TP3 with no server_args: tp is at least 4, so the tp lever
    # scales from 4 ranks, not from an assumed 1 (4 x 24.00 / 23.50 = 4.09 -> 8)
    result = _diagnose(
        [
            "[2025-05-01 10:00:00 TP3] Load weight begin. avail mem=23.50 GB",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
            "total capacity of 23.65 GiB of which 1.20 GiB is free. Of the allocated memory "
            "22.00 GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but "
            "unallocated.",
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 643, in '
            "load_model",
        ]
    )
    assert result.phase.value == "load"
    tp = next(s for s in result.suggestions if s.knob == "tp_size")
    assert tp.value == 8 and "tp 4 x" in tp.why


# --- Speculative drafts (EAGLE/MTP), PD decode workers, the KV pool's page accounting, thin
# headroom on a large GPU.


THREAD_4602 = [
    "RuntimeError: Decode out of memory. Try to lower your batch size.",
    "Try to allocate 148 tokens.",
    "Avaliable tokens: 2048",
    "self.token_to_kv_pool_allocator.available_size()=2048",
    "self.tree_cache.evictable_size()=0",
]
"""sglang#4602's paste (DeepSeek-V3 at --page-size 64): SGLang's own counts under its raise."""


def test_4602_a_pool_with_room_is_its_page_accounting_not_its_size() -> None:
    # https://github.com/sgl-project/sglang/issues/4602, fixed by /pull/4913 (accurate new-page
    # counting): 2,048 tokens free for 148 asked, so the pool was not full; a decode step takes a
    # whole page a request at a page boundary, and v0.4.4's check counted tokens, not pages
    result = _diagnose(THREAD_4602)
    assert result.outcome == "oom"
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "2,048 tokens free" in note.message and "148 asked" in note.message
    assert "#4913" in note.message
    knobs = _knobs(result)
    assert knobs.get("page_size") == 1
    assert "mem_fraction_static" not in knobs  # a bigger pool is not the fix
    assert "--page-size" in result.verdict and "not full" in result.verdict


def test_a_pool_that_is_full_keeps_the_pool_levers() -> None:
    # the same shape with fewer tokens free than asked: the pool is what ran out
    result = _diagnose(
        [
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Avaliable tokens: 100",
        ]
    )
    assert "pool_not_full" not in _ids(result)
    (ran_out,) = [f for f in result.findings if f.id == "pool_ran_out"]
    assert "100 tokens free for 148 asked" in ran_out.message
    assert _knobs(result)["mem_fraction_static"] is None  # raise, no value without P


def test_v058_counts_and_the_page_size_in_the_log_give_the_pages_asked() -> None:
    # v0.5.8 mem_cache/common.py:413-417, :500-516 prints `Available tokens: N (available_size=..
    # + evictable_size=..)`; with --page-size 64 in server_args, 148 requests ask 9,472 tokens
    result = _diagnose(
        [
            "[2025-09-01 10:00:00] server_args=ServerArgs(model_path='m', page_size=64)",
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Available tokens: 2048 (available_size=2048 + evictable_size=0)",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "148 x page_size 64 = 9,472" in note.message


def test_a_pool_with_room_past_the_page_count_fix_is_not_told_to_upgrade() -> None:
    # the page-count defect is a row of memledger.sglang.known_bugs (releases <= 0.4.4): a log
    # whose formats date it at 0.5.19 or later still gets the page accounting and --page-size 1,
    # with no upgrade it already has
    result = _diagnose(
        [
            "[2026-05-01 10:00:00] server_args={'model_path': 'm', 'page_size': 64}",
            "[2026-05-01 10:00:40 TP0] Load weight end. elapsed=30.00 s, type=LlamaForCausalLM, "
            "avail mem=56.50 GB, mem usage=83.00 GB.",
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Available tokens: 2048 (available_size=2048 + evictable_size=0)",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "page accounting" in note.message and "#4913" not in note.message
    assert _knobs(result).get("page_size") == 1
    assert "lower --page-size to 1" in result.verdict and "upgrade" not in result.verdict


def test_a_hybrid_swa_pool_short_while_the_full_pool_has_room() -> None:
    # v0.5.8 mem_cache/common.py:502-512: hybrid SWA models print both pools; the sliding-window
    # pool's share is --swa-full-tokens-ratio (v0.5.8 server_args.py:325, in (0, 1])
    result = _diagnose(
        [
            "RuntimeError: Prefill out of memory. Try to lower your batch size.",
            "Try to allocate 8192 tokens.",
            "Available full tokens: 60000 (full_available_size=60000 + full_evictable_size=0)",
            "Available swa tokens: 3000 (swa_available_size=3000 + swa_evictable_size=0)",
        ]
    )
    (short,) = [f for f in result.findings if f.id == "swa_pool_ran_out"]
    assert "3,000" in short.message and "60,000" in short.message
    ratio = next(s for s in result.suggestions if s.knob == "swa_full_tokens_ratio")
    assert ratio.direction.value == "raise"
    assert "mem_fraction_static" not in _knobs(result)


THREAD_5893 = [
    "Capturing batches (avail_mem=5.21 GB): 100%|██████████| 35/35 [00:59<00:00,  1.70s/it]",
    "[2025-04-29 16:24:13 TP5] Capture cuda graph end. Time elapsed: 61.24 s. mem usage=6.27 GB. "
    "avail mem=5.09 GB.",
]
"""The capture lines of https://github.com/sgl-project/sglang/pull/5893 (H200, TP8, bs 256)."""


def test_5893_thin_headroom_after_the_graphs_names_sglangs_large_gpu_reserve() -> None:
    # https://github.com/sgl-project/sglang/pull/5893: 5.09 GB free after the bs-256 graphs on
    # H200 was not enough for serving; the fix reserves at least 18 GB outside the static pool
    # (v0.4.6.post2 server_args.py:241-247). Here 6.27 + 5.09 = 11.36 GiB is outside the pool;
    # the paste does not show the GPU's size, so the note is conditional and has no value
    result = _diagnose(THREAD_5893)
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert thin.severity.value == "info"
    assert "11.36 GiB outside the KV pool" in thin.message
    assert "if this GPU is over 96 GiB" in thin.message and "6.64 GiB below" in thin.message
    (lower,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert (lower.direction.value, lower.value) == ("lower", None)
    assert "lower --mem-fraction-static" in result.verdict


H200_STARTUP = [
    "[2025-04-29 16:18:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88,"
    " tp_size=8)",
    "[2025-04-29 16:18:10 TP0] Load weight begin. avail mem=139.50 GB",
    "[2025-04-29 16:18:40 TP0] Load weight end. type=DeepseekV3ForCausalLM, "
    "dtype=torch.bfloat16, avail mem=56.50 GB, mem usage=83.00 GB.",
    "[2025-04-29 16:18:41 TP0] KV Cache is allocated. #tokens: 400000, K size: 22.57 GB, "
    "V size: 22.57 GB",
    "[2025-04-29 16:18:41 TP0] Memory pool end. avail mem=11.36 GB",
    "[2025-04-29 16:19:34 TP0] Capture cuda graph end. Time elapsed: 56.90 s. "
    "mem usage=6.27 GB. avail mem=5.09 GB.",
    "[2025-04-29 16:19:40] The server is fired up and ready to roll!",
]
"""A whole H200 startup in the shape of #5893's: P 139.50 GiB, mfs 0.88, 11.36 GiB outside the
pool (6.27 GiB of bs-256 graphs + 5.09 GiB free after them)."""


def test_the_same_headroom_on_a_known_h200_has_a_value() -> None:
    # a whole H200 log: P = 139.50 GiB before loading, mfs 0.88 (SGLang's pre-#5893 H200
    # default was (gpu_mem - 13 GiB) / gpu_mem); 11.36 GiB outside the pool is 6.64 GiB short
    # of 18 GiB: mfs 0.88 - 6.64 / 139.50 = 0.8324 -> 0.83. Its line formats allow 0.4.4 - 0.5.8,
    # so the 18 GiB is conditional on 0.4.6.post2 - 0.4.7 and named so; the startup came up
    # ready with no OOM: the verdict says so, the lever is only for a later OOM
    result = _diagnose(H200_STARTUP)
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert "this GPU is over 96 GiB" in thin.message
    assert "if the release is 0.4.6.post2 - 0.4.7 (this log's: 0.4.4 .. 0.5.8)" in thin.message
    (lower,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert lower.value == 0.83 and lower.why.startswith("if serving runs out of memory later")
    assert result.outcome == "ready"
    assert result.verdict.startswith("ready: no memory problem found; note thin_headroom")
    assert "--mem-fraction-static" not in result.verdict
    assert "try:" not in render_text(result)


def _h200_v05(free_at_pool_end: str) -> list[str]:
    """An H200 startup in 0.5.19+ formats (server_args dict, `elapsed=` load end, KV dtype):
    P 139.50 GiB, mfs 0.88, `free_at_pool_end` GB free at Memory pool end."""
    return [
        "[2026-05-01 10:00:00] server_args={'model_path': 'm', 'mem_fraction_static': 0.88, "
        "'tp_size': 8, 'chunked_prefill_size': 8192, 'cuda_graph_max_bs': 256}",
        "[2026-05-01 10:00:10 TP0] Load weight begin. avail mem=139.50 GB",
        "[2026-05-01 10:00:40 TP0] Load weight end. elapsed=30.00 s, type=DeepseekV3ForCausalLM, "
        "avail mem=56.50 GB, mem usage=83.00 GB.",
        "[2026-05-01 10:00:41 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000,"
        " KV size: 40.00 GB",
        f"[2026-05-01 10:00:41 TP0] Memory pool end. avail mem={free_at_pool_end} GB",
        "[2026-05-01 10:01:34 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=256, context_len=163840, "
        "available_gpu_mem=6.00 GB",
        "[2026-05-01 10:01:40] The server is fired up and ready to roll!",
    ]


def test_a_ready_startup_above_its_releases_default_reserve_has_no_thin_headroom() -> None:
    # 11.36 GiB outside the pool is below the 18 GiB of 0.4.6.post2 - 0.4.7, but this 0.5.19+
    # release's default (rule mfs_default_graphs, v0.5.16 server_args.py:4053-4210: reserved
    # 512 + 8192 x 1.5 + 8 / 8 x 1024 + 256 x 2 MiB, + the prefill graphs) keeps P x (1 -
    # default) = 7.53 - 15.48 GiB for a capacity from P to 288 GiB; the log has no capacity and
    # only some capacities are short at 11.36 GiB: no finding, never another release's 18 GiB
    result = _diagnose(_h200_v05("11.36"))
    assert "thin_headroom" not in _ids(result)
    assert result.verdict.startswith("ready: no memory problem found; the KV pool holds ")
    result = _diagnose(_h200_v05("16.00"))  # above the reserve for every capacity
    assert "thin_headroom" not in _ids(result) and not result.suggestions


def test_a_ready_startup_below_its_releases_default_reserve_is_a_note_with_a_later_lever() -> None:
    # 6.00 GiB outside the pool: below P x (1 - default) for every capacity from P (7.53 GiB at
    # the least, a 288 GiB GPU), so at least 1.53 GiB short of this release's own reserve
    result = _diagnose(_h200_v05("6.00"))
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert thin.severity.value == "info"
    assert "at release >= 0.5.19" in thin.message and "mfs_default_graphs" in thin.message
    assert "at least 1.53 GiB below the 7.53 GiB - 15.48 GiB" in thin.message
    assert "18 GiB" not in thin.message and "0.4.6.post2" not in thin.message
    assert result.verdict.startswith("ready: no memory problem found; note thin_headroom")
    lower = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert lower.why.startswith("if serving runs out of memory later")


def test_dp16_ready_on_its_release_has_no_thin_headroom() -> None:
    # samples/dp16.log (0.5.20, P 176.10 GiB, mfs 0.88): 14.07 GiB free at Memory pool end is
    # above the 7.40 - 11.97 GiB SGLang 0.5.20's default keeps (P x (1 - 0.932 .. 0.958) for a
    # capacity from P to 288 GiB, rule mfs_default_graphs); the 18 GiB of 0.4.6.post2 - 0.4.7 is
    # not this release's rule. It came up and served: nothing to say
    parsed = parse_log(open(SAMPLES / "dp16.log", "rb"), label="samples/dp16.log")
    result = diagnose(parsed, build(parsed, LoadOptions()))
    assert "thin_headroom" not in _ids(result)
    assert result.verdict.startswith("ready: no memory problem found; the KV pool holds ")
    assert not [s for s in result.suggestions if s.knob == "mem_fraction_static"]


def test_a_gpu_of_96_gib_or_less_gets_no_large_gpu_note() -> None:
    # the 18 GiB reserve is SGLang's for GPUs over 96 GiB only (v0.4.6.post2 server_args.py:241)
    result = _diagnose(
        [
            "[2025-04-29 16:18:10 TP0] Load weight begin. avail mem=78.50 GB",
            "[2025-04-29 16:18:40 TP0] Load weight end. type=LlamaForCausalLM, "
            "dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.",
            "[2025-04-29 16:18:41 TP0] Memory pool end. avail mem=11.36 GB",
            "[2025-04-29 16:19:34 TP0] Capture cuda graph end. Time elapsed: 56.90 s. "
            "mem usage=6.27 GB. avail mem=5.09 GB.",
            "[2025-04-29 16:19:40] The server is fired up and ready to roll!",
        ]
    )
    assert "thin_headroom" not in _ids(result)
    # 6.27 GiB of graphs is over the 3 GiB SGLang plans for them: the FA3 note (sglang#8538)
    # stays, conditional on FA3 and the release; no large-GPU reserve is claimed
    assert result.verdict.startswith("ready: no memory problem found; note the CUDA graphs took")
    assert "18" not in result.verdict and "96 GiB" not in result.verdict


def test_a_serving_oom_on_a_large_gpu_lowers_mfs_to_sglangs_reserve() -> None:
    # the OOM the #5893 headroom ends in (#5662 #5811 #5602, H200 serving): the shortfall of the
    # failing allocation is small; SGLang's own fix leaves 18 GiB outside the pool, so the
    # suggested fraction reaches that, not just the failing allocation
    result = _diagnose(
        [
            *H200_STARTUP,
            "[2025-04-29 17:02:00 TP0] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1180, in '
            "forward_decode",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 139.81 GiB of which 1.50 GiB is free. Of the allocated memory "
            "130.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but "
            "unallocated.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert "thin_headroom" in _ids(result)
    assert _knobs(result)["mem_fraction_static"] == 0.83  # 0.88 - 6.64 / 139.50, not - 0.5 / P


def test_inferencex_2128_an_mtp_refusal_raises_mfs_past_1_minus_a_over_p() -> None:
    # https://github.com/SemiAnalysisAI/InferenceX/issues/2128 (DeepSeek-V4-Pro FP8, 8 x H200,
    # --mem-fraction-static 0.88): SGLang's own minimum viable was 0.9113 (0.9335 with the MTP
    # draft's 3.07 GB); 1 - 12.25 / (12.25 + 125.65) = 0.9112 -> 0.92
    result = _diagnose(
        [
            "Load weight end. quant=fp8, fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB.",
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.88.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    assert _knobs(result)["mem_fraction_static"] == 0.92


def test_28683_and_36260_a_bare_refusal_raises_mfs_without_a_value() -> None:
    # https://github.com/sgl-project/sglang/pull/28683 (DeepSeek-V4-Flash + EAGLE at 0.9, raised to
    # 0.95 in /pull/28855) and /pull/36260 (0.1 raised to 0.2): the line names the fraction only
    for line in (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.9.",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.1",
    ):
        result = _diagnose([line])
        (raised,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
        assert (raised.direction.value, raised.value) == ("raise", None), line
        assert "raise --mem-fraction-static" in result.verdict


def test_srt_slurm_42_a_pd_decode_worker_hits_the_deepep_cap_in_warmup() -> None:
    # https://github.com/NVIDIA/srt-slurm/issues/42 (DeepSeek-R1 FP4, PD with 8 decode nodes,
    # DP attention 32): fixed by a larger SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
    result = _diagnose(
        [
            "RuntimeError: Failed: Assertion error /build/DeepEP/csrc/deep_ep.cpp:1233 "
            "'x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank'",
        ]
    )
    assert result.outcome == "crash" and "deepep_dispatch_cap" in _ids(result)
    assert result.suggestions == []


# --- An NPU OOM while serving, memory held by another process, DP attention's automatic fraction,
# the mamba slot pool, a decode batch that cannot hold one request, CUDA-graph capture OOMs.

NPU_OOM_29838 = (
    "torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 61.27 GiB "
    "total capacity; 56.05 GiB already allocated; 56.05 GiB current active; 5.04 MiB free; 58.39 "
    "GiB reserved in total by PyTorch).If reserved memory is >> allocated memory try setting "
    "max_split_size_mb to avoid fragmentation."
)
"""sglang#29838's OOM line (GLM-5.2-W8A8 on Ascend A3, tp 16, --mem-fraction-static 0.90)."""


def test_29838_an_npu_oom_while_serving_lowers_mfs_by_the_headroom_floor() -> None:
    # https://github.com/sgl-project/sglang/issues/29838: the maintainer's answer was "reduce
    # --mem-fraction-static to 0.85 or even 0.8". The paste has the NPU's capacity, no P and no
    # fraction: lowering by d frees d x P <= d x 61.27 GiB, and the 5 GiB of free memory SGLang's
    # tuning guide keeps for activations needs d >= (5 GiB - 5.04 MiB) / 61.27 GiB = 0.0815
    result = _diagnose(
        [
            '  File "/usr/local/python3.11.15/lib/python3.11/site-packages/torch/_ops.py", line '
            "1209, in __call__",
            NPU_OOM_29838,
        ]
    )
    assert result.outcome == "oom"
    d = (5 * GIB - round(5.04 * MIB)) / round(61.27 * GIB)
    assert 0.08 < d < 0.09
    assert "lower --mem-fraction-static by at least 0.09" in result.verdict
    # and it says what a value needs, instead of "the log lacks the numbers"
    assert "add the server_args and `Load weight begin` lines" in result.verdict
    (lower,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert lower.value is None and "d >= 0.09 of the 61.27 GiB" in lower.why


def test_29838_with_its_fraction_in_the_paste_the_value_is_the_maintainers() -> None:
    # the same OOM with the server_args line (mem_fraction_static=0.9): at most 0.9 - 0.09. The
    # paste has no frame nor startup line that places the OOM after loading (during loading no
    # fraction helps), so the value is conditional: in the verdict, never a `try:` flag
    result = _diagnose(
        [
            "[2026-06-30 10:00:00] server_args=ServerArgs(model_path='GLM-5.2-w8a8', "
            "device='npu', tp_size=16, mem_fraction_static=0.9, chunked_prefill_size=2048)",
            NPU_OOM_29838,
        ]
    )
    assert result.phase.value == "unknown"
    assert _knobs(result)["mem_fraction_static"] is None
    assert (
        "if it came after loading, lower --mem-fraction-static by at least 0.09 (to 0.81 at most"
        " from 0.9); during loading no fraction helps" in result.verdict
    )
    assert not [line for line in render_text(result).splitlines() if line.startswith("try:")]


def test_29838_with_its_fraction_and_its_scheduler_frame_the_value_is_a_flag() -> None:
    # the thread's own traceback has the scheduler's event loop (serving): the value is then the
    # change to make
    result = _diagnose(
        [
            "[2026-06-30 10:00:00] server_args=ServerArgs(model_path='GLM-5.2-w8a8', "
            "device='npu', tp_size=16, mem_fraction_static=0.9, chunked_prefill_size=2048)",
            "[2026-07-01 09:31:38 TP0 EP0] Scheduler hit an exception: Traceback (most recent "
            "call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1531, '
            "in event_loop_overlap",
            "    batch_result = self.run_batch(batch)",
            '  File "/usr/local/python3.11.15/lib/python3.11/site-packages/torch/_ops.py", line '
            "1209, in __call__",
            NPU_OOM_29838,
        ]
    )
    assert result.phase.value == "serving"
    assert _knobs(result)["mem_fraction_static"] == 0.81
    tried = [line for line in render_text(result).splitlines() if line.startswith("try:")]
    assert tried and "--mem-fraction-static 0.81" in tried[0]


def test_a_gpu_under_40_gib_gets_no_headroom_floor() -> None:
    # SGLang's own default keeps less than 5 GiB outside the pool on small GPUs (v0.5.8
    # server_args.py:988-999 with a 2048-token chunk: 512 + 3072 + graphs MiB), so no floor
    result = _diagnose(
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 42.00 MiB. GPU 0 has a "
            "total capacity of 23.49 GiB of which 40.00 MiB is free. Of the allocated memory 22.10 "
            "GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.",
        ]
    )
    assert "by at least" not in result.verdict
    assert "lower --mem-fraction-static" in result.verdict


MINERU_3418 = [
    '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/siglip/modeling_siglip.py"'
    ", line 389, in forward",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 42.00 MiB. GPU 0 has a total "
    "capacity of 23.49 GiB of which 55.38 MiB is free. Including non-PyTorch memory, this process "
    "has 22.31 GiB memory in use. Of the allocated memory 21.51 GiB is allocated by PyTorch, with "
    "22.00 MiB allocated in private pools (e.g., CUDA Graphs), and 303.36 MiB is reserved by "
    "PyTorch but unallocated.",
    "[2025-09-07 06:10:23] Received sigquit from a child process. It usually means the child "
    "failed.",
]
"""opendatalab/MinerU#3418: the vision encoder (SigLIP) of MinerU's VLM served by SGLang, 24 GB."""


def test_mineru_3418_memory_held_by_another_process_is_the_answer() -> None:
    # https://github.com/opendatalab/MinerU/issues/3418: the maintainer quoted the OOM line and
    # answered that other applications held the memory: 23.49 - 0.05 free - 22.31 this process
    # = 1.13 GiB outside it, far more than the 42 MiB asked
    result = _diagnose(MINERU_3418)
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    assert held.bytes == round(23.49 * GIB) - round(55.38 * MIB) - round(22.31 * GIB)
    assert "1.13 GiB of the GPU is held by another process" in result.verdict
    assert "nvidia-smi" in held.message


def test_olmocr_50_a_process_listed_by_pid_is_not_counted_as_another() -> None:
    # https://github.com/allenai/olmocr/issues/50 (olmOCR's VLM served by SGLang on an A100 80 GB;
    # the same paste in sgl-project/sglang#4547, whose maintainer's lever was
    # --max-running-requests): `Process 13118 has 75.33 GiB` is the server itself (73.96 GiB
    # allocated by PyTorch), so nothing is held elsewhere; a paste with no frames cannot tell a
    # batch lever, so the verdict names the fraction floor (5 - 3.79) / 79.14 = 0.0153 -> 0.02 and
    # what to add for a value
    result = _diagnose(
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.93 GiB. GPU 0 has a "
            "total capacity of 79.14 GiB of which 3.79 GiB is free. Process 13118 has 75.33 GiB "
            "memory in use. Of the allocated memory 73.96 GiB is allocated by PyTorch, with 34.50 "
            "MiB allocated in private pools (e.g., CUDA Graphs), and 639.99 MiB is reserved by "
            "PyTorch but unallocated.",
        ]
    )
    assert "other_processes" not in _ids(result)
    assert "lower --mem-fraction-static by at least 0.02" in result.verdict


def test_28884_dp_attention_auto_fraction_over_reserves_by_dp_times_the_chunk() -> None:
    # https://github.com/sgl-project/sglang/pull/28884 (GLM-5.2-FP8, 8 x H200, tp 8, dp 8,
    # --chunked-prefill-size 32768, no --mem-fraction-static): the automatic 0.484 left no KV
    # pool; it reserved 32768 x 1.5 MiB for prefill activations where a rank runs 32768 / 8 =
    # 4096 (the chunk server_args prints, after the division). (32768 - 4096) x 1.5 MiB = 42 GiB;
    # the PR's correct fraction was ~0.78 = 0.484 + 42 / 140 on a 140 GiB H200
    result = _diagnose(
        [
            "[2026-06-22 10:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.2-FP8', "
            "mem_fraction_static=0.484, chunked_prefill_size=4096, tp_size=8, dp_size=8, "
            "enable_dp_attention=True)",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ]
    )
    (over,) = [f for f in result.findings if f.id == "dp_auto_fraction"]
    assert over.bytes == (32768 - 4096) * 3 * MIB // 2 == 42 * GIB
    assert (
        "sglang#28884" in result.verdict and "set --mem-fraction-static by hand" in result.verdict
    )
    assert round(0.484 + 42 / 140, 2) == 0.78
    (raised,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert "0.484 + 42.00 GiB / the GPU's memory" in raised.why


def test_a_refusal_without_dp_attention_has_no_over_reserve() -> None:
    result = _diagnose(
        [
            "[2026-06-22 10:00:00] server_args=ServerArgs(model_path='m', "
            "mem_fraction_static=0.484, chunked_prefill_size=4096, tp_size=8, dp_size=1)",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ]
    )
    assert "dp_auto_fraction" not in _ids(result)


def test_19002_a_mamba_slot_pool_that_is_full_is_not_gpu_memory() -> None:
    # https://github.com/sgl-project/sglang/pull/19002 (Qwen3.5, PD decode, extra_buffer): each
    # request takes 3 mamba slots (1 + a ping-pong pair); the fix is --max-mamba-cache-size =
    # 3 x --max-running-requests, which a PD decode worker ignored before that PR. SGLang's own
    # hint (--mamba-full-memory-ratio) does nothing once --max-mamba-cache-size is set
    result = _diagnose(
        [
            ' File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py", line 667, '
            "in _pre_alloc",
            "    req_pool_indices = self.req_to_token_pool.alloc([req])",
            '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 526, '
            "in alloc",
            "    req.mamba_ping_pong_track_buffer is not None",
            "AssertionError: Not enough space for mamba ping pong idx, try to increase "
            "--mamba-full-memory-ratio.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert result.verdict.startswith("SGLang's own pool was full during serving")
    assert "raise --max-mamba-cache-size (3 x --max-running-requests" in result.verdict
    (slots,) = [f for f in result.findings if f.id == "mamba_slots"]
    assert "sglang#19002" in slots.message and "--mamba-full-memory-ratio" in slots.message
    assert [(s.knob, s.direction.value) for s in result.suggestions] == [
        ("max_mamba_cache_size", "raise"),
        ("max_running_requests", "lower"),
    ]


def test_14948_and_19881_a_decode_batch_that_cannot_hold_one_request() -> None:
    # https://github.com/sgl-project/sglang/pull/14948 (PD decode, a 128K-context request with
    # the pool held by transfers: the assertion of v0.5.3 schedule_batch.py:1542) and
    # /pull/19881 (paged EAGLE: v0.5.8's ValueError, :1890): the KV pool, not a GPU allocation;
    # the fixes abort the request instead of crashing the server
    for lines in (
        [
            "AssertionError: No space left for only one request, "
            "self.token_to_kv_pool_allocator.available_size()=0",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py", line '
            "1627, in retract_decode",
        ],
        [
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py", line '
            "1890, in retract_decode",
            "    raise ValueError(",
            "ValueError: Out of memory even after retracting all other requests in the decode "
            "batch.",
        ],
    ):
        result = _diagnose(lines)
        assert (result.outcome, result.phase.value) == ("oom", "serving"), lines
        assert "retract_one_left" in _ids(result)
        assert "not a GPU allocation" in result.verdict and "a bigger KV pool" in result.verdict
        # the fix's levers with their directions; no value: the paste does not show the pool
        assert [(s.knob, s.direction.value, s.value) for s in result.suggestions] == [
            ("mem_fraction_static", "raise", None),
            ("max_total_tokens", "raise", None),
            ("context_length", "lower", None),
        ]


def test_38861_a_bare_capture_oom_says_what_a_value_needs() -> None:
    # https://github.com/sgl-project/sglang/pull/38861 (DeepSeek-V4.1 on H200/B200: `Capture
    # cuda graph failed: CUDA out of memory.`), fixed by capping the decode graphs at 64
    result = _diagnose(
        [
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/runner/'
            'decode_cuda_graph_runner.py", line 1326, in capture',
            "Exception: Capture cuda graph failed: CUDA out of memory.",
        ]
    )
    # the frame is the 0.5.16+ decode runner (model_executor/runner/), where the decode graphs'
    # cap is --cuda-graph-max-bs-decode (v0.5.16 server_args.py:7200-7207), the flag the PR set;
    # a value needs the captured sizes or the flag, which the paste lacks
    assert result.phase.value == "graph_capture"
    assert "lower --cuda-graph-max-bs-decode (for a value add the server_args line or the " in (
        result.verdict
    )
    assert "cuda_graph_max_bs_decode" in _knobs(result)


def test_a_capture_oom_with_the_decode_cap_in_server_args_halves_it() -> None:
    # the PR's cells derived --cuda-graph-max-bs-decode; with it in the log the first step is
    # half of it (the failing bucket is not in the paste)
    result = _diagnose(
        [
            "[2026-09-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8, "
            "cuda_graph_max_bs_decode=128)",
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/runner/'
            'decode_cuda_graph_runner.py", line 1326, in capture',
            "Exception: Capture cuda graph failed: CUDA out of memory.",
        ]
    )
    assert _knobs(result)["cuda_graph_max_bs_decode"] == 64
    assert "cap --cuda-graph-max-bs-decode at 64" in result.verdict


def test_an_older_capture_oom_keeps_the_old_flag() -> None:
    # before 0.5.16 the runner is model_executor/cuda_graph_runner.py and the flag
    # --cuda-graph-max-bs
    result = _diagnose(
        [
            '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 485, in '
            "capture",
            "Exception: Capture cuda graph failed: CUDA out of memory.",
        ]
    )
    assert "cuda_graph_max_bs" in _knobs(result)
    assert "cuda_graph_max_bs_decode" not in _knobs(result)


AITER_18263 = [
    "[2026-07-15 13:14:53] Load weight end. elapsed=19.09 s, type=Qwen3MoeForCausalLM, avail "
    "mem=230.20 GB, mem usage=56.98 GB.",
    "[2026-07-15 13:14:54] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1669816, K size: "
    "76.44 GB, V size: 76.44 GB",
    "[2026-07-15 13:14:54] Memory pool end. avail mem=74.01 GB",
    "Capturing batches (bs=496 avail_mem=20.14 GB):   2%|▊    | 1/52 [00:03<03:17,  3.88s/it]",
]
"""sglang PR #18263's log (Qwen3-30B-A3B on AMD with the AITER attention backend, mfs 0.911)."""


def test_18263_a_workspace_taken_after_the_pool_is_named() -> None:
    # https://github.com/sgl-project/sglang/pull/18263: the AITER backend allocated a 51.75 GB
    # workspace after the KV pool, outside the budget mfs leaves; the fix counts it before the
    # pool. Free memory falls 74.01 -> 20.14 GiB before the graphs: 53.87 GiB, and lowering mfs
    # by 53.87 / 287.18 (P = avail + usage at load end) = 0.1876 -> 0.19 makes that room
    result = _diagnose(AITER_18263)
    (dropped,) = [f for f in result.findings if f.id == "after_pool_drop"]
    assert dropped.bytes == round(74.01 * GIB) - round(20.14 * GIB)
    assert "lowering mfs by 0.19" in dropped.message
    # the lifecycle's stage after the pool says what is allocated there, with its source
    assert "attention-backend workspaces" in dropped.message
    assert "v0.5.8 model_executor/model_runner.py:1587-1726" in dropped.message
    assert "53.87 GiB was taken after the KV pool before the graphs" in result.verdict


def test_a_small_drop_after_the_pool_is_not_named() -> None:
    # FlashInfer's workspace and cuBLAS's are well under AFTER_POOL_DROP_MIN_GIB
    lines = [*AITER_18263[:3], AITER_18263[3].replace("avail_mem=20.14", "avail_mem=72.50")]
    assert "after_pool_drop" not in _ids(_diagnose(lines))


def test_29942_deepeps_invalid_argument_at_buffer_sync_is_likely_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/29942 (Kimi K2.6 W4A8, DeepEP low_latency,
    # PP 2 x TP 8, DP attention): `deep_ep.cpp:230 'invalid argument'` when the buffer is set up
    # lazily in graph capture; the reporter's standalone NVSHMEM probe showed the cause: the
    # 21.33 GiB a rank failed with 19.20 GiB free and worked on an empty GPU. The line is in
    # DeepEP's error format (`Failed: CUDA error <file>:<line> '<error>'`, as #25349 prints it)
    result = _diagnose(
        [
            '  File "/usr/local/lib/python3.12/dist-packages/deep_ep/buffer.py", line 132, in '
            "__init__",
            "    self.runtime.sync(device_ids, ipc_handles, root_unique_id)",
            "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:230 "
            "'invalid argument'",
        ]
    )
    assert result.outcome == "oom" and "deepep_buffer_memory" in _ids(result)
    assert result.verdict.startswith("likely out of GPU memory")
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in result.verdict
    assert [(s.knob, s.direction.value) for s in result.suggestions] == [
        ("mem_fraction_static", "lower")
    ]


def test_other_deepep_cuda_errors_are_not_called_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/25349's `invalid resource handle` at
    # deep_ep.cpp:112 (PD prefill, normal mode) is an IPC handle, not free memory
    result = _diagnose(
        [
            "RuntimeError: Failed: CUDA error /build/DeepEP/csrc/deep_ep.cpp:112 'invalid "
            "resource handle'",
        ]
    )
    assert result.outcome == "crash" and "deepep_buffer_memory" not in _ids(result)
    assert result.suggestions == []


def test_moss_ttsd_71_the_process_that_ran_out_is_the_small_one() -> None:
    # https://github.com/OpenMOSS/MOSS-TTSD/issues/71 (a TTS pipeline beside SGLang on a 4090):
    # the process that ran out holds 1.81 GiB; 23.53 - 0.02 - 1.81 = 21.70 GiB is another
    # process's (the thread shows it as `Process 5403 has 21.69 GiB`). The thread has no answer;
    # the numbers say the server beside it must leave room
    result = _diagnose(
        [
            "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.53 "
            "GiB of which 20.38 MiB is free. Including non-PyTorch memory, this process has 1.81 "
            "GiB memory in use. Process 5403 has 21.69 GiB memory in use. Of the allocated memory "
            "1.34 GiB is allocated by PyTorch, and 94.59 MiB is reserved by PyTorch but "
            "unallocated.",
        ]
    )
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    assert held.bytes == round(23.53 * GIB) - round(20.38 * MIB) - round(1.81 * GIB)
    assert "the process that ran out holds only 1.81 GiB" in held.message
    assert "21.70 GiB of the GPU is held by another process" in result.verdict


# --- Where graph memory places an OOM, FA3 graphs' page-table copies, a prefill chunk, a quoted
# refusal, a mamba slot, the draft head, an aiter workspace.

OLMOCR_50 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.93 GiB. GPU 0 has a total "
    "capacity of 79.14 GiB of which 3.79 GiB is free. Process 13118 has 75.33 GiB memory in use. "
    "Of the allocated memory 73.96 GiB is allocated by PyTorch, with 34.50 MiB allocated in "
    "private pools (e.g., CUDA Graphs), and 639.99 MiB is reserved by PyTorch but unallocated."
)
"""https://github.com/allenai/olmocr/issues/50 (the same paste in sgl-project/sglang#4547)."""


def test_olmocr_50_graph_memory_in_the_oom_text_places_it_after_the_weights_only() -> None:
    # the maintainer's lever was --max-running-requests ('limits the concurrent batch size');
    # mfs 0.7 did not help. 34.50 MiB in PyTorch's private pools say only that the weights were
    # in: SGLang fills private pools from its first graph capture on (and its symmetric-memory
    # and disaggregated-KV pools after the weights), so the OOM is no loading one, but capture
    # and serving stay open: the fraction, which holds in both, leads, then each stage's lever
    result = _diagnose([OLMOCR_50])
    assert result.phase.value == "unknown"
    (placed,) = [f for f in result.findings if f.id == "phase_from_graphs"]
    assert placed.message.startswith("after the weights: the OOM text shows 34.50 MiB")
    assert "graph capture or serving" in placed.message
    assert result.verdict == (
        "OOM during an unknown phase after the weights: 1.14 GiB short; lower "
        "--mem-fraction-static by at least 0.02 (for a value add the server_args and `Load weight "
        "begin` lines); in graph capture also lower --cuda-graph-max-bs, in serving also lower "
        "--max-running-requests or lower --chunked-prefill-size"
    )
    assert "during loading" not in render_text(result)
    assert [s.knob for s in result.suggestions][:3] == [
        "mem_fraction_static",
        "max_running_requests",
        "chunked_prefill_size",
    ]


def test_an_oom_text_without_graph_memory_keeps_an_unknown_phase_conditional() -> None:
    # the same numbers without `private pools`: nothing places the OOM after loading, so the
    # fraction's step is conditional and never a `try:` flag, even with the fraction in the log
    text = OLMOCR_50.replace(", with 34.50 MiB allocated in private pools (e.g., CUDA Graphs)", "")
    result = _diagnose(
        [
            "[2025-03-21 10:00:00] server_args=ServerArgs(model_path='m', "
            "mem_fraction_static=0.88)",
            text,
        ]
    )
    assert result.phase.value == "unknown" and "phase_from_graphs" not in _ids(result)
    assert _knobs(result)["mem_fraction_static"] is None
    assert "if it came after loading, lower --mem-fraction-static by at least 0.02 (to 0.86" in (
        result.verdict
    )
    assert "try:" not in render_text(result)


def test_graph_memory_does_not_override_a_frame_that_places_the_oom() -> None:
    # a load frame wins over the private-pool reading (the frames are the paste's own word)
    result = _diagnose(
        [
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 643, in '
            "load_model",
            OLMOCR_50,
        ]
    )
    assert result.phase.value == "load" and "phase_from_graphs" not in _ids(result)


def test_8538_fa3_graphs_of_6_19_gb_name_the_page_table_copies() -> None:
    # sglang#8538 (Llama-4 Maverick, commit 7c96971, FA3), whose fragment is held once, in
    # tests/data/pasted_fragments.toml: the graphs took 6.19 GB; FA3 copied the page table for
    # every captured bs (v0.4.10.post1 flashattention_backend.py:1463-1465), fixed by PRs #8567
    # and #8579 in 0.4.10.post2
    (text,) = [f["text"] for f in FRAGMENTS if f["url"].endswith("/issues/8538")]
    result = _diagnose(text.strip().splitlines())
    (graphs,) = [f for f in result.findings if f.id == "graph_memory"]
    assert graphs.bytes == round(6.19 * GIB)
    assert "if the attention backend is FA3" in graphs.message
    assert "the release is before 0.4.10.post2 (this log's: >= 0.4.0)" in graphs.message
    assert "flashattention_backend.py:1463-1465" in graphs.message  # the known-bug row's cause
    assert (
        "the CUDA graphs took 6.19 GiB: possibly FA3's per-bs page tables (sglang#8538), fixed in "
        "0.4.10.post2; else lower --cuda-graph-max-bs" in result.verdict
    )


def test_graphs_at_a_release_past_the_fa3_fix_get_no_such_note() -> None:
    # a 0.5.19+ log (its server_args dict and `elapsed=` load end) cannot be 0.4.10.post1
    result = _diagnose(
        [
            "[2026-05-01 10:00:00] server_args={'model_path': 'm', 'tp_size': 8}",
            "[2026-05-01 10:00:40 TP0] Load weight end. elapsed=30.00 s, type=LlamaForCausalLM, "
            "avail mem=56.50 GB, mem usage=83.00 GB.",
            "[2026-05-01 10:01:34 TP0] Capture cuda graph end. Time elapsed: 19.50 s. mem "
            "usage=6.19 GB. avail mem=5.24 GB.",
        ]
    )
    assert "graph_memory" not in _ids(result)


def test_graphs_with_another_attention_backend_get_no_fa3_note() -> None:
    result = _diagnose(
        [
            "[2025-07-29 18:14:00] server_args=ServerArgs(model_path='m', "
            "attention_backend='flashinfer')",
            "[2025-07-29 18:14:43 TP0] Capture cuda graph end. Time elapsed: 19.50 s. mem "
            "usage=6.19 GB. avail mem=5.24 GB.",
        ]
    )
    assert "graph_memory" not in _ids(result)


def test_37712_one_huge_prefill_allocation_with_room_left_is_the_chunk() -> None:
    # https://github.com/sgl-project/sglang/issues/37712 (GLM-5.3-Flash, 4 x B300): 73.65 GiB
    # asked with 50.40 GiB free in the DSA indexer; fixed by chunking its [chunk tokens x KV
    # rows] logits (sglang PR #38507). The paste elides the capacity (`GPU 1 ... 50.40 GiB`)
    result = _diagnose(
        [
            "dsa_indexer_kpool.py, line 998, in _get_topk_ragged_kpool_plan",
            "    logits = deep_gemm.fp8_mqa_logits(",
            "tvm.error.InternalError: CUDA out of memory. Tried to allocate 73.65 GiB. GPU 1 ... "
            "50.40 GiB is free.",
        ]
    )
    assert result.shortfall_bytes == round(73.65 * GIB) - round(50.40 * GIB)
    assert "oversized_forward" in _ids(result)
    assert "one allocation is a long prefill's working set" in result.verdict
    assert "lower --chunked-prefill-size" in result.verdict
    assert "mem_fraction_static" not in _knobs(result)


def test_a_prefill_chunk_in_the_log_gives_the_chunk_a_value() -> None:
    # 8192 x 50.40 / 73.65 = 5,605 -> 4096 (a power of two below)
    result = _diagnose(
        [
            "[2026-09-03 10:00:00] server_args=ServerArgs(model_path='m', "
            "chunked_prefill_size=8192)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 73.65 GiB. GPU 1 has a "
            "total capacity of 267.00 GiB of which 50.40 GiB is free.",
        ]
    )
    assert _knobs(result)["chunked_prefill_size"] == 4096


def test_omni_293_a_refusal_quoted_without_its_advice_is_still_the_refusal() -> None:
    # https://github.com/sgl-project/sglang-omni/issues/293: at --mem-fraction-static 0.8
    # `RuntimeError: Not enough memory`, the server refused to launch; 0.85 booted
    result = _diagnose(["RuntimeError: Not enough memory"])
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    assert "raise --mem-fraction-static" in result.verdict
    # and another library's `Not enough memory ...` sentence is not SGLang's refusal
    other = _diagnose(["RuntimeError: Not enough memory to handle 4096 prefill tokens"])
    assert other.phase.value != "kv_sizing"


def test_5081_a_prefill_raise_with_its_counts_on_one_line_is_page_accounting() -> None:
    # https://github.com/sgl-project/sglang/pull/5081 ('Fix prefill OOM error in the case of
    # large page size'): 5,120 tokens free for 1,444 asked, the counts pasted without newlines
    result = _diagnose(
        [
            "RuntimeError: Prefill out of memory. Try to lower your batch size.Try to allocate "
            "1444 tokens.Avaliable tokens:5120self.token to kv pool allocator.available "
            "size()=5120self.tree cache.evictable size()=0",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "5,120 tokens free for the 1,444 asked" in note.message
    assert "mem_fraction_static" not in _knobs(result)
    assert "but was not full" in result.verdict


def test_33773_a_mamba_slot_the_radix_cache_could_not_get_is_the_mamba_pool() -> None:
    # https://github.com/sgl-project/sglang/pull/33773: `AssertionError: Can not alloc mamba
    # cache` under memory pressure (v0.5.8 mem_cache/mamba_radix_cache.py:460, :651); the pool
    # of mamba slots, not a GPU allocation, and no crash of unknown cause
    result = _diagnose(["AssertionError: Can not alloc mamba cache"])
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert "mamba_slots" in _ids(result)
    assert "raise --max-mamba-cache-size" in result.verdict


def test_37155_memory_freed_after_the_pool_names_the_draft_head() -> None:
    # https://github.com/sgl-project/sglang/pull/37155: 1.83 GB arrived after `Memory pool end`
    # (the MTP draft's own embed/lm_head, dropped after the pool was sized): 13,303 tokens
    result = _diagnose(
        [
            "Memory pool end.                          avail mem=0.29 GB",
            "Capture target verify CUDA graph begin.   avail mem=2.12 GB",
            "max_total_num_tokens=13303, context_len=8192, available_gpu_mem=1.82 GB",
        ]
    )
    (rose,) = [f for f in result.findings if f.id == "free_rose_after_pool"]
    assert rose.bytes == round(2.12 * GIB) - round(0.29 * GIB)
    assert "speculative draft's own embed/lm_head" in result.verdict
    assert "sglang PR #37155" in result.verdict


def test_20888_an_aiter_workspace_oom_is_still_read_as_the_fraction() -> None:
    # https://github.com/sgl-project/sglang/pull/20888 (AMD, AITER): a 16.25 GiB workspace sized
    # by the 131,072-token context, fixed by capping it at the KV pool's tokens. The two pasted
    # lines do not name the backend: memledger's answer stays the conditional fraction (a miss
    # this test records, not a claim)
    result = _diagnose(
        [
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.25 GiB.",
            "GPU 0 has a total capacity of 255.98 GiB of which 4.23 GiB is free.",
        ]
    )
    assert result.phase.value == "unknown"
    assert "if it came after loading, lower --mem-fraction-static by at least 0.05" in (
        result.verdict
    )
    assert "context_length" not in _knobs(result)


def test_23580_a_capture_invalidated_by_another_stream_is_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/23580 (Hy3-preview on MI300X/MI355X): AITER's
    # custom all-reduce launches on its own stream during HIP graph capture; fixed by
    # SGLANG_USE_AITER_AR=false (sglang PR #23581); eager mode worked. SGLang's own re-raise
    # `Capture cuda graph failed` places it in graph capture
    result = _diagnose(
        [
            "Exception: Capture cuda graph failed: HIP error: operation failed due to a previous "
            "error during capture",
            "Search for `hipErrorStreamCaptureInvalidated' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__HIPRT__TYPES.html for more information.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("crash", "graph_capture")
    assert "capture_invalidated" in _ids(result)
    assert "SGLANG_USE_AITER_AR=0" in result.verdict
    assert result.suggestions == []


def test_29575_the_summary_line_is_the_kv_pool_it_states() -> None:
    # https://github.com/sgl-project/sglang/issues/29575: "max_total_num_tokens=2086558 ... means
    # KV Cache Available total is 2M?"; the maintainer: "Yes, it does."
    result = _diagnose(
        [
            "[2026-06-28 15:16:45] max_total_num_tokens=2086558, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=33, context_len=256000, "
            "available_gpu_mem=17.22 GB",
        ]
    )
    # the answer, the pool's size, is in the verdict
    assert result.verdict == (
        "ready: no memory problem found; the KV pool holds 2,086,558 tokens a rank"
    )
    (capacity,) = [f for f in result.findings if f.id == "kv_capacity"]
    assert "the KV pool holds 2,086,558 tokens a rank" in capacity.message
    assert "8.2 requests of the full 256,000-token context" in capacity.message
    assert "max_running_requests=33" in capacity.message
