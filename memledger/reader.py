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
import shutil
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
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
_OUT_OF_MEMORY_ERE = "[Oo][Uu][Tt] [Oo][Ff] [Mm][Ee][Mm][Oo][Rr][Yy]"
_OUT_OF_MEMORY_ANY_CASE = _OUT_OF_MEMORY_ERE.encode()
# Serving-time lines, the bulk of a long-running server's log: a physical line holding one is
# skipped whole (they carry no startup memory fact and no crash evidence).
BORING_LINES: tuple[bytes, ...] = (b"] Decode batch", b"] Prefill batch")

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


@dataclass
class OpenedLog:
    """An input ready to scan: a plain file grep can read itself, or a byte stream."""

    name: str
    stream: ByteSource
    """The bytes from the start (the sniffed head is replayed)."""
    path: Path | None = None
    """Set for an uncompressed regular file (scanned in place)."""
    size: int | None = None


@contextmanager
def open_log(source: str | os.PathLike[str] | IO[bytes] | ByteSource) -> Iterator[OpenedLog]:
    """Open a log (path, `-` for stdin, or a byte stream), gunzipping by magic.

    Raises InputError for a missing path, a directory, an empty or a binary file.
    """
    close: IO[bytes] | None = None
    size: int | None = None
    path: Path | None = None
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
        peek = PeekedStream(head, raw)
        stream: ByteSource = peek
        if head[:2] == b"\x1f\x8b":
            path = None
            size = None
            gunzip = gzip.GzipFile(fileobj=peek, mode="rb")
            try:
                inner = gunzip.read(SNIFF_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"not a readable gzip file ({exc})", path=name) from exc
            if not inner:
                raise InputError("empty file (after gunzip)", path=name)
            head, stream = inner, PeekedStream(inner, gunzip)
        if _looks_binary(head):
            raise InputError("binary file, not a text log", path=name)
        if path is not None and not path.is_file():
            path = None  # a FIFO or device: stream it
        yield OpenedLog(name=name, stream=stream, path=path, size=size)
    finally:
        if close is not None:
            close.close()


def _candidates_in(
    block: bytes, first_line: int, prefilter: re.Pattern[bytes]
) -> Iterator[tuple[int, bytes]]:
    # block: whole lines (or a forced piece of an over-long one); first_line: its first number.
    # Serving-time lines are dropped by a cheap substring test before the keyword regex runs.
    decode, prefill = BORING_LINES
    lines = block.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for offset, raw in enumerate(lines):
        if decode in raw or prefill in raw:
            continue
        if prefilter.search(raw):
            yield first_line + offset, raw


ProgressCallback = Callable[[int, int | None], None]
"""Called with (bytes or lines done, total when known)."""


