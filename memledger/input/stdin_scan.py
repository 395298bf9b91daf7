"""A big log on stdin through the grep prefilter, started before the imports.

`cat big.log | memledger parse -` used to go through the built-in scanner (a pipe has no size to
choose by): 5x `cat | grep`. Now the CLI reads a pipe on stdin ahead, at entry
(`prestart`): input that ends within STREAM_DECIDE_BYTES stays with the built-in scanner (three
processes would cost more than they save), a longer one is fed to the grep pipeline by a
thread that counts its lines and bytes as it copies, while the interpreter imports the parser.
A regular file on stdin (`memledger parse - < big.log`) needs no copy: the reader opens it again
as /proc/PID/fd/0 and treats it as the file it is (memledger.input.reader).

Memory stays bounded: the thread writes whole lines and holds back at most one line; a line
longer than MAX_LINE_BYTES ends the grep part there and the built-in scanner reads on from that
line, reading as it would have from the start (aligned reads), so it cuts that line into the
same pieces.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO

from memledger.input.grep_early import END_OF_PART
from memledger.input.grep_scan import Pipeline, drain, start
from memledger.input.scan import (
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    LineFilter,
    aligned_reader,
    scan_lines,
    serving_within_reach,
)
from memledger.sglang.lines import PREFILTER_WORDS

STREAM_DECIDE_BYTES = 4 << 20
"""A pipe on stdin is read this far ahead before choosing the prefilter (built-in below it)."""
_PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux F_SETPIPE_SZ; the unprivileged maximum): fewer, larger reads."""


