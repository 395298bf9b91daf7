"""The last serving-time lines (`Prefill batch.` / `Decode batch.`) before a kept line: a stream
read whole keeps the last of each marker, at most two held whatever the log's length; files
(the grep prefilter, a worker) keep none, and grep and the built-in scanner still agree on them.
Synthetic lines in the shapes of v0.2.13 managers/tp_worker.py:270-277, :419-427 and v0.4.6
managers/scheduler.py:992-1047."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from unittest import mock

import pytest

from memledger.input import grep_scan
from memledger.input.parsing import parse_log
from memledger.input.reader import ReadStats, iter_candidate_lines, open_log
from memledger.input.scan import LineFilter, scan_lines
from memledger.model.events import EventKind

P = "[2026-01-05 10:00:00 TP0] "
DECODES = 100_000


def _decode(i: int) -> str:
    return (
        f"{P}Decode batch. #running-req: {i % 64 + 1}, #token: {i}, token usage: 0.50, "
        f"gen throughput (token/s): 900.00, #queue-req: 0"
    )


def _log() -> tuple[bytes, dict[str, int]]:
    """Startup lines, 10^5 decode lines, a prefill, more decodes, an OOM, decodes after it."""
    lines = [
        P + "Load weight begin. avail mem=78.41 GB",
        P + "Memory pool end. avail mem=9.83 GB",
        *(_decode(i) for i in range(DECODES)),
        "[gpu=0] Prefill batch. #new-seq: 3, #new-token: 13938, #cached-token: 0, "
        "cache hit rate: 0.00%, #running-req: 7, #queue-req: 12",
        *(_decode(i) for i in range(5)),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        *(_decode(i) for i in range(3)),
    ]
    at = {
        "prefill": DECODES + 3,
        "decode_before": DECODES + 8,
        "oom": DECODES + 9,
        "decode_last": DECODES + 12,
    }
    return ("\n".join(lines) + "\n").encode(), at


def test_only_the_last_serving_lines_before_a_kept_line_are_kept_and_at_most_two_held() -> None:
    data, at = _log()
    stream = io.BytesIO(data)
    line_filter = LineFilter(keep_serving=True)
    found = []
    for item in scan_lines(stream.read, line_filter):
        assert len(line_filter.serving) <= 2  # bounded whatever the number of serving lines
        found.append(item)
    numbers = [n for n, _ in found]
    assert numbers == [1, 2, at["prefill"], at["decode_before"], at["oom"], at["decode_last"]]
    assert not line_filter.serving


def test_without_keep_serving_no_serving_line_is_kept() -> None:
    data, at = _log()
    found = list(scan_lines(io.BytesIO(data).read, LineFilter()))
    assert [n for n, _ in found] == [1, 2, at["oom"]]


def test_a_streamed_log_gives_typed_events_of_the_last_lines_only() -> None:
    data, at = _log()
    parsed = parse_log(io.BytesIO(data), label="stream")
    serving = [e for e in parsed.startup.events if e.kind is EventKind.SERVING_BATCH]
    assert [e.line for e in serving if e.rank == "TP0"] == [at["decode_before"], at["decode_last"]]
    (prefill,) = [e for e in serving if e.values["stage"] == "prefill"]
    assert (prefill.line, prefill.rank, prefill.values["new_token"]) == (
        at["prefill"],
        "gpu=0",
        13938,
    )


def _candidates(path: Path, prefilter: str) -> list[tuple[int, bytes]]:
    stats = ReadStats()
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": prefilter}), open_log(path) as log:
        return list(iter_candidate_lines(log, stats))


@pytest.mark.skipif(
    shutil.which("grep") is None or not grep_scan.has_pcre(shutil.which("grep") or ""),
    reason="no grep with -P on PATH",
)
def test_a_file_keeps_none_and_grep_agrees_with_the_built_in_scanner(tmp_path: Path) -> None:
    data, at = _log()
    path = tmp_path / "serving.log"
    path.write_bytes(data)
    python = _candidates(path, "python")
    assert python == _candidates(path, "grep")
    assert [n for n, _ in python] == [1, 2, at["oom"]]
    with path.open("rb") as handle, open_log(handle) as log:  # the same bytes as a stream
        streamed = [n for n, _ in iter_candidate_lines(log, ReadStats())]
    assert streamed == [1, 2, at["prefill"], at["decode_before"], at["oom"], at["decode_last"]]
