"""What people write instead of a log, and SGLang 0.1's pool raise: the lower-case `oom` of titles
and prose, a failure placed at loading in words, a hybrid model's Mamba pool named, a sentence
naming both engines, and 0.1's `This should never happen`. Every input is a synthetic line in its
family's shape."""

from __future__ import annotations

import pytest

from memledger.input.engine_detect import SGLANG, VLLM, detect_engine
from memledger.input.outcome import outcome_kind
from memledger.model.events import EventKind
from memledger.sglang.errors import BY_NAME
from memledger.sglang.failure_rules import Phase
from tests.conftest import diagnose_paste


@pytest.mark.parametrize(
    "text",
    [
        "the second node ends with oom after an hour",
        "Fix oom issue when the pool is large",
        "our bench ooms at 64 concurrent requests",
        "启动后 oom了",
    ],
)
def test_a_lower_case_oom_in_prose_is_an_out_of_memory(text: str) -> None:
    stated = outcome_kind(text)
    assert stated is not None and stated[0] is EventKind.OOM


@pytest.mark.parametrize(
    "text",
    [
        "the room was full of GPUs",
        "we serve bloom-7b and zoom in on the logs",
        "kernel: Out of memory? no: oom-killer invoked, oom_score_adj=0",
        "see tools/oom.py for the helper",
    ],
)
def test_words_holding_oom_and_the_kernels_oom_killer_are_not_it(text: str) -> None:
    assert BY_NAME["oom_word_lower"].find(text) is None


def test_a_paste_that_only_says_oom_in_lower_case_is_read_not_exit_3() -> None:
    result = diagnose_paste("after a few requests the server dies with oom\n")
    assert result.outcome == "oom"


@pytest.mark.parametrize(
    "text",
    [
        "Loading a 70B fp8 checkpoint on 2 cards ends with oom in the weight repack\n",
        "The server hits OOM while loading.\n",
        "CUDA out of memory when loading the weights on one GPU\n",
    ],
)
def test_a_failure_said_to_come_while_loading_is_placed_at_load(text: str) -> None:
    """Nothing else in the paste places it: the reporter's words put it in the load stage, where
    the fraction is no lever and more ranks (or offload) are."""
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", Phase.LOAD)
    knobs = {s.knob for s in result.suggestions}
    assert "tp_size" in knobs and "mem_fraction_static" not in knobs


@pytest.mark.parametrize(
    "text",
    [
        "SGLang at 0.95 fails with out of memory errors while loading CUDA kernels\n",
        "Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:41<00:00,  5.1s/it]\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
    ],
)
def test_loading_kernels_or_a_progress_bar_is_no_load_mention(text: str) -> None:
    result = diagnose_paste(text)
    assert not any("while the weights were loading" in f.message for f in result.findings)


@pytest.mark.parametrize(
    "text",
    [
        "OOM at startup: not enough memory for 512 max_mamba_cache_size\n",
        "Qwen3-Next (a Mamba hybrid) runs out of memory at startup\n",
    ],
)
def test_a_mamba_pool_named_in_prose_gives_its_size_levers(text: str) -> None:
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", Phase.MEMORY_POOL)
    knobs = [s.knob for s in result.suggestions]
    assert {"max_mamba_cache_size", "max_running_requests"} <= set(knobs)
    assert all(s.direction == "lower" for s in result.suggestions if s.knob.startswith("max_"))


def test_mamba_ssm_dtype_alone_is_no_mention() -> None:
    """A flag that only holds the word (`mamba_ssm_dtype=`) in wrapped server_args is no pool."""
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "mamba_ssm_dtype='float32', mamba_full_memory_ratio=0.9\n"
    )
    result = diagnose_paste(text)
    assert not any(s.knob == "max_mamba_cache_size" for s in result.suggestions)


def test_a_sentence_naming_both_engines_is_no_vllm_log() -> None:
    lines = [
        "vLLM runs at 0.95 but SGLang at 0.95 fails with out of memory errors",
        "so we use 0.90 for SGLang",
    ]
    assert detect_engine(lines).engine == SGLANG
    result = diagnose_paste("\n".join(lines) + "\n")
    assert result.outcome == "oom"
    assert any(
        s.knob == "mem_fraction_static" and s.direction == "lower" for s in result.suggestions
    )


def test_a_vllm_log_with_one_sglang_sentence_stays_vllm() -> None:
    lines = [
        "INFO 06-01 12:00:00 [gpu_worker.py:298] Available KV cache memory: 20.00 GiB",
        "INFO 06-01 12:00:01 [kv_cache_utils.py:1286] GPU KV cache size: 100,000 tokens",
        "the same model works on SGLang",
    ]
    assert detect_engine(lines).engine == VLLM


