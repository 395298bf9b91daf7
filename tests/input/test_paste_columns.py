"""What a paste puts around SGLang's lines: Windows line ends, GitHub quote markers, docker compose
and kubectl columns, a prefix whose timestamp was cut. Each input is a short line written in the
shape found in a GitHub thread (the thread is cited); no third-party log is copied here.
"""

from __future__ import annotations

import io

import pytest

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.input.logical import split_physical_line, strip_paste_columns
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind, ParsedLog

# A startup that OOMs while SGLang allocates req_to_token, in the shape of
# https://github.com/sgl-project/sglang/pull/6744 (numbers made up).
OOM_STARTUP = [
    "[2025-05-29 14:59:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
    "avail mem=22.00 GB, mem usage=57.00 GB.",
    "[2025-05-29 14:59:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2344, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1002, in '
    "init_memory_pool",
    "    self.req_to_token_pool = ReqToTokenPool(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. GPU 0 has a total "
    "capacity of 79.44 GiB of which 22.00 GiB is free. Of the allocated memory 55.80 GiB is "
    "allocated by PyTorch, and 50.00 MiB is reserved by PyTorch but unallocated.",
]


def _parse(data: bytes) -> ParsedLog:
    return parse_log(io.BytesIO(data), label="paste.txt")


def _diagnose(data: bytes) -> Diagnosis:
    parsed = _parse(data)
    return diagnose(parsed, build(parsed, LoadOptions()))


def _joined(lines: list[str], end: str = "\n") -> bytes:
    return (end.join(lines) + end).encode()


def test_the_plain_startup_reads_as_an_oom_in_the_memory_pool() -> None:
    result = _diagnose(_joined(OOM_STARTUP))
    assert (result.outcome, result.phase.value) == ("oom", "memory_pool")
    assert result.shortfall_bytes == 18 << 30


@pytest.mark.parametrize(
    ("shape", "decorate"),
    [
        # a reply quoting the log, https://github.com/sgl-project/sglang/issues/5285
        ("github quote", lambda line: "> " + line),
        ("nested quote", lambda line: "> > " + line),
        # `docker compose logs`, https://github.com/ggml-org/llama.cpp/issues/1866 (same column)
        ("docker compose", lambda line: "sglang-1  | " + line),
        ("kubectl --prefix", lambda line: "[pod/sglang-0/sglang] " + line),
        ("kubectl --timestamps", lambda line: "2025-05-29T14:59:00.123456789Z " + line),
        ("compose + timestamps", lambda line: "sglang-1  | 2025-05-29T14:59:00Z " + line),
        # the numbers `cat -n` and `grep -n` put first
        ("cat -n", lambda line: "    12\t" + line),
        ("grep -n", lambda line: "12:" + line),
        # Python's logging around the scheduler's output (an olmocr paste in tests/data)
        ("python logging", lambda line: "2025-05-29 14:59:00,531 - __main__ - INFO - " + line),
    ],
)
def test_paste_columns_do_not_hide_the_traceback(shape: str, decorate: object) -> None:
    assert callable(decorate)
    result = _diagnose(_joined([decorate(line) for line in OOM_STARTUP]))
    assert (result.outcome, result.phase.value) == ("oom", "memory_pool"), shape
    assert result.shortfall_bytes == 18 << 30, shape


def test_windows_line_ends_keep_bare_error_lines() -> None:
    # a CRLF paste (Windows), the allocator's message alone too; shape of
    # https://github.com/sgl-project/sglang/issues/5285
    result = _diagnose(_joined(OOM_STARTUP, end="\r\n"))
    assert (result.outcome, result.phase.value) == ("oom", "memory_pool")
    alone = _parse(_joined(OOM_STARTUP[-1:], end="\r\n"))
    assert alone.startup.outcome == "oom"
    assert EventKind.OOM_MESSAGE in {e.kind for e in alone.startup.events}


def test_a_crlf_line_end_is_no_tqdm_redraw() -> None:
    (logical,) = split_physical_line(1, "KV Cache is allocated. #tokens: 46045, KV size: 2.99 GB\r")
    assert logical.text == "KV Cache is allocated. #tokens: 46045, KV size: 2.99 GB"


def test_a_prefix_without_its_timestamp_is_still_a_prefix() -> None:
    # `[TP0] ...`, `[DP0 TP0 EP0] ...`: a user cut the timestamps before pasting
    # (shapes of https://github.com/sgl-project/sglang/issues/6017)
    lines = [
        "[DP1 TP1 EP1] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=31.87 GB, mem usage=105.59 GB.",
        "[DP0 TP0 EP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=31.96 GB, mem usage=105.59 GB.",
        "[DP0 TP0 EP0] KV Cache is allocated. #tokens: 161488, KV size: 10.57 GB",
    ]
    parsed = _parse(_joined(lines))
    assert parsed.startup.rank == "DP0 TP0 EP0"
    assert [e.line for e in parsed.startup.events] == [2, 3]
    assert parsed.startup.events[1].values["tokens"] == 161488


