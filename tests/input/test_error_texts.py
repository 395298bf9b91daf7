"""Error texts (allocator OOM messages, SGLang refusals, tracebacks, kills) read into events."""

from __future__ import annotations

import io

import pytest

from memledger.input.error_texts import (
    ErrorTextReader,
    read_kv_refusal,
    read_oom_message,
    read_pool_exhausted,
    read_process_exit,
    short_path,
)
from memledger.input.parsing import parse_log
from memledger.model.events import Event, EventKind
from memledger.units import GIB, MIB
from tests.input.helpers import physical_lines, real_log


def _errors(path_or_text: str | bytes, kind: EventKind) -> list[Event]:
    source = io.BytesIO(path_or_text) if isinstance(path_or_text, bytes) else path_or_text
    parsed = parse_log(source, label="x")
    return [e for e in parsed.startup.events if e.kind is kind]


def test_torch_2_oom_message_numbers_from_a_real_line() -> None:
    line = physical_lines(real_log("single/015"))[123]  # line 124: rank 0's own OOM text
    reading = read_oom_message(line)
    assert reading is not None
    sizes, values = reading
    assert sizes["requested"].bytes == 256 * MIB
    assert sizes["capacity"].bytes == round(31.86 * GIB)
    assert sizes["free"].bytes == 70 * MIB
    assert sizes["allocated"].bytes == round(31.34 * GIB)
    assert sizes["reserved_unallocated"].bytes == round(30.53 * MIB)
    assert values == {"device": "CUDA", "gpu": 0}


def test_old_torch_and_npu_oom_shapes() -> None:
    # torch < 2.1 / torch_npu wording (parenthesised, `;`-separated)
    npu = (
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.96 GiB total "
        "capacity; 55.10 GiB already allocated; 55.10 GiB current active; 1.25 GiB free; "
        "57.00 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory ..."
    )
    reading = read_oom_message(npu)
    assert reading is not None
    sizes, values = reading
    assert values == {"device": "NPU", "gpu": 3}
    assert sizes["requested"].bytes == 2 * GIB
    assert sizes["free"].bytes == round(1.25 * GIB)
    assert sizes["allocated"].bytes == round(55.10 * GIB)
    assert sizes["reserved_total"].bytes == 57 * GIB
    assert "reserved_unallocated" not in sizes


def test_torch_2_1_misspelt_capacity_is_read() -> None:
    # torch 2.1 printed `total capacty` (c10/cuda/CUDACachingAllocator.cpp, fixed in 2.2)
    pasted = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 0 has a "
        "total capacty of 23.65 GiB of which 281.12 MiB is free."
    )
    reading = read_oom_message(pasted)
    assert reading is not None
    sizes, values = reading
    assert sizes["capacity"].bytes == round(23.65 * GIB)
    assert sizes["free"].bytes == round(281.12 * 2**20)
    assert values == {"device": "CUDA", "gpu": 0}


def test_cann_allocation_failures_in_their_shapes() -> None:
    # newer CANN puts the PID and time between the code and its text; an aclnn operator fails
    # with ACL_ERROR_RT_MEMORY_ALLOCATION (207001), the resource line under it carrying the size
    for text, asked in (
        ("EL0004: [PID: 4242] 2026-01-01-00:00:00.000.000 Failed to allocate memory.", None),
        (
            "NPU function error: call aclnnMoeDistributeDispatchV2 failed, error code is 207001",
            None,
        ),
        (
            "    Failed to allocate resource[DeviceMemory] with info [size:2147483648]. Reason: "
            "Memory resources are exhausted.",
            2 * GIB,
        ),
    ):
        reading = read_oom_message(text)
        assert reading is not None, text
        sizes, values = reading
        assert values["device"] == "NPU" and values["runtime"] == "CANN"
        assert (sizes["requested"].bytes if "requested" in sizes else None) == asked
    assert read_oom_message("call aclnnAdd failed, error code is 2070011") is None


def test_host_memory_shapes_and_sglangs_own_memory_error() -> None:
    # the host's RAM: Windows torch, numpy, CPython's bare MemoryError; SGLang raising MemoryError
    # for the GPU's own free memory is no host text
    for text in (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough "
        "memory: you tried to allocate 68719476736 bytes.",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 12.0 GiB for an array with "
        "shape (100000, 32000) and data type float32",
        "MemoryError",
        'It fails with "MemoryError" and exits.',
        # a JIT build's compiler killed by the OOM killer (GCC's driver, nvcc)
        "c++: fatal error: Killed signal terminated program cc1plus",
        "nvcc error   : 'cicc' died due to signal 9 (Kill signal)",
    ):
        assert read_pool_exhausted(text) == {"pool": "host", "shape": "host_memory"}, text
    assert read_pool_exhausted("MemoryError: insufficient free VRAM for one top-k expert") is None
    assert read_pool_exhausted("torch.OutOfMemoryError") is None
    assert read_pool_exhausted("a MemoryError subclass is raised") is None


def test_oom_message_with_private_pools_and_an_annotation() -> None:
    pasted = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 812.00 MiB is free. Including non-PyTorch memory, "
        "this process has 78.38 GiB memory in use. Of the allocated memory 70.00 GiB is "
        "allocated by PyTorch, with 3.25 GiB allocated in private pools (e.g., CUDA Graphs), "
        "and 1.00 GiB is reserved by PyTorch but unallocated.   <- during capture"
    )
    reading = read_oom_message(pasted)
    assert reading is not None
    sizes, _ = reading
    assert sizes["process_in_use"].bytes == round(78.38 * GIB)
    assert sizes["private_pools"].bytes == round(3.25 * GIB)
    assert sizes["reserved_unallocated"].bytes == GIB
    assert read_oom_message("warning: the word memory without an error") is None
    assert read_oom_message("CUDA out of memory") is None  # no number: not a reading


