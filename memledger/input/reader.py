"""Streaming reader: bytes of a log -> logical SGLang lines, each with its physical line number.

Memory stays flat: a keyword scan (memledger.input.scan; a `grep` pipeline with
MEMLEDGER_PREFILTER=grep) streams the input in 1 MiB chunks and keeps only the physical lines
that can matter, skipping serving-time lines (`Decode batch ...`, HTTP access lines) undecoded;
a big regular file is scanned by two processes, half each. Only candidate lines are decoded
(invalid UTF-8 replaced) and handed to memledger.input.logical (ANSI, CR, prefixes).
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from memledger.errors import InputError
from memledger.input.error_texts import known_shapes
from memledger.input.escaped import UnescapedStream, unescaped
from memledger.input.grep_early import END_OF_PART, cores
from memledger.input.grep_scan import grep_candidates, grep_program, rest_of_file, stdin_file
from memledger.input.gunzip import BoundedGunzip, GunzipLimits
from memledger.input.rewrap import SHORT_BYTES, RewrappedStream, short_joined, wrap_of
from memledger.input.scan import (
    CHUNK_BYTES,
    LineFilter,
    aligned_reader,
    is_serving,
    read_error,
    scan_lines,
    worker_command,
    worker_records,
)
from memledger.input.stdin_scan import StdinAhead, prefiltered, stdin_source
from memledger.input.stdin_scan import candidates as stdin_candidates
from memledger.input.wrappers import encoding_of, lookalike_tail, plain_bytes
from memledger.sglang.lines import PREFILTER_WORDS

SNIFF_BYTES = 8192
BINARY_CONTROL_RATIO = 0.05

_SURROGATE_RE = re.compile("[\udc80-\udcff]")
_CONTROL_BYTES = frozenset(range(0x20)) - frozenset(b"\t\n\r\x0c\x1b\x08") | {0x7F}
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL_BYTES)


class ByteSource(Protocol):
    """Anything with `read(n) -> bytes`."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclass
class ReadStats:
    """What the reader saw of the whole input (every line, not only candidates)."""

    n_lines: int = 0
    n_bytes: int = 0
    invalid_utf8_bytes: int = 0
    n_candidates: int = 0


def _json_led(head: bytes) -> bool:
    return head.removeprefix(codecs.BOM_UTF8).lstrip()[:1] == b"{"


def _looks_binary(sniff: bytes) -> bool:
    if not sniff:
        return False
    controls = len(sniff.translate(None, _NOT_CONTROL))  # what is left: the control bytes
    return controls / len(sniff) > BINARY_CONTROL_RATIO


class PeekedStream:
    """A byte stream with its first block already read (stdin cannot seek back)."""

    def __init__(self, head: bytes, rest: ByteSource) -> None:
        self._head = head
        self._rest = rest

    def read(self, size: int = -1, /) -> bytes:
        if self._head:
            if size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")


class DecodedStream:
    """A byte stream in another encoding (memledger.input.wrappers.ENCODINGS), read as UTF-8;
    what does not decode becomes U+FFFD."""

    def __init__(self, inner: ByteSource, codec: str) -> None:
        self._inner = inner
        self._decoder = codecs.getincrementaldecoder(codec)(errors="replace")

    def read(self, size: int = -1, /) -> bytes:
        while True:
            data = self._inner.read(size)
            text = self._decoder.decode(data, final=not data)
            if text or not data:
                return text.encode("utf-8")

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")


class PlainStream:
    """A byte stream with every look-alike character (memledger.input.wrappers.LOOKALIKES)
    read as the one the log printed; a look-alike cut by a read's end is kept for the next."""

    def __init__(self, inner: ByteSource) -> None:
        self._inner = inner
        self._held = b""

    def read(self, size: int = -1, /) -> bytes:
        while True:
            data = self._inner.read(size)
            if not data:
                data, self._held = self._held, b""
                return plain_bytes(data)
            data = self._held + data
            keep = lookalike_tail(data)
            self._held = data[len(data) - keep :] if keep else b""
            if len(data) > keep:
                return plain_bytes(data[: len(data) - keep])

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")


