"""A paste a terminal hard-wrapped at its width, read with each line whole again.

Some terminals and consoles copy what they show, a newline wherever a line reached the window's
width (the Windows console, `screen`, a web shell, an e-mail at 80 columns): every long line
comes as pieces of exactly that many characters and a shorter last piece. Read so, an error
text loses its end and a memory line its values, and the cut ones cannot all be told from a line
a narrow window never cut (memledger.input.wrapped rejoins memory lines one at a time).

The width is told from the input's first block: the longest line's length, held by at least
MIN_CUT_LINES lines (by just that many only when they follow each other, one line's pieces), more
of them than lines a little shorter (a log's or a sentence's own
lengths spread, a terminal's cut does not), and most of them followed by a line that does not
start a record of its own (an SGLang prefix, a tool's timestamp or process tag, a traceback, a
blank line: lines every rank printed alike are as long as each other, and each starts one). A
line of exactly that width is then joined with the line after it, without a space (a hard wrap
keeps every character), up to MAX_JOINED_BYTES; each joined piece leaves an empty line behind the
joined line, so every later line keeps its number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

from memledger.input.logical import PREFIX_RE
from memledger.input.wrappers import COLUMN_PATTERN, STAMP_PATTERN

MIN_WIDTH = 60
"""Narrower than a terminal a log is read in (80 columns and up; a console's default is 120)."""
MIN_CUT_LINES = 2
NEAR_WIDTH = 8
"""Lines this much shorter than the width count as a spread of lengths (prose, a log's own)."""
SAME_START = 12
"""Lines that start with as many equal bytes are two records printed alike, not one cut."""
MAX_JOINED_BYTES = 1 << 20
"""A joined line stops growing here (a file of lines all that long is no wrapped paste)."""

_RECORD_START = re.compile(
    rb"\s*$|Traceback \(|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b|"
    + f"{PREFIX_RE.pattern}|{COLUMN_PATTERN}|{STAMP_PATTERN}".encode()
)
"""A line that starts a record of its own: blank, an SGLang prefix, a traceback, a level, or
what a tool puts before each line (memledger.input.wrappers: a timestamp, a process tag such as
`(Worker_TP1 pid=7)`, a column)."""


class ByteSource(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _length(line: bytes) -> int:
    """Characters a terminal showed of a line (its end's CR dropped)."""
    line = line.removesuffix(b"\r")
    return len(line) if line.isascii() else len(line.decode("utf-8", "replace"))


def _continues(first: bytes, line: bytes) -> bool:
    """Whether `line` may be the rest of `first` cut at the width: it starts no record of its
    own, nor as `first` does (a line every rank printed alike)."""
    return _RECORD_START.match(line) is None and line[:SAME_START] != first[:SAME_START]


def wrap_width(head: bytes) -> int | None:
    """The width a terminal cut the input's lines at (module docstring), else None."""
    lines = head.split(b"\n")[:-1]  # the last one may be cut by the block's end
    if len(lines) < MIN_CUT_LINES:
        return None
    lengths = [_length(line) for line in lines]
    width = max(lengths)
    at = [index for index, length in enumerate(lengths) if length == width]
    if width < MIN_WIDTH or len(at) < MIN_CUT_LINES:
        return None
    if len(at) == MIN_CUT_LINES and at[-1] - at[0] != MIN_CUT_LINES - 1:
        return None  # as few as that: one line's pieces, one after the other
    near = sum(1 for length in lengths if width - NEAR_WIDTH <= length < width)
    if near >= len(at):
        return None
    followed = sum(
        1 for index in at if index + 1 < len(lines) and _continues(lines[index], lines[index + 1])
    )
    return width if 2 * followed > len(at) else None


def rewrapped_lines(lines: Iterator[bytes], width: int) -> Iterator[bytes]:
    """Physical lines (without `\\n`) with each line of `width` characters joined to the next
    one unless that one starts a record of its own (a line exactly that long the terminal did not
    cut), and an empty line for each piece joined (line numbers kept)."""
    held: list[bytes] = []
    size = 0
    for line in lines:
        if held:
            if _continues(held[0], line) and size < MAX_JOINED_BYTES:
                cut = _length(line) == width and bool(line.strip())
                held.append(line.removesuffix(b"\r") if cut else line)
                size += len(line)
                if not cut:
                    yield from _joined(held)
                    held, size = [], 0
                continue
            yield from _joined(held)
            held, size = [], 0
        if _length(line) == width and line.strip():
            held, size = [line.removesuffix(b"\r")], len(line)
        else:
            yield line
    if held:
        yield from _joined(held)


def _joined(pieces: list[bytes]) -> Iterator[bytes]:
    """The pieces as one line, and an empty line for each piece after the first."""
    yield b"".join(pieces)
    yield from [b""] * (len(pieces) - 1)


class RewrappedStream:
    """A byte stream read through `rewrapped_lines` (every line then ends with a newline)."""

    def __init__(self, inner: ByteSource, width: int) -> None:
        self._lines = rewrapped_lines(_physical(inner), width)
        self._buffer = b""

    def read(self, size: int = -1, /) -> bytes:
        want = size if size > 0 else 1 << 62
        pieces = [self._buffer]
        have = len(self._buffer)
        for line in self._lines:
            pieces.append(line + b"\n")
            have += len(line) + 1
            if have >= want:
                break
        data = b"".join(pieces)
        self._buffer = data[want:]
        return data[:want]

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")


def _physical(inner: ByteSource) -> Iterator[bytes]:
    rest = b""
    while chunk := inner.read(1 << 20):
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest
