"""Without server_args lines, a distributed init starts a startup, unless it is the speculative
draft worker's own: after the target worker's load end or graphs on the same rank, before the
scheduler's summary line or an outcome (sglang.lines.DRAFT_INIT_AFTER; v0.5.8
managers/scheduler.py:534-536, v0.5.16 :845-848). Synthetic lines in the shapes of v0.5.8
model_executor/model_runner.py (init :694, load, pool, capture) and scheduler.py:591."""

from __future__ import annotations

import io

import pytest

from memledger.input.parsing import parse_log
from memledger.model.events import EventKind

P = "[2026-01-05 10:00:{:02d} TP0] "

TARGET = [
    "Init torch distributed begin.",
    "Init torch distributed ends. mem usage=0.00 GB",
    "Load weight begin. avail mem=78.50 GB",
    "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, "
    "mem usage=15.30 GB.",
    "KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB",
    "Memory pool end. avail mem=13.90 GB",
    "Capture cuda graph begin. This can take up to several minutes. avail mem=13.80 GB",
    "Capture cuda graph end. Time elapsed: 20.00 s. mem usage=1.10 GB. avail mem=12.70 GB.",
]
DRAFT = [
    "Init torch distributed begin.",
    "Init torch distributed ends. mem usage=0.00 GB",
    "Load weight begin. avail mem=12.70 GB",
    "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=11.70 GB, "
    "mem usage=1.00 GB.",
    "Memory pool end. avail mem=11.20 GB",
]
SUMMARY = (
    "max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=48, context_len=8192, available_gpu_mem=11.00 GB"
)
READY = "[2026-01-05 10:01:00] The server is fired up and ready to roll!"
BENCH_SUMMARY = "max_total_num_tokens=400000"  # bench_one_batch.py's, bare after its graphs


def _parse(messages: list[str], *, prefixed: bool = True) -> tuple[int, list[int]]:
    lines = [
        (P.format(i % 60) if prefixed and not m.startswith("[") and m != BENCH_SUMMARY else "") + m
        for i, m in enumerate(messages)
    ]
    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste")
    loads = [e.line for e in parsed.startup.events if e.kind is EventKind.LOAD_BEGIN]
    return parsed.n_startups, loads


@pytest.mark.parametrize("prefixed", [True, False])
def test_the_draft_workers_init_after_the_targets_graphs_is_one_startup(prefixed: bool) -> None:
    n, loads = _parse([*TARGET, *DRAFT, SUMMARY], prefixed=prefixed)
    assert n == 1
    assert loads == [3, 11]  # the target's and the draft's loads, in one startup


def test_the_draft_init_after_the_targets_load_alone_is_one_startup() -> None:
    # v0.5.16 on: the draft worker is built right after the target's load, before the pools
    messages = [*TARGET[:4], *DRAFT[:4], *TARGET[4:], SUMMARY]
    assert _parse(messages) == (1, [3, 7])


@pytest.mark.parametrize(
    "between",
    [
        [SUMMARY],
        [SUMMARY, READY],
        ["torch.OutOfMemoryError: CUDA out of memory."],
        [BENCH_SUMMARY, "Warmup ..."],
    ],
    ids=["summary", "ready", "oom", "bench_one_batch"],
)
def test_an_init_after_the_summary_or_an_outcome_is_a_new_startup(between: list[str]) -> None:
    n, loads = _parse([*TARGET, *between, *TARGET])
    assert n == 2
    assert loads == [len(TARGET) + len(between) + 3]  # the second startup is shown


def test_an_init_after_the_drafts_own_graphs_is_a_new_startup() -> None:
    draft_graphs = (
        "Capture draft cuda graph end. Time elapsed: 3.00 s. mem usage=0.20 GB. avail mem=11.00 GB."
    )
    n, _ = _parse([*TARGET[:2], draft_graphs, *TARGET])
    assert n == 2