def test_sglang_refusals_both_shapes() -> None:
    # v0.5.8 model_runner_kv_cache_mixin.py:328-331 (f-string with `=`)
    old = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.88"
    )
    assert read_kv_refusal(old) == {"shape": "not_enough_memory", "mem_fraction_static": 0.88}
    # v0.5.23 mem_cache/kv_cache_configurator.py:3050-3058
    new = (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.7. Raise --mem-fraction-static above 0.812 (minimum viable = "
        "1 - available/pre = 0.8113). If using speculative decoding, draft weights are now counted."
    )
    assert read_kv_refusal(new) == {
        "shape": "no_room_for_kv",
        "mem_fraction_static": 0.7,
        "minimum_viable": 0.8113,
    }
    # quoted with its advice shortened: the floor it prints, rounded up, stands for the minimum
    short = new.split(" (minimum")[0].replace("Raise --mem-fraction-static above", "Raise above")
    assert read_kv_refusal(short) == {
        "shape": "no_room_for_kv",
        "mem_fraction_static": 0.7,
        "minimum_viable": 0.812,
    }
    assert read_kv_refusal("Memory pool end. avail mem=3.2 GB") is None


def test_process_exits() -> None:
    assert read_process_exit("Killed") == {"killed": True}
    assert read_process_exit("[2026-01-01 00:00:00] Exit code: -9") == {
        "exit_code": -9,
        "killed": True,
    }
    assert read_process_exit("Exit code: 1") == {"exit_code": 1, "killed": False}
    assert read_process_exit("Exit code: 0") is None
    assert read_process_exit("Killed the idle worker pool") is not None  # standalone word first
    assert read_process_exit("nothing was Killed here") is None


def test_short_path_drops_install_prefixes() -> None:
    assert (
        short_path("/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py")
        == "srt/model_executor/model_runner.py"
    )
    assert short_path("/opt/venv/lib/python3.10/site-packages/torch/utils/_device.py") == (
        "torch/utils/_device.py"
    )


def test_every_rank_oom_text_reaches_the_events_with_its_rank() -> None:
    found = _errors(str(real_log("single/008")), EventKind.OOM_MESSAGE)
    assert len(found) == 8
    by_rank = {e.rank: e for e in found}
    assert set(by_rank) == {f"TP{i}" for i in range(8)}
    rank0 = by_rank["TP0"]
    assert rank0.line == 536 and rank0.values["gpu"] == 0
    assert rank0.sizes["free"].bytes == round(3.91 * GIB)  # GPU 3 (line 444) says 3.88
    assert by_rank["TP3"].sizes["free"].bytes == round(3.88 * GIB)


def test_traceback_frames_exception_and_rank_of_a_crash_in_capture() -> None:
    (traceback,) = _errors(str(real_log("single/007")), EventKind.TRACEBACK)
    assert traceback.rank == "TP6" and traceback.line == 539
    assert traceback.values["exception"] == "TypeError"
    frames = str(traceback.values["frames"]).split(" > ")
    assert len(frames) == traceback.values["n_frames"] == 31
    assert "srt/model_executor/model_runner.py:2145 init_device_graphs" in frames
    assert frames[-1].endswith("forward_absorb_fused_mla_rope_prepare")


def test_cut_off_traceback_and_continuation_rank() -> None:
    (traceback,) = _errors(str(real_log("single/019")), EventKind.TRACEBACK)
    # `[23:17:08 TP4] Exception in run_tp_server:` then a bare Traceback: TP4's record
    assert traceback.rank == "TP4"
    assert traceback.values["exception"] is None
    assert traceback.values["frames"] == "srt/model_executor/cuda_graph_runner.py:147 __init__"


def test_harness_traceback_is_not_attributed_to_the_last_rank() -> None:
    found = _errors(str(real_log("complex/022")), EventKind.TRACEBACK)
    assert [e.values["exception"] for e in found] == ["TimeoutError", "RuntimeError"]
    assert {e.rank for e in found} == {""}  # the CI harness, not the last TP line before it


@pytest.mark.parametrize("strip", [False, True])
def test_pasted_oom_alone_parses(strip: bool) -> None:
    line = physical_lines(real_log("single/015"))[123]
    text = line.split("torch.OutOfMemoryError: ", 1)[1] if strip else line
    (event,) = _errors((text + "\n").encode(), EventKind.OOM_MESSAGE)
    assert event.rank == "" and event.sizes["requested"].bytes == 256 * MIB


def test_reader_caps_frames_but_counts_them() -> None:
    reader = ErrorTextReader()
    assert reader.feed(1, "Traceback (most recent call last):", "", False) == []
    for n in range(250):
        frame = f'  File "/x/sglang/srt/a.py", line {n}, in f{n}'
        assert reader.feed(2 + n, frame, "", False) == []
    (done,) = reader.feed(300, "ValueError: boom", "", False)
    assert done.values["n_frames"] == 250
    assert str(done.values["frames"]).count(" > ") == 99
    assert reader.finish() == []
