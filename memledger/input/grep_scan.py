"""The grep prefilter: a big log's candidate lines found by two `grep` processes, at C speed.

A long-running server's log is mostly serving-time lines. `grep -v -B1` drops those (a `Decode
batch` / `Prefill batch` line alone on its physical line) but the last of each run, and a second
grep keeps the lines holding a keyword with the SERVING_REACH lines before each (`-B`): the same
lines as the built-in scanner (memledger.input.scan; the serving-time line kept before a
candidate is among them; tests/input/test_scan.py compares them on every real log), in a third
of its time. Every input fed to grep ends with grep_early.END_OF_PART, whose lines before it give
the serving-time line kept before the end. It is the default for a regular file
of at least GREP_MIN_BYTES when grep has `-P` (PCRE: the serving-line test in one linear pass;
as an ERE it is 3x slower); `MEMLEDGER_PREFILTER=grep` forces it (streams are then fed to grep),
`MEMLEDGER_PREFILTER=python` turns it off.

The CLI starts the pipeline for the big log named on its command line before it imports the
rest of memledger (`prestart`), so grep reads the file while the interpreter loads the parser.

Memory stays bounded whatever the input: each grep runs under RLIMIT_DATA (a line too long for
that makes grep fail), lines are read back at most MAX_LINE_BYTES at a time, and either event
hands the file to the built-in scanner from that line on (it cuts an over-long line into pieces).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memledger.errors import InputError
from memledger.input import grep_early
from memledger.input.grep_early import BORING_PCRE, GREP_DATA_LIMIT, GREP_MIN_BYTES
from memledger.input.scan import (
    BORING_ERE,
    BORING_LINES,
    MAX_LINE_BYTES,
    OUT_OF_MEMORY_ERE,
    SERVING_LINE_MAX,
    SERVING_REACH,
    Held,
    LineFilter,
    aligned_reader,
    cut_tail,
    is_serving,
    keyword_test,
    read_error,
    scan_lines,
    serving_within_reach,
)
from memledger.sglang.lines import CUT_TAIL_ERE


def ere(words: Iterable[str]) -> str:
    """The keyword ERE of the second grep: the words, the memory words in any case, the
    start of a cut line's rest after the first grep's `N:` (sglang.lines.CUT_TAIL_ERE),
    grep_early.END_OF_PART, and a serving-time marker (a marker line the first grep kept has a
    second `[`: glued, or behind a tool's column; `drain` tells which, as the built-in scanner
    does)."""
    escaped = [re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", w) for w in words]
    end = f"^[0-9]+:{grep_early.END_OF_PART.decode()}$"  # a fed part's last line
    return "|".join([*escaped, OUT_OF_MEMORY_ERE, f"^[0-9]+:{CUT_TAIL_ERE}", end, _MARKER_ERE])


_MARKER_ERE = r"^[0-9]+:.*\] (Decode|Prefill) batch"
"""scan.BORING_LINES as an ERE, on a line the first grep kept (`N:`; its `N-` lines are the
serving-time lines alone, printed before a kept line)."""


_PCRE: dict[str, bool] = {}


def has_pcre(grep: str) -> bool:
    """Whether this grep takes `-P` (GNU grep built with PCRE; BSD grep does not)."""
    if grep not in _PCRE:
        try:
            probe = subprocess.run(
                [grep, "-a", "-P", "-e", BORING_PCRE],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            _PCRE[grep] = probe.returncode == 1  # no match on empty input; 2: no -P
        except OSError:
            _PCRE[grep] = False
    return _PCRE[grep]


def grep_program(path: Path | None = None, size: int | None = None) -> str | None:
    """The grep to prefilter a log with, else None (the built-in scanner).

    MEMLEDGER_PREFILTER=grep: grep when on PATH; =python: never; unset: for a regular file
    (`path`) of at least GREP_MIN_BYTES, when grep has `-P`.
    """
    choice = os.environ.get("MEMLEDGER_PREFILTER", "")
    if choice == "python":
        return None
    grep = shutil.which("grep")
    if choice == "grep" or grep is None:
        return grep
    if path is None or size is None or size < GREP_MIN_BYTES:
        return None
    return grep if has_pcre(grep) else None


def stream_grep() -> str | None:
    """The grep to prefilter a big stream (stdin) with, else None: as for a big file."""
    choice = os.environ.get("MEMLEDGER_PREFILTER", "")
    grep = shutil.which("grep") if choice != "python" else None
    if grep is None or choice == "grep":
        return grep
    return grep if has_pcre(grep) else None


def stdin_file() -> Path | None:
    """stdin as a path when it is a regular file read from its start (`memledger parse - <
    big.log`): /proc/PID/fd/0 opens the same file again, for grep or a worker to read."""
    if sys.stdin is not sys.__stdin__ or sys.stdin is None:
        return None  # replaced (a test, an embedding caller): read what it gives
    try:
        if sys.stdin.fileno() != 0 or not stat.S_ISREG(os.fstat(0).st_mode):
            return None
        if os.lseek(0, 0, os.SEEK_CUR) != 0:
            return None  # part of the file was read before: the log starts here, not at 0
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    path = Path(f"/proc/{os.getpid()}/fd/0")
    return path if path.exists() else None


@dataclass
class Pipeline:
    """The running greps for one input; a file cut in parts has one Pipeline a part, the first
    holding the others (`rest`), each fed by its `feeder`."""

    first: subprocess.Popen[bytes]
    second: subprocess.Popen[bytes]
    words: tuple[str, ...]
    feeder: grep_early.Feeder | None = None
    rest: list[Pipeline] = field(default_factory=list)

    def stop(self, *, close: bool = True) -> None:
        """Kill the processes (and close their pipes unless the reader still drains them)."""
        _finished(self)
        processes = [p for part in (self, *self.rest) for p in (part.first, part.second)]
        for process in processes:
            if process.poll() is None:
                process.kill()
        for process in processes:
            process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None and close:
                    stream.close()


def start(
    grep: str,
    target: str | None,
    words: Sequence[str],
    first: subprocess.Popen[bytes] | grep_early.Parts | None = None,
) -> Pipeline:
    """Start `grep -v` (serving lines) | `grep -E` (keywords) on `target` (None: stdin pipe).
    A file is cut in two parts when two CPUs are there (grep_early.start_parts: a pipeline a
    part, each fed its part, one part else). `first`: the `grep -v` (or parts) started on
    `target` at CLI entry."""
    env = {**os.environ, "LC_ALL": "C"}
    pcre = first is not None or has_pcre(grep)  # started at entry: with -P
    boring = ["-P", BORING_PCRE] if pcre else ["-E", "-e", BORING_ERE]
    limit = grep_early.limit_data if os.name == "posix" else None
    if first is None and target is not None:
        first = grep_early.start_parts(grep, target, boring, limit)
    if isinstance(first, grep_early.Parts):
        parts = first
        try:
            pipelines = [
                Pipeline(one, _keywords(grep, one, words, env, limit), tuple(words), feeder)
                for one, feeder in zip(parts.firsts, parts.feeders, strict=True)
            ]
        except BaseException:
            parts.stop()
            raise
        parts.start_feeding()
        head = pipelines[0]
        head.rest = pipelines[1:]
        _RUNNING.append(head)
        return head
    if first is None:
        first = grep_early.start_first(grep, target, boring, limit)
    second = _keywords(grep, first, words, env, limit)
    pipeline = Pipeline(first, second, tuple(words))
    _RUNNING.append(pipeline)
    return pipeline


def _keywords(
    grep: str,
    first: subprocess.Popen[bytes],
    words: Sequence[str],
    env: dict[str, str],
    limit: Callable[[], None] | None,
) -> subprocess.Popen[bytes]:
    """`grep -n -B REACH -E` of the keywords on the first grep's output: each keyword line
    (`M:N:line`) after the REACH lines before it (`M-N:line`, `M-N-line`: scan.SERVING_REACH),
    among which the serving-time line kept before it, if any. Its lines are the first grep's,
    each shorter than that grep's data limit; the limit is set on it too, just after it
    starts (prlimit, Linux): no preexec_fn, so the spawn needs no fork beside the feeders."""
    second = subprocess.Popen(
        [grep, "-a", "-n", f"-B{SERVING_REACH}", "-E", "-e", ere(words)],
        stdin=first.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        pipesize=grep_early.PIPE_BYTES,
    )
    if limit is not None:
        _prlimit(second.pid)
    assert first.stdout is not None
    first.stdout.close()
    return second


def _prlimit(pid: int) -> None:
    import resource

    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (GREP_DATA_LIMIT, GREP_DATA_LIMIT))
    except (AttributeError, ValueError, OSError):
        pass  # not Linux, gone already, or a lower hard limit: its input bounds it anyway


_RUNNING: list[Pipeline] = []
"""Pipelines started and not yet drained or stopped: `stop_all` ends them when a command is
interrupted before its reader ran (Ctrl-C during the imports or the grammar build)."""


def _finished(pipeline: Pipeline) -> None:
    if any(p is pipeline for p in _RUNNING):
        _RUNNING[:] = [p for p in _RUNNING if p is not pipeline]


def stop_all() -> None:
    """Stop every pipeline still running (the CLI calls this as it exits)."""
    stop_unclaimed()
    while _RUNNING:
        _RUNNING[-1].stop()


# --- started at CLI entry ------------------------------------------------------------------------

STARTED: dict[grep_early.Identity, Pipeline] = {}
"""The pipelines `memledger.input.prestart` started at CLI entry, by file identity; `claim` takes
one."""


def claim(path: Path, words: Sequence[str]) -> Pipeline | None:
    """The pipeline `prestart` started for this file with these keywords, if any."""
    key = grep_early.identity(str(path))
    pipeline = None if key is None else STARTED.pop(key, None)
    if pipeline is not None and pipeline.words != tuple(words):
        pipeline.stop()
        return None
    return pipeline


def stop_unclaimed() -> None:
    """Stop pipelines nobody read (the command failed before reading its log)."""
    grep_early.stop_unadopted()
    while STARTED:
        STARTED.popitem()[1].stop()


# --- reading the pipeline's lines -----------------------------------------------------------------

ProgressCallback = Callable[[int, int | None], None]


def grep_candidates(
    path: Path | None,
    stream_feed: Callable[[IO[bytes]], None] | None,
    grep: str,
    words: Sequence[str],
    on_lines: Callable[[int, int], None],
    fallback: Callable[[int], Iterator[tuple[int, bytes]]] | None,
    progress: tuple[ProgressCallback, int] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Start (or claim) the pipeline now, so it overlaps what the caller does next; return its
    (line number, raw bytes) of each candidate line.

    `path`: a regular file grep reads itself; else `stream_feed` copies the input into grep's
    stdin (on a thread). `on_lines(n_lines, n_bytes)` reports a file's totals at the end.
    `fallback(first_line)` scans the file with the built-in scanner from that line on: used
    when a line is too long for the bounded read or grep itself fails.
    """
    pipeline = claim(path, words) if path is not None else None
    if pipeline is None:
        pipeline = start(grep, None if path is None else str(path), words)
    errors: list[BaseException] = []
    writer: threading.Thread | None = None
    if path is None:
        assert pipeline.first.stdin is not None and stream_feed is not None
        sink = pipeline.first.stdin
        writer = threading.Thread(target=_feed, args=(stream_feed, sink, errors), daemon=True)
        writer.start()
    elif progress is not None:
        _watch_progress(pipeline, progress[1], progress[0])
    return drain_to_end(drain(pipeline, path, writer, errors, on_lines, fallback))


