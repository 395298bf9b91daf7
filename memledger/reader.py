"""Streaming reader: bytes of a log -> logical SGLang lines, each with its physical line number.

Memory stays flat: the input is read in 1 MiB chunks, and a bytes-level keyword scan over each
chunk (one C-speed regex search per interesting line, not per line) skips every line that cannot
matter (`Decode batch ...`, HTTP access lines) without decoding it. Only candidate lines are decoded
(invalid UTF-8 replaced), stripped of ANSI codes, split on CR (tqdm) and at every SGLang prefix.
"""

from __future__ import annotations

import gzip
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from memledger.errors import InputError

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 32 << 20
"""A physical line longer than this is processed in pieces (same line number) to bound memory."""
SNIFF_BYTES = 8192
BINARY_CONTROL_RATIO = 0.05

# Words that make a physical line worth decoding: memory lines, startup markers, outcome evidence
# and anything memory-looking (for the coverage report). Everything else is skipped unread.
PREFILTER_WORDS: tuple[str, ...] = (
    "avail",
    "mem usage",
    "GB",
    "GiB",
    "MB",
    "MiB",
    "KB",
    "bytes",
    "size",
    "capacity",
    "Init ",
    "Load weight",
    "KV Cache",
    "KV cache",
    "Memory ",
    "Captur",
    "max_total_num_tokens",
    "server_args",
    "Mamba",
    "SWA",
    "sliding window",
    "Sliding window",
    "DSV4",
    "DeepSeekV4",
    "ReplaySSM",
    "All Reduce",
    "symmetric",
    "ElasticBuffer",
    "FlatAG",
    "weight-sharded",
    "requant",
    "hoisted",
    "DSpark",
    "Post-capture",
    "LoRA",
    "unbalanced",
    "fired up",
    "OOM",
    "OutOfMemory",
    "Error",
    "Exception",
    "Traceback",
    "sigquit",
    "scheduler is dead",
    "Exit code",
    "Initialization failed",
    "Killed",
)
_OUT_OF_MEMORY_ANY_CASE = rb"[Oo][Uu][Tt] [Oo][Ff] [Mm][Ee][Mm][Oo][Rr][Yy]"

# `[2025-10-16 09:06:22 DP0 TP0 EP0]`, `[22:30:52 TP0]`, `[2026-02-04 11:30:29]`, `[gpu_id=0]`.
PREFIX_RE = re.compile(
    r"\[(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?"
    r"(?P<tags>(?: [A-Za-z_][\w\-]*(?:\[\d+\])?)*)\]"
    r"|\[(?P<gpu>gpu(?:_id)?=\d+)\]"
)
LEVEL_FILE_RE = re.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) +[\w.\-/]+\.py:\d+: ?"
)
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Text other tools put before a bare line: docker/kubectl timestamps, Ray actor tags, journald.
JUNK_PREFIX_RE = re.compile(
    r"(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})? ?"
    r"|\([\w.\-]+ pid=\d+(?:, ip=[\d.]+)?\) ?"
    r"|(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} )?[\w.\-]+ [\w\-.@/]+\[\d+\]: ?)+"
)
_SURROGATE_RE = re.compile("[\udc80-\udcff]")
_CONTROL_BYTES = frozenset(range(0x20)) - frozenset(b"\t\n\r\x0c\x1b\x08") | {0x7F}


