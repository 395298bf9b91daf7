"""Every scanner keeps exactly the same lines: the built-in one (alone and with its worker
process), the grep pipeline, and `reference_candidates` below, the simplest split-and-check
reading of the prefilter's definition (ground truth)."""

from __future__ import annotations

import io
import re
import shutil
import sys
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import IO
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.errors import InputError
from memledger.input import reader, scan
from memledger.input.grep_scan import grep_program
from memledger.input.reader import (
    SNIFF_BYTES,
    PeekedStream,
    ReadStats,
    iter_candidate_lines,
    open_log,
)
from memledger.input.scan import (
    BORING_LINES,
    LineFilter,
    aligned_reader,
    scan_lines,
)
from memledger.sglang.errors import ANY_CASE_WORDS
from memledger.sglang.lines import CUT_TAIL_ERE, MEMORY_WORDS_ANY_CASE, PREFILTER_WORDS
from tests.conftest import REAL_LOGS, real_log_paths

Found = list[tuple[int, bytes]]

HAVE_GREP = shutil.which("grep") is not None
CUT_TAIL = re.compile(CUT_TAIL_ERE.encode())
"""A line starting as the rest of a cut memory line (kept: memledger.input.wrapped rejoins it)."""


def reference_candidates(data: bytes, extra_words: Iterable[str] = ()) -> tuple[Found, int]:
    """(candidates, number of physical lines): a line is kept when it holds a keyword (or an
    error text's or a memory-looking word in any case, or starts as a cut line's rest) and is not a
    serving-time line alone (a marker and no second `[`, or one a tool's column put there:
    scan.serving_behind_wrapper, pinned by tests/input/test_wrappers.py; a line glued to
    another SGLang line is kept, security review F11). Before each kept line, and at the end,
    the last serving-time line before it is kept too when it comes after the previous kept line,
    fewer than SERVING_REACH lines before it, and is at most SERVING_LINE_MAX bytes long."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline ends the last line; it does not start another
    words = [word.encode() for word in (*PREFILTER_WORDS, *extra_words)]
    found: Found = []
    serving: tuple[int, bytes] | None = None

    def serving_before(number: int) -> Found:
        if serving is None or number - serving[0] - 1 >= scan.SERVING_REACH:
            return []
        if (found and serving[0] < found[-1][0]) or len(serving[1]) > scan.SERVING_LINE_MAX:
            return []
        return [serving]

    for number, line in enumerate(lines, 1):
        if any(marker in line for marker in BORING_LINES) and (
            line.count(b"[") <= 1 or scan.serving_behind_wrapper(line)
        ):
            serving = (number, line)
        elif (
            any(word in line for word in words)
            or any(w.encode() in line.lower() for w in (*ANY_CASE_WORDS, *MEMORY_WORDS_ANY_CASE))
            or CUT_TAIL.match(line) is not None
        ):
            found += [*serving_before(number), (number, line)]
    found += serving_before(len(lines) + 1)
    return found, len(lines)


def scanned(source: Path | IO[bytes], prefilter: str) -> tuple[Found, int]:
    """What iter_candidate_lines keeps with MEMLEDGER_PREFILTER=prefilter, and the line count."""
    stats = ReadStats()
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": prefilter}), open_log(source) as log:
        found = list(iter_candidate_lines(log, stats))
    assert stats.n_candidates == len(found)
    return found, stats.n_lines


@pytest.mark.skipif(not HAVE_GREP, reason="grep not on PATH")
@pytest.mark.parametrize(
    "path", real_log_paths(), ids=lambda p: p.relative_to(REAL_LOGS).as_posix()
)
def test_real_logs_same_lines_from_every_scanner(path: Path) -> None:
    expected = reference_candidates(path.read_bytes())
    assert expected[0], "a real log has memory lines"
    assert scanned(path, "python") == expected
    assert scanned(path, "grep") == expected


# --- a synthetic long serving log -------------------------------------------------------------


def _serving_lines() -> Iterator[bytes]:
    """Endless serving-time lines: decode and prefill batches, access lines, a health check."""
    i = 0
    while True:
        stamp = b"[2026-11-05 1%d:%02d:%02d TP0]" % (i // 3600 % 10, i // 60 % 60, i % 60)
        running = 8 + i % 57
        yield (
            stamp + b" Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, "
            b"cuda graph: True, gen throughput (token/s): %d.%02d, #queue-req: 0, "
            % (running, running * 911, i % 100, 1000 + i % 917, i % 100)
        )
        if i % 20 == 0:
            yield (
                stamp + b" Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: %d, "
                b"token usage: 0.%02d, #running-req: %d, #queue-req: 0, "
                % (256 + i % 700, i % 4000, i % 90, running)
            )
            yield (
                b'[2026-11-05 10:13:%02d] INFO:     127.0.0.1:%d - "POST /generate HTTP/1.1" 200 OK'
                % (i % 60, 40000 + i)
            )
        if i % 97 == 0:
            yield b'[2026-11-05 10:14:00] INFO:     10.0.0.%d:5 - "GET /health HTTP/1.1" 200 OK' % (
                i % 250
            )
        i += 1


class _LogBuilder:
    """Appends lines; pads with serving lines so that the next line starts at a chosen offset."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.filler = _serving_lines()

    def add(self, *lines: bytes) -> None:
        for line in lines:
            self.data += line + b"\n"

    def fill_to(self, offset: int) -> None:
        """Serving lines up to exactly `offset` (the last one padded to fit)."""
        while True:
            gap = offset - len(self.data)
            assert gap >= 0
            line = next(self.filler)
            if len(line) + 1 + 80 <= gap:
                self.add(line)
                continue
            if gap == 0:
                return
            # a decode line stretched to the gap; an under-sized gap takes two lines
            pad = b"[2026-11-05 10:15:00 TP0] Decode batch. #running-req: 1, "
            if gap < len(pad) + 1:
                self.data[-1:] = b" " * (gap) + b"\n"  # widen the previous line instead
                return
            self.add(pad + b"." * (gap - len(pad) - 1))


