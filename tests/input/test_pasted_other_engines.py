"""A log of another engine is no SGLang log: its lines that look like SGLang's are not read as
SGLang's. vLLM's CUDA-graph bars (`Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)`, as in
a public DGX Spark vLLM log, github.com/sostrowsk/dgx-spark-local-llm gemma4-int4.log) made a whole
vLLM log read as an SGLang startup with no memory line. The lines here are synthetic."""

from __future__ import annotations

import io

import pytest

from memledger.errors import InputError
from memledger.input.facts import facts_of
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind, ParsedLog

VLLM = [
    "(EngineCore pid=41490) INFO 08-02 11:08:16 [gpu_worker.py:538] Available KV cache memory: "
    "84.68 GiB",
    "(EngineCore pid=41490) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|  | 0/11",
    "(EngineCore pid=41490) Capturing CUDA graphs (decode, FULL):  43%|####  | 3/7 [00:01<00:01]",
    "(EngineCore pid=41490) INFO 08-02 11:08:20 [gpu_model_runner.py:6707] Graph capturing done",
]


def _parse(lines: list[str]) -> ParsedLog:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")


def test_a_vllm_log_is_no_sglang_log() -> None:
    with pytest.raises(InputError, match="no SGLang log lines found"):
        _parse(VLLM)


def test_sglang_capture_bars_are_still_read() -> None:
    parsed = _parse(
        [
            "[2026-01-30 20:54:50 TP0] Capture cuda graph begin. This can take up to several "
            "minutes. avail mem=5.89 GB",
            "Capturing batches (bs=2 avail_mem=5.80 GB):  50%|#####     | 1/2 [00:01<00:01]",
            "Capturing num tokens (num_tokens=4 avail_mem=5.70 GB): 100%|##########| 2/2",
        ]
    )
    progress = [e for e in parsed.startup.events if e.kind is EventKind.CAPTURE_PROGRESS]
    assert [round(e.sizes["avail"].bytes / 2**30, 2) for e in progress] == [5.8, 5.7]
    assert facts_of(parsed)["capture_begin_avail"] == 5.89