def _short(stream: ByteSource) -> tuple[bytes, ByteSource]:
    """The input's head and stream, a short paste's cut lines joined (memledger.input.rewrap)."""
    data = stream.read(SHORT_BYTES + 1)
    while len(data) <= SHORT_BYTES and (more := stream.read(SHORT_BYTES + 1 - len(data))):
        data += more
    joined = short_joined(data, known_shapes) if len(data) <= SHORT_BYTES else None
    head = joined if joined is not None else data
    return head[:SNIFF_BYTES], PeekedStream(head, stream)


@dataclass
class OpenedLog:
    """An input ready to scan: a plain file grep can read itself, or a byte stream."""

    name: str
    stream: ByteSource
    """The bytes from the start (the sniffed head is replayed)."""
    path: Path | None = None
    """Set for an uncompressed regular file (scanned in place)."""
    size: int | None = None
    head: bytes = b""
    """The first block of the (decompressed) text, for sniffing what the input is."""
    prefiltered: StdinAhead | None = None
    """stdin's grep pipeline, started at CLI entry (memledger.input.stdin_scan)."""


@contextmanager
def open_log(
    source: str | os.PathLike[str] | IO[bytes] | ByteSource | OpenedLog,
) -> Iterator[OpenedLog]:
    """Open a log (path, `-` for stdin, or a byte stream), gunzipping by magic.

    An `OpenedLog` (from `memledger.app.open.open_input`) is used as it is.
    Raises InputError for a missing path, a directory, an empty or a binary file.
    """
    if isinstance(source, OpenedLog):
        yield source
        return
    close: IO[bytes] | None = None
    from_stdin = False
    size: int | None = None
    path: Path | None = None
    if isinstance(source, (str, os.PathLike)) and str(source) == "-":
        name = "<stdin>"
        from_stdin = True
        reopened = stdin_file()
        raw: ByteSource = sys.stdin.buffer
        if reopened is not None:  # a regular file: scanned in place, as a named one is
            try:
                raw = close = reopened.open("rb")
                size = reopened.stat().st_size
                path = reopened
            except OSError:
                pass
        else:
            raw = stdin_source() or raw
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = str(source)
        if path.is_dir():
            raise InputError("is a directory, not a log file", path=name)
        try:
            raw = close = path.open("rb")
            size = path.stat().st_size
        except FileNotFoundError as exc:
            raise InputError("no such file", path=name) from exc
        except OSError as exc:
            raise InputError(f"cannot open: {exc.strerror or exc}", path=name) from exc
    else:
        raw = source
        name = str(getattr(source, "name", "<stream>"))
    try:
        try:
            head = raw.read(SNIFF_BYTES)
        except OSError as exc:
            raise InputError(f"cannot read: {exc}", path=name) from exc
        if not head:
            raise InputError("empty file", path=name)
        peek = PeekedStream(head, raw)
        stream: ByteSource = peek
        if head[:2] == b"\x1f\x8b":
            path = None
            size = None
            gunzip = BoundedGunzip(peek, name, GunzipLimits.from_environment())
            try:
                inner = gunzip.read(SNIFF_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"not a readable gzip file ({exc})", path=name) from exc
            if not inner:
                raise InputError("empty file (after gunzip)", path=name)
            head, stream = inner, PeekedStream(inner, gunzip)
        encoding = encoding_of(head)
        if encoding is not None:  # re-encoded as UTF-8: nothing reads the file's own bytes
            path, size = None, None
            decoded = DecodedStream(stream, encoding.codec)
            head = decoded.read(SNIFF_BYTES)
            stream = PeekedStream(head, decoded)
        if _looks_binary(head):
            raise InputError("binary file, not a text log", path=name)
        if path is not None and not path.is_file():
            path = None  # a FIFO or device: stream it
        running = prefiltered() if from_stdin and path is None and encoding is None else None
        if (path is None or size is None or size < PARALLEL_MIN_BYTES) and not _json_led(head):
            # read by this process alone (no worker counts its bytes from an offset): what a
            # copy put in place of the log's characters is read as the log's (wrappers.py); a
            # JSON document or JSON lines (a saved ledger, docker's json-file) escape their own
            # a log printed as one escaped string is read as its lines (memledger.input.escaped)
            head, stream = unescaped(plain_bytes(head)), UnescapedStream(PlainStream(stream))
            wrap = wrap_of(head)
            if wrap is not None:  # a terminal cut every line at its width: read them whole
                rewrapped = RewrappedStream(stream, wrap)
                head = rewrapped.read(SNIFF_BYTES)
                stream = PeekedStream(head, rewrapped)
            elif len(head) < SNIFF_BYTES and b"\n" in head.rstrip(b"\n"):
                # a short paste: one line a terminal cut is told by what the join reads
                head, stream = _short(stream)
        yield OpenedLog(
            name=name, stream=stream, path=path, size=size, head=head, prefiltered=running
        )
    finally:
        if close is not None:
            close.close()