@pytest.mark.parametrize("stage", ["Prefill", "Decode"])
def test_sglang_01s_never_happen_raise_is_its_accounting_not_its_size(stage: str) -> None:
    """0.1's scheduler admitted the batch by its own count before the raise: a leak, no size lever
    (and above all not the allocator's lever, a lower fraction)."""
    text = (
        f"{stage} out of memory. This should nerver happen.\n"
        " 3 (151644, 8948, 198) r=1\n"
        "   1 (2610,) r=1\n"
        "#tokens: 7\n"
    )
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    assert "leak" in result.verdict
    assert [f.id for f in result.findings if f.severity == "error"] == ["pool_not_full"]
    assert result.suggestions == []


def test_the_later_prefill_raise_is_still_a_full_pool() -> None:
    result = diagnose_paste("Prefill out of memory. Try to lower your batch size.\n")
    assert "leak" not in result.verdict
    assert any(s.knob == "mem_fraction_static" for s in result.suggestions)


def test_a_trainer_oom_after_sglangs_release_names_what_the_release_keeps() -> None:
    """A colocated trainer running out after SGLang's release: the release pauses only what
    torch_memory_saver allocated, and an SWA model's KV pools were made outside it."""
    text = (
        "After /release_memory_occupation the trainer's model init fails with CUDA out of "
        "memory on every rank.\n"
    )
    result = diagnose_paste(text)
    assert result.outcome == "oom"
    said = [f.message for f in result.findings if "release of its memory" in f.message]
    assert len(said) == 1 and "swa_memory_pool.py" in said[0]
    assert [s.knob for s in result.suggestions if s.direction == "lower"][:1] == [
        "mem_fraction_static"
    ]


def test_the_word_release_alone_names_no_release() -> None:
    result = diagnose_paste("OOM after the new release of our trainer\n")
    assert not any("release of its memory" in f.message for f in result.findings)


@pytest.mark.parametrize(
    ("text", "phase", "knob"),
    [
        ("The server OOMs during cuda graph capture on the second GPU.\n", Phase.GRAPH_CAPTURE,
         "cuda_graph_max_bs"),
        ("It fails with CUDA out of memory when capturing CUDA graphs.\n",
         Phase.GRAPH_CAPTURE, "cuda_graph_max_bs"),
        ("It dies with OOM during warmup, right after startup.\n", Phase.WARMUP,
         "chunked_prefill_size"),
    ],
)  # fmt: skip
def test_a_failure_said_to_come_at_capture_or_warmup_is_placed_there(
    text: str, phase: Phase, knob: str
) -> None:
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", phase)
    assert knob in {s.knob for s in result.suggestions}


def test_sglangs_own_capture_lines_stay_quiet_and_name_no_capture_in_prose() -> None:
    """`Capture cuda graph begin` and `Capturing batches` are log lines the line table reads:
    none of the prose phrases is in them, in any case (the quiet-line test folds case)."""
    from memledger.input.quiet import READER_WORDS

    lines = (
        "Capture cuda graph begin. This can take up to several minutes. avail mem=10.11 GB",
        "Capturing batches (bs=16 avail_mem=13.46 GB):   0%|          | 0/6 [00:00<?, ?it/s]",
        "Capture cuda graph bs [1, 2, 4, 8]",
    )
    for line in lines:
        assert BY_NAME["said_capture"].find(line) is None
        phrases = [w for w in READER_WORDS if "captur" in w.lower()]
        assert phrases and not any(w.lower() in line.lower() for w in phrases)


_ALLOCATOR_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.78 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.20 GiB is free. Of the allocated memory 70.1 GiB is "
    "allocated by PyTorch\n"
)


@pytest.mark.parametrize(
    "sentence",
    [
        "It happens while serving long prompts with mem_fraction_static=0.85, a CUDA OOM.",
        "- an OOM while serving requests, at `mem_fraction_static: 0.85`",
        "during serving we get oom when mem-fraction-static is 0.85",
    ],
)
def test_a_fraction_typed_as_the_one_that_ran_out_is_where_a_lower_value_starts(
    sentence: str,
) -> None:
    # the allocator text gives the capacity and the free bytes, the sentence the fraction: the
    # tuning guide's 5 GiB floor is 5 - 1.20 = 3.80 GiB, d >= 3.80 / 79.15 -> 0.05, 0.85 - 0.05
    result = diagnose_paste(_ALLOCATOR_OOM + sentence + "\n")
    lever = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert lever.value == pytest.approx(0.8)
    assert "0.85 - 0.05 = 0.8 (the fraction typed at paste.txt:2)" in " ".join(lever.why.split())


def test_a_fraction_said_to_work_is_not_the_one_to_lower_from() -> None:
    result = diagnose_paste(
        _ALLOCATOR_OOM + "during serving, with mem_fraction_static 0.7 it works\n"
    )
    lever = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert lever.value is None


def test_a_typed_fraction_without_the_allocator_numbers_says_what_is_missing() -> None:
    result = diagnose_paste("CUDA OOM at scale while serving, with `mem_fraction_static=0.85`\n")
    lever = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert lever.value is None
    assert "the paste gives the fraction (0.85) but not P" in " ".join(lever.why.split())