class ByteSource(Protocol):
    """Anything with `read(n) -> bytes`."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class LogicalLine:
    """One SGLang line (or one bare line) with the physical line it came from."""

    line: int
    """1-based physical line number."""
    text: str
    """The message after the prefix (level/file dropped), or the bare text."""
    rank: str = ""
    """Rank tag text (`TP0`, `DP0 TP0 EP0`, `gpu_id=0`); empty when untagged or bare."""
    prefixed: bool = False
    """True when the line carried an SGLang `[...]` prefix."""


@dataclass
class ReadStats:
    """What the reader saw of the whole input (every line, not only candidates)."""

    n_lines: int = 0
    n_bytes: int = 0
    invalid_utf8_bytes: int = 0
    n_candidates: int = 0


def compile_prefilter(extra_words: Iterable[str] = ()) -> re.Pattern[bytes]:
    """The bytes regex that marks a physical line as worth decoding."""
    words = sorted({*PREFILTER_WORDS, *extra_words}, key=len, reverse=True)
    alternatives = [re.escape(w.encode()) for w in words] + [_OUT_OF_MEMORY_ANY_CASE]
    return re.compile(b"|".join(alternatives))


def _looks_binary(sniff: bytes) -> bool:
    if not sniff:
        return False
    controls = sum(1 for b in sniff if b in _CONTROL_BYTES)
    return controls / len(sniff) > BINARY_CONTROL_RATIO


class _Peekable:
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


@contextmanager
def open_log(
    source: str | os.PathLike[str] | IO[bytes],
) -> Iterator[tuple[ByteSource, str, int | None]]:
    """Open a log (path, `-` for stdin, or a byte stream), gunzipping by magic; yields
    (stream, display name, size in bytes when known). Raises InputError for missing, directory,
    empty or binary input."""
    close: IO[bytes] | None = None
    size: int | None = None
    if isinstance(source, (str, os.PathLike)) and str(source) == "-":
        name = "<stdin>"
        raw: ByteSource = sys.stdin.buffer
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
        peek = _Peekable(head, raw)
        stream: ByteSource = peek
        if head[:2] == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=peek, mode="rb")
            size = None
            try:
                inner = stream.read(SNIFF_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"not a readable gzip file ({exc})", path=name) from exc
            if not inner:
                raise InputError("empty file (after gunzip)", path=name)
            head, stream = inner, _Peekable(inner, stream)
        if _looks_binary(head):
            raise InputError("binary file, not a text log", path=name)
        yield stream, name, size
    finally:
        if close is not None:
            close.close()


def _count_invalid_utf8(block: bytes) -> int:
    if block.isascii():
        return 0
    try:
        block.decode("utf-8")
    except UnicodeDecodeError:
        return len(_SURROGATE_RE.findall(block.decode("utf-8", "surrogateescape")))
    return 0


def _candidates_in(
    block: bytes, first_line: int, prefilter: re.Pattern[bytes]
) -> Iterator[tuple[int, bytes]]:
    # block ends with b"\n" (or is a forced piece of an over-long line); first_line is the
    # number of its first physical line.
    lines_before = first_line
    counted_to = 0
    match = prefilter.search(block)
    while match is not None:
        start = block.rfind(b"\n", 0, match.start()) + 1
        end = block.find(b"\n", match.end())
        if end < 0:
            end = len(block)
        lines_before += block.count(b"\n", counted_to, start)
        counted_to = start
        yield lines_before, block[start:end]
        match = prefilter.search(block, end + 1)


def iter_candidate_lines(
    stream: ByteSource,
    prefilter: re.Pattern[bytes],
    stats: ReadStats,
    on_progress: object = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield (physical line number, raw bytes) for every line the prefilter keeps."""
    next_line = 1
    leftover = b""
    progress = on_progress if callable(on_progress) else None
    while True:
        try:
            chunk = stream.read(CHUNK_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"read failed ({exc})") from exc
        if not chunk:
            break
        stats.n_bytes += len(chunk)
        if progress is not None:
            progress(stats.n_bytes)
        buffer = leftover + chunk if leftover else chunk
        cut = buffer.rfind(b"\n")
        if cut < 0:
            if len(buffer) > MAX_LINE_BYTES:
                stats.invalid_utf8_bytes += _count_invalid_utf8(buffer)
                yield from _count(_candidates_in(buffer, next_line, prefilter), stats)
                leftover = b""
            else:
                leftover = buffer
            continue
        complete, leftover = buffer[: cut + 1], buffer[cut + 1 :]
        stats.invalid_utf8_bytes += _count_invalid_utf8(complete)
        yield from _count(_candidates_in(complete, next_line, prefilter), stats)
        next_line += complete.count(b"\n")
    if leftover:
        stats.invalid_utf8_bytes += _count_invalid_utf8(leftover)
        yield from _count(_candidates_in(leftover, next_line, prefilter), stats)
        next_line += 1
    stats.n_lines = next_line - 1


def _count(items: Iterator[tuple[int, bytes]], stats: ReadStats) -> Iterator[tuple[int, bytes]]:
    for item in items:
        stats.n_candidates += 1
        yield item


def rank_tag_of(match: re.Match[str]) -> str:
    """The rank tag text of a prefix match (`DP0 TP0 EP0`, `gpu_id=0`, or empty)."""
    gpu = match.group("gpu")
    if gpu is not None:
        return gpu
    return " ".join(match.group("tags").split())


def _message(text: str) -> str:
    text = text.strip()
    level = LEVEL_FILE_RE.match(text)
    return text[level.end() :] if level else text


def split_physical_line(line: int, text: str) -> list[LogicalLine]:
    """One decoded physical line -> its logical lines (ANSI removed, CR and prefix split)."""
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    segments = text.split("\r")
    last = len(segments) - 1
    out: list[LogicalLine] = []
    for index, segment in enumerate(segments):
        if not segment:
            continue
        matches = list(PREFIX_RE.finditer(segment))
        bare = segment[: matches[0].start()] if matches else segment
        if index == 0:
            junk = JUNK_PREFIX_RE.match(bare)
            if junk:
                bare = bare[junk.end() :]
        bare = bare.strip()
        # tqdm: only the last CR state counts, except `Capturing ...` descriptions (each bs matters)
        if bare and (index == last or bool(matches) or bare.startswith("Capturing")):
            out.append(LogicalLine(line, bare))
        for position, match in enumerate(matches):
            end = matches[position + 1].start() if position + 1 < len(matches) else len(segment)
            message = _message(segment[match.end() : end])
            out.append(LogicalLine(line, message, rank_tag_of(match), True))
    return out


def decode_line(raw: bytes) -> str:
    """Bytes of one physical line as text; invalid UTF-8 becomes U+FFFD (counted elsewhere)."""
    return raw.decode("utf-8", "replace")
