"""diagnose on the fragments users pasted in SGLang issue threads (the lines that carry the
error, cut to what the answer needs), checked against what fixed each thread. One test a thread;
the thread's URL is the test's first comment. Public data; only the lines needed are kept."""

from __future__ import annotations

import io

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.input.parsing import parse_log
from memledger.units import GIB


def _diagnose(lines: list[str]) -> Diagnosis:
    data = ("\n".join(lines) + "\n").encode()
    parsed = parse_log(io.BytesIO(data), label="thread.log")
    return diagnose(parsed, build(parsed, LoadOptions()))


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
tests/test_formats_outcome.py too)."""


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