_RECORD = re.compile(rb"[0-9]+([:-])([0-9]+)([:-])")
"""The prefixes of a keyword-grep output line: its own line number and `:` (a keyword line) or
`-` (a line before one), then the first grep's (`:` no serving-time line, `-` one)."""


def drain(
    pipeline: Pipeline,
    path: Path | None,
    writer: threading.Thread | None,
    errors: list[BaseException],
    on_lines: Callable[[int, int], None],
    fallback: Callable[[int], Iterator[tuple[int, bytes]]] | None,
) -> Generator[tuple[int, bytes], None, tuple[Held, int | None]]:
    """The candidates of the pipeline's output, each after the serving-time line kept before it
    (memledger.input.scan.LineFilter: the last one before it, within SERVING_REACH lines and
    after the previous candidate; the first grep prints the last of each run, the second the
    REACH lines before each keyword line). Returns the serving-time line held at the end, and
    the line of the END_OF_PART that ended the input (None: handed over to `fallback`, which
    read on to the end)."""
    parts = [pipeline, *pipeline.rest]
    completed = False
    handed_over = False  # a line too long for the bounded read: the built-in scanner goes on
    failed: Pipeline | None = None  # a part whose grep failed
    lines_before = 0  # the lines of the parts read so far (a fed part ends with END_OF_PART)
    held: Held = None
    last_candidate = 0
    decode, prefill = BORING_LINES
    keywords = keyword_test(pipeline.words)
    end_line: int | None = None
    try:
        limit = MAX_LINE_BYTES + 48 if fallback is not None else -1  # + the `M:N:` prefixes
        for part in parts:
            stdout = part.second.stdout
            assert stdout is not None
            end_line = None
            while raw := stdout.readline(limit):
                if 0 < limit <= len(raw) and not raw.endswith(b"\n"):
                    handed_over = True
                    break
                record = _RECORD.match(raw)
                if record is None:
                    continue  # a group separator
                line = lines_before + int(record[2])
                content = raw[record.end() :]
                if content.endswith(b"\n"):
                    content = content[:-1]
                if record[3] == b"-":  # a serving-time line: the last of its run
                    held = (line, content) if len(content) <= SERVING_LINE_MAX else None
                elif record[1] == b"-":
                    pass  # a line before a keyword line, no candidate
                elif content == grep_early.END_OF_PART:  # no candidate: no keyword in it
                    end_line = int(record[2])  # the part's end, if no other line follows
                    continue
                elif (content.find(decode) >= 0 or content.find(prefill) >= 0) and (
                    is_serving(content)
                ):
                    # a marker line the first grep kept (a second `[`) that is a serving-time
                    # line behind a tool's column (scan.serving_behind_wrapper)
                    held = (line, content) if len(content) <= SERVING_LINE_MAX else None
                elif not (keywords(content) or cut_tail(content)):
                    pass  # a glued marker line without a keyword (the ERE's marker matched)
                else:
                    kept = serving_within_reach(held, line)
                    if kept is not None:
                        yield kept
                    held = None
                    last_candidate = line
                    yield line, content
                end_line = None
            if handed_over:
                break
            part.second.wait()
            part.first.wait()
            if part.feeder is not None and end_line is None:
                part.feeder.join()
                if part.feeder.error is not None:
                    errors.append(part.feeder.error)
                    break
            codes = (part.first.returncode, part.second.returncode)
            if any(code not in (0, 1) for code in codes) or (part.feeder and end_line is None):
                failed = part
                handed_over = True  # a line too long for grep's memory
                break
            if end_line is not None:
                lines_before += end_line - 1
        completed = True
    finally:
        if not completed or handed_over or errors:
            pipeline.stop(close=False)
        for part in parts:
            assert part.second.stdout is not None
            part.second.stdout.close()
            part.second.wait()
            part.first.wait()
        if writer is not None:
            writer.join()
        complaint = b""
        for part in parts:
            for process in (part.first, part.second):
                if process.stderr is not None:
                    complaint = complaint or process.stderr.read().strip()
                    process.stderr.close()
    _finished(pipeline)  # its processes have ended
    if errors:
        error = errors[0]
        raise error if isinstance(error, InputError) else InputError(f"read failed ({error})")
    if failed is not None and fallback is None:
        detail = complaint.decode(errors="replace") or f"exit {failed.first.returncode}"
        raise InputError(f"scan failed: {detail.splitlines()[0]}")
    if handed_over:
        assert fallback is not None
        # it reads from the start: the serving-time line before its next candidate is its own
        yield from fallback(last_candidate + 1)
        return None, None
    if path is not None:
        fed = [part.feeder for part in parts if part.feeder is not None]
        on_lines(lines_before, fed[-1].end)
    return held, None if end_line is None else lines_before + 1


