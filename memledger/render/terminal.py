"""Text output for a terminal: how wide it may be, whether it may be coloured, and fitting
rendered text into that width. Renderers stay pure: the width and colour are inputs
(`Terminal`), read from the environment once by the service (`Terminal.detect`)."""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

DEFAULT_WIDTH = 100
"""Columns when the output is not a terminal (a file, a pipe, CI logs)."""
MIN_WIDTH = 60
"""Narrower terminals still get 60 columns: below that the tables cannot say anything."""


@dataclass(frozen=True)
class Terminal:
    """Where text output goes: its width in columns and whether ANSI colour is wanted."""

    width: int = DEFAULT_WIDTH
    colour: bool = False

    @classmethod
    def detect(cls, stream: IO[str], environ: Mapping[str, str] | None = None) -> Terminal:
        """The terminal's width (100 when `stream` is not a tty; `COLUMNS` wins when set) and
        colour on a tty, honouring `NO_COLOR` (off) and `FORCE_COLOR` (on) — no-color.org."""
        env = os.environ if environ is None else environ
        tty = _isatty(stream)
        width = DEFAULT_WIDTH
        columns = env.get("COLUMNS", "")
        if columns.isdigit():
            width = int(columns)
        elif tty:
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        colour = tty
        if env.get("NO_COLOR"):
            colour = False
        elif env.get("FORCE_COLOR"):
            colour = True
        return cls(width=max(MIN_WIDTH, width), colour=colour)

    def colourise(self, text: str) -> str:
        """Colour a rendered (and escaped) text report: FAIL/MISSING/EXPIRED red and WARN
        yellow at a line's start or as the verdict, unexplained rows yellow. Applied after the
        terminal escaping, so only these codes reach the terminal, never the input's."""
        if not self.colour:
            return text
        out = []
        for line in text.split("\n"):
            word = line.split(" ", 1)[0]
            if line.startswith("memledger check: "):
                verdict = line.split()[2]
                tone = PASS if verdict == "PASS" else FAIL
                line = line.replace(verdict, self.paint(verdict, tone), 1)
            elif word in ("FAIL", "MISSING", "EXPIRED"):
                line = self.paint(word, FAIL) + line[len(word) :]
            elif word == "WARN":
                line = self.paint(word, WARN) + line[len(word) :]
            elif " unexplained." in line:
                line = self.paint(line, WARN)
            out.append(line)
        return "\n".join(out)

    def paint(self, text: str, tone: Tone) -> str:
        """`text` in the tone's colour when colour is on (the text is unchanged otherwise)."""
        return f"\x1b[{tone.value}m{text}\x1b[0m" if self.colour else text


PLAIN = Terminal()
"""100 columns, no colour: files, pipes, tests."""


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Tone:
    """An ANSI SGR colour code."""

    def __init__(self, value: str) -> None:
        self.value = value


FAIL = Tone("1;31")
"""Bold red: a failed check, an OOM."""
WARN = Tone("33")
"""Yellow: a warning, an unexplained row."""
PASS = Tone("32")
"""Green: a passed check."""


_COLUMN_GAP = re.compile(r"\S {2,}(?=\S)")
"""Two or more such gaps: a table row, not prose (`label:  value` has one)."""


ELLIPSIS = "…"


def shorten_middle(token: str, width: int) -> str:
    """`token` in at most `width` columns, cut in the middle (`/home/u/.cache/…/snapshots/5e09`):
    its start and its end say which path or value it is. Shorter tokens are returned as they
    are."""
    if len(token) <= width:
        return token
    width = max(width, 3)
    head = width // 2
    return token[:head] + ELLIPSIS + token[len(token) - (width - 1 - head) :]


def shorten_long_tokens(text: str, width: int) -> str:
    """Every blank-separated token of `text` longer than `width` cut in its middle
    (`shorten_middle`), so that wrapping at `width` or more fits: a note naming a 110-character
    model path would otherwise keep a line over the terminal's width (fit_lines never breaks a
    word: a path cut at the line's end is no path)."""
    if len(text) <= width:
        return text
    return " ".join(shorten_middle(token, width) for token in text.split(" "))


_NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:%|[KMG]i?B\b|B\b))")
_JOINED = "\x00"
"""Stands for the blank between a number and its unit while a line is wrapped (rendered text
holds no NUL: the renderers escape control characters)."""


def join_units(text: str) -> str:
    """`text` with the blank between each number and its unit made part of one word (`wrap`
    then never breaks there; its lines give the blank back)."""
    return _NUMBER_UNIT.sub(_JOINED, text)


def wrap(
    text: str, width: int, indent: str, subsequent: str, *, break_long_words: bool = True
) -> list[str]:
    """`textwrap.wrap` at blanks (never at hyphens), a number and its unit kept on one line
    (`115.29` / `GiB` at a line's end and the next one's start read as two things)."""
    lines = textwrap.wrap(
        join_units(text),
        width=width,
        initial_indent=indent,
        subsequent_indent=subsequent,
        break_on_hyphens=False,
        break_long_words=break_long_words,
    )
    return [line.replace(_JOINED, " ") for line in lines]


def fit_lines(text: str, width: int, *, whole: frozenset[str] = frozenset()) -> str:
    """Wrap every line longer than `width`, continuing under its indentation plus two spaces
    (tables are fitted before; a row that still does not fit is not wrapped). Lines in `whole`
    stay one line:
    a verdict or a breach is one greppable line, as ruff prints a diagnostic."""
    out: list[str] = []
    for line in text.split("\n"):
        # A table row (columns two spaces apart) that could not be fitted is left whole: a
        # wrapped row would put its cells under the wrong headers.
        if len(line) <= width or line in whole or len(_COLUMN_GAP.findall(line)) >= 2:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        # break_long_words off: a path stays whole, on a line of its own
        out.extend(wrap(line.strip(), width, indent, indent + "  ", break_long_words=False))
    return "\n".join(out)
