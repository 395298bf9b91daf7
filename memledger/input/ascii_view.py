"""An ASCII stand-in for a line, for the readers' cheap word tests.

The readers before the grammar (error texts, outcome phrases, `QuietLines`) first ask whether a
line holds one of their words, lower-cased, and run their regexes only when it does. Their
regexes ignore case the way Python's `re` does, which goes beyond ASCII in exactly four
characters: `re` matches `İ` (U+0130) and `ı` (U+0131) with `i`, `ſ` (U+017F) with `s` and the
Kelvin sign `K` (U+212A) with `k` (tests/input/test_ascii_view.py checks every code point). Every
reader's word is ASCII, so in a line without those four, a regex can match a word only on ASCII
characters: replacing each other character by NUL (one for one, so every position stays) changes
no word test. tqdm's progress bars (`█`) are such lines, and are most of a startup's lines that
are not ASCII.
"""

from __future__ import annotations

import re

CASE_TWINS = "\u0130\u0131\u017f\u212a"
"""The non-ASCII characters Python's case-blind `re` matches with an ASCII letter."""
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def ascii_view(text: str) -> str | None:
    """`text` itself when ASCII; else, when it holds none of CASE_TWINS, `text` with each
    non-ASCII character replaced by NUL (a word test on it is a word test on `text`); else
    None (the caller reads the line in full)."""
    if text.isascii():
        return text
    for twin in CASE_TWINS:
        if twin in text:
            return None
    return _NON_ASCII_RE.sub("\x00", text)


__all__ = ["CASE_TWINS", "ascii_view"]
