"""The prefilter's first grep, started at CLI entry before any other import of memledger.

A big log's scan is mostly this one process (`grep -v` of the serving-time lines). The CLI
starts it here, with the stdlib only (os, stat, subprocess), ~0.03 s after the interpreter
starts; memledger.input.grep_scan.prestart adopts it a little later (it checks that grep has
`-P`, and starts the keyword grep on its output and `wc -l`) while the rest of memledger
imports. Until then its output waits in a 1 MiB pipe. Nothing here is needed for correctness:
any failure starts nothing, and a process nobody adopts is killed by `stop_unadopted`.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Sequence

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


def start_first(grep: str, target: str | None, boring: Sequence[str]) -> subprocess.Popen[bytes]:
    """`grep -n -a -v BORING` on `target` (None: its stdin, a pipe), output into a pipe."""
    return subprocess.Popen(
        [grep, "-n", "-a", "-v", *boring, "--", target or "-"],
        stdin=subprocess.PIPE if target is None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LC_ALL": "C"},
        preexec_fn=limit_data if os.name == "posix" else None,
        pipesize=PIPE_BYTES,
    )


STARTED: dict[Identity, tuple[str, subprocess.Popen[bytes]]] = {}
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
    try:
        STARTED[found[1]] = (grep, start_first(grep, found[0], ["-P", BORING_PCRE]))
    except (OSError, ValueError, subprocess.SubprocessError):
        pass


def adopt(key: Identity, grep: str) -> subprocess.Popen[bytes] | None:
    """The first grep started at entry for this file with this grep program, if any."""
    found = STARTED.pop(key, None)
    if found is None:
        return None
    if found[0] != grep:
        stop(found[1])
        return None
    return found[1]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a first grep and close its pipes."""
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
