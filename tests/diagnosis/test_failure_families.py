"""diagnose on the failures people paste into SGLang threads: SGLang's own pools running out while
serving, requests longer than the pool, the request-to-token table, host RAM, a traceback cut
before its exception or pasted without its head, an OOM with no budget in the paste, a paste that
stops after capture. Each input is a short line written in the shape found in the cited thread;
no third-party log is copied here.
"""

from __future__ import annotations

import io

from memledger.diagnosis import Diagnosis
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from memledger.sglang.lifecycle import MEMORY_KNOBS
from memledger.units import GIB
from tests.conftest import diagnose_paste

P = "[2025-09-13 09:09:15 TP0] "
FRAME = '  File "/usr/lib/python3/site-packages/sglang/srt/{path}", line {n}, in {func}'


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines)


def _knobs(result: Diagnosis) -> dict[str, str]:
    return {s.knob: s.direction.value for s in result.suggestions}


def test_alloc_req_slots_alone_is_read_and_gets_sglangs_own_lever() -> None:
    # https://github.com/sgl-project/sglang/issues/10408: the message was pasted alone and
    # memledger said "no SGLang log lines found"
    result = _diagnose(
        [
            "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for "
            "`--max-running-requests`. self.req_to_token_pool.available_size()=1, num_reqs=2,"
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert _knobs(result) == {"max_running_requests": "lower"}
    assert [f.id for f in result.findings] == ["pool_ran_out"]


def test_prefill_out_of_memory_is_the_kv_pool_and_wants_more_not_less_mfs() -> None:
    # the KV pool, not the allocator (v0.5.8 mem_cache/common.py:284); shape of
    # https://github.com/sgl-project/sglang/issues/6860
    result = _diagnose(
        [
            P + "Decode batch. #running-req: 4, #token: 9071, token usage: 0.99, #queue-req: 0,",
            P + "Scheduler hit an exception: Traceback (most recent call last):",
            FRAME.format(path="managers/scheduler.py", n=1975, func="run_event_loop"),
            "RuntimeError: Prefill out of memory. Try to lower your batch size.",
            "Try to allocate 8192 tokens.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    knobs = _knobs(result)
    assert knobs["mem_fraction_static"] == "raise"
    assert knobs["max_running_requests"] == knobs["chunked_prefill_size"] == "lower"
    assert "KV pool ran out" in result.verdict


def test_a_retraction_is_no_oom_outcome() -> None:
    # v0.4.6 prints an INFO line when it retracts requests (managers/scheduler.py:1499); the
    # server goes on, so a ready log with it is ready, with a warning
    result = _diagnose(
        [
            P + "max_total_num_tokens=20000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=64, context_len=16384",
            P + "The server is fired up and ready to roll!",
            P + "Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.7 -> 0.9",
        ]
    )
    assert result.outcome == "starved"
    assert [f.id for f in result.findings if f.severity.value == "warning"] == ["kv_pool_full"]


def test_a_request_longer_than_the_pool_is_explained() -> None:
    # https://github.com/sgl-project/sglang/issues/4048: M + 6 is the pool or the context length
    result = _diagnose(
        [
            P + "max_total_num_tokens=59868, chunked_prefill_size=4096, max_prefill_tokens=16384, "
            "max_running_requests=64, context_len=163840",
            P + "The server is fired up and ready to roll!",
            P + "Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). "
            "Use a shorter input or enable --allow-auto-truncate.",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "request_exceeds_pool"]
    assert "59,862 + 6 = 59,868" in note.message
    assert "here it is the KV pool" in note.message
    assert result.outcome == "ready"


def test_req_to_token_oom_points_at_context_length_not_tp() -> None:
    # https://github.com/sgl-project/sglang/pull/6744: a huge --context-length OOMs while
    # building ReqToTokenPool; memledger used to suggest a larger --tp-size
    result = _diagnose(
        [
            P + "server_args=ServerArgs(context_length=2800000, max_running_requests=64)",
            P + "Scheduler hit an exception: Traceback (most recent call last):",
            FRAME.format(path="model_executor/model_runner.py", n=1002, func="init_memory_pool"),
            "    self.req_to_token_pool = ReqToTokenPool(",
            FRAME.format(path="mem_cache/memory_pool.py", n=61, func="__init__"),
            "    self.req_to_token = torch.zeros(",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. GPU 0 has a "
            "total capacity of 79.44 GiB of which 20.00 GiB is free. Of the allocated memory "
            "55.80 GiB is allocated by PyTorch, and 50.00 MiB is reserved by PyTorch but "
            "unallocated.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "memory_pool")
    assert "req_to_token_table" in [f.id for f in result.findings]
    by_knob = {s.knob: s for s in result.suggestions}
    assert set(by_knob) == {"context_length", "max_running_requests"}
    # the table is allocated after the KV budget was profiled (v0.4.6.post2 model_runner.py:
    # 763-826): it must fit the slack 79.44 GiB x (1 - 0.88, tp 1's default) = 9.53 GiB less
    # 5 GiB for activations, not the 20 GiB free that the KV pool sized just before takes
    room = 79.44 * (1 - 0.88) - 5
    assert by_knob["context_length"].value == 310_000  # 2,800,000 x 4.53 / 40 = 317,3xx
    assert 2_800_000 * room / 40 // 10_000 * 10_000 == 310_000
    assert by_knob["max_running_requests"].value == int(64 * room / 40)  # 7


def test_an_oom_without_a_budget_gets_mfs_without_a_value_never_a_tp_claim() -> None:
    # the allocator's message alone (https://github.com/sgl-project/sglang/issues/29838 shape):
    # memledger used to say "lowering --mem-fraction-static cannot free enough", which the paste
    # cannot show
    result = _diagnose(
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has "
            "a total capacity of 95.00 GiB of which 312.00 MiB is free."
        ]
    )
    (mfs,) = result.suggestions
    assert (mfs.knob, mfs.direction.value, mfs.value) == ("mem_fraction_static", "lower", None)
    assert "d >= 0.0014" in mfs.why  # 136 MiB / 95 GiB


def test_a_forward_pass_traceback_without_its_head_is_serving() -> None:
    # https://github.com/sgl-project/sglang/issues/9646 pasted the frames from
    # forward_thread_func_ on, without `Traceback (most recent call last):`
    result = _diagnose(
        [
            FRAME.format(
                path="managers/tp_worker_overlap_thread.py", n=176, func="forward_thread_func_"
            ),
            "    self.worker.forward_batch_generation(",
            FRAME.format(path="managers/tp_worker.py", n=238, func="forward_batch_generation"),
            "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total "
            "capacity; 55.10 GiB already allocated; 1.21 GiB free; 58.00 GiB reserved in total "
            "by PyTorch)",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert result.shortfall_bytes == round(2 * GIB - 1.21 * GIB)
    assert "max_running_requests" in _knobs(result)


def test_host_ram_is_said_and_gets_no_gpu_knob() -> None:
    # https://github.com/sgl-project/sglang/issues/5762: "not a memory problem" was wrong
    result = _diagnose(
        [
            "Traceback (most recent call last):",
            FRAME.format(path="managers/scheduler.py", n=1984, func="run_scheduler_process"),
            "    faulthandler.enable()",
            "OSError: [Errno 12] Cannot allocate memory",
        ]
    )
    assert result.outcome == "crash"
    assert "host RAM, not GPU memory: more RAM for the host" in result.verdict
    assert "host_memory" in [f.id for f in result.findings]
    assert not set(_knobs(result)) & MEMORY_KNOBS


def test_a_kill_is_not_called_not_a_memory_problem() -> None:
    # https://github.com/gpustack/gpustack/issues/3848: `Exit code: -9`, then the launcher's
    # traceback cut short
    result = _diagnose(
        [
            "[12-11 17:52:52] Rank 0 scheduler is dead. Please check if there are relevant logs.",
            "[12-11 17:52:54] Exit code: -9",
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/sglang", line 10, in <module>',
        ]
    )
    assert result.outcome == "crash"
    assert "not a memory problem" not in result.verdict
    assert "OOM killer" in result.verdict and result.suggestions == []


def test_a_cut_traceback_says_the_error_is_missing() -> None:
    # https://github.com/sgl-project/sglang/issues/1751 stops inside the traceback
    result = _diagnose(
        [
            P + "Capture cuda graph begin. This can take up to several minutes.",
            P + "Traceback (most recent call last):",
            FRAME.format(path="model_executor/cuda_graph_runner.py", n=212, func="capture"),
        ]
    )
    assert result.verdict.endswith("the error is not in the log")
    assert [f.id for f in result.findings][0] == "error_not_in_log"
    assert result.suggestions == []


def test_a_paste_ending_after_capture_with_no_headroom_warns() -> None:
    # https://github.com/sgl-project/sglang/pull/4840: 0.00 GB free after capture, no ready line
    result = _diagnose(
        [
            P + "KV Cache is allocated. #tokens: 46045, K size: 2.99 GB, V size: 2.99 GB",
            P + "Memory pool end. avail mem=0.07 GB",
            P + "Capture cuda graph begin. This can take up to several minutes. avail mem=0.07 GB",
            P + "Capture cuda graph end. Time elapsed: 4.00 s. avail mem=0.00 GB. mem "
            "usage=0.07 GB.",
        ]
    )
    assert result.outcome == "truncated"
    assert result.verdict.startswith("log ends after CUDA-graph capture")
    assert "zero_headroom" in [f.id for f in result.findings]


def test_the_swa_split_line_is_a_memory_pool_milestone() -> None:
    # https://github.com/sgl-project/sglang/pull/18039: TP0's only line is the SWA split
    result = _diagnose(
        [P + "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288"]
    )
    assert (result.outcome, result.phase.value) == ("truncated", "memory_pool")


def test_pool_texts_are_events_of_their_own_kind() -> None:
    parsed = parse_log(
        io.BytesIO(b"KV cache pool is full. Retract requests. #retracted_reqs: 1\n"), label="p"
    )
    (event,) = [e for e in parsed.startup.events if e.kind is EventKind.POOL_EXHAUSTED]
    assert (event.values["pool"], event.values["shape"]) == ("kv", "retract")
