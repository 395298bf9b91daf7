"""The prefilter's first grep, started at CLI entry before any other import of memledger.

A big log's scan is mostly this one process (`grep -v` of the serving-time lines). The CLI
starts it here, with the stdlib only (os, stat, subprocess), ~0.03 s after the interpreter
starts; memledger.input.grep_scan.prestart adopts it a little later (it checks that grep has
`-P`, and starts the keyword grep on its output) while the rest of memledger
imports. Until then its output waits in a 1 MiB pipe. Nothing here is needed for correctness:
any failure starts nothing, and a process nobody adopts is killed by `stop_unadopted`.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Callable, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

GREP_MIN_BYTES = 32 << 20
"""A regular file at least this big is prefiltered by grep unless MEMLEDGER_PREFILTER=python
(below it, starting three processes costs more than the built-in scan)."""
GREP_DATA_LIMIT = 32 << 20
"""RLIMIT_DATA of each grep: grep holds a whole line, so a hostile multi-GB line makes it fail
(the built-in scanner takes over) instead of growing."""
_MARKER = r"\] (?:Decode|Prefill) batch"
BORING_PCRE = rf"^\[[^[\]]*+{_MARKER}[^[]*+$|^(?=.*?{_MARKER})[^[]*+(?:\[[^[]*+)?$"
"""BORING_ERE (memledger.input.scan) for `grep -P`: a marker and at most one `[` on the line.
The first alternative is the usual serving line (`[stamp] Decode batch. ...`: one `[` at the
start, the marker after its `]`, no `[` after it) and implies the second, which takes every
other form: a marker (the lookahead) and at most one `[`. Linear (possessive); 0.79x the
instructions of the second alone per 300 MB, which is 0.3x the ERE's."""
COMMANDS = frozenset({"parse", "ledger", "diff", "check", "diagnose", "whatif"})
"""The commands whose LOG arguments are read (and may be prestarted)."""
PIPE_BYTES = 1 << 20
"""The first grep's output pipe (Linux F_SETPIPE_SZ; the unprivileged maximum): 37 MB of a
serving log's lines run through before the pipe fills and grep waits to be adopted."""

END_OF_PART = b"memledger-prefilter-end-of-part"
"""The line a feeder writes after its part of a file: the keyword grep keeps it (an ERE
alternative of its own), and its line number is one more than the part's lines. A log's own
line of this text is no candidate (no keyword): the reader skips every such line."""
SPLIT_SEARCH_BYTES = 1 << 20
"""A file is cut in two at the first newline within this many bytes after its middle."""

Identity = tuple[str, int, int, int, int]
"""A regular file as opened: real path, device, inode, size, mtime (ns)."""


