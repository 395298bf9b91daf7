"""Reporters' words beyond the first generator's (issue 24, family 4), in the shapes issue titles
and forum posts use: a failure word in a spelling of its own (`runs dry on memory`, `Out of GPU
RAM`, `oom/hanging`, 显存耗尽), a phase named with words between (`during long-context
prefill`) or in Chinese (推理时, 加载权重时, 捕获CUDA图时, 同步权重时), the host's RAM named as
exhausted. Each made-up sentence runs the whole command path; what each must get is the
family's: never exit 3, the outcome and the phase, a direction where the stage has a lever, no
host finding for a GPU word and no GPU knob for a host word."""

from __future__ import annotations

import itertools

import pytest

from memledger.diagnosis.model import FindingId
from memledger.input.reported import read_reported
from tests.conftest import diagnose_text

GPU_WORDS = (
    "runs dry on memory",
    "is Out of GPU RAM",
    "hits oom/hanging",
    "显存耗尽",
    "显存迅速耗尽",
    "显存还是跑不起来",
)
PHASES = (
    ("", "unknown"),
    ("during long-context prefill", "serving"),
    ("during stress testing", "serving"),
    ("after running for about an hour", "serving"),
    ("for the coming request", "serving"),
    ("with a long-context prefill", "serving"),
    ("while generating with long prompts", "serving"),
    ("with a large batch at high QPS", "serving"),
    ("推理时", "serving"),
    ("高并发请求时", "serving"),
    ("加载权重时", "load"),
    ("模型加载时", "load"),
    ("捕获CUDA图时", "graph_capture"),
    ("after the weight update", "resume"),
    ("when syncing weights", "resume"),
    ("同步权重时", "resume"),
)
HOST_SENTENCES = (
    "RAM OOM: container limit reached while loading",
    "host RAM exhausts and the kernel OOM-kills the container",
    "the log points to node CPU memory exhaustion",
)
SHAPES = ("{s}", "- {s}", "### {s}", "`{s}`")


def _pastes() -> list[tuple[str, str]]:
    pastes = []
    for i, (word, (when, phase)) in enumerate(itertools.product(GPU_WORDS, PHASES)):
        sentence = " ".join(p for p in ("the server", word, when) if p)
        pastes.append((SHAPES[i % len(SHAPES)].format(s=sentence), phase))
    return pastes


@pytest.mark.parametrize(("paste", "phase"), _pastes())
def test_new_failure_and_phase_words_are_read(paste: str, phase: str) -> None:
    result = diagnose_text(paste)  # an unread paste raises InputError (exit 3)
    assert result.outcome == "oom"
    assert result.phase == phase
    assert any(s.direction for s in result.suggestions)
    assert FindingId.HOST_MEMORY not in {f.id for f in result.findings}


@pytest.mark.parametrize(
    ("title", "phase"),
    [
        ("[Bug] Decode OOM with a large page size", "serving"),
        ("[Bug] Prefill out of memory on 8 GPUs", "serving"),
        ("OOM during benchmarking with 512 concurrency", "serving"),
        ("the memory usage keeps increasing until an OOM occurs", "serving"),
        ("the GPU memory usage will continuously increase until OOM", "serving"),
        ("SGLang 显存持续上涨，最后 OOM", "serving"),
        ("单次推理正常，但批量请求时 OOM", "serving"),
    ],
)
def test_a_title_names_its_phase(title: str, phase: str) -> None:
    result = diagnose_text(title)
    assert (result.outcome, result.phase) == ("oom", phase)


@pytest.mark.parametrize("sentence", HOST_SENTENCES)
def test_the_hosts_ram_named_as_exhausted_is_the_hosts(sentence: str) -> None:
    result = diagnose_text(sentence)
    assert FindingId.HOST_MEMORY in {f.id for f in result.findings}
    assert not result.suggestions


@pytest.mark.parametrize(
    "line",
    [
        # a hub client's warning and a path holding the letters are no reporter's words
        "Warning: You are sending unauthenticated requests to the HF Hub. Please set a HF_TOKEN.",
        "[2025-06-01 12:00:00 TP0] Load weight begin. avail mem=78.00 GB",
        "[2025-06-01 12:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 2048, #cached-token: 0",
    ],
)
def test_engine_and_library_lines_are_no_reporters_words(line: str) -> None:
    assert not [f for f in read_reported(line) if "mention" in f]


def test_a_path_under_an_oom_directory_is_no_oom() -> None:
    from memledger.input.outcome import outcome_kind

    assert outcome_kind("see tests/oom/test_limits.py for the case") is None
