"""The KV pool's cap, --max-total-tokens: SGLang keeps the smaller of the fraction's budget and
the cap, so while the cap binds a higher fraction buys no token and a higher cap does; and the cap
never makes room a refused fraction lacks. Pasted as a setting (server_args, a launch command) or
named in prose (a flag, a config key, an embedder's or an env var's name for it). Every input is
a synthetic line in the family's shape."""

from __future__ import annotations

import pytest

from memledger.sglang.failure_rules import Phase
from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of, said_of

NAMED = (
    "we set --max-total-tokens 6000 for the rollout and it OOMs",
    "our launcher sets max_total_tokens to batch x length, then OOM on the first long batch",
    "the trainer passes SGLANG_MAX_TOTAL_TOKENS and the engine runs out of memory",
    "Fix sglang_max_total_tokens OOM for sliding-window models",
)
ALLOCATOR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 1.05 GiB is free."
)
REFUSAL = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize("text", NAMED)
def test_a_cap_named_beside_an_oom_said_in_words_is_raised(text: str, shape: str) -> None:
    """No allocator text: the pool it caps ran out, so its lever is a higher cap."""
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert result.outcome == "oom"
    assert knobs_of(result)[0] == ("max_total_tokens", "raise")
    assert "raise --max-total-tokens" in result.verdict
    assert "never makes room a refused fraction lacks" in said_of(result)


@pytest.mark.parametrize("text", NAMED)
def test_a_cap_named_beside_the_allocators_oom_is_not_raised(text: str) -> None:
    """The allocator ran out: a bigger pool leaves it less, so no higher cap is offered."""
    result = diagnose_paste(f"{text}\n{ALLOCATOR}\n")
    assert ("max_total_tokens", "raise") not in knobs_of(result)
    assert "a cap on the KV pool's tokens" in said_of(result)


@pytest.mark.parametrize(
    "text",
    [
        "we pass --max-total-tokens 4096 to keep the pool small",
        "- max_total_tokens: 4096 (our launcher's value)",
    ],
)
def test_a_cap_named_beside_the_refusal_keeps_the_fractions_lever(text: str) -> None:
    """The refusal comes before the cap applies: raise the fraction, the cap keeps the pool
    small; never a cap's lever."""
    result = diagnose_paste(f"{text}\n{REFUSAL}\n")
    assert result.phase is Phase.KV_SIZING
    assert knobs_of(result)[0] == ("mem_fraction_static", "raise")
    assert ("max_total_tokens", "raise") not in knobs_of(result)
    assert "never makes room a refused fraction lacks" in said_of(result)


def _log(cap: str) -> str:
    return (
        f"[2025-06-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.85, "
        f"max_total_tokens={cap}, page_size=1, max_running_requests=None)\n"
        "[2025-06-01 10:05:00] Prefill batch. #new-seq: 4, #new-token: 8000, #cached-token: 0, "
        "token usage: 0.97, #running-req: 4, #queue-req: 10\n"
        "RuntimeError: Prefill out of memory. Try to lower your batch size.\n"
        "Try to allocate 3000 tokens.\n"
        "Available tokens: 1200\n"
    )


def test_a_capped_pool_that_ran_out_is_given_a_higher_cap_with_its_arithmetic() -> None:
    result = diagnose_paste(_log("9000"))
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    first = result.suggestions[0]
    # 9,000 capped, 3,000 asked with 1,200 free: 1,800 short
    assert (first.knob, first.direction.value, first.value) == ("max_total_tokens", "raise", 10800)
    assert "capped at 9,000 tokens" in first.why and "1,800 tokens short" in first.why
    assert ("mem_fraction_static", "raise") in knobs_of(result)


def test_an_uncapped_pool_that_ran_out_keeps_the_fraction_first() -> None:
    result = diagnose_paste(_log("None"))
    assert knobs_of(result)[0] == ("mem_fraction_static", "raise")
    assert ("max_total_tokens", "raise") not in knobs_of(result)
    assert "a cap on the KV pool's tokens" not in said_of(result)


def test_the_pools_size_is_not_its_cap() -> None:
    """`max_total_num_tokens` is the pool's size SGLang prints, not the cap."""
    result = diagnose_paste("max_total_num_tokens=6000 and then CUDA OOM\n")
    assert "a cap on the KV pool's tokens" not in said_of(result)


PER_REQUEST = (
    "our decode buffer is sized by max_running_requests and the server OOMs",
    "the cache has rows == max_running_requests + 1, which runs out of memory at 0.3",
    "it keeps one row per concurrent request, so with SGLang's default we hit CUDA OOM",
    "- allocated with the --max-running-requests estimate (4096): OOM",
)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize("text", PER_REQUEST)
def test_memory_said_to_have_a_row_per_request_is_capped_by_the_running_requests(
    text: str, shape: str
) -> None:
    """A table or buffer with a row per request SGLang may run: its count is SGLang's estimate
    (up to 4096) unless --max-running-requests caps it."""
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert result.outcome == "oom"
    assert knobs_of(result)[0] == ("max_running_requests", "lower")
    assert "up to 4096" in result.suggestions[0].why
    assert "set --max-running-requests to what the pool serves" in said_of(result)


def test_memory_with_a_row_per_request_beside_the_zero_requests_check_names_the_cap() -> None:
    """SGLang's `max_running_request is zero` is a refusal: raise the fraction leads, and what
    the paste says of its per-request buffer adds the running-request cap."""
    paste = (
        "the plug-in's buffer is sized by max_running_requests; at 0.25 it failed to start with\n"
        "AssertionError: max_running_request is zero\n"
    )
    result = diagnose_paste(paste)
    assert knobs_of(result)[0] == ("mem_fraction_static", "raise")
    assert "set --max-running-requests to what the pool serves" in said_of(result)


@pytest.mark.parametrize(
    "text",
    [
        "max_running_requests is 256 and it OOMs",
        "the KV pool is sized by the fraction, then OOM",
        "one row per page of the pool, then OOM",
    ],
)
def test_the_running_requests_named_without_a_row_per_request_are_no_such_memory(
    text: str,
) -> None:
    assert "a row for each request" not in said_of(diagnose_paste(text + "\n"))
