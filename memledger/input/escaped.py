"""A log printed as one escaped string, read with its lines again.

A log that went through a string literal comes as one physical line, each of its line ends
written `\\n`: an exception that carries a child process's output in its message and is printed
with its repr (`RuntimeError('[...] Load weight end. ...\\n[...] ...')`, a Ray task's error, a
`CalledProcessError`'s output), subprocess output printed as bytes (`b'...\\n...'`), a
notebook's or an HTTP API's JSON string (`"...\\n..."`). Python's repr (str and bytes) and
JSON escape the same way for what a log holds: `\\n`, `\\r`, `\\t`, `\\\\`, the quote, `\\xNN`
(a control byte such as an ANSI code's ESC; a byte of a bytes repr) and JSON's `\\uNNNN`.

A physical line is read as such a string when it is one string literal after a few words
(`_literal`, not a log's own line that ends with one) holding an escaped line end, or holds
at least MIN_BREAKS of them and a piece after one that starts a log's record (an SGLang
prefix, a traceback, a logging level, a tool's timestamp or process tag:
memledger.input.wrappers); the string's quotes and what closes it (`')`) are cut. Any other
line, a clean log's every line among them, is left byte for byte as it is. The pieces
become physical lines of their own, so the lines after them are numbered as in the decoded text.
A line is read whole up to MAX_LINE_BYTES (memory stays bounded whatever the input); a longer
one is read as it is.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Protocol

from memledger.input import scan
from memledger.input.logical import PREFIX_RE
from memledger.input.wrappers import STAMP_PATTERN

MIN_BREAKS = 2
"""Escaped line ends a line must hold to be read as a string, unless it is one literal (one
`\\n` inside a message is the message's own)."""
MAX_LINE_BYTES = 4 << 20
"""The longest line read as a string (a whole startup log in one repr is a few hundred KiB)."""

DECODE_CHUNK = 1 << 16
"""Bytes of a string decoded at once (memory stays a few times this, whatever it holds; at
least 16, so that a chunk cut back to an escape never ends where it starts)."""
_NEEDLE = b"\\n"
_ESCAPE = re.compile(rb"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|([nrt\\'\"/]))")
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t"}
_LOG_START = re.compile(
    rb"[ \t]*(?:Traceback \(|File \"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b)|"
    + f"{PREFIX_RE.pattern}|{STAMP_PATTERN}".encode()
)
"""What starts a log's record (a piece after an escaped line end that does is a log's line)."""
_OPENER = re.compile(rb"b?(['\"])(?=" + _LOG_START.pattern + rb")")
"""A string literal's opening quote right before a log's record, in the first piece."""
_LITERAL_OPEN = re.compile(rb"(?P<lead>[^'\"\n]{0,200}?)b?(?P<quote>['\"])")
"""A string literal's opening quote, after a few words: `'...'`, `b'...'`, `RuntimeError("...")`,
`stderr: '...'`."""
_LITERAL_END = b")]},;. \t\r\x0b\x0c"
"""What closes an exception's or a list's repr after the closing quote (`')`, `",`)."""
_ESCAPED_PAIR = re.compile(rb"\\.", re.S)
_CLOSER = re.compile(rb"(['\"])[)\]},;. \t]*\r?$")
"""The closing quote and what follows it (`')`, `",`) at the last piece's end."""


class ByteSource(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _decoded(match: re.Match[bytes]) -> bytes:
    hex_byte, code_point, simple = match.groups()
    if hex_byte is not None:
        return bytes((int(hex_byte, 16),))
    if code_point is not None:
        return chr(int(code_point, 16)).encode("utf-8", "replace")
    return _SIMPLE.get(simple, simple)


def _decoded_text(data: bytes) -> bytes:
    """`data` with its escapes decoded, DECODE_CHUNK bytes at a time (one `re.sub` over a line
    of a million escapes holds a million pieces), each chunk ending where no escape is cut."""
    if b"\\" not in data:
        return data
    out, start = [], 0
    while start < len(data):
        end = min(start + DECODE_CHUNK, len(data))
        last = data.rfind(b"\\", end - 6, end) if end < len(data) else -1
        if last > start:
            run = last
            while run > start and data[run - 1] == 0x5C:  # the run of backslashes `last` ends
                run -= 1
            end = run if run > start else start + ((last - start) & ~1)
        out.append(_ESCAPE.sub(_decoded, data[start:end]))
        start = end
    return b"".join(out)


def _literal(line: bytes) -> tuple[bytes, bytes] | None:
    """(the words before it, the body) of a line that is one string literal, its quote
    escaped wherever the body holds it (as repr and JSON write it), else None; a log's own line
    that ends with a literal is none."""
    opened = _LITERAL_OPEN.match(line)
    if opened is None or _LOG_START.match(line):
        return None
    quote = opened.group("quote")
    end = len(line.rstrip(_LITERAL_END))
    if end <= opened.end() or line[end - 1 : end] != quote:
        return None
    body = line[opened.end() : end - 1]
    if quote in body and quote in _ESCAPED_PAIR.sub(b"", body):
        return None  # a quote the body does not escape: the literal ends before the line does
    if (len(body) - len(body.rstrip(b"\\"))) % 2:
        return None  # the closing quote is escaped
    return opened.group("lead").rstrip(), body


def unescaped_line(line: bytes) -> bytes | None:
    """The lines an escaped string on one physical line holds, joined by newlines, else None
    (the module docstring says when a line is one)."""
    breaks = line.count(_NEEDLE)
    if not breaks or len(line) > MAX_LINE_BYTES:
        return None
    literal = _literal(line)
    if literal is not None:  # the line is one string literal, after a few words
        lead, body = literal
        pieces = _decoded_text(body)
        return lead + b"\n" + pieces if lead.strip() else pieces
    if breaks < MIN_BREAKS:
        return None
    pieces_of = _decoded_text(line).split(b"\n")
    if len(pieces_of) <= MIN_BREAKS or not any(_LOG_START.match(p) for p in pieces_of[1:]):
        return None
    opener = _OPENER.search(pieces_of[0])
    if opener is not None:
        before, after = pieces_of[0][: opener.start()].rstrip(), pieces_of[0][opener.end() :]
        pieces_of[0:1] = [before, after] if before else [after]
        closer = _CLOSER.search(pieces_of[-1])
        if closer is not None and closer.group(1) == opener.group(1):
            pieces_of[-1] = pieces_of[-1][: closer.start()]
    return b"\n".join(pieces_of)


def unescaped(data: bytes) -> bytes:
    """`data` with every line that is an escaped string read as its lines (the rest as is)."""
    if _NEEDLE not in data:
        return data
    lines = data.split(b"\n")
    for number, line in enumerate(lines):
        if _NEEDLE in line:
            found = unescaped_line(line)
            if found is not None:
                lines[number] = found
    return b"\n".join(lines)


class UnescapedStream:
    """A byte stream read through `unescaped`, whole lines at a time: an unfinished line at a
    read's end waits for the rest of it, so a string is never read cut in two. A line as long
    as the scanner's bound (memledger.input.scan.MAX_LINE_BYTES), which the scanner reads in
    pieces cut where reads end, is handed on in the reads it came in, as it is."""

    def __init__(self, inner: ByteSource) -> None:
        self._inner = inner
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._out: deque[bytes] = deque()
        self._long = False
        """Inside a line handed on as it is, up to its end."""

    def read(self, size: int = -1, /) -> bytes:
        while not self._out:
            self._fill(size)
        return self._out.popleft()

    def _fill(self, size: int) -> None:
        data = self._inner.read(size)
        if not data:
            self._out.append(unescaped(b"".join(self._held)))  # b"": the end
            self._held, self._held_bytes = [], 0
            return
        if self._long:
            cut = data.find(b"\n") + 1
            if not cut:
                self._out.append(data)
                return
            self._out.append(data[:cut])
            self._long, data = False, data[cut:]
        elif self._held:
            if b"\n" not in data:
                self._held.append(data)
                self._held_bytes += len(data)
                if self._held_bytes >= scan.MAX_LINE_BYTES:  # as it came, up to its end
                    self._out.extend(self._held)
                    self._held, self._held_bytes, self._long = [], 0, True
                return
            data, self._held, self._held_bytes = b"".join([*self._held, data]), [], 0
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            self._held, self._held_bytes = [data[cut:]], len(data) - cut
            data = data[:cut]
        if data:
            self._out.append(unescaped(data))

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")
