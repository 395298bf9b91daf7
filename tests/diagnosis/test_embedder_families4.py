"""Families from projects that embed or drive SGLang (issue 24, held-out threads 100-103): a
fraction typed at 0.97 or more (an RL framework's gpu_memory_utilization included), KTransformers
named without its weight path (no expert goes to the CPU then), and a prose line that opens with a
dash (`-- The old value ...`), which is a sentence and not a launch command. Each is read in
several shapes of the family, through the whole command path (engine detection included, so an
unread paste raises InputError: exit 3). Every input is a synthetic line."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Diagnosis
from memledger.input.reported import read_reported
from tests.conftest import diagnose_text, paste_id


def _knobs(result: Diagnosis, direction: str) -> list[str]:
    return [s.knob for s in result.suggestions if s.direction == direction]


def _named(result: Diagnosis, words: str) -> bool:
    return any(words in f.message for f in result.findings)


NEAR_ONE = "a --mem-fraction-static of 0.97 or more"


@pytest.mark.parametrize(
    "paste",
    [
        "I set --mem-fraction-static 0.98 and got CUDA out of memory during serving",
        "- mem_fraction_static: 0.99 -> CUDA OOM on the first batch",
        "verl crashes with OOM in rollout, actor_rollout_ref.rollout.gpu_memory_utilization=0.98",
        "with `--mem-fraction-static 1.0` it ran out of memory",
        "OOM after startup with MEM_FRACTION_STATIC = .97 on an L40S",
        "> mem-fraction-static was set to 0.985, then a CUDA out of memory error",
    ],
    ids=paste_id,
)
def test_a_fraction_near_one_with_a_failure_lowers_the_fraction_first(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert _named(result, NEAR_ONE)
    assert _knobs(result, "lower")[:1] == ["mem_fraction_static"]
    assert NEAR_ONE in result.verdict


@pytest.mark.parametrize(
    "paste",
    [
        "with --mem-fraction-static 0.96 it ran out of memory",
        "mem_fraction_static=0.9 and it ran out of memory",
        "I tried --mem-fraction-static 0.85, 0.88 and then it ran out of memory",
        "gpu_memory_utilization=0.7 works, OOM otherwise",
    ],
    ids=paste_id,
)
def test_a_fraction_below_the_defaults_range_is_no_near_one_mention(paste: str) -> None:
    assert not _named(diagnose_text(paste), NEAR_ONE)


def test_the_near_one_mention_leaves_the_typed_value_read() -> None:
    """Both rows start at the setting's name: the typed value is still read after the mention."""
    events = read_reported("The config sets --mem-fraction-static=0.99 so it barely fits on 24GB")
    assert {"mention": "fraction_near_one"} in events
    assert [e["value"] for e in events if e.get("knob") == "mem_fraction_static"] == [0.99]


def test_a_fraction_near_one_said_alone_is_a_finding_with_its_direction() -> None:
    """No failure in the paste: the finding says what 0.99 leaves and which way to move it."""
    result = diagnose_text(
        "Our sample config used `--mem-fraction-static=0.99` to fit a vision model on a 24GB GPU "
        "(barely fits); such a high value is unsafe."
    )
    found = [f.message for f in result.findings if NEAR_ONE in f.message]
    assert found and "lower --mem-fraction-static" in found[0]
    assert "(1 - mfs) x P" in found[0]


@pytest.mark.parametrize(
    "paste",
    [
        "-- The previous value `--mem-fraction-static=0.99` was picked so the model barely fits.",
        "--  Before: mem_fraction_static=0.98, it barely fits on 24GB.",
        " -- note: mem-fraction-static 0.99 leaves no headroom",
    ],
    ids=paste_id,
)
def test_a_dash_that_opens_a_sentence_is_prose_not_a_command(paste: str) -> None:
    events = read_reported(paste)
    assert {"mention": "fraction_near_one"} in events
    assert diagnose_text(paste).outcome != ""  # read, not refused (an unread paste raises)


@pytest.mark.parametrize(
    "line",
    [
        "--mem-fraction-static 0.99 --tp 2",
        "  --mem-fraction-static 0.98 \\",
        "$ python -m sglang.launch_server --mem-fraction-static 0.99",
        "`--mem-fraction-static 0.99`",
    ],
    ids=paste_id,
)
def test_a_launch_commands_line_is_still_no_prose(line: str) -> None:
    assert read_reported(line) == []


