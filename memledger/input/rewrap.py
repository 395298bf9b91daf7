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
blank line: lines every rank printed alike are as long as each other, and each starts one).
Where the log's own lines crowd just under the width (a traceback's frames after a long install
path), the cut is told by its pieces instead: most lines of the width go on at column 0 as a word
or a number does (`ocess`, `28-w8a8'`), and fewer lines a little shorter do (an editor's wrapped
prose: every line goes on so). A `grep -n` column (`28-`) starts a record only where the cut line
has one too (memledger.input.wrappers.Wrapper.chance). A
line of exactly that width is then joined with the line after it, without a space (a hard wrap
keeps every character), up to MAX_JOINED_BYTES; each joined piece leaves an empty line behind the
joined line, so every later line keeps its number. A reply that quoted such a paste (`> ` before
every piece) is measured and joined behind its quote markers.

A short paste (the whole input, at most SHORT_LINES lines: one error line and a few around it)
shows no width when one line was cut in two. There a line as long as the paste's longest (a
terminal cuts at its width, and no line it showed is longer) is joined to the next when the cut
falls inside a word or a number (no blank on either side), the next starts no record of its own,
and the join loses nothing the readers read in either piece (`reads`: the error-text rows a text
holds, memledger.input.error_texts.known_shapes); and either only the join makes a known shape
(`Traceback (most re` + `cent call last):`, a row whose text the cut split), or the first piece
is a log's line (a row, a level) and the next goes on as a word or a number does (lower case,
a digit, `.`) and reads as nothing the first does not (a known shape or a reporter's words of
its own would be hidden behind the error text): `... occupied by othe` + `r processes.`,
`size 435814` + `400`; or the first piece is a launch command cut in a flag, in a flag's value
or before a flag, and the rest starts no command of its own (`--en` + `able-torch-compile`).
Else an SGLang line that holds no error text (a memory line, `server_args=`) is left to
memledger.input.wrapped, which rejoins it by its grammar and says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from memledger.input.logical import PREFIX_RE
from memledger.input.wrappers import (
    CHANCE_COLUMN_PATTERN,
    COLUMN_PATTERN,
    STAMP_PATTERN,
    SURE_COLUMN_PATTERN,
)
from memledger.sglang.launch_flags import COMMAND_MARKERS

MIN_WIDTH = 60
"""Narrower than a terminal a log is read in (80 columns and up; a console's default is 120)."""
MIN_CUT_LINES = 2
NEAR_WIDTH = 8
"""Lines this much shorter than the width count as a spread of lengths (prose, a log's own)."""
SAME_START = 12
"""Lines that start with as many equal bytes are two records printed alike, not one cut."""
MAX_JOINED_BYTES = 1 << 20
"""A joined line stops growing here (a file of lines all that long is no wrapped paste)."""
SHORT_LINES = 8
"""A paste of at most this many non-blank lines is short (module docstring)."""
SHORT_BYTES = 8192
"""A short paste is at most this long (it is read whole before it is joined)."""

_STARTS = rb"\s*$|Traceback \(|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b|"
_RECORD_START = re.compile(
    _STARTS + f"{PREFIX_RE.pattern}|{COLUMN_PATTERN}|{STAMP_PATTERN}".encode()
)
"""A line that starts a record of its own: blank, an SGLang prefix, a traceback, a level, or
what a tool puts before each line (memledger.input.wrappers: a timestamp, a process tag such as
`(Worker_TP1 pid=7)`, a column)."""
_SURE_START = re.compile(
    _STARTS + f"{PREFIX_RE.pattern}|{SURE_COLUMN_PATTERN}|{STAMP_PATTERN}".encode()
)
_CHANCE_START = re.compile(CHANCE_COLUMN_PATTERN.encode())
"""A column text also starts with by chance (`28-w8a8`: a `grep -n` context line's shape): a
record's start only where the line before the cut starts with one too (a tool puts its column
before every line)."""
_WORD_PIECE = re.compile(rb"[a-z0-9._,;:)\]/=-]")
"""How a piece cut from a word, a number or a list of them starts (a lower-case letter, a digit,
punctuation that goes on; never a blank, a capital or a record's own start)."""


_QUOTE = re.compile(rb"[ \t]{0,8}(?:>[ \t]?)+")
"""Quote markers a reply put before every line of a paste that was already wrapped."""


