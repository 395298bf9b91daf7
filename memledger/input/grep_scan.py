"""The grep prefilter: a big log's candidate lines found by two `grep` processes, at C speed.

A long-running server's log is mostly serving-time lines. `grep -v` drops those (a `Decode batch`
/ `Prefill batch` line alone on its physical line) and a second grep keeps the lines holding a
keyword: the same lines as the built-in scanner (memledger.input.scan; tests/test_scan.py
compares them on every real log), in a third of its time. It is the default for a regular file
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memledger.errors import InputError
from memledger.input import grep_early
from memledger.input.grep_early import BORING_PCRE as BORING_PCRE
from memledger.input.grep_early import GREP_DATA_LIMIT as GREP_DATA_LIMIT
from memledger.input.grep_early import GREP_MIN_BYTES as GREP_MIN_BYTES
from memledger.input.scan import (
    BORING_ERE,
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    OUT_OF_MEMORY_ERE,
    LineFilter,
    aligned_reader,
    read_error,
    scan_lines,
)
from memledger.sglang.lines import CUT_TAIL_ERE, PREFILTER_WORDS


def ere(words: Iterable[str]) -> str:
    """The keyword ERE of the second grep: the words, the memory words in any case, and the
    start of a cut line's rest after the first grep's `N:` (sglang.lines.CUT_TAIL_ERE)."""
    escaped = [re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", w) for w in words]
    return "|".join([*escaped, OUT_OF_MEMORY_ERE, f"^[0-9]+:{CUT_TAIL_ERE}"])


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


def _limit_data() -> None:
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_DATA, (GREP_DATA_LIMIT, GREP_DATA_LIMIT))
    except (ValueError, OSError):
        pass  # a lower hard limit already: keep it


@dataclass
class Pipeline:
    """The running greps (and the line counter) for one input."""

    first: subprocess.Popen[bytes]
    second: subprocess.Popen[bytes]
    counter: subprocess.Popen[bytes] | None
    words: tuple[str, ...]

    def stop(self, *, close: bool = True) -> None:
        """Kill the processes (and close their pipes unless the reader still drains them)."""
        _finished(self)
        for process in (self.first, self.second, self.counter):
            if process is not None and process.poll() is None:
                process.kill()
        for process in (self.first, self.second, self.counter):
            if process is not None:
                process.wait()
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None and close:
                        stream.close()


def start(
    grep: str,
    target: str | None,
    words: Sequence[str],
    first: subprocess.Popen[bytes] | None = None,
) -> Pipeline:
    """Start `grep -v` (serving lines) | `grep -E` (keywords) on `target` (None: stdin pipe),
    and `wc -l` beside them for the line count of a file. `first`: the `grep -v` already
    running on `target` (started at CLI entry, memledger.input.grep_early)."""
    env = {**os.environ, "LC_ALL": "C"}
    boring = ["-P", BORING_PCRE] if has_pcre(grep) else ["-E", "-e", BORING_ERE]
    limit = _limit_data if os.name == "posix" else None
    if first is None:
        first = subprocess.Popen(
            [grep, "-n", "-a", "-v", *boring, "--", target or "-"],
            stdin=subprocess.PIPE if target is None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            preexec_fn=limit,
            pipesize=grep_early.PIPE_BYTES,
        )
    second = subprocess.Popen(
        [grep, "-a", "-E", "-e", ere(words)],
        stdin=first.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=limit,
    )
    assert first.stdout is not None
    first.stdout.close()
    wc = shutil.which("wc") if target is not None else None
    counter = (
        None
        if wc is None or target is None
        else subprocess.Popen(
            [wc, "-l", "--", target],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    )
    pipeline = Pipeline(first, second, counter, tuple(words))
    _RUNNING.append(pipeline)
    return pipeline


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

_STARTED: dict[grep_early.Identity, Pipeline] = {}


def prestart(argv: Sequence[str]) -> None:
    """Start the pipeline for the first big plain log named in `argv` (a memledger command line)
    now, so it overlaps the imports; `claim` hands it to the reader. Adopts the first grep
    `grep_early.start_early` started for it. Any failure: nothing."""
    found = grep_early.big_log(argv, GREP_MIN_BYTES)
    if found is None:
        return
    arg, key = found
    if key is None:  # `-`: stdin
        reopened = stdin_file()
        if reopened is None:
            from memledger.input.stdin_scan import prestart as read_stdin_ahead

            read_stdin_ahead(stream_grep())
            return
        found = grep_early.big_log([argv[0], str(reopened)], GREP_MIN_BYTES)
        if found is None:
            return
        arg, key = found
        if key is None:
            return
    grep = grep_program(Path(arg), key[3])
    first = None
    if grep is not None and has_pcre(grep):
        first = grep_early.adopt(key, grep)
    grep_early.stop_unadopted()  # started for a grep that is not the one to use
    if grep is None:
        return
    try:
        _STARTED[key] = start(grep, arg, PREFILTER_WORDS, first)
    except OSError:
        if first is not None:
            grep_early.stop(first)


def claim(path: Path, words: Sequence[str]) -> Pipeline | None:
    """The pipeline `prestart` started for this file with these keywords, if any."""
    key = grep_early.identity(str(path))
    pipeline = None if key is None else _STARTED.pop(key, None)
    if pipeline is not None and pipeline.words != tuple(words):
        pipeline.stop()
        return None
    return pipeline


def stop_unclaimed() -> None:
    """Stop pipelines nobody read (the command failed before reading its log)."""
    grep_early.stop_unadopted()
    while _STARTED:
        _STARTED.popitem()[1].stop()


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
        _watch_progress(pipeline.first, progress[1], progress[0])
    return drain(pipeline, path, writer, errors, on_lines, fallback)


def drain(
    pipeline: Pipeline,
    path: Path | None,
    writer: threading.Thread | None,
    errors: list[BaseException],
    on_lines: Callable[[int, int], None],
    fallback: Callable[[int], Iterator[tuple[int, bytes]]] | None,
) -> Iterator[tuple[int, bytes]]:
    first, second = pipeline.first, pipeline.second
    assert second.stdout is not None
    completed = False
    handed_over: int | None = None  # the line the built-in scanner goes on from
    last = 0
    try:
        limit = MAX_LINE_BYTES + 24 if fallback is not None else -1  # + the `N:` prefix
        while raw := second.stdout.readline(limit):
            number, _, content = raw.partition(b":")
            if 0 < limit <= len(raw) and not raw.endswith(b"\n"):
                handed_over = int(number) if number.isdigit() else last + 1
                break
            if content.endswith(b"\n"):
                content = content[:-1]
            try:
                line = int(number)
            except ValueError:
                continue
            last = line
            yield line, content
        completed = True
    finally:
        if not completed or handed_over is not None:
            pipeline.stop(close=False)
        second.stdout.close()
        second.wait()
        first.wait()
        if writer is not None:
            writer.join()
        complaint = b""
        for process in (first, second):
            if process.stderr is not None:
                complaint = complaint or process.stderr.read().strip()
                process.stderr.close()
    _finished(pipeline)  # its processes have ended (the counter is waited for below)
    if errors:
        error = errors[0]
        raise error if isinstance(error, InputError) else InputError(f"read failed ({error})")
    if handed_over is None and (first.returncode not in (0, 1) or second.returncode not in (0, 1)):
        if fallback is None:
            detail = complaint.decode(errors="replace") or f"exit {first.returncode}"
            raise InputError(f"scan failed: {detail.splitlines()[0]}")
        handed_over = last + 1  # grep failed (a line too long for its memory): go on here
    if handed_over is not None:
        assert fallback is not None
        if pipeline.counter is not None:
            pipeline.counter.kill()
            pipeline.counter.wait()
        yield from fallback(handed_over)
        return
    if path is not None:
        on_lines(*_totals(pipeline, path))


def _totals(pipeline: Pipeline, path: Path | None) -> tuple[int, int]:
    """(lines, bytes) of a file: `wc -l` (plus an unterminated last line), else counted here."""
    assert path is not None
    size = path.stat().st_size
    unterminated = 0
    if size:
        with path.open("rb") as handle:
            handle.seek(size - 1)
            unterminated = int(handle.read(1) != b"\n")
    counter = pipeline.counter
    if counter is not None:
        out, _ = counter.communicate()
        try:
            return int(out.split()[0]) + unterminated, size
        except (ValueError, IndexError):
            pass
    newlines = 0
    with path.open("rb") as counted:
        while chunk := counted.read(CHUNK_BYTES):
            newlines += chunk.count(b"\n")
    return newlines + unterminated, size


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
