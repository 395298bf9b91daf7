"""Two failures that are no memory shortage although the paste talks of memory: a library built
without kernels for the GPU's architecture (`no kernel image is available for execution on the
device`, which SGLang's capture wrapper pairs with memory hints), and SGLang's idle pool self-check
reported in a reporter's own words. Each input is a synthetic line in the shape people paste; no
third-party log is copied here.
"""

from __future__ import annotations

from memledger.diagnosis import Diagnosis
from memledger.sglang.lifecycle import MEMORY_KNOBS
from tests.conftest import diagnose_paste, finding_ids

FRAME = '  File "/usr/lib/python3/site-packages/sglang/srt/{path}", line {n}, in {func}'
NO_IMAGE = "no kernel image is available for execution on the device"


def _memory_knobs(result: Diagnosis) -> set[str]:
    return {s.knob for s in result.suggestions if s.knob in MEMORY_KNOBS}


def test_capture_failure_without_a_kernel_image_is_no_memory_shortage() -> None:
    # SGLang's 0.2 capture wrapper: the exception carries the CUDA error and memory hints
    result = diagnose_paste(
        [
            "Traceback (most recent call last):",
            FRAME.format(path="model_executor/model_runner.py", n=300, func="init_cuda_graphs"),
            "    raise Exception(",
            "Exception: Capture cuda graph failed: BatchDecodeWithPagedKVCache failed with error "
            f"{NO_IMAGE}. Possible solutions:",
            "1. disable cuda graph by --disable-cuda-graph",
            "2. set --mem-fraction-static to a smaller value",
        ]
    )
    assert result.outcome == "crash"
    assert result.phase.value == "graph_capture"
    assert "kernel_image_missing" in finding_ids(result)
    assert "not GPU memory" in result.verdict and "--attention-backend triton" in result.verdict
    assert not _memory_knobs(result), result.suggestions


def test_raw_cuda_error_lines_from_a_kernel_library_are_read_alone() -> None:
    # the library's own error lines, pasted with nothing around them
    line = (
        f"CUDA Error: {NO_IMAGE} (209) /tmp/build/lib/include/kernels/decode.cuh: line 88 at "
        "function cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
        "smem_size)"
    )
    result = diagnose_paste([line, line, "Process Process-1:"])
    assert result.outcome == "crash"
    assert "kernel_image_missing" in finding_ids(result)
    assert not _memory_knobs(result), result.suggestions
    # the kernel's name holds `Paged`/`pages`: no paged-KV accounting story is told
    assert "paged KV cache" not in result.verdict


def test_pytorch_accelerator_error_shape_names_the_same_cause() -> None:
    result = diagnose_paste(
        [
            "[2026-05-01 10:00:00 TP0] Load weight end. type=Qwen3ForCausalLM, "
            "dtype=torch.float16, avail mem=9.10 GB, mem usage=5.60 GB.",
            f"torch.AcceleratorError: CUDA error: {NO_IMAGE}",
        ]
    )
    assert "kernel_image_missing" in finding_ids(result)
    assert result.outcome == "crash"
    assert not _memory_knobs(result), result.suggestions


def test_leak_check_said_in_prose_is_the_pool_self_check() -> None:
    for said in (
        "Sometimes a memory leak error occurs and the memory leak detection is triggered in the "
        "`self_check_during_idle` function.",
        "the server dies in self_check_during_idle with a memory leak after a few hours",
    ):
        result = diagnose_paste([said])
        assert "pool_leak_check" in finding_ids(result), said
        assert result.outcome == "crash", said
        assert "accounting bug" in result.verdict, said
        assert not _memory_knobs(result), said


def test_memory_growth_called_a_leak_is_not_the_self_check() -> None:
    # a reporter's "memory leak" for memory that grows is no SGLang check firing
    result = diagnose_paste(["GPU memory keeps growing, looks like a memory leak in the server"])
    assert "pool_leak_check" not in finding_ids(result)