class ByteSource(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _quoted(line: bytes) -> tuple[bytes, bytes]:
    """(the quote markers a reply put before the line, the line the terminal showed)."""
    quote = _QUOTE.match(line)
    return (line[: quote.end()], line[quote.end() :]) if quote else (b"", line)


@dataclass(frozen=True, slots=True)
class Wrap:
    """How a paste was cut: at `width` characters, and whether a reply quoted it after (the
    width is then measured behind the quote markers)."""

    width: int
    quoted: bool = False

    def length(self, line: bytes) -> int:
        """Characters a terminal showed of a line (its end's CR dropped)."""
        if self.quoted:
            line = _quoted(line)[1]
        line = line.removesuffix(b"\r")
        return len(line) if line.isascii() else len(line.decode("utf-8", "replace"))

    def continues(self, first: bytes, line: bytes) -> bool:
        """Whether `line` may be the rest of `first` cut at the width: it starts no record of
        its own, nor as `first` does (a line every rank printed alike); behind the same quote
        markers when quoted."""
        if self.quoted:
            (quote, line), (first_quote, first) = _quoted(line), _quoted(first)
            if quote != first_quote:
                return False
        if _SURE_START.match(line) is not None or line[:SAME_START] == first[:SAME_START]:
            return False
        return _CHANCE_START.match(line) is None or _CHANCE_START.match(first) is None

    def cut(self, line: bytes) -> bool:
        return self.length(line) == self.width and bool(line.strip())


def wrap_of(head: bytes) -> Wrap | None:
    """How a terminal cut the input's lines (module docstring), else None: measured on the
    lines as they are, else behind the quote markers of a reply that quoted them."""
    lines = head.split(b"\n")[:-1]  # the last one may be cut by the block's end
    if len(lines) < MIN_CUT_LINES:
        return None
    found = _cut_at(lines, False)
    if found is None and any(line[:1] == b">" for line in lines):
        found = _cut_at(lines, True)
    return found


_BOXED = re.compile(rb"[ \t]*[|+].*[|+][ \t\r]*$")
"""A table's row or border (nvidia-smi's): it ends on its own frame, so no wrap cut it."""


def _cut_at(lines: list[bytes], quoted: bool) -> Wrap | None:
    measure = Wrap(0, quoted)
    lengths = [measure.length(line) for line in lines]
    width = max(lengths)
    wrap = Wrap(width, quoted)
    at = [i for i, n in enumerate(lengths) if n == width and not _BOXED.match(lines[i])]
    if width < MIN_WIDTH or len(at) < MIN_CUT_LINES:
        return None

    def piece_after(index: int) -> bool:
        """Whether the line after `index` goes on at column 0 as a word or a number does."""
        if index + 1 >= len(lines) or not wrap.continues(lines[index], lines[index + 1]):
            return False
        piece = _quoted(lines[index + 1])[1] if quoted else lines[index + 1]
        return _WORD_PIECE.match(piece) is not None

    pieces = sum(1 for index in at if piece_after(index))
    near_pieces = sum(
        1
        for index, length in enumerate(lengths)
        if width - NEAR_WIDTH <= length < width and piece_after(index)
    )
    if pieces >= MIN_CUT_LINES and 2 * pieces > len(at) and near_pieces < pieces:
        return wrap  # most cut lines go on as a word does, lines a little shorter do not
    if len(at) == MIN_CUT_LINES and at[-1] - at[0] != MIN_CUT_LINES - 1:
        return None  # as few as that: one line's pieces, one after the other
    near = sum(1 for length in lengths if width - NEAR_WIDTH <= length < width)
    if near >= len(at):
        return None
    followed = sum(
        1
        for index in at
        if index + 1 < len(lines) and wrap.continues(lines[index], lines[index + 1])
    )
    return wrap if 2 * followed > len(at) else None


def rewrapped_lines(lines: Iterator[bytes], wrap: Wrap) -> Iterator[bytes]:
    """Physical lines (without `\\n`) with each line cut at the width joined to the next one
    unless that one starts a record of its own (a line exactly that long the terminal did not
    cut), and an empty line for each piece joined (line numbers kept)."""
    held: list[bytes] = []
    size = 0
    for line in lines:
        if held:
            if wrap.continues(held[0], line) and size < MAX_JOINED_BYTES:
                cut = wrap.cut(line)
                rest = _quoted(line)[1] if wrap.quoted else line  # one quote marker is kept
                held.append(rest.removesuffix(b"\r") if cut else rest)
                size += len(line)
                if not cut:
                    yield from _joined(held)
                    held, size = [], 0
                continue
            yield from _joined(held)
            held, size = [], 0
        if wrap.cut(line):
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
    """A byte stream read through `rewrapped_lines` (every line then ends with a newline). A line
    longer than MAX_JOINED_BYTES ends the rewrapping: it and all after it are read as they are
    (memory stays bounded whatever the input)."""

    def __init__(self, inner: ByteSource, wrap: Wrap) -> None:
        self._inner = inner
        self._rest = b""
        self._lines = rewrapped_lines(self._physical(), wrap)
        self._buffer = b""

    def _physical(self) -> Iterator[bytes]:
        while chunk := self._inner.read(1 << 20):
            parts = (self._rest + chunk).split(b"\n")
            self._rest = parts.pop()
            yield from parts
            if len(self._rest) > MAX_JOINED_BYTES:
                return  # read on as it is, from this unfinished line
        if self._rest:
            yield self._rest
            self._rest = b""

    def read(self, size: int = -1, /) -> bytes:
        want = size if size > 0 else 1 << 62
        pieces = [self._buffer]
        have = len(self._buffer)
        for line in self._lines:
            pieces.append(line + b"\n")
            have += len(line) + 1
            if have >= want:
                break
        else:
            if self._rest:  # the rewrapping ended at an unfinished long line
                pieces.append(self._rest)
                have += len(self._rest)
                self._rest = b""
            if have < want:
                pieces.append(self._inner.read(want - have))
        data = b"".join(pieces)
        self._buffer = data[want:]
        return data[:want]

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")


Reads = Callable[[str], frozenset[str]]
"""What a text reads as (the names of the known shapes it holds)."""
PROSE = "prose:"
"""Before the name of a reporter's prose row a text holds (read on a bare line alone)."""
_GOES_ON = re.compile(r"[a-z0-9._,;:)\]/=-]")
"""How the rest of a word, a number or a list of them starts (never a capital or a blank: a new
sentence or record)."""


_FRAME_LINE = re.compile(r'\s*File "[^"]*", line \d+, in ')
"""A traceback's frame line (CPython Lib/traceback.py: `  File "PATH", line N, in NAME`), whose
code line follows at column 0 when a page's copy dropped the indentation."""
_NAME_REST = re.compile(r"[\w<>.]+\s*")


def _rows(names: frozenset[str]) -> frozenset[str]:
    """The error-text rows among what a text reads as (not a reporter's prose rows)."""
    return frozenset(name for name in names if not name.startswith(PROSE))


def short_joined(data: bytes, reads: Reads) -> bytes | None:
    """A short paste (module docstring) with each line a terminal cut joined to its rest, and an
    empty line left for the piece (later lines keep their numbers); None when none was cut."""
    if len(data) > SHORT_BYTES:
        return None
    lines = data.split(b"\n")
    if sum(1 for line in lines if line.strip()) > SHORT_LINES:
        return None
    measure = Wrap(0)
    width = max(measure.length(line) for line in lines)
    if width < MIN_WIDTH:
        return None
    out: list[bytes] = []
    index, joined = 0, False
    while index < len(lines):
        line = lines[index]
        rest = lines[index + 1] if index + 1 < len(lines) else b""
        if measure.length(line) == width and _cut_before(line, rest, reads):
            out += [line.removesuffix(b"\r") + rest, b""]
            index, joined = index + 2, True
            continue
        out.append(line)
        index += 1
    return b"\n".join(out) if joined else None


_PROGRAM = re.compile(
    r"(?:[A-Z_]+=\S* )*[\w./-]*\b(?:python[\d.]*|torchrun|bash|sh|docker|curl|srun|sglang|vllm)"
    r"(?:\s|$)"
)
"""A line that starts a command of its own (`python3 bench.py`, `CUDA_VISIBLE_DEVICES=0 python
...`, `docker run`): never the rest of a launch command."""


def _flag_cut(first: str, second: str) -> bool:
    """Whether a launch command (memledger.sglang.launch_flags.COMMAND_MARKERS) was cut in a
    flag (`--cont` + `ext-length 4096`), in a flag's value (`--model-path Org/Mo` + `del`) or
    before a flag (`--tp 8 ` + `--mem-fraction-static 0.8`): the rest is a flag's or a value's
    and goes on as flags do (its second word a flag, or none), never a command of its own
    (`python bench.py`) nor a reporter's sentence (`with hicache=40GB the host fills up`)."""
    if not any(marker in first for marker in COMMAND_MARKERS) or first.rstrip().endswith("\\"):
        return False
    if _PROGRAM.match(second):
        return False
    if second.startswith("--"):
        return True
    tokens, rest = first.split(), second.split()
    if first[-1].isspace() or _GOES_ON.match(second) is None:
        return False
    if len(rest) > 1 and not rest[1].startswith("-"):
        return False
    return tokens[-1].startswith("-") or len(tokens) > 1 and tokens[-2].startswith("--")


def _cut_before(line: bytes, rest: bytes, reads: Reads) -> bool:
    """Whether `rest` is what a terminal cut from the end of `line` (module docstring)."""
    if not Wrap(0).continues(line, rest):
        return False
    first = line.removesuffix(b"\r").decode("utf-8", "replace")
    second = rest.removesuffix(b"\r").decode("utf-8", "replace")
    if not first.strip() or not second.strip():
        return False
    apart = reads(first) | reads(second)
    whole = reads(first + second)
    if not apart <= whole:
        return False  # the join loses a reading: two lines
    if whole - apart:
        return True  # only the join makes a known shape
    if _flag_cut(first, second):
        return True
    if not _rows(reads(first)) and PREFIX_RE.search(first) is not None:
        return False  # SGLang's own line, no error text: memledger.input.wrapped rejoins it
    if first[-1].isspace() or second[0].isspace():
        return False  # a cut at a blank: two lines as well as one
    if _FRAME_LINE.match(first) and _NAME_REST.fullmatch(second) is None:
        return False  # a frame's cut rest is its function's name; its code line is more
    if reads(second) - reads(first):
        return False  # a shape of its own, or a reporter's words: hidden behind an error text
    log_line = bool(_rows(reads(first))) or _RECORD_START.match(line) is not None
    in_word = first[-1].isalnum() or first[-1] == "_"
    goes_on = _GOES_ON.match(second) is not None or first[-1].isupper() and second[0].isupper()
    return log_line and in_word and goes_on  # `... 44.87 G` + `B free`: a capital's word
