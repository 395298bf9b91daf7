"""Pasted lines cut across two physical lines (a terminal or copy hard-wrap), and prefixes that
tools and shortened pastes put before SGLang's lines. Each input is written here in a shape found
in a public thread (cited) with made-up numbers; no third-party log is copied.

A cut line is rejoined only when exactly one reading makes sense; otherwise its cut value is
dropped with a note, never read as a wrong number (memledger.input.wrapped).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from memledger.input.facts import facts_of
from memledger.input.parsing import parse_log
from memledger.model.events import Event, EventKind, ParsedLog


def _parse(lines: list[str]) -> ParsedLog:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")


def _one(parsed: ParsedLog, kind: EventKind) -> Event:
    (event,) = [e for e in parsed.startup.events if e.kind is kind]
    return event


def _sizes(event: Event) -> dict[str, str]:
    return {key: size.text for key, size in event.sizes.items()}


P = "[2026-01-14 05:25:51 TP0] "


def test_a_server_args_repr_cut_inside_a_number_is_rejoined() -> None:
    # https://github.com/LMCache/LMCache/issues/2400 pasted `max_prefill_tokens=1638` / `4, ...`
    parsed = _parse(
        [
            "[2026-01-14 05:25:33] server_args=ServerArgs(model_path='Qwen/Qwen3-14B', "
            "mem_fraction_static=0.835, chunked_prefill_size=8192, max_prefill_tokens=1638",
            "4, prefill_max_requests=None, schedule_policy='fcfs', tp_size=1)",
            P + "Load weight begin. avail mem=78.00 GB",
        ]
    )
    params = _one(parsed, EventKind.SERVER_ARGS).params
    assert params is not None and params["max_prefill_tokens"] == 16384
    assert params["tp_size"] == 1
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 1)"]


@pytest.mark.parametrize(
    ("first", "second", "kind", "sizes", "values"),
    [
        # a number cut in two: `max_total_num_tokens=16` alone would be 16 tokens
        (
            "max_total_num_tokens=16",
            "1488, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=4096, context_len=40960, available_gpu_mem=3.00 GB",
            EventKind.SUMMARY,
            {"available_gpu_mem": "3.00 GB"},
            {"max_total_num_tokens": 161488, "context_len": 40960},
        ),
        (
            "KV Cache is allocated. #tokens: 161488, K size: 5.27 GB, V size: 5.2",
            "7 GB",
            EventKind.KV_ALLOCATED,
            {"k": "5.27 GB", "v": "5.27 GB"},
            {"tokens": 161488},
        ),
        (
            "Memory pool end. avail mem=3",
            "9.00 GB",
            EventKind.MEMORY_POOL_END,
            {"avail": "39.00 GB"},
            {},
        ),
        # a cut at a space the copy dropped: only `mem usage` is a key SGLang prints
        (
            "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=50.00 GB, mem",
            "usage=28.00 GB.",
            EventKind.LOAD_END,
            {"avail": "50.00 GB", "usage": "28.00 GB"},
            {"type": "Qwen3ForCausalLM"},
        ),
    ],
)
def test_a_memory_line_cut_in_two_is_rejoined(
    first: str, second: str, kind: EventKind, sizes: dict[str, str], values: dict[str, object]
) -> None:
    # a terminal wrap of a pasted log, shape of https://github.com/sgl-project/sglang/issues/5285
    parsed = _parse([P + "Load weight begin. avail mem=78.00 GB", P + first, second])
    event = _one(parsed, kind)
    assert _sizes(event) == sizes
    assert {key: event.values.get(key) for key in values} == values
    assert event.line == 2
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 2)"]
    assert parsed.startup.skipped_count == 0  # the tail is part of the line, not a skipped line


@pytest.mark.parametrize(
    ("first", "second", "value"),
    [
        (
            "type=Qwen3For",
            "CausalLM, dtype=torch.bfloat16, mem usage=28.00 GB.",
            "Qwen3ForCausalLM",
        ),
        ("type=Qwen3ForCausalLM, dtype=torch.", "bfloat16, mem usage=28.00 GB.", "torch.bfloat16"),
    ],
)
def test_a_cut_inside_a_value_reads_the_whole_value(first: str, second: str, value: str) -> None:
    # `Qwen3For` + `CausalLM`: with a space the line would read `Qwen3For` and leave `CausalLM`
    # unread; a hard wrap keeps every character, so the join without one is the line
    parsed = _parse([P + "Load weight end. avail mem=50.00 GB, " + first, second])
    event = _one(parsed, EventKind.LOAD_END)
    assert value in event.values.values()
    assert _sizes(event) == {"avail": "50.00 GB", "usage": "28.00 GB"}
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 1)"]


@pytest.mark.parametrize("unit", ["GB", "GiB", "MB"])
def test_a_cut_at_the_blank_before_a_unit_is_rejoined(unit: str) -> None:
    # a terminal cut `avail mem=22.76 GB` at its blank: the unit alone on the next line
    parsed = _parse([P + "Load weight begin. avail mem=21.40", " " + unit])
    assert _sizes(_one(parsed, EventKind.LOAD_BEGIN)) == {"avail": "21.40 " + unit}
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 1)"]


def test_a_cut_number_that_no_reading_accepts_is_not_read() -> None:
    parsed = _parse([P + "Memory pool end. avail mem=3", "9.00 GB + ? ( [ ="])
    assert _sizes(_one(parsed, EventKind.MEMORY_POOL_END)) == {}
    assert parsed.notes == ["1 line cut at the end (line 1): the cut value was not read"]


def test_half_a_kv_pair_never_stands_for_the_pool() -> None:
    # the V size cut off: K alone would read as the whole KV pool
    parsed = _parse([P + "KV Cache is allocated. #tokens: 161488, K size: 5.27 GB, V size: 5.2"])
    event = _one(parsed, EventKind.KV_ALLOCATED)
    assert _sizes(event) == {} and event.values["tokens"] == 161488
    reasons = [u.reason for u in parsed.startup.unrecognised]
    assert any("K size without its pair" in reason for reason in reasons)


def test_half_a_kv_pair_still_gives_the_printed_k_fact() -> None:
    # a paste cut at the terminal width after `V size`: the pool stays unread (above), but the
    # k_size fact is the number the line printed and v_size is absent
    parsed = _parse([P + "KV Cache is allocated. #tokens: 161488, K size: 5.27 GB, V size"])
    facts = facts_of(parsed)
    assert (facts["k_size"], facts["v_size"], facts["kv_tokens"]) == (5.27, None, 161488)
    assert _sizes(_one(parsed, EventKind.KV_ALLOCATED)) == {}


@pytest.mark.parametrize(
    ("ending", "after"),
    [
        ("48", "Killed"),  # the shell reporting SIGKILL: a record of its own
        ("48", "100%|##########| 4/4 [00:02<00:00,  1.50it/s]"),
        ("48", "Traceback (most recent call last):"),
        ("48", "  continued but indented"),
        ("48", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
        # prose starting with a number after a line that ends in a full stop: a numbered list
        # under the pasted log, a count
        ("40960.", "2. Then I restarted the server"),
        ("40960.", "3) restarted with --mem-fraction-static 0.8"),
        ("40960.", "100 requests done"),
    ],
)
def test_a_complete_line_keeps_the_next_record_apart(ending: str, after: str) -> None:
    parsed = _parse(
        [
            P + "max_total_num_tokens=161488, max_prefill_tokens=8192, "
            f"max_running_requests=16384, context_len={ending}",
            after,
        ]
    )
    assert _one(parsed, EventKind.SUMMARY).values["context_len"] == int(ending.rstrip("."))
    assert not any(note.startswith("rejoined") for note in parsed.notes)


@pytest.mark.parametrize("prefix", ["", P])
def test_a_line_wrapped_by_hand_after_a_comma_takes_its_indented_rest(prefix: str) -> None:
    # a report's quote of a summary line, wrapped after a field with the rest indented (a
    # two-node DSV4 startup note quoted it so); no SGLang line ends with a comma
    parsed = _parse(
        [
            prefix + "max_total_num_tokens=287488, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384,",
            "  max_running_requests=32, context_len=327680, available_gpu_mem=14.93 GB",
        ]
    )
    facts = facts_of(parsed)
    wanted = {"max_total_num_tokens": 287488, "max_running_requests": 32, "context_len": 327680}
    assert {key: facts[key] for key in wanted} == wanted and facts["available_gpu_mem"] == 14.93
    assert "rejoined 1 line cut across two physical lines (line 1)" in parsed.notes


def test_a_hand_wrap_over_three_lines_takes_a_middle_line_without_a_memory_word() -> None:
    # the middle piece holds no memory word: the scanner keeps it as a cut line's indented rest
    # (sglang.lines.CUT_TAIL_ERE) and the line goes on while a piece ends with a comma
    parsed = _parse(
        [
            "max_total_num_tokens=140023, chunked_prefill_size=4096,",
            "  max_prefill_tokens=16384, max_running_requests=48,",
            "  context_len=140000, available_gpu_mem=1.39 GB",
        ]
    )
    facts = facts_of(parsed)
    wanted = {"max_total_num_tokens": 140023, "max_running_requests": 48, "context_len": 140000}
    assert {key: facts[key] for key in wanted} == wanted and facts["available_gpu_mem"] == 1.39
    assert "rejoined 1 line cut across two physical lines (line 1)" in parsed.notes


@pytest.mark.parametrize("prefilter", ["python", "grep"])
def test_a_summary_quoted_in_a_script_comment_and_wrapped(
    prefilter: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a script header quoting the startup's summary line (the shape of an sglang-serve recipe):
    # each piece behind `#   `, the middle one without a memory word; both scanners keep it
    if prefilter == "grep" and shutil.which("grep") is None:
        pytest.skip("grep not on PATH")
    monkeypatch.setenv("MEMLEDGER_PREFILTER", prefilter)
    log = tmp_path / "serve.sh"
    log.write_text(
        "# SGLang runtime:\n"
        "#   max_total_num_tokens=140023, chunked_prefill_size=4096,\n"
        "#   max_prefill_tokens=16384, max_running_requests=48,\n"
        "#   context_len=140000, available_gpu_mem=1.39 GB\n",
        encoding="utf-8",
    )
    facts = facts_of(parse_log(log))
    wanted = {"max_total_num_tokens": 140023, "max_running_requests": 48, "context_len": 140000}
    assert {key: facts[key] for key in wanted} == wanted and facts["available_gpu_mem"] == 1.39


def test_a_server_args_repr_wrapped_over_three_lines_is_read_whole() -> None:
    parsed = _parse(
        [
            "[2025-03-10 16:19:28] server_args=ServerArgs(model_path='m', tp_size=2, log_level='i",
            "nfo', log_level_http=None, log_requests=False, log_requests_level=0, show_time_c",
            "ost=False, mem_fraction_static=0.87)",
            P + "Load weight begin. avail mem=78.00 GB",
        ]
    )
    params = _one(parsed, EventKind.SERVER_ARGS).params
    assert params is not None
    assert (params["log_level"], params["show_time_cost"], params["mem_fraction_static"]) == (
        "info",
        False,
        0.87,
    )


def test_an_indented_line_after_a_complete_line_is_not_its_rest() -> None:
    # `..., context_len=48` is whole: an indented next line is never glued to it
    parsed = _parse(
        [
            P + "max_total_num_tokens=161488, max_running_requests=16384, context_len=48",
            "  available_gpu_mem=14.93 GB",
        ]
    )
    assert _one(parsed, EventKind.SUMMARY).sizes == {}
    assert not any(note.startswith("rejoined") for note in parsed.notes)


def test_only_the_very_next_physical_line_continues_a_line() -> None:
    parsed = _parse(
        [P + "Memory pool end. avail mem=3", P + "Init attention backend begin.", "9.00 GB"]
    )
    assert _sizes(_one(parsed, EventKind.MEMORY_POOL_END)) == {}
    assert not any(note.startswith("rejoined") for note in parsed.notes)


# ---- prefixes -------------------------------------------------------------------------------


def test_a_month_day_prefix_is_a_prefix() -> None:
    # `[12-27 11:24:23] ` (datefmt `%m-%d %H:%M:%S`, v0.5.23 multimodal_gen/runtime/utils/
    # logging_utils.py:459), printed so in https://github.com/sgl-project/sglang/pull/15936 and
    # https://github.com/gpustack/gpustack/issues/3848
    parsed = _parse(
        [
            "[12-27 11:24:20 TP0] Load weight begin. avail mem=78.00 GB",
            "[12-27 11:24:23 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=50.00 GB",
            "[12-27 11:24:23] some bare line from the launcher: 1.00 GB",
        ]
    )
    assert [e.kind for e in parsed.startup.events] == [EventKind.LOAD_BEGIN, EventKind.LOAD_END]
    assert parsed.startup.rank == "TP0" and parsed.notes == []


def test_a_ray_actor_column_before_each_line() -> None:
    # verl's SGLang rollout under Ray: `(WorkerDict pid=559716) ` before every scheduler line,
    # https://github.com/verl-project/verl/pull/490
    lines = [
        "(WorkerDict pid=559716) " + P + "Load weight begin. avail mem=78.00 GB",
        "(WorkerDict pid=559716) "
        + P
        + "KV Cache is allocated. #tokens: 161488, KV size: 10.57 GB",
    ]
    parsed = _parse(lines)
    assert _sizes(_one(parsed, EventKind.KV_ALLOCATED)) == {"kv": "10.57 GB"}
    assert parsed.startup.rank == "TP0"


# ---- tails without a memory word (sglang.lines.CUT_TAIL_ERE keeps them for the joiner) -------


@pytest.mark.parametrize(
    ("first", "second", "kind", "values", "sizes"),
    [
        # the pool's token count cut in two, nothing else on the second line
        (
            "KV Cache is allocated. #tokens: 1614",
            "88",
            EventKind.KV_ALLOCATED,
            {"tokens": 161488},
            {},
        ),
        # an older summary (no size on it): the cut falls in max_running_requests
        (
            "max_total_num_tokens=161488, max_prefill_tokens=16384, max_running_requests=40",
            "96, context_len=40960",
            EventKind.SUMMARY,
            {"max_running_requests": 4096, "context_len": 40960},
            {},
        ),
        # the cut falls inside a key
        (
            "max_total_num_tokens=161488, max_prefill_tokens=16384, max_running_requests=4096, "
            "context_",
            "len=40960",
            EventKind.SUMMARY,
            {"context_len": 40960},
            {},
        ),
        # the cut falls inside the unit
        (
            "Load weight end. type=Qwen3ForCausalLM, avail mem=50.00 GB, mem usage=28.00 G",
            "B.",
            EventKind.LOAD_END,
            {"type": "Qwen3ForCausalLM"},
            {"avail": "50.00 GB", "usage": "28.00 GB"},
        ),
    ],
)
def test_a_tail_without_a_memory_word_is_rejoined(
    first: str, second: str, kind: EventKind, values: dict[str, object], sizes: dict[str, str]
) -> None:
    parsed = _parse([P + "Load weight begin. avail mem=78.00 GB", P + first, second])
    event = _one(parsed, kind)
    assert {key: event.values.get(key) for key in values} == values
    assert _sizes(event) == sizes or not sizes
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 2)"]


def test_a_quoted_crlf_paste_with_tails_without_memory_words() -> None:
    # GitHub `> ` quote of a Windows copy, cut by the terminal it came from
    data = (
        "> " + P + "Load weight begin. avail mem=78.00 GB\r\n"
        "> " + P + "KV Cache is allocated. #tokens: 1614\r\n"
        "> 88, K size: 5.27 GB, V size: 5.27 GB\r\n"
        "> " + P + "max_total_num_tokens=1614\r\n"
        "> 88, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960\r\n"
    )
    parsed = parse_log(io.BytesIO(data.encode()), label="paste.log")
    assert _one(parsed, EventKind.KV_ALLOCATED).values["tokens"] == 161488
    assert _one(parsed, EventKind.SUMMARY).values["max_total_num_tokens"] == 161488


def test_a_wrap_with_the_padding_the_terminal_left_is_rejoined() -> None:
    # a web terminal pads the wrapped rest to its width (shape of sglang issue #4276, DP5 TP5)
    parsed = _parse(
        [
            P + "Capture cuda graph begin. This can take up to several minutes. a",
            "vail mem=24.47 GB" + " " * 60,
            "  0%|          | 0/32 [00:00<?, ?it/s]",
        ]
    )
    assert _sizes(_one(parsed, EventKind.CAPTURE_BEGIN)) == {"avail": "24.47 GB"}
    assert parsed.notes == ["rejoined 1 line cut across two physical lines (line 1)"]


def test_a_server_args_repr_wrapped_where_no_memory_word_follows() -> None:
    # the rest of the repr holds no memory word (`=None, log_requests=False, ...`): kept by the
    # scanner all the same (sglang.lines.CUT_TAIL_ERE), so the values after the wrap are read
    parsed = _parse(
        [
            "[2025-03-10 16:19:28] server_args=ServerArgs(model_path='m', tp_size=2, "
            "log_level='info', log_level_http",
            "=None, log_requests=False, log_requests_level=0, show_time_cost=False)",
            P + "Load weight begin. avail mem=78.00 GB",
        ]
    )
    params = _one(parsed, EventKind.SERVER_ARGS).params
    assert params is not None
    assert (params["log_level_http"], params["log_requests"], params["show_time_cost"]) == (
        None,
        False,
        False,
    )


def test_a_server_args_repr_cut_before_its_end_loses_its_last_item_and_says_so() -> None:
    # the paste ends inside the repr: `enable_metrics=Fa` is no value (it was `False`)
    parsed = _parse(
        [
            "[2025-03-10 16:19:28] server_args=ServerArgs(model_path='m', tp_size=2, "
            "log_requests=False, enable_metrics=Fa"
        ]
    )
    params = _one(parsed, EventKind.SERVER_ARGS).params
    assert params is not None and params["tp_size"] == 2 and params["log_requests"] is False
    assert "enable_metrics" not in params
    reasons = [u.reason for u in parsed.startup.unrecognised]
    assert reasons == [
        "server_args: cut before its closing bracket: the last item 'enable_metrics=Fa' not read"
    ]
