"""Messages a terminal or a copy hard-wrapped: one SGLang line cut across two physical lines.

A paste from a narrow terminal, a web console or an issue comment can cut a line anywhere, also
inside a number: `max_total_num_tokens=16` / `1488, chunked_prefill_size=8192, ...` would read as
16 tokens. A line is rejoined only when that is unambiguous, and a cut that cannot be rejoined
loses its cut value with a note instead of giving a wrong number:

* the first part is a known memory line (or `server_args=`) and the second part follows on the
  very next physical line, bare (no prefix), not indented, and is no record of its own (a known
  line, a traceback, a log level, a progress bar, a bracketed tag); a line that ends with a
  field's comma (`..., max_prefill_tokens=16384,`: no SGLang line ends so) was wrapped by hand,
  and its continuation may be indented (`  max_running_requests=32, context_len=...`), over as
  many lines as end with a comma;
* joined directly (a cut inside a token) or with a space (a cut at a space the copy dropped),
  the message parses as the same kind with no problem and with more than the first part gave;
  a number cut in two (`...=16` / `1488...`) is only ever joined directly;
* exactly one reading results: that is the line. Two different readings, or a number cut in two
  that no reading accepts, drop the first part's last value (cut back to its last separator).

A `server_args=` repr that does not end with `)` or `}` takes every such continuation line
(joined directly: a wrap keeps every character), up to MAX_SERVER_ARGS_CHARS.

Only lines the keyword scan keeps are seen (memledger.input.scan). A tail holding no memory word
is kept when it starts as the rest of a cut value (sglang.lines.CUT_TAIL_ERE: `88` after
`#tokens: 1614`, `96, context_len=40960`, `B.`, `len=40960`, a repr's `=None, log_requests=`);
a tail of other words that holds none (`ning_requests=4096` after `max_run`) is not seen, and
its first part reads as printed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from memledger.input.linegrammar import known_head
from memledger.input.logical import LogicalLine, iter_logical_lines, strip_paste_columns
from memledger.input.transform import LineParse
from memledger.sglang.examples import EXAMPLES
from memledger.sglang.lines import ENV_VAR_HEADS, INT_KEYS, KEY_ALIASES, SIZE_KEYS

MAX_SERVER_ARGS_CHARS = 1 << 16
"""A wrapped server_args repr is rejoined up to this length (a real one is a few KiB)."""

# what starts a record of its own: never the tail of a cut line
_RECORD_START_RE = re.compile(
    r"(?:Traceback|File |During handling|The above exception|Killed|Exit code|Capturing|Loading"
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b"
    r"|[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt)\b)"
)
_MARKUP_START_RE = re.compile(r"[\[\]/<>#$|({\"'`*]|\d{1,3}[.)] ")
"""A tail of a memory line never starts so (a server_args repr may: `'fcfs', ...`), nor as a
numbered list item does (`3) restarted with ...`: prose under a pasted log)."""
_KNOWN_KEYS = (
    frozenset(KEY_ALIASES.values())
    | SIZE_KEYS
    | INT_KEYS
    | {key for example in EXAMPLES for key in (*example.sizes, *example.values)}
)
"""Keys SGLang prints: a reading that invents another (`memusage=`) is not the line."""
_TOKEN_END_RE = re.compile(r"(?:[\w#/\-=:]|\d\.)$")
"""A line ending so may be cut (a sentence's full stop ends a line; `avail mem=3.` does not)."""
_DOTTED_END_RE = re.compile(r"=[\w.]*\w\.$")
"""A dotted value cut after its dot (`dtype=torch.` / `bfloat16`): a sentence's full stop
follows a word or a unit, never a `key=value` of its own."""
_DIGIT_CUT_RE = re.compile(r"\d\.?$")
_SEPARATOR_RE = re.compile(r"[,;]\s|\.\s")


class MessageParser(Protocol):
    """What the joiner needs of memledger.input.linegrammar.LineGrammar."""

    def parse(self, message: str) -> LineParse | None: ...


def _reading(parse: LineParse | None) -> tuple[object, ...] | None:
    if parse is None or parse.problems:
        return None
    sizes = tuple(sorted((key, size.text) for key, size in parse.sizes.items()))
    return parse.kind, sizes, tuple(sorted((k, repr(v)) for k, v in parse.values.items()))


def _keys(parse: LineParse | None) -> set[str]:
    if parse is None or parse.problems:
        return set()
    return set(parse.sizes) | set(parse.values)


def _extends(direct: LineParse, spaced: LineParse) -> bool:
    """The join without a space reads the same line as the one with it, but the value the cut
    fell in longer (`type=Qwen3ForCausal` + `LM, ...`: the spaced join leaves `LM` unread)."""
    if direct.kind is not spaced.kind or direct.sizes.keys() != spaced.sizes.keys():
        return False
    if direct.values.keys() != spaced.values.keys():
        return False
    if any(direct.sizes[key].text != spaced.sizes[key].text for key in direct.sizes):
        return False
    longer = [key for key in direct.values if direct.values[key] != spaced.values[key]]
    return len(longer) == 1 and str(direct.values[longer[0]]).startswith(
        str(spaced.values[longer[0]])
    )


def _cut_back(text: str) -> str:
    """The text up to its last separator: the cut value dropped (`a=1, b=2` / `a=1`)."""
    matches = list(_SEPARATOR_RE.finditer(text))
    return text[: matches[-1].start()] if matches else ""


@dataclass
class CutLines:
    """Logical lines of a stream of decoded physical lines, cut lines rejoined (module doc)."""

    grammar: MessageParser
    rejoined: list[int] = field(default_factory=list)
    """First physical line of each rejoined line."""
    dropped: list[int] = field(default_factory=list)
    """Lines whose cut last value was not read."""
    _cut: bool = field(default=False, init=False, repr=False)
    """The line held last was cut, and no reading of it was unambiguous."""
    _held_end: int = field(default=0, init=False, repr=False)
    """The last physical line of the held line (its first, or the last piece joined to it)."""

    def lines(self, physical: Iterable[tuple[int, str]]) -> Iterator[LogicalLine]:
        held: LogicalLine | None = None
        for number, text in physical:
            # lazily: a tqdm line redrawn for hours holds a million states (memory stays flat)
            logicals = iter_logical_lines(number, text)
            first = next(logicals, None)
            second = next(logicals, None) if first is not None else None
            if held is not None:
                tail = None
                if first is not None and second is None:
                    tail = self._tail(held, number, text, first)
                if tail is not None:
                    held = self._joined(held, tail)
                    self._held_end = number
                    # a repr takes every wrapped piece; a hand-wrapped line each comma-ended one
                    if not (
                        held.text.endswith(",") or held.text.startswith("server_args=")
                    ) or not self._open(held):
                        yield held
                        held = None
                    continue
                yield self._settled(held)
                held = None
            last = first
            if first is not None and second is not None:
                yield first
                last = second
                for logical in logicals:
                    yield last
                    last = logical
            if last is not None and self._open(last):
                held = last
                self._held_end = last.line
            elif last is not None:
                yield last
        if held is not None:
            yield self._settled(held)

    def notes(self) -> list[str]:
        notes = []
        if self.rejoined:
            notes.append(
                f"rejoined {len(self.rejoined)} line{'s' if len(self.rejoined) > 1 else ''} "
                f"cut across two physical lines (line {', '.join(map(str, self.rejoined[:5]))})"
            )
        if self.dropped:
            notes.append(
                f"{len(self.dropped)} line{'s' if len(self.dropped) > 1 else ''} cut at the end "
                f"(line {', '.join(map(str, self.dropped[:5]))}): the cut value was not read"
            )
        return notes

    def _open(self, logical: LogicalLine) -> bool:
        """Could this line continue on the next physical line?"""
        text = logical.text
        if text.startswith("server_args="):
            return not text.endswith((")", "}")) and len(text) < MAX_SERVER_ARGS_CHARS
        if text.startswith(ENV_VAR_HEADS):
            return False  # a launcher's environment line is whole: the next line is not its tail
        ends = bool(_TOKEN_END_RE.search(text[-2:]) or _DOTTED_END_RE.search(text[-64:]))
        ends = ends or text.endswith(",")
        return ends and bool(known_head(text))

    def _tail(self, held: LogicalLine, number: int, text: str, only: LogicalLine) -> str | None:
        """The next physical line's text when it is the held line's continuation (`only`: the
        one logical line of that physical line)."""
        if number != self._held_end + 1 or only.prefixed:
            return None
        # the padding a terminal or a web view leaves after a wrapped line is not the text
        tail = strip_paste_columns(text).rstrip()
        if tail[:1].isspace() and held.text.endswith(","):
            tail = tail.lstrip()  # wrapped by hand after a field's comma, the rest indented
        elif tail[:1] == " " and tail[1:2].strip() and held.text[-1:].isdigit():
            tail = tail[1:]  # cut at the blank before a number's unit (`=22.76` / ` GB`)
        if not tail or tail[0].isspace() or tail != only.text:
            return None
        if _RECORD_START_RE.match(tail) or "%|" in tail or known_head(tail):
            return None
        if held.text.startswith("server_args="):
            return tail
        if _MARKUP_START_RE.match(tail) or self.grammar.parse(tail) is not None:
            return None
        first = self.grammar.parse(held.text)
        digit_cut = bool(_DIGIT_CUT_RE.search(held.text[-2:])) and tail[0].isdigit()
        joins = [held.text + tail] if digit_cut else [held.text + tail, f"{held.text} {tail}"]
        readings: dict[tuple[object, ...], tuple[str, set[str], LineParse]] = {}
        for joined in joins:
            parse = self.grammar.parse(joined)
            reading = _reading(parse)
            if reading is None or parse is None or not self._adds(first, parse, digit_cut):
                continue
            readings.setdefault(reading, (joined, _keys(parse) - _keys(first), parse))
        # a reading that invents a key SGLang never prints (`memusage=`) is not the line
        readings = {r: v for r, v in readings.items() if v[1] <= _KNOWN_KEYS}
        if len(readings) == 2:
            (direct, _, whole), (_, _, spaced) = readings.values()
            if direct == held.text + tail and _extends(whole, spaced):
                return tail  # the cut was inside the value: a hard wrap keeps every character
        ambiguous = len(readings) > 1
        if len(readings) == 1:
            ((joined, _, _),) = readings.values()
            return joined[len(held.text) :]
        self._cut = ambiguous or digit_cut
        return None

    @staticmethod
    def _adds(first: LineParse | None, joined: LineParse, digit_cut: bool) -> bool:
        """The joined reading is the same line, with more than its first part gave."""
        if first is None or first.problems:
            return first is None or joined.kind is first.kind
        if joined.kind is not first.kind:
            return False
        # a number cut in two changes a value and may add nothing else
        return _keys(joined) >= _keys(first) if digit_cut else _keys(joined) > _keys(first)

    def _joined(self, held: LogicalLine, tail: str) -> LogicalLine:
        if not self.rejoined or self.rejoined[-1] != held.line:
            self.rejoined.append(held.line)
        return replace(held, text=held.text + tail)

    def _settled(self, held: LogicalLine) -> LogicalLine:
        """The held line when no continuation came: as it is, or without its cut value."""
        if not self._cut:
            return held
        self._cut = False
        self.dropped.append(held.line)
        return replace(held, text=_cut_back(held.text))
