"""A lever a finding or the verdict names is a suggestion too: "no memory knob helps" is said only
where no finding has one (issue 24, family 6)."""

from __future__ import annotations

from memledger.diagnosis.model import Direction
from tests.conftest import diagnose_paste


def _levers(paste: list[str]) -> set[tuple[str, Direction]]:
    return {(s.knob, s.direction) for s in diagnose_paste(paste).suggestions}


def test_a_known_causes_launch_flag_is_its_suggestion() -> None:
    # FlashInfer's fixed workspace: an environment variable, or a smaller prefill chunk
    paste = [
        "[2025-01-01 00:00:00 TP0] Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1, in event_loop_normal',
        "RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 435814400 "
        "and alignment 16 in AlignedAllocator",
    ]
    result = diagnose_paste(paste)
    assert ("chunked_prefill_size", Direction.LOWER) in _levers(paste)
    assert "SGLANG_FLASHINFER_WORKSPACE_SIZE" in result.suggestions[0].why


def test_a_cause_with_no_launch_flag_keeps_none() -> None:
    # Triton's shared memory is no memory knob's: the Suggestions stay empty
    assert not _levers(
        [
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "196608, Hardware limit: 65536.",
        ]
    )


def test_a_request_refused_as_too_long_suggests_a_bigger_pool() -> None:
    paste = [
        "[2025-01-01 00:00:00 TP0] Input length (160062 tokens) exceeds the maximum allowed "
        "length (59862 tokens). Use a shorter input or enable --allow-auto-truncate.",
    ]
    result = diagnose_paste(paste)
    assert "refused as longer than the limit" in result.verdict
    # the bigger pool first, then the longer context: the limit is the smaller of the two
    assert [(s.knob, s.direction) for s in result.suggestions] == [
        ("mem_fraction_static", Direction.RAISE),
        ("context_length", Direction.RAISE),
    ]


def test_an_illegal_memory_access_may_be_an_oom_in_disguise() -> None:
    # SGLang's troubleshooting guide: a kernel error, or an OOM CUDA reported this way
    paste = [
        "[2025-01-01 00:00:00 TP0] Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1, in event_loop_normal',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    result = diagnose_paste(paste)
    assert "possibly GPU memory" in result.verdict and "not a memory problem" not in result.verdict
    assert "illegal_memory_access" in {f.id for f in result.findings}
    assert ("mem_fraction_static", Direction.LOWER) in _levers(paste)
