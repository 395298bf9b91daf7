"""Lines that no reader before the grammar reads, known once per line shape.

Before the grammar, `parse_log` shows every message to three readers: the outcome phrases
(memledger.input.outcome), the error texts (memledger.input.error_texts) and the platform markers
(memledger.sglang.lines). Each reads only a line holding one of its words, and most lines (a
server's memory lines, for days) hold none: `QuietLines` says so with one look-up per line shape
instead of some forty substring tests per line.

A shape is the line with every digit folded to 0 (as the scanner's, memledger.input.scan).
Folding keeps every other character in its place, so a word in a line is, folded, in the line's
shape at the same place: a shape holding none of the folded words is a shape of lines holding
none of the words, whatever the words (one with a digit only makes more shapes doubtful). Words
are compared lower-cased (a word in a line is, lower-cased, in the lower-cased line). A line with
a non-ASCII character is looked at through memledger.input.ascii_view (never quiet when it holds
one of the four characters the readers' case-blind matching equates with an ASCII letter, or a
non-ASCII word of theirs).
"""

from __future__ import annotations

from memledger.input.ascii_view import ascii_view, non_ascii_words
from memledger.input.error_texts import ERROR_WORDS, LOG_ERROR_WORDS
from memledger.input.outcome import OUTCOME_ANY_CASE_WORDS, OUTCOME_WORDS
from memledger.sglang.env_reports import REPORT_WORDS
from memledger.sglang.lines import PLATFORM_MARKERS

_FOLD_DIGITS = bytes.maketrans(b"123456789", b"000000000")
SHAPE_ENTRIES = 4096
"""Shapes remembered (cleared when full; a log's memory lines have a handful)."""
SHAPE_MAX_CHARS = 1024
"""Longer lines are tested without remembering their shape."""


def _folded(word: str) -> bytes:
    return word.lower().encode("ascii").translate(_FOLD_DIGITS)


_OTHER_READERS_WORDS: tuple[str, ...] = (
    *OUTCOME_WORDS,
    *OUTCOME_ANY_CASE_WORDS,  # outcome_kind's case-blind phrases (the error texts' are below)
    *(marker.text for marker in PLATFORM_MARKERS),
    *REPORT_WORDS,
)
READER_WORDS: tuple[str, ...] = (*_OTHER_READERS_WORDS, *ERROR_WORDS)
"""What a line that any of the three readers reads holds one of (each module says so of its own;
tests/input/test_hot_path.py checks it against the readers)."""
LOG_READER_WORDS: tuple[str, ...] = (*_OTHER_READERS_WORDS, *LOG_ERROR_WORDS)
"""The same for a prefixed line (SGLang's own): the reporter's prose rows are not read there."""


def _folded_words(words: tuple[str, ...]) -> tuple[bytes, ...]:
    # a word with a non-ASCII character is in no ASCII line: it makes no ASCII line doubtful (and
    # a non-ASCII line holding it is never quiet: memledger.input.ascii_view)
    return tuple(dict.fromkeys(_folded(word) for word in words if word.isascii()))


_WORDS = _folded_words(READER_WORDS)
_LOG_WORDS = _folded_words(LOG_READER_WORDS)
_NON_ASCII_WORDS = non_ascii_words(READER_WORDS)
QUIET_BARE, QUIET_PREFIXED, DOUBTFUL = 2, 1, 0
"""A shape's verdict: quiet as any line, quiet only as a prefixed line, or read."""


def _verdict(shape: bytes) -> int:
    lowered = shape.lower()
    if any(word in lowered for word in _LOG_WORDS):
        return DOUBTFUL
    return QUIET_PREFIXED if any(word in lowered for word in _WORDS) else QUIET_BARE


_SHAPES: dict[bytes, int] = {}
"""Verdicts by line shape, for the whole process (cleared when SHAPE_ENTRIES are held)."""


class QuietLines:
    """`quiet(text, prefixed)`: True when no reader before the grammar reads anything in this
    line (a prefixed line: SGLang's own, where the reporter's prose rows are not read)."""

    def __init__(self) -> None:
        self._shapes = _SHAPES  # a shape's verdict is its bytes' alone: shared by every log

    def __call__(self, text: str, prefixed: bool = False) -> bool:
        view = ascii_view(text, _NON_ASCII_WORDS)  # memledger.input.ascii_view
        if view is None:
            return False
        shape = view.encode("ascii").translate(_FOLD_DIGITS)
        if len(shape) > SHAPE_MAX_CHARS:
            verdict = _verdict(shape)
        else:
            verdict = self._shapes.get(shape, -1)
            if verdict < 0:
                if len(self._shapes) >= SHAPE_ENTRIES:
                    self._shapes.clear()
                verdict = self._shapes[shape] = _verdict(shape)
        return verdict >= (QUIET_PREFIXED if prefixed else QUIET_BARE)
