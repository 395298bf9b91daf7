"""Error texts that pastes carry without PyTorch's allocator message: a runtime's capture error on
its own line, PyTorch's caching-allocator warning (its sizes in bytes), torch_memory_saver's
margin refusal, the HiCache host-pool check, CANN's allocation failure, torch_npu's workspace
allocator, the BLAS libraries' allocation status. Synthetic lines in each family's shape
(memledger.sglang.errors, memledger.sglang.failure_rules)."""

from __future__ import annotations

from memledger.diagnosis import Diagnosis
from memledger.input.error_texts import ErrorTextReader, read_oom_message
from memledger.model.events import EventKind
from memledger.units import GIB
from tests.conftest import diagnose_paste


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines, label="paste.log")


def _ids(result: Diagnosis) -> list[str]:
    return [f.id for f in result.findings]


def test_a_runtime_error_line_alone_is_an_exception_line() -> None:
    # c10 prints `CUDA error: <the runtime's string>` (`HIP error: ` on ROCm) as a message's
    # first line; a watchdog puts it on the line after its own
    reader = ErrorTextReader()
    lines = ["Process group watchdog thread terminated with exception:", "CUDA error: unknown"]
    events = [e for n, text in enumerate(lines, 1) for e in reader.feed(n, text, "", False)]
    events += reader.finish()
    (event,) = [e for e in events if e.kind is EventKind.TRACEBACK]
    assert (event.values["exception"], event.values["message"]) == ("CUDA error", "unknown")