ProgressCallback = Callable[[int, int | None], None]
"""Called with (bytes or lines done, total when known)."""
PROGRESS_EVERY = 64 << 20
"""Bytes between two progress reports on stderr."""


class ProgressMeter:
    """Bytes-read progress on stderr for large inputs (only when asked: the CLI passes isatty)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.next_report = PROGRESS_EVERY
        self.printed = False

    def __call__(self, done: int, total: int | None) -> None:
        if not self.enabled or done < self.next_report:
            return
        self.next_report = done + PROGRESS_EVERY
        share = f" ({100 * done // total}%)" if total else ""
        sys.stderr.write(f"\rmemledger: read {done >> 20} MiB{share}")
        sys.stderr.flush()
        self.printed = True

    def finish(self) -> None:
        if self.printed:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


PARALLEL_MIN_BYTES = 64 << 20
"""A regular file at least this big is scanned by two processes on a multi-core machine: this one
reads the first half, a worker (`python -m memledger.input.scan`) the rest, from a line start."""
_SPLIT_SEARCH_BYTES = 8 << 20
"""How far past the middle a line start is looked for (a longer line: one process scans)."""


def _stream_reader(
    stream: ByteSource, name: str, on_bytes: Callable[[int], None], stop: int | None = None
) -> Callable[[int], bytes]:
    """`read(size)` over a stream from its start, ending after `stop` bytes when given."""
    done = 0

    def read(size: int) -> bytes:
        nonlocal done
        if stop is not None:
            size = min(size, stop - done)
            if size <= 0:
                return b""
        try:
            chunk = stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise read_error(exc, name) from exc
        done += len(chunk)
        if chunk:
            on_bytes(len(chunk))
        return chunk

    return read


def _split_point(log: OpenedLog) -> int | None:
    """Where a worker takes over: the first line start after the middle of a big regular file."""
    if log.path is None or log.size is None or log.size < PARALLEL_MIN_BYTES:
        return None
    if cores() < 2 or getattr(sys, "frozen", False) or not sys.executable:
        return None
    middle = log.size // 2
    try:
        with log.path.open("rb") as handle:
            handle.seek(middle)
            offset = middle
            while offset - middle < _SPLIT_SEARCH_BYTES and (block := handle.read(1 << 16)):
                cut = block.find(b"\n")
                if cut >= 0:
                    split = offset + cut + 1
                    return split if split < log.size else None
                offset += len(block)
    except OSError:
        pass
    return None


def _python_candidates(
    log: OpenedLog,
    extra_words: list[str],
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    """Start the built-in scan now (a worker overlaps the grammar build) and return its lines."""
    split = _split_point(log)
    line_filter = LineFilter(extra_words)
    if split is None or log.path is None:
        return _scan_stream(log, line_filter, stats, progress)
    try:
        with log.path.open("rb") as source:
            worker = subprocess.Popen(
                worker_command(split, SNIFF_BYTES, extra_words),
                stdin=source,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
    except OSError:
        return _scan_stream(log, line_filter, stats, progress)
    return _scan_with_worker(log, log.path, line_filter, stats, progress, split, worker)


def _bytes_counter(
    stats: ReadStats, progress: ProgressCallback | None, total: int | None, share: float = 1.0
) -> Callable[[int], None]:
    """Adds read bytes to stats and reports progress (`share`: this process's part of the file)."""

    def counted(size: int) -> None:
        stats.n_bytes += size
        if progress is not None:
            done = int(stats.n_bytes / share)
            progress(min(done, total) if total else done, total)

    return counted


def _scan_stream(
    log: OpenedLog,
    line_filter: LineFilter,
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    counted = _bytes_counter(stats, progress, log.size)
    stats.n_lines = yield from scan_lines(
        _stream_reader(log.stream, log.name, counted), line_filter
    )


def _scan_with_worker(
    log: OpenedLog,
    path: Path,
    line_filter: LineFilter,
    stats: ReadStats,
    progress: ProgressCallback | None,
    split: int,
    worker: subprocess.Popen[bytes],
) -> Iterator[tuple[int, bytes]]:
    """This process scans the bytes before `split`, then passes on the worker's records."""
    assert worker.stdout is not None and worker.stderr is not None
    counted = _bytes_counter(stats, progress, log.size, split / (log.size or split))
    finished: tuple[int, int] | None = None
    from_worker = 0
    try:
        read = _stream_reader(log.stream, log.name, counted, stop=split)
        head_lines = yield from scan_lines(read, line_filter, ends=False)
        records = worker_records(worker.stdout, head_lines + 1)
        while True:
            try:
                item = next(records)
            except StopIteration as done:
                finished = done.value
                break
            from_worker += 1
            if line_filter.held is not None:  # the head's last serving-time line: the worker's
                if not is_serving(item[1]):  # own one, if any, is later and comes first
                    yield from line_filter.finish(item[0])
                line_filter.held = None
            yield item
    finally:
        if finished is None:
            worker.kill()
        worker.stdout.close()
        complaint = worker.stderr.read().decode(errors="replace").strip()
        worker.stderr.close()
        worker.wait()
    if finished is not None and worker.returncode == 0:
        tail_lines, tail_bytes = finished
        stats.n_bytes += tail_bytes
        stats.n_lines = head_lines + tail_lines
        yield from line_filter.finish(stats.n_lines + 1)  # the worker found none at all
        return
    if from_worker:
        detail = complaint.splitlines()[0] if complaint else f"exit {worker.returncode}"
        raise InputError(f"scan failed: {detail}", path=log.name)
    # the worker did not run (another memledger installation, no usable interpreter): scan here
    try:
        rest = path.open("rb")
    except OSError as exc:
        raise read_error(exc, log.name) from exc
    with rest:
        read = aligned_reader(rest, split, SNIFF_BYTES, log.name, counted)
        stats.n_lines = head_lines + (yield from scan_lines(read, line_filter, head_lines + 1))


def _grep_candidates(
    log: OpenedLog,
    grep: str,
    extra_words: list[str],
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    """The grep pipeline (memledger.input.grep_scan) with this reader's totals and progress."""

    def totals(n_lines: int, n_bytes: int) -> None:
        stats.n_lines, stats.n_bytes = n_lines, n_bytes

    words = [*PREFILTER_WORDS, *extra_words]
    if log.path is not None:
        fallback = rest_of_file(log.path, log.name, extra_words, totals, SNIFF_BYTES)
        watch = (progress, log.size) if progress is not None and log.size else None
        return grep_candidates(log.path, None, grep, words, totals, fallback, watch)

    def copy(sink: IO[bytes]) -> None:
        """Feed grep the stream, counting its bytes and lines."""
        newlines, last = 0, b""
        try:
            while chunk := log.stream.read(CHUNK_BYTES):
                stats.n_bytes += len(chunk)
                newlines += chunk.count(b"\n")
                last = chunk[-1:]
                sink.write(chunk)
                if progress is not None:
                    progress(stats.n_bytes, log.size)
            sink.write((b"\n" if last and last != b"\n" else b"") + END_OF_PART + b"\n")
        finally:
            stats.n_lines = newlines + (1 if last and last != b"\n" else 0)

    return grep_candidates(None, copy, grep, words, totals, None)


def _stdin_candidates(
    log: OpenedLog,
    ahead: StdinAhead,
    extra_words: list[str],
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    def totals(n_lines: int, n_bytes: int) -> None:
        stats.n_lines, stats.n_bytes = n_lines, n_bytes

    if ahead.feeder is not None:
        ahead.feeder.progress = progress
    words = [*PREFILTER_WORDS, *extra_words]
    return stdin_candidates(ahead, words, log.name, totals, SNIFF_BYTES)


def iter_candidate_lines(
    log: OpenedLog,
    stats: ReadStats,
    extra_words: Iterable[str] = (),
    progress: ProgressCallback | None = None,
) -> Iterator[tuple[int, bytes]]:
    """(physical line number, raw bytes) of every line holding a prefilter keyword.

    The scan starts now: a worker or grep process overlaps whatever the caller does before
    iterating (parse_log builds the grammar). stats is complete once the iterator is exhausted.
    """
    return _counted(_candidates(log, stats, list(extra_words), progress), stats, log)


def iter_candidate_texts(
    log: OpenedLog,
    stats: ReadStats,
    extra_words: Iterable[str] = (),
    progress: ProgressCallback | None = None,
) -> Iterator[tuple[int, str]]:
    """`iter_candidate_lines`, each line decoded (`decode_line`); the scan starts now too."""
    return _counted_texts(_candidates(log, stats, list(extra_words), progress), stats, log)


def _candidates(
    log: OpenedLog, stats: ReadStats, extra: list[str], progress: ProgressCallback | None
) -> Iterator[tuple[int, bytes]]:
    grep = grep_program(log.path, log.size)
    if log.prefiltered is not None:
        return _stdin_candidates(log, log.prefiltered, extra, stats, progress)
    if grep is not None:
        return _grep_candidates(log, grep, extra, stats, progress)
    return _python_candidates(log, extra, stats, progress)


def _counted(
    lines: Iterator[tuple[int, bytes]], stats: ReadStats, log: OpenedLog
) -> Iterator[tuple[int, bytes]]:
    for item in lines:
        stats.n_candidates += 1
        yield item
    _refuse_truncated(log)


def _counted_texts(
    lines: Iterator[tuple[int, bytes]], stats: ReadStats, log: OpenedLog
) -> Iterator[tuple[int, str]]:
    for number, raw in lines:
        stats.n_candidates += 1
        # decode_line's common case inline (one call per line fewer)
        yield number, (raw.decode("ascii") if raw.isascii() else decode_line(raw, stats))
    _refuse_truncated(log)


def _refuse_truncated(log: OpenedLog) -> None:
    """A regular file that shrank while it was read (rotated, truncated) gave lines of two
    different files (F29): an InputError, not a ledger. A growing file (a live log) is fine."""
    if log.path is None or log.size is None:
        return
    try:
        now = log.path.stat().st_size
    except OSError:
        return
    if now < log.size:
        raise InputError(
            f"file was truncated while it was read ({log.size} bytes when opened, {now} now)",
            path=log.name,
        )


def decode_line(raw: bytes, stats: ReadStats | None = None) -> str:
    """Bytes of one physical line as text; invalid UTF-8 becomes U+FFFD and is counted."""
    if raw.isascii():
        return raw.decode("ascii")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    escaped = raw.decode("utf-8", "surrogateescape")
    if stats is not None:
        stats.invalid_utf8_bytes += len(_SURROGATE_RE.findall(escaped))
    return _SURROGATE_RE.sub("\ufffd", escaped)
