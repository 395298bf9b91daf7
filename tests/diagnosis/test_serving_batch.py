"""An OOM while serving, after SGLang's serving-batch lines (`Prefill batch.` / `Decode batch.`):
placed in the serving stage, with the lever of the last batch's stage valued from its numbers
(memledger.sglang.lifecycle.SERVING_BATCH_LEVERS). Synthetic lines in each release's shape:
v0.2.13 managers/tp_worker.py:270-277, :419-427 (`[gpu=0]`), v0.4.6 managers/scheduler.py:992-1047
(`[date TP0]`)."""

from __future__ import annotations

import io

import pytest

from memledger.diagnosis import Diagnosis
from memledger.diagnosis.arithmetic import power_of_two_below
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from memledger.sglang.lifecycle import SERVING_BATCH_COUNT, SERVING_BATCH_LEVERS
from memledger.sglang.lines import SERVING_BATCH_FIELDS, SERVING_BATCH_HEADS
from tests.conftest import diagnose_paste

OLD = "[gpu=0] "
NEW = "[2025-06-01 10:00:00 TP0] "
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 512.00 MiB is free."
)
FRAME = '  File "/usr/lib/python3/site-packages/sglang/srt/{path}", line {n}, in {func}'


def _prefill(prefix: str, seqs: int, tokens: int, running: int) -> str:
    if prefix == OLD:
        middle = "cache hit rate: 0.00%"
    else:
        middle = "token usage: 0.85"
    return (
        f"{prefix}Prefill batch. #new-seq: {seqs}, #new-token: {tokens}, #cached-token: 0, "
        f"{middle}, #running-req: {running}, #queue-req: 12"
    )


def _decode(prefix: str, running: int) -> str:
    return (
        f"{prefix}Decode batch. #running-req: {running}, #token: 20000, token usage: 0.91, "
        "gen throughput (token/s): 812.50, #queue-req: 3"
    )


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines)


def _values(result: Diagnosis) -> dict[str, int | float | None]:
    return {s.knob: s.value for s in result.suggestions}


@pytest.mark.parametrize("prefix", [OLD, NEW])
def test_an_oom_after_a_prefill_batch_is_serving_with_the_prefill_cap_below_its_tokens(
    prefix: str,
) -> None:
    result = _diagnose(
        [
            _decode(prefix, 9),
            _prefill(prefix, 5, 13938, 3),
            "Traceback (most recent call last):",
            FRAME.format(path="managers/tp_worker.py", n=209, func="exposed_step"),
            OOM,
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    first, second = result.suggestions[:2]
    assert (first.knob, first.value) == ("max_prefill_tokens", 8192)
    assert (second.knob, second.value) == ("chunked_prefill_size", 8192)
    assert "13938" in first.why and "paste.txt:2" in first.why
    assert "max_running_requests" not in [s.knob for s in result.suggestions[:2]]
    assert "--max-prefill-tokens to 8192" in result.verdict


def test_one_long_request_in_the_prefill_batch_puts_the_chunk_first() -> None:
    # the cap admits the first request whatever its length (v0.4.6 schedule_policy.py:464)
    result = _diagnose([_prefill(NEW, 1, 8192, 0), OOM])
    assert result.phase.value == "serving"
    assert [(s.knob, s.value) for s in result.suggestions[:2]] == [
        ("chunked_prefill_size", 4096),
        ("max_prefill_tokens", 4096),
    ]
    assert "one request" in result.suggestions[1].why


@pytest.mark.parametrize("prefix", [OLD, NEW])
def test_an_oom_after_a_decode_batch_lowers_the_running_requests_below_the_logged(
    prefix: str,
) -> None:
    result = _diagnose([_prefill(prefix, 2, 900, 40), _decode(prefix, 48), OOM])
    assert result.phase.value == "serving"
    assert (result.suggestions[0].knob, result.suggestions[0].value) == (
        "max_running_requests",
        32,
    )
    assert "48 requests" in result.suggestions[0].why
    assert "max_prefill_tokens" not in _values(result)


def test_a_batch_after_the_oom_does_not_name_its_stage() -> None:
    result = _diagnose(
        [
            _prefill(NEW, 3, 6000, 1),
            "Traceback (most recent call last):",
            FRAME.format(path="managers/scheduler.py", n=1975, func="run_event_loop"),
            OOM,
            _decode(NEW, 64),
        ]
    )
    assert result.suggestions[0].knob == "max_prefill_tokens"
    assert result.suggestions[0].value == 4096


def test_the_fraction_stays_a_lever_with_its_reason() -> None:
    args = "server_args=ServerArgs(model_path='m', mem_fraction_static=0.88)"
    result = _diagnose([NEW + args, _prefill(NEW, 4, 16000, 2), OOM])
    mfs = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert mfs and mfs[0].direction.value == "lower"


def test_serving_lines_are_typed_events() -> None:
    parsed = parse_log(
        io.BytesIO((_prefill(OLD, 17, 13938, 3) + "\n" + OOM + "\n").encode()), label="x"
    )
    (event,) = [e for e in parsed.startup.events if e.kind is EventKind.SERVING_BATCH]
    assert event.rank == "gpu=0"
    assert event.values == {
        "stage": "prefill",
        "new_seq": 17,
        "new_token": 13938,
        "cached_token": 0,
        "running_req": 3,
        "queue_req": 12,
    }


@pytest.mark.parametrize(("n", "below"), [(13938, 8192), (8192, 4096), (3, 2), (2, 1), (1, None)])
def test_power_of_two_below(n: int, below: int | None) -> None:
    assert power_of_two_below(n) == below


def test_every_serving_batch_stage_has_the_count_that_values_its_levers() -> None:
    """Each stage with levers names the serving-batch field its values come from, one the line
    reader keeps (memledger.sglang.lines.SERVING_BATCH_FIELDS), an integer count."""
    fields = {field.key: field.kind for field in SERVING_BATCH_FIELDS}
    assert (
        set(SERVING_BATCH_COUNT) == set(SERVING_BATCH_LEVERS) == set(SERVING_BATCH_HEADS.values())
    )
    for key, what in SERVING_BATCH_COUNT.values():
        assert fields.get(key) is int and what
