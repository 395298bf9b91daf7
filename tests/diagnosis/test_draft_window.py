"""The draft-token window: the target verifies bs x --speculative-num-draft-tokens tokens a step,
so a serving OOM with a draft whose paste names the window (or a PD decode instance with a draft,
which runs only such steps) is answered with a smaller window first, not a lower fraction (which
shrinks the KV pool the decode serves from). Synthetic lines in the shapes people paste them."""

from __future__ import annotations

import pytest

from memledger.sglang.errors import BY_NAME
from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of

P = "[2026-03-01 10:00:00 TP0] "
_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 20.00 MiB is free."
)
_DECODE = P + (
    "Decode batch. #running-req: 40, #token: 300000, token usage: 0.80, gen throughput "
    "(token/s): 900.0, #queue-req: 3"
)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "with num-draft-tokens = 8 the decode instance OOMs mid-traffic",
        "a large draft-token window runs out under load",
        "the spec-verify workspace and the KV pool share what is free",
    ],
)
def test_the_window_said_in_prose_leads_a_serving_oom(shape: str, said: str) -> None:
    result = diagnose_paste(shape.format(s=said) + "\nit OOMs while serving\n" + _OOM + "\n")
    assert knobs_of(result)[0] == ("speculative_num_draft_tokens", "lower")
    assert "draft-token window: lower --speculative-num-draft-tokens" in " ".join(
        result.verdict.split()
    )
    # one suggestion a knob: the window's graph lever is not repeated by the speculative one's
    knobs = [k for k, _ in knobs_of(result)]
    assert len(knobs) == len(set(knobs))


_PD_DECODE = (
    P + "server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', "
    "speculative_num_draft_tokens=8, disaggregation_mode='decode')"
)


def test_a_pd_decode_with_a_draft_names_the_window_without_words() -> None:
    result = diagnose_paste([_PD_DECODE, P + "Prefill batch. #new-seq: 1", _OOM])
    assert knobs_of(result)[0] == ("speculative_num_draft_tokens", "lower")
    # the last decode batch's numbers value its lever, which leads; the window follows
    valued = knobs_of(diagnose_paste([_PD_DECODE, _DECODE, _OOM]))
    assert valued[0] == ("max_running_requests", "lower")
    assert ("speculative_num_draft_tokens", "lower") in valued


def test_a_draft_outside_a_pd_decode_keeps_the_batchs_valued_lever_first() -> None:
    result = diagnose_paste(
        [
            P + "server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', "
            "speculative_num_draft_tokens=8, mem_fraction_static=0.7)",
            _DECODE,
            _OOM,
        ]
    )
    assert knobs_of(result)[0] == ("max_running_requests", "lower")
    assert "draft-token window" not in result.verdict


def test_server_args_own_draft_token_setting_is_not_prose_naming_the_window() -> None:
    row = BY_NAME["said_draft_window"]
    assert row.find("speculative_num_draft_tokens=4, speculative_eagle_topk=1") is None
    assert row.find("Use `--speculative-num-draft-tokens 4`") is not None
