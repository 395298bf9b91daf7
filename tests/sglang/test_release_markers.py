"""The one table that dates a log (memledger.sglang.release_markers): its marks, the range and
evidence `release_range` gives, and the engine's and sizing's views of it."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from memledger.model.events import Event, EventKind
from memledger.sglang.release_markers import (
    FORMAT_MARKS,
    VersionRange,
    given_release,
    release_range,
)
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE
from memledger.sglang.versions import format_ceiling, format_version
from memledger.units import GIB, Size

WHEEL_LINE = re.compile(r"v\d+\.\d+\.\d+ [a-z_/0-9]+\.py:\d+")


def _event(kind: EventKind, line: int, **values: Any) -> Event:
    return Event(kind=kind, line=line, rank="TP0", text="", values=values)


def _size(gib: float) -> Size:
    return Size(bytes=round(gib * GIB), text=f"{gib:.2f} GB")


def test_every_mark_cites_the_wheel_line_that_prints_it() -> None:
    names = [mark.name for mark in FORMAT_MARKS]
    assert len(names) == len(set(names))
    for mark in FORMAT_MARKS:
        assert WHEEL_LINE.search(mark.source), mark.name


def test_a_range_keeps_the_first_line_of_each_mark_as_evidence() -> None:
    # 0.5.9's load-end (elapsed and dtype) and a KV line with #tokens but no dtype
    events = [
        _event(EventKind.KV_ALLOCATED, 30, tokens=1000),
        _event(EventKind.LOAD_END, 12, elapsed=3.0, dtype="torch.bfloat16"),
        _event(EventKind.KV_ALLOCATED, 31, tokens=1000),
    ]
    found = release_range(events)
    assert found.text == "0.5.9"
    assert found.markers == (
        "load_end_elapsed_with_dtype",
        "kv_line",
        "kv_line_with_tokens_no_dtype",
    )
    kv = found.evidence[2]
    assert (kv.line, kv.first, kv.last) == (30, 4004, 5012)
    assert kv.text.startswith("line 30 (kv_line_with_tokens_no_dtype): >= 0.4.4 and <= 0.5.12 (")
    assert found.lower == 5009 and found.ceiling == 5010
    assert format_version(events) == 5009 and format_ceiling(events) == 5010


def test_lower_and_upper_bounds_from_both_former_tables_meet() -> None:
    """moe_runner_backend (a field from v0.5.1, the engine's table) raises the lower bound the
    sizing table gave; `Using KV cache dtype` is printed up to 0.5.12 (v0.5.12
    model_runner.py:2386), which the engine's table had as 0.5.11."""
    args = Event(
        kind=EventKind.SERVER_ARGS,
        line=1,
        rank="",
        text="",
        values={"form": "repr"},
        params={"moe_runner_backend": "auto", "cuda_graph_max_bs": 8},
    )
    dtype = _event(EventKind.KV_DTYPE, 5)
    found = release_range([args, dtype])
    assert found.text == "0.5.3 .. 0.5.12"
    assert found.within(RULE["mfs_default"]) is not False
    # the dict form (0.5.19+) lists fields by name too, but cuda_graph_max_bs bounds only the repr
    as_dict = replace(args, values={"form": "dict"})
    assert release_range([as_dict]).text == ">= 0.5.19"


def test_formats_that_contradict_bound_nothing_above() -> None:
    """A fork prints a 0.5.10+ load-end line and a summary without available_gpu_mem (<= 0.4.6):
    the range says so, and the engine gets no ceiling from it."""
    load_end = _event(EventKind.LOAD_END, 3, elapsed=1.0)
    summary = _event(EventKind.SUMMARY, 9, max_running_requests=8)
    found = release_range([load_end, summary])
    assert not found.consistent
    assert found.text == "inconsistent formats (0.5.10+ and <= 0.4.6: a fork?)"
    assert found.ceiling == 0 and found.lower == 5010


def test_the_overlap_commit_line_dates_its_own_way() -> None:
    """0.5.19's `Load weight end. Committed real weights ...` line has no `mem usage=`: it is
    not the <= 0.4.3 load-end line."""
    commit = _event(EventKind.LOAD_END, 40, overlap_commit=True)
    assert release_range([commit]).text == ">= 0.5.19"
    old = _event(EventKind.LOAD_END, 4)
    assert release_range([old]).text == "<= 0.4.3"
    with_usage = Event(
        kind=EventKind.LOAD_END, line=4, rank="TP0", text="", sizes={"usage": _size(1.5)}
    )
    assert release_range([with_usage]).text == "0.4.4 .. 0.5.8"


def test_a_given_release_is_one_release_and_says_so() -> None:
    found = given_release(version_code("0.5.2"))
    assert found.given and found.text == "0.5.2"
    assert found.allows(5002) and not found.allows(5003)
    assert VersionRange().text == "unknown" and VersionRange().allows(1)
