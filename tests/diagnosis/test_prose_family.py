"""What reporters type instead of a log, read as a family (issue 24, family 4): a failure word in
any of its spellings, a phase word, another engine or a framework named, typed numbers, and the
markdown around it (a bullet, a quote, a heading, inline code, a title over a body, a sentence
over a pasted allocator message). Each paste is made up from the parts below, every combination
of a failure word and a phase word, the noise and the shape cycled; the whole command path runs
(engine detection included), so a paste that names vLLM in a sentence is still read as SGLang's.

What each must get: never exit 3; the failure word's outcome (a GPU out-of-memory; the host's
RAM, with no GPU knob, for the kernel's OOM killer and `内存不足`); the phase the phase word names
(`unknown` without one); and a suggestion with a direction."""

from __future__ import annotations

import itertools

import pytest

from memledger.diagnosis.model import FindingId
from memledger.sglang.failure_rules import Phase
from memledger.sglang.lifecycle import STAGE
from tests.conftest import diagnose_text

GPU_WORDS = (
    "OOM",
    "oom",
    "Out of Memory",
    "hits out-of-memory",
    "ran out of GPU memory",
    "not enough memory",
    "insufficient GPU memory",
    "a CUDA memory error",
    "OOMs",
    "out of VRAM",
    "显存不足",
    "爆显存",
)
HOST_WORDS = (
    "was OOM-killed",
    "killed by the OOM killer",
    "oom-killer fired",
    "内存不足",
    "host OOM",
    "ran out of host memory",
)
PHASE_WORDS = (
    ("", "unknown"),
    ("while loading the weights", "load"),
    ("during CUDA graph capture", "graph_capture"),
    ("while capturing cuda graphs", "graph_capture"),
    ("during warmup", "warmup"),
    ("at the first request", "serving"),
    ("under heavy load", "serving"),
    ("during prefill", "serving"),
    ("during decode", "serving"),
    ("after a few hours", "serving"),
    ("when resuming", "resume"),
    ("during update_weights", "resume"),
    ("after wake_up", "resume"),
    ("when allocating the KV cache", "memory_pool"),
    ("during NCCL init", "dist_init"),
    ("during FlashInfer autotune", "after_pool"),
    ("while DeepGEMM JIT compiling", "after_pool"),
    ("during torch.compile", "graph_capture"),
    ("while loading the EAGLE draft weights", "draft"),
    ("with a 128k-length input", "serving"),
)
NOISE = (
    "",
    "I switched from vLLM and",
    "vLLM works fine with the same model, but",
    "In verl,",
    "with mem_fraction_static=0.9,",
    "with `--mem-fraction-static 0.85` on an 80GB H100, tp 8,",
)
SHAPES = ("{s}", "- {s}", "> {s}", "### {s}", "`{s}`", "**{s}**")
ALLOCATOR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 1.05 GiB is free."
)
VLLM_KNOBS = {"gpu_memory_utilization", "max_model_len", "max_num_batched_tokens", "max_num_seqs"}


def _pastes() -> list[tuple[str, str, bool]]:
    """(paste, phase, host) of every failure word with every phase word, in four layouts: one
    sentence (every other one also in Title Case); a title, the phase in the body's next
    sentence; the sentence over a pasted allocator message (GPU words)."""
    pastes: list[tuple[str, str, bool]] = []
    words = [(w, False) for w in GPU_WORDS] + [(w, True) for w in HOST_WORDS]
    for i, ((word, host), (when, phase)) in enumerate(itertools.product(words, PHASE_WORDS)):
        noise, shape = NOISE[i % len(NOISE)], SHAPES[(i // len(NOISE)) % len(SHAPES)]
        title = shape.format(s=" ".join(p for p in (noise, "the server", word) if p))
        one = shape.format(s=" ".join(p for p in (noise, "the server", word, when) if p))
        pastes.append((one, phase, host))
        if i % 2 == 0:  # an issue title's Title Case: each word's first letter up
            pastes.append((" ".join(w[:1].upper() + w[1:] for w in one.split(" ")), phase, host))
        if when:
            pastes.append((f"{title}\n\nIt happens {when}.", phase, host))
        if not host:
            pastes.append((f"{one}\n\n```\n{ALLOCATOR}\n```", phase, host))
    return pastes


@pytest.mark.parametrize(("paste", "phase", "host"), _pastes())
def test_a_reporters_words_are_read(paste: str, phase: str, host: bool) -> None:
    result = diagnose_text(paste)  # an unread paste raises InputError (exit 3)
    knobs = {s.knob for s in result.suggestions}
    assert not knobs & VLLM_KNOBS, "read as a vLLM log"
    if host:
        assert FindingId.HOST_MEMORY in {f.id for f in result.findings}
        assert "host RAM" in result.verdict and not result.suggestions
        return
    assert result.outcome == "oom"
    assert result.phase == phase
    # a direction wherever the stage has a lever (distributed init has none of SGLang's)
    stage = STAGE.get(Phase(phase))
    assert any(s.direction for s in result.suggestions) or (stage and not stage.levers)
    assert FindingId.HOST_MEMORY not in {f.id for f in result.findings}


@pytest.mark.parametrize(
    "text",
    [
        # SGLang's own refusal stays the refusal, not a reporter's OOM
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        # the kernel's report of the host's OOM killer is no GPU out-of-memory
        "Out of memory: Killed process 4242 (python3) total-vm:912345kB",
        "Memory cgroup out of memory: Killed process 4242 (sglang::schedul)",
    ],
)
def test_engine_and_kernel_texts_keep_their_own_meaning(text: str) -> None:
    result = diagnose_text(text)
    if "Killed process" in text:
        assert result.outcome == "crash"
        assert FindingId.HOST_MEMORY in {f.id for f in result.findings}
    else:
        assert result.phase == "kv_sizing"


@pytest.mark.parametrize(
    "line",
    [
        "[rank0]:[W104 04:34:19.6 compiler_depend.ts:207] Warning: Waiting for pending NCCL work "
        "to finish before starting graph capture. (function operator())",
        "[2025-06-01 12:00:00 TP0] Capture cuda graph bs [1, 2, 4, 8]",
        "(EngineCore pid=4) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|  | 0/11",
        "[2025-06-01 12:00:00 TP0] End of prefill warmup with status 200",
        "[2025-06-01 12:00:00 TP0] KV Cache is allocated. #tokens: 100000, K size: 1.0 GB",
        "[2025-06-01 12:00:00 TP0] Init torch distributed begin.",
        "[2025-06-01 12:00:00 TP0] Running FlashInfer autotune...",
        "[2025-06-01 12:00:00 TP0] Decode batch. #running-req: 8, #token: 7000, token usage: 0.05",
    ],
)
def test_engine_lines_naming_a_phase_are_no_reporters_words(line: str) -> None:
    from memledger.input.reported import read_reported

    assert not [f for f in read_reported(line) if "mention" in f]
