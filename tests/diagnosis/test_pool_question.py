"""A question about the KV pool's size with no failure (`why is my max_total_num_tokens so small`):
answered with what sizes the pool and a bigger pool's levers, never exit 3; SGLang's own pool lines
ask nothing; an OOM beside the question keeps its own levers. Synthetic lines only."""

from __future__ import annotations

import pytest

from memledger.sglang.errors import BY_NAME
from tests.conftest import diagnose_paste

_ALLOCATOR_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.78 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.20 GiB is free. Of the allocated memory 70.1 GiB is "
    "allocated by PyTorch\n"
)


@pytest.mark.parametrize(
    "question",
    [
        "Why is my max_total_num_tokens so small on an H100?",
        "KV cache pool is smaller than expected after upgrading",
        "- how do I increase the number of tokens in the KV cache?",
        "Does `--enable-hierarchical-cache` increase max_total_num_tokens?",
        "> the KV cache size dropped from 400k to 120k tokens",
        "为什么 KV cache 容量太小",
    ],
)
def test_a_question_about_the_pools_size_is_answered_not_exit_3(question: str) -> None:
    result = diagnose_paste(question + "\n")
    # what else the question names and the table answers in words (HiCache) comes first
    asked = result.verdict.find("the paste asks about the KV pool's size")
    assert asked == 0 or (asked > 0 and result.verdict.startswith("HiCache")), result.verdict
    assert [(s.knob, s.direction.value) for s in result.suggestions] == [
        ("mem_fraction_static", "raise"),
        ("tp_size", "raise"),
    ]
    # no log lines: nothing ended, so no `the log ends ...` finding (what else the question
    # names, HiCache, is said beside it)
    assert {f.id for f in result.findings} == {"reported"}


@pytest.mark.parametrize(
    "line",
    [
        "[2026-03-01 10:00:06 TP0] KV Cache is allocated. #tokens: 900000, K size: 24.00 GB",
        "max_total_num_tokens=425000, chunked_prefill_size=8192, max_prefill_tokens=16384",
        "lower --max-total-tokens to 20000 helped",
    ],
)
def test_sglangs_own_pool_lines_and_a_cap_that_helped_ask_nothing(line: str) -> None:
    assert BY_NAME["said_pool_size"].find(line) is None


def test_a_pool_question_beside_an_oom_leaves_the_oom_its_levers() -> None:
    # raising the fraction is a bigger pool's lever, not an OOM's
    result = diagnose_paste(_ALLOCATOR_OOM + "the KV cache grows during serving until the OOM\n")
    assert result.outcome == "oom"
    assert ("mem_fraction_static", "raise") not in [
        (s.knob, s.direction.value) for s in result.suggestions
    ]


def test_a_pool_question_with_the_logs_pool_gives_its_figures() -> None:
    p = "[2026-03-01 10:00:0{} TP0] "
    result = diagnose_paste(
        [
            p.format(1) + "Load weight begin. avail mem=78.50 GB",
            p.format(2) + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail "
            "mem=63.50 GB, mem usage=15.00 GB.",
            p.format(3) + "KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: "
            "24.41 GB",
            p.format(4) + "Memory pool end. avail mem=13.80 GB",
            "why is the KV cache so small?",
        ]
    )
    assert "here it holds 400,000 tokens a rank in 48.82 GiB" in " ".join(result.verdict.split())


@pytest.mark.parametrize(
    "sentence",
    [
        "SGLang's default `--mem-fraction-static` causes the KV pool allocation to fail",
        "- it fails to allocate the KV cache on a 24 GiB card",
        "there is not enough memory for the KV cache after the weights",
        "the kv cache budget is negative once the weights are in",
    ],
)
def test_the_refusal_told_in_words_is_a_refusal_whose_lever_is_a_higher_fraction(
    sentence: str,
) -> None:
    result = diagnose_paste("Tests OOM on L4 runners.\n" + sentence + "\n")
    assert result.verdict.startswith("SGLang refused to size the KV cache")
    assert (result.suggestions[0].knob, result.suggestions[0].direction.value) == (
        "mem_fraction_static",
        "raise",
    )


def test_an_allocator_oom_beside_the_refusal_in_words_is_still_no_fraction_fits() -> None:
    # an OOM text of its own is another failure, at another fraction
    result = diagnose_paste(_ALLOCATOR_OOM + "at a lower fraction the KV pool allocation fails\n")
    assert result.verdict.startswith("OOM at a higher --mem-fraction-static")


@pytest.mark.parametrize(
    "line",
    [
        "KV cache pool: used 25.51%, avail mem=38.14 GB",
        "Memory allocation for the KV cache took 2 s",
        "the KV cache allocation finished",
    ],
)
def test_pool_lines_that_tell_no_refusal_are_not_one(line: str) -> None:
    assert BY_NAME["kv_pool_failed_said"].find(line) is None


_SUMMARY = (
    "[2026-05-02 09:10:11] max_total_num_tokens=1234567, chunked_prefill_size=8192, "
    "max_prefill_tokens=16384, max_running_requests=48, context_len=131072, "
    "available_gpu_mem=12.50 GB"
)


@pytest.mark.parametrize(
    "paste",
    [
        _SUMMARY + "  so the KV cache total is 1.2M tokens?",
        _SUMMARY + " does this mean the KV pool holds 1.2M tokens?",
        _SUMMARY + "\nso max_total_num_tokens is the kv cache size?",
        _SUMMARY + "\n- `kv cache capacity here means 1.2M tokens per GPU?`",
    ],
)
def test_a_question_of_how_much_the_pool_holds_gets_the_logs_token_count(paste: str) -> None:
    # the question typed after SGLang's summary line on the same line, or on a line of its own:
    # the verdict says what the pool holds, from the line's max_total_num_tokens
    result = diagnose_paste(paste + "\n")
    assert result.verdict.startswith("ready: the paste asks about the KV pool's size")
    assert "here it holds 1,234,567 tokens a rank" in " ".join(result.verdict.split())


def test_a_log_line_ending_in_a_question_about_something_else_asks_nothing_of_the_pool() -> None:
    result = diagnose_paste(_SUMMARY + "  why is the first request slow?\n")
    assert "asks about the KV pool" not in result.verdict
    assert BY_NAME["said_pool_size"].find("KV cache pool: used 25.51%, avail mem=38.14 GB") is None