LOAD_LINE = b"[2026-11-05 10:12:07 TP0] Load weight begin. avail mem=78.41 GB"
# same shape once digits are folded: only the DSV4 one holds a keyword
DSV5_LINE = b"[2026-11-05 10:12:08 TP0] model family DSV5, draft none"
DSV4_LINE = b"[2026-11-05 10:12:08 TP0] model family DSV4, draft none"


def _interesting(tag: str) -> list[bytes]:
    """Candidates and traps to put at a boundary (`tag` makes each group distinct)."""
    t = tag.encode()
    return [
        b"[2026-11-05 10:12:09 TP0] KV Cache is allocated. #tokens: 302811 (" + t + b")",
        # CR-glued: a decode batch after a capture bar is a serving-time line, dropped whole
        b"Capturing batches (bs=8 avail_mem=9.02 GB):  50%\r[2026-11-05 10:15:00 TP0] Decode "
        b"batch. #running-req: 1, " + t,
        # two markers on one line next to a candidate with none (a marker count would balance)
        b"[2026-11-05 10:15:00 TP0] Decode batch. #running-req: 1\r[2026-11-05 10:15:00 TP0] "
        b"Decode batch. #running-req: 2",
        b"[2026-11-05 10:12:49 TP0] Load weight end. avail mem=47.63 GB, mem usage=30.78 GB " + t,
        # CR-glued progress states holding keywords are candidates
        b"Capturing batches (bs=160 avail_mem=9.02 GB):   0%\rCapturing batches (bs=152 "
        b"avail_mem=8.99 GB):   4%",
        b"",
        b"\r",
        DSV5_LINE,
        DSV4_LINE,
        DSV5_LINE,
        LOAD_LINE,
        LOAD_LINE,
        b'[2026-11-05 10:14:00] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 500 Internal '
        b"Server Error",
        b"[2026-11-05 10:14:01 TP0] torch.cuda.OUT Of MEMORY: tried to allocate \xff\xfe 2 " + t,
        LOAD_LINE,
    ]


LONG_LOG_BYTES = 5 * scan.CHUNK_BYTES + 777
"""The synthetic log's exact size: its middle, where a worker takes over, is known."""
CANDIDATES_PER_GROUP = 9
"""In `_interesting`: KV Cache, Load weight end, the capture bar, DSV4, three Load weight begin,
500 ... Error, OUT Of MEMORY. The CR-glued and double decode lines, the empty ones and the DSV5
ones hold no keyword or a serving-time marker."""


