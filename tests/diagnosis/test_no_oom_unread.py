"""No OOM is left unread: a paste that holds an out-of-memory or refusal text of any family,
however it is spelled, gets a diagnosis (never exit 3), and a driver error that is no
out-of-memory says so. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import io

import pytest

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.diagnosis.model import FindingId
from memledger.input.parsing import parse_log
from memledger.sglang.failure_rules import Phase


def _diagnose(text: str) -> Diagnosis:
    parsed = parse_log(io.BytesIO(text.encode()), label="paste.txt")
    return diagnose(parsed, build(parsed, LoadOptions()))


@pytest.mark.parametrize(
    "line",
    [
        "I keep getting CUDA out of memory when I send long prompts",
        "the server fails with out-of-memory errors at startup",
        "it ran out of GPU memory after a while",
        "with 0.9 it OOMs on the second request",
        "the decode worker OOMed",
        "启动的时候显存不足",
        "NPU out of memory",
        "HIP out of memory",
    ],
)
def test_an_out_of_memory_sentence_alone_is_an_oom(line: str) -> None:
    diagnosis = _diagnose(line + "\n")
    assert diagnosis.outcome == "oom"
    assert diagnosis.verdict.startswith("OOM during")
    assert diagnosis.suggestions, "the phase's levers, with their directions"
    assert all(s.direction for s in diagnosis.suggestions)


@pytest.mark.parametrize(
    "line",
    ["the room was out of milk", "a BOOM box", "3 out of 8 ranks started"],
)
def test_words_that_only_look_like_it_are_not(line: str) -> None:
    with pytest.raises(Exception, match="no SGLang log lines found"):
        _diagnose(line + "\n")


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
            "func=resume line=214",
            "CUDA_ERROR_INVALID_VALUE",
        ),
        (
            "[torch_memory_saver.cpp] cudaError error: 700  file=csrc/core.cpp func=pause line=90",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
        ),
    ],
)
def test_a_memory_saver_driver_error_other_than_2_is_not_an_oom(line: str, code: str) -> None:
    diagnosis = _diagnose(line + "\n")
    assert diagnosis.outcome == "crash"
    found = {f.id: f for f in diagnosis.findings}
    assert code in found[FindingId.MEMORY_SAVER_DRIVER_ERROR].message
    assert "not for lack of memory" in diagnosis.verdict
    assert not diagnosis.suggestions


def test_the_memory_savers_own_frame_names_the_phase() -> None:
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
        "func=resume line=214\n"
    )
    assert _diagnose(line).phase is Phase.RESUME


def test_result_2_stays_the_memory_savers_oom() -> None:
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103 (5)\n"
    )
    assert _diagnose(line).outcome == "oom"