def _python_candidates(
    log: OpenedLog,
    prefilter: re.Pattern[bytes],
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    stream = log.stream
    next_line = 1
    leftover = b""
    while True:
        try:
            chunk = stream.read(CHUNK_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"read failed ({exc})", path=log.name) from exc
        if not chunk:
            break
        stats.n_bytes += len(chunk)
        if progress is not None:
            progress(stats.n_bytes, log.size)
        buffer = leftover + chunk if leftover else chunk
        cut = buffer.rfind(b"\n")
        if cut < 0:
            if len(buffer) > MAX_LINE_BYTES:
                yield from _candidates_in(buffer, next_line, prefilter)
                leftover = b""
            else:
                leftover = buffer
            continue
        complete, leftover = buffer[: cut + 1], buffer[cut + 1 :]
        yield from _candidates_in(complete, next_line, prefilter)
        next_line += complete.count(b"\n")
    if leftover:
        yield from _candidates_in(leftover, next_line, prefilter)
        next_line += 1
    stats.n_lines = next_line - 1


def _ere(words: Iterable[str]) -> str:
    escaped = [re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", w) for w in words]
    return "|".join([*escaped, _OUT_OF_MEMORY_ERE])


def _feed(
    log: OpenedLog,
    sink: IO[bytes],
    stats: ReadStats,
    errors: list[BaseException],
    progress: ProgressCallback | None,
) -> None:
    """Writer thread: copy the stream into grep, counting bytes and lines."""
    newlines = 0
    last = b""
    try:
        while True:
            chunk = log.stream.read(CHUNK_BYTES)
            if not chunk:
                break
            stats.n_bytes += len(chunk)
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
            sink.write(chunk)
            if progress is not None:
                progress(stats.n_bytes, log.size)
    except BrokenPipeError:
        pass
    except (OSError, EOFError, zlib.error) as exc:
        errors.append(exc)
    finally:
        stats.n_lines = newlines + (1 if last and last != b"\n" else 0)
        try:
            sink.close()
        except OSError:
            pass


def _count_file_lines(path: Path, stats: ReadStats) -> Callable[[], None]:
    """Start counting a file's lines (wc -l when present); returns a function that finishes."""
    size = path.stat().st_size
    stats.n_bytes = size
    with path.open("rb") as handle:
        if size:
            handle.seek(size - 1)
            unterminated = handle.read(1) != b"\n"
        else:
            unterminated = False
    wc = shutil.which("wc")
    if wc is None:

        def python_count() -> None:
            newlines = 0
            with path.open("rb") as counted:
                while chunk := counted.read(CHUNK_BYTES):
                    newlines += chunk.count(b"\n")
            stats.n_lines = newlines + int(unterminated)

        return python_count
    counter = subprocess.Popen(
        [wc, "-l", "--", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LC_ALL": "C"},
    )

    def finish() -> None:
        out, _ = counter.communicate()
        try:
            stats.n_lines = int(out.split()[0]) + int(unterminated)
        except (ValueError, IndexError):
            stats.n_lines = 0

    return finish


def _grep_candidates(
    log: OpenedLog,
    grep: str,
    words: Iterable[str],
    stats: ReadStats,
    progress: ProgressCallback | None,
) -> Iterator[tuple[int, bytes]]:
    """Start the grep pipeline now (it overlaps the grammar build) and return its line reader."""
    # grep -v drops the serving-time lines (the bulk of a long log) at C speed; a second grep
    # keeps the lines holding a keyword; both stream, so memory stays flat.
    env = {**os.environ, "LC_ALL": "C"}
    boring = [arg for word in BORING_LINES for arg in ("-e", word.decode())]
    feed = log.path is None
    target = "-" if feed else str(log.path)
    finish_count: Callable[[], None] | None = None
    if not feed:
        assert log.path is not None
        finish_count = _count_file_lines(log.path, stats)
    first = subprocess.Popen(
        [grep, "-n", "-a", "-v", "-F", *boring, "--", target],
        stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    second = subprocess.Popen(
        [grep, "-a", "-E", "-e", _ere(words)],
        stdin=first.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert first.stdout is not None and second.stdout is not None
    first.stdout.close()
    errors: list[BaseException] = []
    writer: threading.Thread | None = None
    if feed:
        assert first.stdin is not None
        writer = threading.Thread(
            target=_feed, args=(log, first.stdin, stats, errors, progress), daemon=True
        )
        writer.start()
    elif progress is not None and log.size:
        _watch_progress(first, log.size, progress)
    return _drain(log, first, second, writer, errors, finish_count)


def _watch_progress(
    process: subprocess.Popen[bytes], total: int, progress: ProgressCallback
) -> None:
    """Report how far grep has read the file (Linux /proc; silently nothing elsewhere)."""
    io_file = Path(f"/proc/{process.pid}/io")

    def watch() -> None:
        while process.poll() is None:
            try:
                fields = dict(
                    line.split(": ", 1) for line in io_file.read_text().splitlines() if ": " in line
                )
                progress(min(int(fields["rchar"]), total), total)
            except (OSError, KeyError, ValueError):
                return
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()


def _drain(
    log: OpenedLog,
    first: subprocess.Popen[bytes],
    second: subprocess.Popen[bytes],
    writer: threading.Thread | None,
    errors: list[BaseException],
    finish_count: Callable[[], None] | None,
) -> Iterator[tuple[int, bytes]]:
    assert second.stdout is not None
    completed = False
    try:
        for raw in second.stdout:
            number, _, content = raw.partition(b":")
            if content.endswith(b"\n"):
                content = content[:-1]
            try:
                line = int(number)
            except ValueError:
                continue
            yield line, content
        completed = True
    finally:
        if not completed:
            for process in (first, second):
                process.kill()
        second.stdout.close()
        second.wait()
        first.wait()
        if writer is not None:
            writer.join()
        if finish_count is not None:
            finish_count()
        first_err = first.stderr.read().decode(errors="replace").strip() if first.stderr else ""
        second_err = second.stderr.read().decode(errors="replace").strip() if second.stderr else ""
        for process in (first, second):
            if process.stderr is not None:
                process.stderr.close()
    if errors:
        raise InputError(f"read failed ({errors[0]})", path=log.name)
    if first.returncode not in (0, 1) or second.returncode not in (0, 1):
        detail = first_err or second_err or f"exit {first.returncode}/{second.returncode}"
        raise InputError(f"scan failed: {detail.splitlines()[0]}", path=log.name)


def grep_program() -> str | None:
    """The grep used as prefilter, or None for the pure-Python scanner (MEMLEDGER_PREFILTER)."""
    choice = os.environ.get("MEMLEDGER_PREFILTER", "auto")
    if choice == "python":
        return None
    return shutil.which("grep")


def iter_candidate_lines(
    log: OpenedLog,
    stats: ReadStats,
    extra_words: Iterable[str] = (),
    progress: ProgressCallback | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield (physical line number, raw bytes) for every line holding a prefilter keyword."""
    words = [*PREFILTER_WORDS, *extra_words]
    grep = grep_program()
    if grep is not None:
        lines = _grep_candidates(log, grep, words, stats, progress)
    else:
        lines = _python_candidates(log, compile_prefilter(extra_words), stats, progress)
    for item in lines:
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