def _long_serving_log() -> bytes:
    """~5 MiB: a startup, serving lines, interesting lines on the read boundaries (the peeked
    head, 1 MiB chunks) and around the middle (where a worker takes over), a line longer than a
    chunk holding a keyword only after its first MiB, and a last line without newline."""
    log = _LogBuilder()
    log.add(
        b"[2026-11-05 10:12:00] server_args=ServerArgs(model_path='org/model', tp_size=2)",
        LOAD_LINE,
        b"[2026-11-05 10:12:50 TP0] Memory pool end. avail mem=9.83 GB",
    )
    chunk = scan.CHUNK_BYTES
    # "meet": one group ends right at the boundary, the next starts on it; "across": a
    # candidate straddles the boundary, a group follows
    layout = [
        (SNIFF_BYTES, "meet"),
        (SNIFF_BYTES + chunk, "across"),
        (SNIFF_BYTES + 2 * chunk, "meet"),
        (LONG_LOG_BYTES // 2, "meet"),
    ]
    for number, (boundary, style) in enumerate(layout):
        group = _interesting(f"group {number}")
        if style == "meet":
            log.fill_to(boundary - sum(len(line) + 1 for line in group))
            log.add(*group)
            log.add(*group)
        else:
            log.fill_to(boundary - 30)
            log.add(LOAD_LINE)
            log.add(*group)
        log.fill_to(boundary + 2000)
    log.add(b"[2026-11-05 10:16:00 TP0] " + b"x" * chunk + b" then avail mem=1.00 GB at the end")
    log.add(b"[2026-11-05 10:16:01 TP0] Decode batch. " + b"y" * (chunk + 5000) + b" GB")
    last = _interesting("last")
    final = b"[2026-11-05 10:16:02] Exception in thread scheduler (no newline at the end)"
    log.fill_to(LONG_LOG_BYTES - sum(len(line) + 1 for line in last) - len(final))
    log.add(*last)
    log.data += final
    assert len(log.data) == LONG_LOG_BYTES
    return bytes(log.data)


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan") / "serving.log"
    path.write_bytes(_long_serving_log())
    return path


def _worker_finished(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int] | None]:
    """Spy on the worker's records: the list gets its (lines, bytes) when one ran to the end."""
    results: list[tuple[int, int] | None] = []
    real = scan.worker_records

    def spied(
        stdout: IO[bytes], first_line: int
    ) -> Generator[tuple[int, bytes], None, tuple[int, int] | None]:
        result = yield from real(stdout, first_line)
        results.append(result)
        return result

    monkeypatch.setattr(reader, "worker_records", spied)
    return results


def test_long_serving_log_is_what_the_test_means(long_log: Path) -> None:
    data = long_log.read_bytes()
    found, n_lines = reference_candidates(data)
    assert not data.endswith(b"\n") and n_lines > 20_000
    assert max(len(line) for line in data.split(b"\n")) > scan.CHUNK_BYTES
    serving = [(n, line) for n, line in found if _is_serving(line)]
    candidates = [item for item in found if item not in serving]
    # 3 startup lines, 2 + 1 + 2 + 2 groups on boundaries and one at the end, the straddling
    # line, the long line, the last line
    assert len(candidates) == 3 + 8 * CANDIDATES_PER_GROUP + 1 + 1 + 1
    # and the serving-time line just before a group (the filler's), not the one of many
    # megabytes before the last group
    assert 0 < len(serving) < len(candidates)
    assert all(len(line) <= scan.SERVING_LINE_MAX for _, line in serving)
    first = _interesting("group 0")[0]
    for boundary in (SNIFF_BYTES, SNIFF_BYTES + 2 * scan.CHUNK_BYTES, LONG_LOG_BYTES // 2):
        assert data[boundary - 1 : boundary] == b"\n" and data[boundary:].startswith(first[:40])
    straddling = data.index(LOAD_LINE, SNIFF_BYTES + scan.CHUNK_BYTES - 40)
    assert straddling < SNIFF_BYTES + scan.CHUNK_BYTES < straddling + len(LOAD_LINE)
    kept = [line for _, line in candidates]
    assert DSV4_LINE in kept and DSV5_LINE not in kept
    assert not any(b"Decode batch" in line and line.count(b"[") < 2 for line in kept)


def _is_serving(raw: bytes) -> bool:
    return scan.is_serving(raw)


def test_long_serving_log_same_lines_from_every_scanner(
    long_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = reference_candidates(long_log.read_bytes())
    # one process
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 62)
    assert scanned(long_log, "python") == expected
    with long_log.open("rb") as stream:
        assert scanned(stream, "python") == expected  # a stream: no worker, no grep on a path
    # this process and a worker, half each
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 20)
    finished = _worker_finished(monkeypatch)
    assert scanned(long_log, "python") == expected
    assert len(finished) == 1 and finished[0] is not None
    worker_lines, worker_bytes = finished[0]
    assert 0 < worker_lines < expected[1] and 0 < worker_bytes < long_log.stat().st_size
    if HAVE_GREP:
        assert scanned(long_log, "grep") == expected


