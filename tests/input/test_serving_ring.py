"""The last serving-time line (`Prefill batch.` / `Decode batch.`) before a kept line, and before
the end: kept when it comes after the previous kept line and fewer than SERVING_REACH lines
before it, one line held whatever the log's length; every path agrees on it (a stream, a file
read here, in halves with a worker, or by grep). Synthetic lines in the shapes of v0.2.13
managers/tp_worker.py:270-277, :419-427 and v0.4.6 managers/scheduler.py:992-1047."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from unittest import mock

import pytest

from memledger.input import grep_scan, reader
from memledger.input.parsing import parse_log
from memledger.input.reader import ReadStats, iter_candidate_lines, open_log
from memledger.input.scan import SERVING_REACH, LineFilter, scan_lines
from memledger.model.events import EventKind

P = "[2026-01-05 10:00:00 TP0] "
DECODES = 100_000
ACCESS = '[2026-01-05 10:00:01] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK'
HAS_GREP = shutil.which("grep") is not None and grep_scan.has_pcre(shutil.which("grep") or "")


def _decode(i: int) -> str:
    return (
        f"{P}Decode batch. #running-req: {i % 64 + 1}, #token: {i}, token usage: 0.50, "
        f"gen throughput (token/s): 900.00, #queue-req: 0"
    )


PREFILL = (
    "[gpu=0] Prefill batch. #new-seq: 3, #new-token: 13938, #cached-token: 0, "
    "cache hit rate: 0.00%, #running-req: 7, #queue-req: 12"
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


def _log(between: int = 0, after: int = 3) -> tuple[bytes, dict[str, int]]:
    """Startup lines, 10^5 decode lines, a prefill, `between` access lines, an OOM, `after`
    decode lines."""
    lines = [
        P + "Load weight begin. avail mem=78.41 GB",
        P + "Memory pool end. avail mem=9.83 GB",
        *(_decode(i) for i in range(DECODES)),
        PREFILL,
        *([ACCESS] * between),
        OOM,
        *(_decode(i) for i in range(after)),
    ]
    at = {"prefill": DECODES + 3, "oom": DECODES + 4 + between, "last": len(lines)}
    return ("\n".join(lines) + "\n").encode(), at


def test_the_last_serving_line_before_a_kept_line_and_the_end_are_kept_one_held() -> None:
    data, at = _log()
    line_filter = LineFilter()
    found = []
    for item in scan_lines(io.BytesIO(data).read, line_filter):
        assert line_filter.held is None or isinstance(line_filter.held[0], int)  # one line
        found.append(item)
    assert [n for n, _ in found] == [1, 2, at["prefill"], at["oom"], at["last"]]
    assert line_filter.held is None


@pytest.mark.parametrize("between", [SERVING_REACH - 1, SERVING_REACH])
def test_a_serving_line_out_of_reach_is_not_kept(between: int) -> None:
    data, at = _log(between=between, after=0)
    found = [n for n, _ in scan_lines(io.BytesIO(data).read, LineFilter())]
    within = between < SERVING_REACH
    assert found == [1, 2, *([at["prefill"]] if within else []), at["oom"]]


def test_a_streamed_log_gives_the_typed_event_of_the_batch_before_the_oom() -> None:
    data, at = _log(between=2)
    parsed = parse_log(io.BytesIO(data), label="stream")
    serving = [e for e in parsed.startup.events if e.kind is EventKind.SERVING_BATCH]
    assert [(e.line, e.rank, e.values["stage"]) for e in serving] == [
        (at["prefill"], "gpu=0", "prefill"),
        (at["last"], "TP0", "decode"),
    ]
    assert serving[0].values["new_token"] == 13938


def _candidates(source: Path | io.BytesIO, prefilter: str) -> tuple[list[tuple[int, bytes]], int]:
    stats = ReadStats()
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": prefilter}), open_log(source) as log:
        return list(iter_candidate_lines(log, stats)), stats.n_lines


@pytest.mark.parametrize("between", [0, 2, SERVING_REACH])
def test_a_file_in_one_part_or_two_by_grep_or_here_and_a_stream_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, between: int
) -> None:
    data, _ = _log(between=between)
    path = tmp_path / "serving.log"
    path.write_bytes(data)
    streamed = _candidates(io.BytesIO(data), "python")
    assert _candidates(path, "python") == streamed
    _halves(monkeypatch, path)
    assert _candidates(path, "python") == streamed
    if HAS_GREP:
        assert _candidates(path, "grep") == streamed
        assert _candidates(io.BytesIO(data), "grep") == streamed  # a stream fed to grep


def _halves(monkeypatch: pytest.MonkeyPatch, path: Path) -> int:
    """Have the file read in halves (this process and a worker); where the worker starts."""
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 20)
    monkeypatch.setattr(reader, "cores", lambda: 2)
    with open_log(path) as log:
        split = reader._split_point(log)
    assert split is not None
    return split


@pytest.mark.parametrize("worker_finds", ["the candidate", "nothing"])
def test_the_serving_line_at_the_end_of_the_first_half_is_kept_before_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_finds: str
) -> None:
    head = "\n".join([P + "Load weight begin. avail mem=78.41 GB", *map(_decode, range(9000))])
    size = len(head) + 1
    if worker_finds == "the candidate":  # the prefill straddles the middle, the OOM follows it
        tail = [OOM, *(["x" * 80] * ((size - len(OOM)) // 81))]
    else:  # two long lines of no interest after the prefill, then the end
        tail = ["x" * (size // 2), "y" * (size // 2)]
    data = ("\n".join([head, PREFILL, *tail]) + "\n").encode()
    path = tmp_path / "halves.log"
    path.write_bytes(data)
    streamed = _candidates(io.BytesIO(data), "python")
    prefill = (9002, PREFILL.encode())
    assert prefill in streamed[0]
    split = _halves(monkeypatch, path)
    assert data.rindex(PREFILL.encode(), 0, split) < split <= data.index(b"x")  # split after it
    assert _candidates(path, "python") == streamed
    if HAS_GREP:
        assert _candidates(path, "grep") == streamed
