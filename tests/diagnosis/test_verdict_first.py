"""What a user reads first, the verdict and the first suggestion, carries the answer: the rules
that rank findings and levers for it. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Direction, Suggestion
from memledger.render.diagnose import command_change, suggestion_title
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