def drain_to_end(
    lines: Generator[tuple[int, bytes], None, tuple[Held, int | None]],
) -> Iterator[tuple[int, bytes]]:
    """`drain`'s lines, then the serving-time line kept before the input's end."""
    held, end = yield from lines
    kept = None if end is None else serving_within_reach(held, end)
    if kept is not None:
        yield kept


def _feed(copy: Callable[[IO[bytes]], None], sink: IO[bytes], errors: list[BaseException]) -> None:
    """Writer thread: copy the stream into grep."""
    try:
        copy(sink)
    except BrokenPipeError:
        pass
    except (OSError, EOFError, zlib.error, InputError) as exc:
        errors.append(exc)
    finally:
        try:
            sink.close()
        except OSError:
            pass


def _watch_progress(pipeline: Pipeline, total: int, progress: ProgressCallback) -> None:
    """Report how far the file has been read: its feeders' bytes, else grep's (Linux /proc;
    silently nothing elsewhere)."""
    feeders = [part.feeder for part in (pipeline, *pipeline.rest) if part.feeder is not None]
    process = pipeline.first
    io_file = Path(f"/proc/{process.pid}/io")

    def read_so_far() -> int:
        if feeders:
            return sum(feeder.fed for feeder in feeders)
        fields = dict(
            line.split(": ", 1) for line in io_file.read_text().splitlines() if ": " in line
        )
        return int(fields["rchar"])

    def watch() -> None:
        while any(part.first.poll() is None for part in (pipeline, *pipeline.rest)):
            try:
                progress(min(read_so_far(), total), total)
            except (OSError, KeyError, ValueError):
                return
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()


def rest_of_file(
    path: Path,
    name: str,
    extra_words: Sequence[str],
    on_lines: Callable[[int, int], None],
    head_bytes: int,
) -> Callable[[int], Iterator[tuple[int, bytes]]]:
    """The fallback: the built-in scanner over the whole file, yielding from `first_line` on.
    It reads as a whole-file scan does (`aligned_reader`: the opener's `head_bytes`, then
    CHUNK_BYTES), so an over-long line is cut into the same pieces."""

    def scan(first_line: int) -> Iterator[tuple[int, bytes]]:
        n_bytes = 0

        def count(size: int) -> None:
            nonlocal n_bytes
            n_bytes += size

        try:
            handle = path.open("rb")
        except OSError as exc:
            raise read_error(exc, name) from exc
        with handle:
            read = aligned_reader(handle, 0, head_bytes, name, count)
            found = scan_lines(read, LineFilter(extra_words))
            while True:
                try:
                    item = next(found)
                except StopIteration as done:
                    on_lines(done.value, n_bytes)
                    return
                if item[0] >= first_line:
                    yield item

    return scan