def test_an_event_recorded_in_a_capture_is_a_capture_crash_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/24011 (AITER's custom all-reduce during HIP
    # graph capture on ROCm 7.2.0): the runtime's error 907 on the watchdog's next line
    result = _diagnose(
        [
            "Process group watchdog thread terminated with exception:",
            "HIP error: operation not permitted on an event last recorded in a capturing stream",
        ]
    )
    assert (result.outcome, result.phase.value) == ("crash", "graph_capture")
    assert "capture_invalidated" in _ids(result)
    assert "SGLANG_USE_AITER_AR=0" in result.verdict
    assert result.suggestions == []
    assert not result.memory_problem


def test_the_caching_allocator_warning_gives_its_sizes_in_bytes() -> None:
    # https://github.com/sgl-project/sglang/issues/38202: the warning torch prints when cudaMalloc
    # fails, the only OOM text of the paste
    line = (
        "[rank2]:[W305 10:00:00.000000000 CUDACachingAllocator.cpp:3900] memory allocation failed "
        "with OOM on device 2 while trying to allocate 3221225472 bytes (free: 2147483648, total: "
        "150323855360)."
    )
    read = read_oom_message(line)
    assert read is not None
    sizes, values = read
    assert {k: s.bytes for k, s in sizes.items()} == {
        "requested": 3 * GIB,
        "free": 2 * GIB,
        "capacity": 140 * GIB,
    }
    assert values == {"device": "CUDA", "gpu": 2}
    result = _diagnose([line])
    assert result.outcome == "oom"
    assert result.shortfall_bytes == GIB
    assert "asked for 3.00 GiB with 2.00 GiB free of 140.00 GiB" in " ".join(
        f.message for f in result.findings
    )


def test_the_memory_savers_margin_refusal_is_an_oom_of_the_memory_saver() -> None:
    # torch_memory_saver csrc/core.cpp: an allocation refused because the margin a framework set
    # plus its size exceed the free memory (v0.0.9 prints `(alloc)size=`, later
    # `allocation_size=`); no sizes are read from it
    for size in ("(alloc)size", "allocation_size"):
        line = (
            "[torch_memory_saver.cpp] TorchMemorySaver::malloc return OOM since "
            f"memory_margin_bytes=2147483648 {size}=8589934592 free_bytes=4294967296"
        )
        read = read_oom_message(line)
        assert read == ({}, {"runtime": "torch_memory_saver"}), size
        result = _diagnose([line])
        assert result.outcome == "oom"
        assert "embedded_in_framework" in _ids(result)
        assert "oversized_forward" not in _ids(result)
        assert "mem_fraction_static" in {s.knob for s in result.suggestions}


def test_the_hicache_host_pool_check_is_host_memory_with_its_knobs() -> None:
    # SGLang's HostKVCache check (available RAM less a 10 GiB reserve, per rank): a refusal of
    # host memory, whose levers are the HiCache sizes, never a GPU knob
    result = _diagnose(
        [
            "ValueError: Not enough host memory available. Requesting 12.50 GB but only have "
            "3.25 GB free. Please reduce the size of the hierarchical cache."
        ]
    )
    assert result.outcome == "crash"
    assert "hicache_host_memory" in _ids(result)
    assert "--hicache-size" in result.verdict and "--hicache-ratio" in result.verdict
    assert "not GPU memory" in result.verdict
    # the HiCache sizes are the Suggestions too, and nothing else
    assert [(s.knob, s.direction) for s in result.suggestions] == [
        ("hicache_size", "lower"),
        ("hicache_ratio", "lower"),
    ]


def test_canns_allocation_failure_is_an_npu_oom_with_the_runtimes_size() -> None:
    # CANN's error EL0004 (no `out of memory` words) and the failed rtMalloc under it, whose
    # size is in bytes
    head = (
        "[PID: 7] 2026-02-03-04:05:06.789.012 Memory_Allocation_Failure(EL0004): Failed to "
        "allocate memory requested by GE module."
    )
    malloc = (
        "        Call rtMalloc fail, purpose: workspace, type = 2, size:2147483648, device_id:3"
        "[FUNC:Alloc][FILE:device_allocator.cc][LINE:72]"
    )
    assert read_oom_message(head) == ({}, {"device": "NPU", "runtime": "CANN"})
    read = read_oom_message(malloc)
    assert read is not None
    sizes, values = read
    assert {k: s.bytes for k, s in sizes.items()} == {"requested": 2 * GIB}
    assert values == {"device": "NPU", "runtime": "CANN", "gpu": 3}
    for lines in ([head], [malloc], [head, "        Possible Cause: memory is short.", malloc]):
        result = _diagnose(lines)
        assert result.outcome == "oom", lines
        assert "mem_fraction_static" in {s.knob for s in result.suggestions}


def test_the_npu_workspace_allocators_oom_gives_the_size_it_asked_for() -> None:
    # torch_npu's workspace allocator writes `tried to allocate` in lower case, glued to its
    # parenthesis
    line = (
        "[rank1]:[E101 10:00:00.000000000 OpParamMaker.cpp:454] NPU out of memory. "
        "NPUWorkspaceAllocator tried to allocate 1.00 GiB(NPU 1; 60.00 GiB total capacity; "
        "512.00 MiB free). If you want to reduce memory usage, take a try to set the environment "
        "variable TASK_QUEUE_ENABLE=1."
    )
    read = read_oom_message(line)
    assert read is not None
    sizes, _ = read
    assert {k: s.bytes for k, s in sizes.items()} == {
        "requested": GIB,
        "capacity": 60 * GIB,
        "free": GIB // 2,
    }
    assert _diagnose([line]).shortfall_bytes == GIB // 2


def test_a_blas_librarys_allocation_failure_is_an_oom_not_a_plain_crash() -> None:
    # cuBLAS's CUBLAS_STATUS_ALLOC_FAILED is 'usually caused by a cudaMalloc() failure' (its
    # docs); hipBLAS's status mirrors it
    for line, device in (
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtCreate`",
            "CUDA",
        ),
        ("RuntimeError: HIPBLAS_STATUS_ALLOC_FAILED when calling `hipblasCreate(handle)`", "HIP"),
    ):
        read = read_oom_message(line)
        assert read is not None and read[1]["device"] == device
        result = _diagnose([line])
        assert result.outcome == "oom", line
        assert result.memory_problem


def test_an_oom_text_without_a_device_names_only_its_runtime() -> None:
    # torch_memory_saver's driver-error line names no device: the finding says none (it said
    # `None runtime`)
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103"
    )
    messages = " ".join(f.message for f in _diagnose([line]).findings)
    assert "(runtime: torch_memory_saver)" in messages
    assert "None" not in messages