def identity(path: str) -> Identity | None:
    """The file's identity, or None when it is no regular file (or cannot be stat'ed)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (os.path.realpath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def big_log(argv: Sequence[str], min_bytes: int) -> tuple[str, Identity | None] | None:
    """The log of a memledger command line worth prestarting: (`-`, None) for stdin, else
    (path, identity) of the first plain (not gzip) regular file of `min_bytes` or more named
    in it; None for a command that reads no log, or with extension grammars (they add keywords:
    the reader starts its own pipeline)."""
    if not argv or argv[0] not in COMMANDS or any(a.startswith("--grammar") for a in argv):
        return None
    for previous, arg in zip(argv, argv[1:], strict=False):
        if arg == "-" and (previous == argv[0] or not previous.startswith("-")):
            return arg, None  # `-` after an option is its value (`-o -`), not the log
        if arg.startswith("-"):
            continue
        key = identity(arg)
        if key is not None and key[3] >= min_bytes and not is_gzip(arg):
            return arg, key
    return None


def is_gzip(path: str) -> bool:
    """Whether the file starts as gzip does (Python inflates it and feeds grep); an unreadable
    file counts as one (nothing to start for it either)."""
    try:
        with open(path, "rb") as head:
            return head.read(2) == b"\x1f\x8b"
    except OSError:
        return True


def which_grep() -> str | None:
    """`grep` on PATH (shutil.which's answer for a plain name on POSIX, without its import)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "grep")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def limit_data() -> None:
    """preexec_fn of each grep: RLIMIT_DATA to GREP_DATA_LIMIT (a lower hard limit stays)."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_DATA, (GREP_DATA_LIMIT, GREP_DATA_LIMIT))
    except (ValueError, OSError):
        pass


def start_first(
    grep: str,
    target: str | None,
    boring: Sequence[str],
    limit: Callable[[], None] | None = limit_data,
) -> subprocess.Popen[bytes]:
    """`grep -n -a -v -B1 BORING` on `target` (None: its stdin, a pipe), output into a pipe:
    the lines that are no serving-time line (`N:line`), each after the serving-time line just
    before it, if any (`N-line`: the last of its run)."""
    return subprocess.Popen(
        [grep, "-n", "-a", "-v", "-B1", *boring, "--", target or "-"],
        stdin=subprocess.PIPE if target is None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LC_ALL": "C"},
        preexec_fn=limit if os.name == "posix" else None,
        pipesize=PIPE_BYTES,
    )


def cores() -> int:
    """CPUs this process may run on (`taskset -c 0`: 1)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Feeder(threading.Thread):
    """Copies bytes [start, end) of a file into a grep's stdin (sendfile: the kernel moves them,
    Python never holds them), then END_OF_PART on its own line."""

    def __init__(self, path: str, start: int, end: int, sink: IO[bytes], newline: bool) -> None:
        super().__init__(daemon=True)
        self.source = os.open(path, os.O_RDONLY)
        self.start_at, self.end, self.sink, self.newline = start, end, sink, newline
        self.fed = 0
        self.error: OSError | None = None

    def discard(self) -> None:
        """Close what a feeder that never ran holds."""
        os.close(self.source)
        self.sink.close()

    def run(self) -> None:
        sink = self.sink.fileno()
        offset = self.start_at
        try:
            while offset < self.end:
                size = min(self.end - offset, PIPE_BYTES)
                try:
                    sent = os.sendfile(sink, self.source, offset, size)
                except OSError as exc:
                    if not isinstance(exc, BrokenPipeError) and exc.errno in _NO_SENDFILE:
                        sent = _write_all(sink, os.pread(self.source, size, offset))
                    else:
                        raise
                if sent == 0:
                    break  # the file shrank: the reader refuses it (F29)
                offset += sent
                self.fed = offset - self.start_at
            _write_all(sink, (b"\n" if self.newline else b"") + END_OF_PART + b"\n")
        except BrokenPipeError:
            pass  # the pipeline was stopped
        except OSError as exc:
            self.error = exc
        finally:
            os.close(self.source)
            try:
                self.sink.close()
            except OSError:
                pass


_NO_SENDFILE = frozenset({22, 38, 95})  # EINVAL, ENOSYS, EOPNOTSUPP: copy through Python


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return len(data)


class Parts:
    """A file's first greps, each fed one part of it (the two halves, cut at a newline)."""

    def __init__(self, firsts: list[subprocess.Popen[bytes]], feeders: list[Feeder]) -> None:
        self.firsts, self.feeders = firsts, feeders

    def start_feeding(self) -> None:
        for feeder in self.feeders:
            if feeder.ident is None:  # not started yet (at entry, or just now)
                feeder.start()

    def stop(self) -> None:
        for first in self.firsts:
            stop(first)  # a started feeder then fails to write, and ends
        for feeder in self.feeders:
            if feeder.ident is None:  # never started
                feeder.discard()


def start_parts(
    grep: str, path: str, boring: Sequence[str], limit: Callable[[], None] | None = limit_data
) -> Parts:
    """The first greps of `path` cut in two, with their feeders (not started: spawn every
    process first, a fork beside a running thread is best avoided); one part when there is no
    newline near the middle, or one CPU (two processes would only share it). Each part ends
    with END_OF_PART, so the serving-time line before the file's end is found as before a
    candidate (memledger.input.scan.SERVING_REACH)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        middle = size // 2
        newline = os.pread(fd, SPLIT_SEARCH_BYTES, middle).find(b"\n") if cores() > 1 else -1
        unterminated = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
    finally:
        os.close(fd)
    cuts = (
        [0, size]
        if newline < 0 or middle + newline + 1 >= size
        else [0, middle + newline + 1, size]
    )
    firsts: list[subprocess.Popen[bytes]] = []
    feeders: list[Feeder] = []
    try:
        while len(firsts) < len(cuts) - 1:  # one by one: those started are stopped on failure
            firsts.append(start_first(grep, None, boring, limit))
        for first, start, end in zip(firsts, cuts, cuts[1:], strict=False):
            sink, first.stdin = first.stdin, None  # the feeder's alone: it closes it when done
            assert sink is not None
            feeders.append(Feeder(path, start, end, sink, unterminated and end == size))
    except BaseException:
        Parts(firsts, feeders).stop()
        raise
    return Parts(firsts, feeders)


STARTED: dict[Identity, tuple[str, subprocess.Popen[bytes] | Parts]] = {}
"""The first grep started at entry for a file, with the grep program, until adopted."""


def start_early(argv: Sequence[str]) -> None:
    """Start the first grep for the big plain log named first in `argv` (the CLI's command
    line), when the default choice would take grep: a regular file of GREP_MIN_BYTES or more,
    not gzip, MEMLEDGER_PREFILTER unset. Whether grep has `-P` is checked on adoption."""
    if os.environ.get("MEMLEDGER_PREFILTER", "") != "":
        return  # forced either way: grep_scan.prestart decides, as it always did
    found = big_log(argv, GREP_MIN_BYTES)
    if found is None or found[1] is None:
        return
    grep = which_grep()
    if grep is None:
        return
    boring = ["-P", BORING_PCRE]
    try:
        parts = start_parts(grep, found[0], boring)
        parts.start_feeding()  # the keyword greps start later, beside running threads
        STARTED[found[1]] = (grep, parts)
    except (OSError, ValueError, subprocess.SubprocessError):
        pass


def adopt(key: Identity, grep: str) -> subprocess.Popen[bytes] | Parts | None:
    """The first grep(s) started at entry for this file with this grep program, if any."""
    found = STARTED.pop(key, None)
    if found is None:
        return None
    if found[0] != grep:
        stop(found[1])
        return None
    return found[1]


def stop(process: subprocess.Popen[bytes] | Parts) -> None:
    """Kill a first grep (or a file's) and close its pipes."""
    if isinstance(process, Parts):
        process.stop()
        return
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def stop_unadopted() -> None:
    """Stop every first grep nobody adopted (the command failed before reading its log)."""
    while STARTED:
        stop(STARTED.popitem()[1][1])
