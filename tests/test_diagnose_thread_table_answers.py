"""diagnose on a third set of SGLang threads with a known answer: an NPU OOM while serving, a
vision encoder's OOM beside another process, DP attention's automatic fraction, the mamba slot
pool of a hybrid model, a decode batch that cannot hold one request, CUDA-graph capture. One test
a thread, its URL first; the fragment is what the thread pasted, cut to the lines the answer
needs (public data). The before/after verdicts are in docs/diagnose.md ("Measured on SGLang
threads")."""

from __future__ import annotations

from memledger.render.diagnose import render_text
from memledger.units import GIB, MIB
from tests.test_diagnose_thread_table import _diagnose, _ids, _knobs

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
        assert result.suggestions == []  # the fix is a pool size the paste does not show


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
    assert "lowering mfs by 0.19" in dropped.message and "PR #18263" in dropped.message
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
