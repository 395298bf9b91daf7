"""Families of what people paste about SGLang's pools that no OOM text carries (issue 24): the
pools' self-check finding lost slots (`memory leak detected!`), memory said to grow while serving,
HiCache named (what it adds on the GPU, and that it does not enlarge the GPU pool), SGLang's own
warning that the mamba state slots cap the running requests, a PD worker's admission bound (the
SWA pool on a hybrid model), the draft-token window of speculative decoding, and the hugepages the
HiCache host check does not count. Every input is a synthetic line in its family's shape, pasted
as reporters paste: alone, in a sentence, lower case, inside backticks, as a bullet, beside the
name of another engine."""

from __future__ import annotations

import pytest

from memledger.errors import InputError
from memledger.sglang.failure_rules import Phase
from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of, said_of

P = "[2026-08-01 10:00:00 TP0] "


LEAKS = (
    "ValueError: token_to_kv_pool_allocator memory leak detected! "
    "self.max_total_num_tokens=40000, available_size=39936, evictable_size=0, protected_size=0",
    "req_to_token_pool memory leak detected!available_size=63, total_size=64",
    "pool memory leak detected!",
    "AssertionError: Mem Leak Detected! total_tokens=39900 vs self.max_total_num_tokens=40000",
)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize("text", LEAKS)
def test_the_pools_self_check_is_an_accounting_bug_not_memory(text: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert (result.outcome, result.phase) == ("crash", Phase.SERVING)
    assert "pool_leak_check" in [str(f.id) for f in result.findings]
    assert "not GPU memory" in result.verdict and "accounting bug" in result.verdict
    # no memory flag fixes it: nothing to raise or lower
    assert not any(knob == "mem_fraction_static" for knob, _ in knobs_of(result))


def test_sglang_03s_leak_warning_is_no_crash() -> None:
    """0.3 warned and went on serving (v0.3.0 managers/tp_worker.py:305-324): pasted alone it is
    no failure to diagnose (no OOM or refusal text), beside an OOM it is no crash."""
    warning = (
        "Warning: available_size=39936, max_total_num_tokens=40000\nKV cache pool leak detected!\n"
    )
    with pytest.raises(InputError):
        diagnose_paste(warning)
    result = diagnose_paste(warning + "then the next request: CUDA out of memory\n")
    assert result.outcome == "oom"
    assert "pool_leak_check" not in [str(f.id) for f in result.findings]


def test_a_leak_word_without_the_checks_exclamation_is_no_self_check() -> None:
    result = diagnose_paste("we suspect a memory leak detected by our own monitor, OOM later\n")
    assert "pool_leak_check" not in [str(f.id) for f in result.findings]


GROWTH = (
    "GPU memory keeps increasing with every image request, then CUDA out of memory",
    "the memory usage continued to increase and after an hour it OOMs",
    "VRAM usage kept growing until the server crashed with OOM",
    "显存缓慢上涨，最后 OOM",
    "a slow CUDA memory leak: out of memory after two days",
    # the readings typed, and memory that stayed after the load was gone
    "GPU memory utilization increased from 71.20 GiB to 76.90 GiB, then CUDA out of memory",
    "VRAM went up from 60GB to 75 GB over the run and the next one hit OOM",
    "显存从 60G 涨到 75G，最后 OOM",
    "the memory did not return to its initial state, and the second run got out of memory",
)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize("text", GROWTH)
def test_memory_said_to_grow_while_serving_is_a_leak_not_the_fraction(
    text: str, shape: str
) -> None:
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    assert "leak" in said_of(result) and "only delays" in said_of(result)
    assert knobs_of(result)[0] == ("disable_fast_image_processor", "enable")


@pytest.mark.parametrize(
    "text",
    [
        "throughput increased over time after warmup, then it OOMs",
        # the KV pool filling up is its sized pool in use, not memory that grows
        "token usage keeps increasing until the KV cache pool is full, then OOM",
        "kv cache usage kept growing under load and it ran out of memory",
        # a setting changed, not memory grown
        "I increased the memory fraction from 0.80 to 0.90 and it OOMs",
        "memory usage increased from 0.85 to 0.9 of the card, then OOM",
    ],
)
def test_growth_of_something_else_is_no_memory_growth(text: str) -> None:
    result = diagnose_paste(text + "\n")
    assert not any(s.knob == "disable_fast_image_processor" for s in result.suggestions)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_growth_said_beside_a_traceback_cut_before_its_error_is_the_evidence(shape: str) -> None:
    """The error is not in the paste: the reporter's growth numbers are what it holds."""
    said = shape.format(s="memory usage grew from 70.10 GiB to 75.30 GiB and was never freed")
    paste = f"{said}\n[gpu_id=0] Prefill batch. #new-seq: 2, #new-token: 4100, #cached-token: 0\n"
    result = diagnose_paste(paste + "Traceback (most recent call last):\n")
    assert (result.outcome, result.phase) == ("crash", Phase.SERVING)
    assert "grew while serving" in said_of(result) and "leak" in said_of(result)
    # without the words the cut-off traceback says only that the error is missing
    bare = diagnose_paste(paste.split("\n", 1)[1] + "Traceback (most recent call last):\n")
    assert "grew while serving" not in said_of(bare)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "text",
    [
        "with --enable-hierarchical-cache and --hicache-ratio 2 the server OOMs at startup",
        "enabling hicache at mem-fraction-static 0.95 gives CUDA out of memory",
        "Hierarchical KV caching on: OOM while running the benchmark",
    ],
)
def test_hicache_named_with_an_oom_gives_its_gpu_levers(text: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert result.outcome == "oom"
    knobs = knobs_of(result)
    assert ("page_size", "raise") in knobs and ("mem_fraction_static", "lower") in knobs
    assert "host-RAM tier" in said_of(result)


@pytest.mark.parametrize(
    "text",
    [
        "HiCache is on, but max_total_num_tokens did not grow. Why?",
        "- I enabled hierarchical cache and `max_total_num_tokens` stayed the same",
    ],
)
def test_a_question_naming_hicache_is_answered_not_refused(text: str) -> None:
    """No failure, no log line: what HiCache is (a host tier, not a bigger GPU pool) is the
    answer; nothing claims an outcome."""
    result = diagnose_paste(text + "\n")
    assert result.outcome == "truncated"
    assert "does not enlarge the GPU KV pool" in said_of(result)


MAMBA_CAP = (
    "max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 "
    "state slots per request). To raise it: increase --mamba-full-memory-ratio or "
    "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16."
)


@pytest.mark.parametrize("shape", [*PROSE_SHAPES, P + "{s}"])
def test_sglangs_mamba_cap_warning_gets_the_slot_levers(shape: str) -> None:
    result = diagnose_paste(shape.format(s=MAMBA_CAP) + "\n")
    assert result.outcome != "oom"
    # no failure, but a cap SGLang set: its levers are the suggestions, with their directions
    assert [(s.knob, s.direction.value) for s in result.suggestions] == [
        ("max_mamba_cache_size", "raise"),
        ("mamba_full_memory_ratio", "raise"),
        ("mamba_ssm_dtype", "enable"),
    ]
    # the warning leads the verdict, which still claims no outcome
    assert result.verdict.startswith("SGLang set max_running_requests to 9 (the Mamba state cache")
    assert result.verdict.endswith("outcome unknown")


def test_the_mamba_cap_in_a_ready_log_is_said_and_stays_ready() -> None:
    result = diagnose_paste(
        [
            P + MAMBA_CAP,
            P + "max_total_num_tokens=200000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=9, context_len=32768",
            P + "The server is fired up and ready to roll!",
        ]
    )
    # a server that came up: the cap leads its verdict, with its levers
    assert result.outcome == "ready"
    assert result.verdict.startswith("ready: SGLang set max_running_requests to 9")
    assert "raise --mamba-full-memory-ratio" in result.verdict
    assert result.suggestions[0].knob == "max_mamba_cache_size"


def test_sglangs_own_hicache_line_in_a_ready_log_names_nothing() -> None:
    """`Allocating X GB host memory for hierarchical KV cache.` is a healthy start's line, pasted
    bare (no prefix) as some logs print it: no HiCache mention is made of it."""
    result = diagnose_paste(
        [
            "KV Cache is allocated. #tokens: 105600, K size: 7.26 GB, V size: 7.26 GB",
            "Memory pool end. avail mem=21.66 GB",
            "Allocating 15.58 GB host memory for hierarchical KV cache.",
            "max_total_num_tokens=105600, chunked_prefill_size=4096, max_prefill_tokens=16384, "
            "max_running_requests=2048, context_len=40960, available_gpu_mem=21.09 GB",
            "The server is fired up and ready to roll!",
        ]
    )
    assert result.outcome == "ready"
    assert (
        result.verdict == "ready: no memory problem found; the KV pool holds 105,600 tokens a rank"
    )
    assert "host-RAM tier" not in said_of(result)


def test_a_ready_log_naming_speculative_decoding_gets_no_failure_levers() -> None:
    """What only explains a failure (the draft's pools) is not advice for a log that came up."""
    result = diagnose_paste(
        [
            "I am trying speculative decoding with EAGLE3",
            P + "max_total_num_tokens=200000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=64, context_len=32768",
            P + "The server is fired up and ready to roll!",
        ]
    )
    assert result.outcome == "ready"
    assert not any(s.knob == "speculative_num_draft_tokens" for s in result.suggestions)


@pytest.mark.parametrize(
    "paste",
    [
        *(
            s.format(s="Request 7f3a exceeds the maximum number of tokens: 40960 > 18432")
            for s in PROSE_SHAPES
        ),
        P + "Request 7f3a exceeds the maximum number of tokens: 40960 > 18432",
        # the clamp quoted from SGLang's code (never a prefixed log line)
        *(
            s.format(s="min(self.max_total_num_tokens, model_runner.swa_max_total_num_tokens)")
            for s in PROSE_SHAPES
        ),
    ],
)
def test_a_pd_workers_admission_bound_names_the_swa_pool(paste: str) -> None:
    result = diagnose_paste(paste + "\n")
    assert "SWA pool's tokens" in said_of(result) and "--swa-full-tokens-ratio" in said_of(result)


@pytest.mark.parametrize(
    "text",
    [
        "with EAGLE speculative decoding the decode node OOMs mid-traffic",
        "- speculative decoding (DFlash, 16 draft tokens): CUDA out of memory mid-run",
        "`EAGLE3` in SGLang OOMs under load, vLLM does not",
    ],
)
def test_a_speculative_oom_while_serving_offers_the_draft_token_window(text: str) -> None:
    result = diagnose_paste(text + "\n")
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    assert ("speculative_num_draft_tokens", "lower") in knobs_of(result)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_hicache_host_refusal_says_hugepages_are_not_counted(shape: str) -> None:
    text = (
        "ValueError: Not enough host memory available. Requesting 80.00 GB but only have 12.00 GB "
        "free. Please reduce the size of the hierarchical cache."
    )
    result = diagnose_paste(shape.format(s=text) + "\n")
    assert "hugepages" in result.verdict
    (row,) = [f for f in result.findings if f.id == "hicache_host_memory"]
    assert "MemAvailable" in row.message and "SGLANG_HUGEPAGE_SIZE" in row.message


RETRACT = (
    "[2025-05-01 10:00:01] Decode out of memory happened. #retracted_reqs: 1, "
    "#new_token_ratio: 0.7000 -> 0.9000\n"
)


@pytest.mark.parametrize(
    "debug",
    [
        "[2025-05-01 10:00:01] alloc_decode len(self.free_pages)=3",
        "[2025-05-01 10:00:01] check_decode_mem self.new_page_count_next_decode()=4",
        "alloc_paged_token_slots_decode: num_new_pages=4 but free_pages has 3",
        "- the PagedTokenToKVPoolAllocator still has release_pages after the retraction",
    ],
)
def test_the_paged_allocators_state_beside_a_retraction_names_page_accounting(debug: str) -> None:
    """SGLang's page allocator's own names, in a debug print through its logger or quoted from
    its code, beside a retraction: the page rounding and the retraction's token count are the
    suspects, said even though the server survived."""
    result = diagnose_paste(RETRACT + debug + "\n")
    # a retraction is the scheduler's while serving: the cut-off log ends there
    assert (result.outcome, result.phase) == ("truncated", Phase.SERVING)
    # the named cause leads (lifecycle.Mention.answer), then the retraction with its levers; the
    # outcome stays unknown
    assert result.verdict.startswith("a paged KV cache: a request takes whole pages")
    assert "; SGLang retracted requests" in result.verdict
    assert result.suggestions[0].knob == "schedule_conservativeness"
    assert result.verdict.endswith("log ends during serving: no error text, outcome unknown")
    said = said_of(result)
    assert "a paged KV cache" in said and "counted tokens, not pages" in said
    # the retraction alone names no pages
    assert "a paged KV cache" not in said_of(diagnose_paste(RETRACT))


def test_a_question_naming_the_page_size_is_answered_without_a_failure() -> None:
    result = diagnose_paste("Does a page size of 64 waste KV cache compared to 1?\n" + RETRACT)
    assert "a request takes whole pages" in said_of(result)


def test_a_logs_own_page_size_setting_names_no_paged_cache() -> None:
    log = (
        "[2025-05-01 10:00:00] server_args=ServerArgs(model_path='m', page_size=16, "
        "mem_fraction_static=0.8)\n" + RETRACT
    )
    assert "a paged KV cache" not in said_of(diagnose_paste(log))


def test_a_log_cut_after_serving_batches_ends_during_serving() -> None:
    batch = (
        "[2025-05-01 10:00:00 TP0] Decode batch. #running-req: 4, #token: 900, token usage: 0.95, "
        "gen throughput (token/s): 100.0, #queue-req: 0\n"
    )
    assert diagnose_paste(batch).phase is Phase.SERVING
    # startup lines with no batch after them still end in their own phase
    startup = "[2025-05-01 09:59:00 TP0] Load weight begin. avail mem=78.50 GB\n"
    assert diagnose_paste(startup).phase is Phase.LOAD
