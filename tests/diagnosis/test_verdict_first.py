"""What a user reads first, the verdict and the first suggestion, carries the answer: the rules
that rank findings and levers for it. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Direction, Suggestion
from memledger.render.diagnose import command_change, suggestion_title
from memledger.sglang import lifecycle
from memledger.sglang.levers import REQUEST_FIELDS
from tests.conftest import diagnose_paste


@pytest.mark.parametrize("knob", sorted(REQUEST_FIELDS))
def test_a_request_field_is_named_as_the_requests_never_as_a_launch_flag(knob: str) -> None:
    lever = Suggestion(knob=knob, direction=Direction.LOWER, value=64, why="")
    assert lever.flag == f"the request's {knob}"
    assert suggestion_title(lever) == f"lower the request's {knob} to 64"
    assert command_change(lever) is None  # nothing to pass at launch
    server_arg = Suggestion(knob="max_running_requests", direction=Direction.LOWER, value=8, why="")
    assert command_change(server_arg) == "--max-running-requests 8"


@pytest.mark.parametrize(
    ("paste", "field"),
    [
        (
            "the server ran into OOM with return_logprob=True and logprob_start_len=0\n",
            "logprob_start_len",
        ),
        (
            "2026-01-05 10:00:00,126 [INFO] sglang_omni.pipeline.stage.runtime: Stage vocoder "
            "received msg: DataReadyMessage\ntorch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 1.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 20.00 MiB is "
            "free.\n",
            "max_new_tokens",
        ),
    ],
)
def test_a_request_fields_lever_leads_in_its_own_name(paste: str, field: str) -> None:
    diagnosis = diagnose_paste(paste)
    assert diagnosis.suggestions[0].knob == field
    assert f"the request's {field}" in diagnosis.verdict
    assert "--" + field.replace("_", "-") not in diagnosis.verdict


P = "[2026-03-02 07:04:51 TP0] "
_ANSWERED = {m.name: m for m in lifecycle.MENTIONS if m.answer}


@pytest.mark.parametrize(
    ("paste", "name"),
    [
        (
            [
                "The KV cache is not freed after the request finishes",
                P + "Decode batch. #running-req: 36, #token: 958017, token usage: 0.96",
            ],
            "kv_held",
        ),
        (["the draft KV is counted twice in the budget"], "double_counted"),
        (
            [
                "python -m sglang.launch_server --model-path m --tp 4 --enable-hierarchical-cache "
                "--hicache-size 40"
            ],
            "hicache",
        ),
        (
            [
                "`KV cache pool is full` with --page-size 64 on the decode worker",
                P
                + "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: "
                "0.5000 -> 0.8000",
            ],
            "page_size",
        ),
    ],
)
def test_a_quiet_paste_is_led_by_what_the_table_answers_of_what_it_names(
    paste: list[str], name: str
) -> None:
    # no failure: the verdict would say only the outcome; what the paste names is the news, and
    # the table's answer for it comes before the outcome
    mention = _ANSWERED[name]
    result = diagnose_paste(paste)
    assert result.outcome in ("truncated", "ready"), result.verdict
    topic = mention.says.split(":")[0]
    assert result.verdict.startswith(f"{topic}: {mention.answer}"), result.verdict
    assert "outcome unknown" in result.verdict or result.outcome == "ready"


def test_an_answer_in_words_is_only_for_a_mention_its_levers_do_not_answer_alone() -> None:
    # a mention whose levers answer it without a failure leads with them (mention_answer): an
    # answer in words as well would say it twice
    assert _ANSWERED
    for mention in _ANSWERED.values():
        assert not mention.levers_alone, mention.name


_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 20.00 MiB is free."
)


@pytest.mark.parametrize(
    ("said", "name", "leads"),
    [
        (
            "the trainer OOMs right after /release_memory_occupation returns",
            "released",
            "mem_fraction_static",
        ),
        (
            "this is an ad-hoc fix for the nccl failed to calloc error",
            "nccl_alloc",
            "mem_fraction_static",
        ),
        (
            "flashinfer PR #994 and everything after leads to OOM, the commit before works",
            "version_regression",
            None,
        ),
        ("I am trying speculative decoding on one GPU", "speculative", "max_total_tokens"),
        # its raise lever is for SGLang's own pool, not an allocator's OOM: the words only
        (
            "We set max_total_tokens to batch x max_length and the rollout runs out of memory",
            "kv_cap",
            None,
        ),
    ],
)
@pytest.mark.parametrize("shape", [0, 1, 2])
def test_a_failure_says_what_the_table_answers_of_what_the_paste_names(
    said: str, name: str, leads: str | None, shape: int
) -> None:
    # an OOM with a cause the paste names: the verdict says the table's answer for it (wait,
    # empty the cache, pin a version, the draft's own memory), then the mention's own levers,
    # the first of which is the first suggestion
    said = [said, said.lower(), f"we see: `{said}`"][shape]
    result = diagnose_paste([said, _OOM])
    mention = _ANSWERED[name]
    assert f"{mention.subject}: {mention.answer}" in result.verdict, result.verdict
    if leads is not None:
        assert result.suggestions[0].knob == leads, result.suggestions
        assert f"{mention.answer}; {mention.levers[0].direction} --" in result.verdict
    else:
        assert not any(
            f"{mention.answer}; {lever.direction} --" in result.verdict for lever in mention.levers
        ), result.verdict


def test_the_answer_is_said_once_and_only_with_a_failure_unless_said_alone() -> None:
    # without a failure only a mention said alone is answered (the RL release needs a failure)
    quiet = diagnose_paste(["we call /release_memory_occupation before each training step"])
    assert quiet.outcome == "truncated", quiet.verdict
    assert _ANSWERED["released"].answer not in quiet.verdict
    alone = diagnose_paste(
        ["with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the sglang offload frees nothing"]
    )
    answer = _ANSWERED["memory_saver_expandable"].answer
    assert alone.verdict.count(answer) == 1 and alone.verdict.startswith("expandable"), (
        alone.verdict
    )


def test_a_crash_whose_error_is_not_in_the_log_is_answered_by_what_the_paste_names() -> None:
    # the traceback is cut before its exception: the verdict can say only that, so what the
    # paste names (memory that grew while serving) answers it, with its lever
    cut = [
        "GPU memory keeps increasing with every image request until it crashes",
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 100, in '
        "event_loop_normal",
    ]
    result = diagnose_paste(cut)
    assert result.outcome == "crash" and "the error is not in the log" in result.verdict
    assert "; GPU memory that grew while serving" in result.verdict, result.verdict
    assert result.suggestions[0].knob == "disable_fast_image_processor"
    # the traceback's own exception in the log: that is the answer, the mention is not asked
    known = diagnose_paste([*cut, "RuntimeError: NCCL error: unhandled system error"])
    assert "GPU memory that grew" not in known.verdict


@pytest.mark.parametrize("prefix", ["", "[2026-01-05 10:00:00 TP0] "])
def test_the_oom_text_that_names_its_phase_leads_a_generic_one_before_it(prefix: str) -> None:
    # torch_memory_saver prints its generic cuMemCreate line first, then the driver error of the
    # function that failed (func=resume: the RL framework resumed SGLang's memory)
    lines = [
        prefix + "[torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be "
        "an issue e.g. torch allocator will free cache and retry)",
        prefix + "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  "
        "file=csrc/core.cpp func=resume line=168",
    ]
    result = diagnose_paste(lines)
    assert (result.outcome, result.phase.value) == ("oom", "resume"), result.verdict
    assert result.verdict.startswith("OOM during resuming memory released for training")
    # the generic line alone places nothing
    assert diagnose_paste(lines[:1]).phase.value == "unknown"