KT_NAMED = [
    "Out of memory error using Ktransformers with DeepSeek on one B200",
    "ktransformers always gets oom at startup",
    "KTRANSFORMERS: CUDA out of memory while loading the weights",
    "OOM with ktransformers and --kt-num-gpu-experts 0, same on an H100",
    "The KTransformers fork of SGLang stops at load:\ntorch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is "
    "free.",
]


@pytest.mark.parametrize("paste", KT_NAMED, ids=paste_id)
def test_ktransformers_without_its_weight_path_sets_the_weight_path(paste: str) -> None:
    """Without --kt-weight-path SGLang makes no KT config and every expert is a GPU weight."""
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert "kt_weight_path" in _knobs(result, "enable")
    assert "kt_num_gpu_experts" in _knobs(result, "lower")
    assert not _named(result, "(--kt-weight-path set)")


@pytest.mark.parametrize(
    "paste",
    [
        "KTransformers OOM at startup, I passed --kt-weight-path /m/cpu and --kt-num-gpu-experts 8",
        "ktransformers: kt_weight_path=/data/cpu-weights, kt_num_gpu_experts=16, CUDA OOM",
        "OOM at startup with --kt-weight-path /models/cpu (Ktransformers)",
    ],
    ids=paste_id,
)
def test_ktransformers_with_its_weight_path_is_the_split_that_is_on(paste: str) -> None:
    result = diagnose_text(paste)
    assert "kt_weight_path" not in _knobs(result, "enable")
    assert _knobs(result, "lower")[:1] == ["kt_num_gpu_experts"]
    assert _named(result, "(--kt-weight-path set)")


def test_a_weight_path_printed_as_none_is_no_split() -> None:
    """The server args print kt_weight_path=None when it is not given: not the split, on."""
    events = read_reported("Ktransformers run, kt_weight_path=None, kt_num_gpu_experts=8, OOM")
    assert {"mention": "ktransformers"} in events
    assert {"mention": "kt_gpu_experts"} not in events


@pytest.mark.parametrize(
    ("paste", "value"),
    [
        # SGLang's own text (v0.5.17-v0.5.23) and the ways people shorten it quoting it
        (
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.5. Raise --mem-fraction-static above 0.627 (minimum viable "
            "= 1 - available/pre = 0.6263). If using speculative decoding, draft weights are now "
            "counted.",
            0.63,
        ),
        (
            'the run dies during load: "Loaded weights leave no GPU memory for the KV cache '
            'under --mem-fraction-static=0.5. Raise above 0.627"',
            0.63,
        ),
        (
            "`Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.88. Raise above 0.9113` on 8xH200",
            0.92,
        ),
        (
            "> ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.6, raise it above 0.71",
            0.72,
        ),
        # wrapped by a narrow terminal (or a reporter's code block) before its numbers
        (
            "```\nLoaded weights leave no GPU memory for the KV cache under\n"
            "--mem-fraction-static=0.5. Raise above 0.627\n```",
            0.63,
        ),
        (
            "RuntimeError: Loaded weights leave no GPU memory for the KV cache under\n"
            "--mem-fraction-static=0.8. Raise --mem-fraction-static above 0.91 (minimum viable = "
            "1 - available/pre = 0.9051).",
            0.91,
        ),
    ],
    ids=lambda v: paste_id(v) if isinstance(v, str) else str(v),
)
def test_the_refusals_own_floor_is_the_value_to_raise_to(paste: str, value: float) -> None:
    result = diagnose_text(paste)
    assert result.phase == "kv_sizing"
    raised = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert raised and raised[0].direction == "raise" and raised[0].value == value


def test_a_refusal_cut_before_its_numbers_and_a_new_record_stays_two_records() -> None:
    """The next line is a record of its own (a traceback): the cut text is read as it is."""
    result = diagnose_text(
        "Loaded weights leave no GPU memory for the KV cache under\n"
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/managers/scheduler.py", line 3207, in run_scheduler_process'
    )
    assert result.phase == "kv_sizing"
    raised = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert raised and raised[0].value is None


def test_a_refusals_value_without_p_says_its_budget_as_a_share_of_p() -> None:
    """No `Load weight begin` reading: the KV budget the value gives is (value - minimum) x P,
    said as such, not an unknown mark."""
    result = diagnose_text(
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.88. Raise above 0.9113"
    )
    why = next(s.why for s in result.suggestions if s.knob == "mem_fraction_static")
    assert "a KV budget of about 0.0087 x P" in why
    assert "?" not in why
