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
from memledger.input.error_texts import ERROR_WORDS
from memledger.input.outcome import OUTCOME_WORDS
from memledger.sglang.errors import ANY_CASE_WORDS
from memledger.sglang.lines import GPU_NAME_WORDS, PLATFORM_MARKERS

_FOLD_DIGITS = bytes.maketrans(b"123456789", b"000000000")
SHAPE_ENTRIES = 4096
"""Shapes remembered (cleared when full; a log's memory lines have a handful)."""
SHAPE_MAX_CHARS = 1024
"""Longer lines are tested without remembering their shape."""


def _folded(word: str) -> bytes:
    return word.lower().encode("ascii").translate(_FOLD_DIGITS)


READER_WORDS: tuple[str, ...] = (
    *OUTCOME_WORDS,
    *ANY_CASE_WORDS,  # outcome_kind's case-blind phrase
    *ERROR_WORDS,
    *(marker.text for marker in PLATFORM_MARKERS),
    *GPU_NAME_WORDS,
)
"""What a line that any of the three readers reads holds one of (each module says so of its own;
tests/input/test_hot_path.py checks it against the readers)."""
# a word with a non-ASCII character is in no ASCII line: it makes no ASCII line doubtful (and a
# non-ASCII line holding it is never quiet: memledger.input.ascii_view)
_WORDS = tuple(dict.fromkeys(_folded(word) for word in READER_WORDS if word.isascii()))
_NON_ASCII_WORDS = non_ascii_words(READER_WORDS)


def _quiet_shape(shape: bytes) -> bool:
    lowered = shape.lower()
    return not any(word in lowered for word in _WORDS)


_SHAPES: dict[bytes, bool] = {}
"""Verdicts by line shape, for the whole process (cleared when SHAPE_ENTRIES are held)."""


class QuietLines:
    """`quiet(text)`: True when no reader before the grammar reads anything in this line."""

    def __init__(self) -> None:
        self._shapes = _SHAPES  # a shape's verdict is its bytes' alone: shared by every log

    def __call__(self, text: str) -> bool:
        view = ascii_view(text, _NON_ASCII_WORDS)  # memledger.input.ascii_view
        if view is None:
            return False
        shape = view.encode("ascii").translate(_FOLD_DIGITS)
        if len(shape) > SHAPE_MAX_CHARS:
            return _quiet_shape(shape)
        quiet = self._shapes.get(shape)
        if quiet is None:
            if len(self._shapes) >= SHAPE_ENTRIES:
                self._shapes.clear()
            quiet = self._shapes[shape] = _quiet_shape(shape)
        return quiet