@pytest.mark.parametrize(
    "prose",
    [
        # https://github.com/sgl-project/sglang/issues/29575 put the summary line in its title
        "[Bug] max_total_num_tokens=2086558, chunked_prefill_size=8192",
        "[H100] KV Cache is allocated. #tokens: 46045, KV size: 2.99 GB",
    ],
)
def test_a_bracketed_word_is_no_rank_prefix(prose: str) -> None:
    logical = split_physical_line(1, prose)
    assert not any(part.prefixed for part in logical)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("     1\t", "Load weight begin. avail mem=78.00 GB"),
        ("12:", "Load weight begin. avail mem=78.00 GB"),
        ("2025-05-29 14:59:00,531 - INFO - ", "Load weight begin. avail mem=78.00 GB"),
        ("2025-05-29 14:59:00,531 - sglang.srt - WARNING - ", "Memory pool end. avail mem=9.00 GB"),
    ],
)
def test_a_bare_message_after_a_line_number_or_a_logger_column(column: str, message: str) -> None:
    # no SGLang prefix at all: the paste's lines are the messages once the column is peeled
    parsed = _parse(_joined([column + message]))
    (event,) = parsed.startup.events
    assert event.kind in (EventKind.LOAD_BEGIN, EventKind.MEMORY_POOL_END)
    assert event.sizes["avail"].text == message.rsplit("=", 1)[1]


@pytest.mark.parametrize("text", ["88", "12:00:00 restarted", "4 GB, mem usage=1.00 GB", "1614"])
def test_a_number_of_the_message_is_no_line_number(text: str) -> None:
    assert strip_paste_columns(text) == text


def test_columns_are_peeled_only_at_the_line_start() -> None:
    assert strip_paste_columns("sglang-1  | > [TP0] x\r") == "[TP0] x"
    # a pipe later in the line (a tqdm bar) is SGLang's text
    bar = "Capturing batches (bs=4 avail_mem=1.00 GB): 100%|#####| 4/4"
    assert strip_paste_columns(bar) == bar


def test_an_oom_message_and_frames_wrapped_by_a_narrow_terminal_are_joined() -> None:
    # a paste hard-wrapped at 80 columns (tmux, a web console); shape of
    # https://github.com/sgl-project/sglang/issues/5285
    wrapped = [
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py",',
        " line 934, in init_cuda_graphs",
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate",
        "448.00 MiB. GPU 7 has a total capacity of 95.00 GiB of which 312.00 MiB is fr",
        "ee. Of the allocated memory 88.20 GiB is allocated by PyTorch.",
    ]
    result = _diagnose(_joined(wrapped))
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    assert result.shortfall_bytes == (448 - 312) << 20


def test_a_wrap_never_swallows_the_next_record() -> None:
    # an OOM text without its free figure, then a record of its own: read apart
    lines = [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on this GPU",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/tp_worker.py", line 238, in forward_batch_generation',
    ]
    kinds = [e.kind for e in _parse(_joined(lines)).startup.events]
    assert kinds.count(EventKind.OOM_MESSAGE) == 1 and EventKind.TRACEBACK in kinds


def test_an_issue_title_tag_before_a_bare_line_is_dropped() -> None:
    # https://github.com/sgl-project/sglang/issues/29575 pasted its summary line after `[Bug] `
    parsed = _parse(
        b"[Bug] max_total_num_tokens=2086558, chunked_prefill_size=8192, max_prefill_tokens=16384,"
        b" max_running_requests=33, context_len=256000, available_gpu_mem=17.22 GB\n"
    )
    (event,) = [e for e in parsed.startup.events if e.kind is EventKind.SUMMARY]
    assert event.values["max_total_num_tokens"] == 2086558


def test_prose_saying_out_of_memory_does_not_move_the_failure() -> None:
    # https://github.com/sgl-project/sglang/issues/1828 shape: the user's sentence mentions the
    # OOM before the quoted log; the phase comes from the log, not from the sentence
    lines = [
        'I get an "out of memory" error with --mem-fraction-static 0.9 on a 24GB GPU:',
        "> [2024-10-28 10:12:01 TP0] Memory pool end. avail mem=1.02 GB",
        "> [2024-10-28 10:12:02 TP0] Capture cuda graph begin. avail mem=1.01 GB",
        "> torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 1.01 GiB is free.",
    ]
    result = _diagnose(_joined(lines))
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
