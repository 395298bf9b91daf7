"""`@FILE` among the logs of `check` and `ledger`: a list of logs, one path per line.

What CI produces when its logs live in several places (a matrix job's artifacts) and a folder
would take too much or the command line cannot carry them all: `find runs -name '*.log' >
logs.txt`, then `memledger check @logs.txt`, one verdict for all (xargs would split the run
into several). As pytest's `@file` and pip's `-r`: blank lines and `#` comments are skipped, a
path is taken as written (relative to the current folder, as on the command line), a folder in
it stands for the logs below it. A log whose name starts with `@` is given as `./@name`.

The list is the user's own file, read with bounds (MAX_LIST_BYTES, MAX_ENTRY_BYTES): a list
that cannot be read, is not text, or holds `-` or another `@` list is a ConfigError at its
file:line (exit 2); a listed log that does not exist is that log's own error, saying where it
was listed (exit 3, as on the command line).
"""

from __future__ import annotations

import os

from memledger.errors import ConfigError

LIST_PREFIX = "@"
MAX_LIST_BYTES = 4 << 20
"""A list of at most 4 MiB (about 50,000 paths)."""
MAX_ENTRY_BYTES = 4096
"""A path of at most PATH_MAX bytes."""


def is_log_list(source: str) -> bool:
    """Whether a command-line input names a list of logs (`@logs.txt`)."""
    return source.startswith(LIST_PREFIX) and len(source) > len(LIST_PREFIX)


def read_log_list(source: str) -> list[tuple[str, int]]:
    """The paths a `@FILE` lists, each with its line number, in the order written."""
    path = source[len(LIST_PREFIX) :]
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_LIST_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError("no such file (a list of logs, one path per line)", path=path) from None
    except IsADirectoryError:
        raise ConfigError("is a folder, not a list of logs", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if len(data) > MAX_LIST_BYTES:
        raise ConfigError(f"a list of logs of more than {MAX_LIST_BYTES >> 20} MiB", path=path)
    entries: list[tuple[str, int]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        entry = _entry(raw, path, number)
        if entry is not None:
            entries.append((entry, number))
    if not entries:
        raise ConfigError("a list of logs that names none", path=path)
    return entries


def _entry(raw: bytes, path: str, number: int) -> str | None:
    if len(raw) > MAX_ENTRY_BYTES:
        raise ConfigError(f"a path of more than {MAX_ENTRY_BYTES} bytes", path=path, line=number)
    if b"\x00" in raw:
        raise ConfigError("a NUL byte: not a list of paths", path=path, line=number)
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", path=path, line=number) from None
    if not text or text.startswith("#"):
        return None
    if text == "-":
        raise ConfigError(
            "stdin (-) cannot be listed: give it on the command line", path=path, line=number
        )
    if is_log_list(text):
        raise ConfigError(
            f"a list inside a list is not read (a log named so: ./{text})", path=path, line=number
        )
    if any(ord(char) < 32 for char in text):
        raise ConfigError("a control character in a path", path=path, line=number)
    return text


def missing(entry: str) -> bool:
    """Whether a listed path names nothing (its own error then says where it was listed)."""
    return not os.path.lexists(entry)
