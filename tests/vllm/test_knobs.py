"""vLLM's knob table and the levers each failure is answered with: one entry per knob, each citing
where vLLM reads it at a release; every lever names a knob of the table and a direction."""

from __future__ import annotations

import re

import pytest

from memledger.diagnosis.model import Direction
from memledger.vllm.errors import ERRORS
from memledger.vllm.knobs import KNOB, KNOBS, LEVERS, Knob

CITATION = re.compile(r"v\d+\.\d+\.\d+(\.post\d+)? vllm/\S+\.py:\d+")
"""`vX vllm/path.py:line`, a line of that release's wheel."""


@pytest.mark.parametrize("knob", KNOBS, ids=lambda k: k.id)
def test_every_knob_cites_a_release_line(knob: Knob) -> None:
    assert CITATION.search(knob.source), (knob.id, knob.source)
    assert knob.flag.startswith("--")


def test_one_entry_per_knob() -> None:
    assert len(KNOB) == len(KNOBS)


@pytest.mark.parametrize("failure", LEVERS)
def test_every_lever_names_a_knob_and_a_direction(failure: str) -> None:
    levers = LEVERS[failure]
    assert levers
    assert len({lever.knob for lever in levers}) == len(levers)  # a knob once a failure
    for lever in levers:
        assert lever.knob in KNOB, lever.knob
        Direction(lever.direction)


def test_the_failures_are_the_error_texts_or_named_moments() -> None:
    ids = {error.id for error in ERRORS}
    assert set(LEVERS) - ids == {"kv_check", "graph_capture_oom", "oom"}
    assert "free_memory" in LEVERS and "no_cache_memory" in LEVERS
