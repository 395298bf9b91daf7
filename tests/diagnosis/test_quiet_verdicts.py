"""A log with no failure (cut off, or ready) is led by its most specific finding that has levers:
what the paste asks about the pool's size, what it names (a cap SGLang set, memory that grows),
SGLang's retractions; their levers are the suggestions, so "no memory knob helps" is said only
when no finding has one. In an OOM, a cause the paste names goes before the stage's generic
levers, and the suggestions follow the verdict's order. Synthetic lines only, pasted as reporters
paste them."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Diagnosis
from memledger.sglang.failure_rules import Phase
from tests.conftest import diagnose_paste

P = "[2026-08-01 10:00:00 TP0] "
SHAPES = (
    "{s}",
    P + "{s}",
    "we keep seeing `{s}` in the log",
    "- {s}",
    "vLLM is fine, SGLang says: {s}",
)
RETRACTIONS = (
    "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.61 -> 0.93",
    "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.40 -> 0.55",
)
READY = [
    P + "max_total_num_tokens=200000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=64, context_len=32768",
    P + "The server is fired up and ready to roll!",
]


def _knobs(result: Diagnosis) -> list[tuple[str, str]]:
    return [(s.knob, s.direction.value) for s in result.suggestions]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("text", RETRACTIONS)
def test_a_retraction_alone_leads_with_its_levers_and_keeps_the_outcome_unknown(
    text: str, shape: str
) -> None:
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert (result.outcome, result.phase) == ("truncated", Phase.SERVING)  # only serving retracts
    assert result.verdict.startswith("SGLang retracted requests as the KV pool filled")
    assert "no crash" in result.verdict and result.verdict.endswith("outcome unknown")
    assert _knobs(result) == [
        ("schedule_conservativeness", "raise"),
        ("mem_fraction_static", "raise"),
    ]


def test_nothing_with_a_lever_keeps_the_quiet_verdicts_and_no_suggestion() -> None:
    cut = diagnose_paste(P + "Load weight begin. avail mem=78.00 GB\n")
    assert cut.verdict.endswith("no error text, outcome unknown") and not cut.suggestions
    ready = diagnose_paste(READY)
    assert (
        ready.verdict.startswith("ready: no memory problem found; the KV pool holds ")
        and not ready.suggestions
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_a_pd_admission_bound_alone_gives_the_swa_ratio(shape: str) -> None:
    result = diagnose_paste(
        shape.format(s="Request 7f3a exceeds the maximum number of tokens: 40960 > 18432") + "\n"
    )
    assert result.verdict.startswith("a PD worker's admission bound: raise --swa-full-tokens-ratio")
    assert _knobs(result) == [("swa_full_tokens_ratio", "raise")]
    # the verdict says the outcome; the cut-off finding it repeats is not listed again
    assert "truncated" not in {f.id for f in result.findings}


def test_memory_said_to_grow_leads_a_ready_log() -> None:
    result = diagnose_paste(["GPU memory keeps increasing with every image request", *READY])
    assert result.verdict.startswith("ready: GPU memory that grew while serving")
    assert "a leak" in result.verdict
    assert _knobs(result) == [("disable_fast_image_processor", "enable")]


@pytest.mark.parametrize(
    "text", ["we run --enable-hierarchical-cache --hicache-ratio 2", "- HiCache is on (hicache)"]
)
def test_hicache_named_without_a_failure_gets_no_oom_levers(text: str) -> None:
    """HiCache's levers (larger pages, a lower fraction) answer an OOM with it, not a log that
    came up: said, with no advice (what it comes to leads the verdict: lifecycle.Mention.answer)."""
    result = diagnose_paste([text, *READY])
    assert any("host-RAM tier" in f.message for f in result.findings)
    assert result.verdict.startswith("ready: HiCache (--enable-hierarchical-cache): each rank pins")
    assert result.suggestions == []


def test_a_finding_with_levers_joins_a_verdict_that_says_more() -> None:
    """A cut-off log whose verdict already names thin headroom keeps it first; SGLang's cap
    follows, and the suggestions keep that order."""
    cap = (
        "max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 "
        "state slots per request). To raise it: increase --mamba-full-memory-ratio or "
        "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16."
    )
    result = diagnose_paste(
        [
            P + "Load weight begin. avail mem=78.00 GB",
            P + "Load weight end. type=X, dtype=torch.bfloat16, avail mem=60.00 GB, "
            "mem usage=18.00 GB.",
            P + "KV Cache is allocated. #tokens: 400000, K size: 20.00 GB, V size: 20.00 GB",
            P + "Memory pool end. avail mem=10.00 GB",
            P + "Capture cuda graph begin. This can take up to several minutes. avail mem=10.00 GB",
            P + "Capture cuda graph end. Time elapsed: 10.00 s. mem usage=9.90 GB. "
            "avail mem=0.10 GB.",
            P + cap,
        ]
    )
    assert result.verdict.startswith("log ends after CUDA-graph capture")
    assert result.verdict.index("only 0.10 GiB free") < result.verdict.index("Mamba state cache")
    assert _knobs(result)[0] == ("mem_fraction_static", "lower")
    assert ("mamba_full_memory_ratio", "raise") in _knobs(result)


@pytest.mark.parametrize("shape", SHAPES[:1] + SHAPES[2:])
def test_a_cause_the_paste_names_goes_before_the_serving_levers(shape: str) -> None:
    result = diagnose_paste(
        shape.format(s="GPU memory keeps increasing with every image request until it OOMs") + "\n"
    )
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    verdict = " ".join(result.verdict.split())
    assert verdict.index("set --disable-fast-image-processor") < verdict.index(
        "lower --max-running-requests"
    )
    assert _knobs(result)[0] == ("disable_fast_image_processor", "enable")


def test_a_mention_follows_the_levers_the_pastes_numbers_value() -> None:
    """Levers the paste's numbers give a value lead; what the paste names (speculative decoding,
    from server_args) follows, in the verdict and in the suggestions."""
    result = diagnose_paste(
        [
            P + "server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', "
            "mem_fraction_static=0.9)",
            P + "Decode batch. #running-req: 12, #token: 4000, token usage: 0.50, gen throughput "
            "(token/s): 100.0, #queue-req: 0",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 79.15 GiB of which 1.20 GiB is free.",
        ]
    )
    assert result.verdict.index("lower --max-running-requests") < result.verdict.index(
        "speculative decoding"
    )
    assert _knobs(result)[0] == ("max_running_requests", "lower")
    assert ("speculative_num_draft_tokens", "lower") in _knobs(result)


@pytest.mark.parametrize("shape", SHAPES[:1] + SHAPES[2:])
def test_a_fraction_near_one_said_alone_gets_its_lever(shape: str) -> None:
    """A setting that leaves no room is a lever without a failure too: lower the fraction."""
    result = diagnose_paste(shape.format(s="our config uses --mem-fraction-static=0.99") + "\n")
    assert result.verdict.startswith("a --mem-fraction-static of 0.97 or more")
    assert _knobs(result) == [("mem_fraction_static", "lower")]