class Feeder(threading.Thread):
    """Copies stdin into grep's stdin in whole lines, counting lines and bytes."""

    def __init__(self, head: bytes, source: int, sink: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.head = head
        self.source = source
        self.sink = sink
        self.n_bytes = 0
        self.newlines = 0
        self.last_byte = b""
        self.handover: tuple[int, int, bytes] | None = None
        """(line, byte offset, bytes read and not written) of a line too long for grep."""
        self.error: OSError | None = None
        self.progress: Callable[[int, int | None], None] | None = None

    def run(self) -> None:
        held = b""  # the bytes after the last newline written: one unfinished line
        written = 0
        chunk = self.head
        self.head = b""
        try:
            while chunk:
                self.n_bytes += len(chunk)
                self.last_byte = chunk[-1:]
                first = chunk.find(b"\n")
                if len(held) + (len(chunk) if first < 0 else first) > MAX_LINE_BYTES:
                    self.handover = (self.newlines + 1, written, held + chunk)
                    self.sink.write(END_OF_PART + b"\n")  # grep's part ends on a whole line
                    return
                if first < 0:
                    held += chunk
                else:
                    cut = chunk.rfind(b"\n") + 1
                    if held:
                        self.sink.write(held)
                    self.sink.write(memoryview(chunk)[:cut])
                    written += len(held) + cut
                    self.newlines += chunk.count(b"\n")
                    held = chunk[cut:]
                if self.progress is not None:
                    self.progress(self.n_bytes, None)
                chunk = os.read(self.source, CHUNK_BYTES)
            # the last line (without newline), then the end's marker (memledger.input.grep_scan)
            self.sink.write(held + (b"\n" if held else b"") + END_OF_PART + b"\n")
        except BrokenPipeError:
            pass  # the pipeline was stopped
        except OSError as exc:
            self.error = exc
        finally:
            try:
                self.sink.close()
            except OSError:
                pass

    def n_lines(self) -> int:
        """Physical lines fed (a last line without newline counts)."""
        return self.newlines + (1 if self.last_byte not in (b"", b"\n") else 0)


@dataclass
class StdinAhead:
    """What `prestart` read of stdin, and (a big input) the pipeline fed the rest."""

    head: bytes
    pipeline: Pipeline | None = None
    feeder: Feeder | None = None
    claimed: bool = field(default=False)


_AHEAD: list[StdinAhead] = []


def _read_ahead(limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(0, min(limit - size, CHUNK_BYTES))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or a lower /proc/sys/fs/pipe-max-size: the default buffer


def prestart(grep: str | None) -> None:
    """Read a pipe on stdin ahead; when it is a big plain log and `grep` is given, start the
    pipeline and the feeder now. Called once, at CLI entry, for a command reading `-`."""
    if _AHEAD:
        return
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if grep is None or not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return  # no grep; a regular file is reopened by path; a terminal is read as it is
    _widen(0)
    head = _read_ahead(STREAM_DECIDE_BYTES)
    ahead = StdinAhead(head)
    _AHEAD.append(ahead)
    plain = head[:2] != b"\x1f\x8b" and not head.lstrip()[:1] == b"{"
    if len(head) < STREAM_DECIDE_BYTES or not plain:
        return  # small, gzip (Python inflates it), maybe a saved ledger, or no usable grep
    pipeline = start(grep, None, PREFILTER_WORDS)
    assert pipeline.first.stdin is not None
    _widen(pipeline.first.stdin.fileno())
    ahead.pipeline = pipeline
    ahead.feeder = Feeder(head, 0, pipeline.first.stdin)
    ahead.feeder.start()


def stdin_source() -> io.BytesIO | _Joined | None:
    """stdin as the opener reads it, when `prestart` read some of it: what was read, then the
    rest (nothing more when the feeder owns the rest). None: read sys.stdin as usual."""
    if not _AHEAD or _AHEAD[0].claimed:
        return None
    ahead = _AHEAD[0]
    ahead.claimed = True
    if ahead.feeder is not None:
        return io.BytesIO(ahead.head)
    return _Joined(ahead.head, sys.stdin.buffer)


def prefiltered() -> StdinAhead | None:
    """The running pipeline of stdin, for the reader (once)."""
    if _AHEAD and _AHEAD[0].pipeline is not None and _AHEAD[0].feeder is not None:
        return _AHEAD.pop()
    return None


class _Joined:
    """Bytes already read, then the rest of a stream; read(n) returns n bytes unless at EOF."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = io.BytesIO(head)
        self._rest = rest

    def read(self, size: int = -1, /) -> bytes:
        data = self._head.read(size)
        if size < 0:
            return data + self._rest.read()
        if len(data) < size:
            data += self._rest.read(size - len(data))
        return data

    def seek(self, offset: int, /) -> int:
        raise OSError("stdin is not seekable")


def candidates(
    ahead: StdinAhead,
    words: Sequence[str],
    name: str,
    on_lines: Callable[[int, int], None],
    head_bytes: int,
) -> Iterator[tuple[int, bytes]]:
    """(line, raw bytes) of stdin's candidate lines: the pipeline's, then (after a line too
    long for grep) the built-in scanner's from that line on."""
    assert ahead.pipeline is not None and ahead.feeder is not None
    if tuple(words) != ahead.pipeline.words:
        raise AssertionError("prestart only runs without extension grammars")
    feeder = ahead.feeder
    errors: list[BaseException] = []
    lines = drain(ahead.pipeline, None, feeder, errors, lambda n, b: None, None)
    serving, end = yield from lines
    if feeder.error is not None:
        from memledger.input.scan import read_error

        raise read_error(feeder.error, name)
    if feeder.handover is None:
        kept = None if end is None else serving_within_reach(serving, end)
        if kept is not None:
            yield kept
        on_lines(feeder.n_lines(), feeder.n_bytes)
        return
    line, offset, held = feeder.handover
    rest = _Joined(held, sys.stdin.buffer)
    read_bytes = offset

    def count(size: int) -> None:
        nonlocal read_bytes
        read_bytes += size

    read = aligned_reader(rest, offset, head_bytes, name, count, seek=False)
    line_filter = LineFilter(words[len(PREFILTER_WORDS) :], serving)
    more = yield from scan_lines(read, line_filter, line)
    on_lines(line - 1 + more, read_bytes)