def test_worker_that_cannot_run_leaves_the_rest_to_this_process(
    long_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = reference_candidates(long_log.read_bytes())
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 20)
    failing = [sys.executable, "-c", "import sys; sys.exit(5)"]
    monkeypatch.setattr(reader, "worker_command", lambda *_: failing)
    assert scanned(long_log, "python") == expected
    monkeypatch.setattr(reader, "worker_command", lambda *_: ["/nonexistent/python"])
    assert scanned(long_log, "python") == expected


def test_worker_failing_midway_is_an_input_error(
    long_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # some of its lines were passed on already: the scan cannot be completed honestly
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 20)
    code = "import sys; print('1:x avail'); sys.exit('disk gone')"
    monkeypatch.setattr(reader, "worker_command", lambda *_: [sys.executable, "-c", code])
    with pytest.raises(InputError, match="scan failed: disk gone"):
        scanned(long_log, "python")


def test_over_long_lines_cut_alike_with_and_without_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lines beyond MAX_LINE_BYTES are tested in pieces cut where reads end; the worker's reads
    # must end at the same offsets as a whole-file scan's, or the kept pieces would differ
    monkeypatch.setattr(scan, "CHUNK_BYTES", 3000)
    monkeypatch.setattr(scan, "MAX_LINE_BYTES", 20_000)
    log = _LogBuilder()
    for number in range(40):
        log.fill_to(len(log.data) + 7_000 + 917 * number)
        words = b" avail mem=1 GB" * (number % 5) + b" Error"
        log.add(b"z" * (1_000 * number + 17) + words + b"z" * (2_000 * (number % 7)))
    path = tmp_path / "long-lines.log"
    path.write_bytes(bytes(log.data))
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 62)
    alone = scanned(path, "python")
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 16)
    finished = _worker_finished(monkeypatch)
    assert scanned(path, "python") == alone
    assert finished and finished[0] is not None
    lines = log.data.split(b"\n")
    pieces = [(number, piece) for number, piece in alone[0] if len(lines[number - 1]) > 20_000]
    cut_lines = {number for number, _ in pieces}
    assert len(cut_lines) >= 10 and len(pieces) > len(cut_lines)  # lines kept several pieces
    for number, piece in pieces:
        assert piece in lines[number - 1] and len(piece) <= 20_000 + 3000


