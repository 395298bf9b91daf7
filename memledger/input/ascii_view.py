"""An ASCII stand-in for a line, for the readers' cheap word tests.

The readers before the grammar (error texts, outcome phrases, `QuietLines`) first ask whether a
line holds one of their words, lower-cased, and run their regexes only when it does. Their
regexes ignore case the way Python's `re` does, which goes beyond ASCII in exactly four
characters: `re` matches `İ` (U+0130) and `ı` (U+0131) with `i`, `ſ` (U+017F) with `s` and the
Kelvin sign `K` (U+212A) with `k` (tests/input/test_ascii_view.py checks every code point). In a
line without those four, a regex can match an ASCII word only on ASCII characters: replacing each
other character by NUL (one for one, so every position stays) changes no test of an ASCII word.
A reader's non-ASCII words (`显存`) are looked for in the line itself, as they are: each must be
caseless (no character with another case), which `non_ascii_words` checks. tqdm's progress bars
(`█`) are most of a startup's lines that are not ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CASE_TWINS = "\u0130\u0131\u017f\u212a"
"""The non-ASCII characters Python's case-blind `re` matches with an ASCII letter."""
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def caseless(word: str) -> bool:
    """Whether no character of `word` has another case (CJK text): `in` finds it in any case."""
    return all(char.lower() == char == char.upper() for char in word)


def non_ascii_words(words: Iterable[str]) -> tuple[str, ...] | None:
    """The words with a non-ASCII character, for `ascii_view`; None when one of them has case
    (then no non-ASCII line gets a stand-in: it is read in full)."""
    found = tuple(dict.fromkeys(word for word in words if not word.isascii()))
    return found if all(caseless(word) for word in found) else None


def ascii_view(text: str, others: tuple[str, ...] | None = ()) -> str | None:
    """`text` itself when ASCII; else `text` with each non-ASCII character replaced by NUL,
    unless it holds one of CASE_TWINS or one of `others` (the caller's non-ASCII words,
    `non_ascii_words`; None: any non-ASCII line), when the answer is None: the caller reads the
    line in full. A test of ASCII words on the stand-in is the test on `text`."""
    if text.isascii():
        return text
    if others is None:
        return None
    for twin in CASE_TWINS:
        if twin in text:
            return None
    for word in others:
        if word in text:
            return None
    return _NON_ASCII_RE.sub("\x00", text)


__all__ = ["CASE_TWINS", "ascii_view", "caseless", "non_ascii_words"]