def test_last_line_cut_into_pieces_up_to_the_end_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # reads of 4096 bytes; the unterminated last line passes 8192 bytes in the read that ends
    # the file, so it went out in pieces and nothing of it is left over at the end
    monkeypatch.setattr(scan, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(scan, "MAX_LINE_BYTES", 8192)
    path = tmp_path / "cut.log"
    path.write_bytes(b"avail\n" + b"z" * (3 * 4096 - 6 - 3) + b" GB")
    found, n_lines = scanned(path, "python")
    assert n_lines == 2 == reference_candidates(path.read_bytes())[1]
    assert found[0] == (1, b"avail") and {number for number, _ in found[1:]} == {2}
    if HAVE_GREP:
        assert scanned(path, "grep")[1] == 2


def test_shape_verdict_never_decides_a_keyword_line() -> None:
    # folding digits makes DSV4 and DSV5 lines one shape; the exact regex still decides each
    line_filter = LineFilter(["H100"])
    lines = [DSV5_LINE, DSV4_LINE, DSV5_LINE, b"on H200 GPUs", b"on H100 GPUs", b"on H200 GPUs"]
    assert list(line_filter.candidates(lines, 1)) == [(2, DSV4_LINE), (5, b"on H100 GPUs")]
    assert list(line_filter.candidates(lines[::-1], 1)) == [(2, b"on H100 GPUs"), (5, DSV4_LINE)]


def test_python_scanner_is_the_default() -> None:
    with mock.patch.dict("os.environ", {}, clear=True):
        assert grep_program() is None
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": "python"}):
        assert grep_program() is None
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": "grep"}):
        assert grep_program() == shutil.which("grep")


# --- any chunking, any split point ------------------------------------------------------------

_LINE_PARTS = [
    b"[2026-11-05 10:12:07 TP0] ",
    b"Decode batch. #running-req: 7, ",
    b"] Decode batch",
    b"] Prefill batch",
    b"Load weight end. avail mem=4",
    b"7.63 GB",
    b"DSV",
    b"4",
    b"5",
    b"H1",
    b"00",
    b"out OF memory",
    b"\r",
    b"\xff",
    b' - "POST /generate HTTP/1.1" 200 OK',
    b"12",
    b"x",
    # what a tool puts before a line (memledger.input.wrappers): a `[` that is not SGLang's
    b"\x1b[32m",
    b"host sglang[12]: ",
    b"[pod/p/c] ",
]
_lines = st.lists(st.lists(st.sampled_from(_LINE_PARTS), max_size=6).map(b"".join), max_size=60)


def _memory_reader(data: bytes, head: int, stop: int | None = None) -> Callable[[int], bytes]:
    """Reads as a whole-file scan does: through open_log's peeked head, then the stream."""
    stream = PeekedStream(data[:head], io.BytesIO(data[head:]))
    done = 0

    def read(size: int) -> bytes:
        nonlocal done
        if stop is not None:
            size = min(size, stop - done)
            if size <= 0:
                return b""
        chunk = stream.read(size)
        done += len(chunk)
        return chunk

    return read


def _scan_split(data: bytes, split: int, head: int, line_filter: LineFilter) -> tuple[Found, int]:
    """This process's part before `split`, then a worker's from it (in-process here)."""
    first = scan_lines(_memory_reader(data, head, split), line_filter, ends=False)
    found: Found = []
    while True:
        try:
            found.append(next(first))
        except StopIteration as done:
            head_lines: int = done.value
            break
    rest = scan_lines(
        aligned_reader(io.BytesIO(data), split, head, "<memory>", lambda _: None),
        line_filter,
        head_lines + 1,
    )
    while True:
        try:
            found.append(next(rest))
        except StopIteration as done:
            return found, head_lines + done.value


def _collect(lines: Generator[tuple[int, bytes], None, int]) -> tuple[Found, int]:
    found: Found = []
    while True:
        try:
            found.append(next(lines))
        except StopIteration as done:
            return found, done.value


@settings(max_examples=150, deadline=None)
@given(
    lines=_lines,
    final_newline=st.booleans(),
    chunk=st.integers(1, 300),
    head=st.integers(0, 400),
    cut=st.integers(0, 10**6),
)
def test_any_chunking_and_split_keep_the_reference_lines(
    lines: list[bytes], final_newline: bool, chunk: int, head: int, cut: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    expected = reference_candidates(data, ["H100"]) if data else ([], 0)
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10 and i + 1 < len(data)]
    split = starts[cut % len(starts)]
    with (
        mock.patch.object(scan, "CHUNK_BYTES", chunk),
        mock.patch.object(scan, "SHAPE_CACHE_ENTRIES", 3),
    ):
        line_filter = LineFilter(["H100"])
        assert _collect(scan_lines(_memory_reader(data, head), line_filter)) == expected
        assert _scan_split(data, split, head, line_filter) == expected


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 400), min_size=1, max_size=12),
    keyword_at=st.lists(st.integers(0, 400), min_size=1, max_size=12),
    chunk=st.integers(1, 64),
    over_chunk=st.integers(0, 120),
    head=st.integers(0, 200),
    cut=st.integers(0, 100),
)
def test_over_long_lines_cut_alike_at_any_split(
    lengths: list[int], keyword_at: list[int], chunk: int, over_chunk: int, head: int, cut: int
) -> None:
    max_line = chunk + over_chunk  # MAX_LINE_BYTES >= CHUNK_BYTES, as documented
    lines = [
        b"z" * at + b"GB" + b"z" * max(0, length - at)
        for length, at in zip(lengths, keyword_at, strict=False)
    ]
    data = b"\n".join(lines)
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]
    split = starts[cut % len(starts)]
    with (
        mock.patch.object(scan, "CHUNK_BYTES", chunk),
        mock.patch.object(scan, "MAX_LINE_BYTES", max_line),
    ):
        whole = _collect(scan_lines(_memory_reader(data, head), LineFilter()))
        assert _scan_split(data, split, head, LineFilter()) == whole
    assert whole[1] == len(lines)
