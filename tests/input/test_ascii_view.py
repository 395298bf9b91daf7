"""memledger.input.ascii_view: the readers' word tests on a line's ASCII stand-in are exact."""

from __future__ import annotations

import re
import sys

from memledger.input.ascii_view import CASE_TWINS, ascii_view, caseless, non_ascii_words
from memledger.input.error_texts import ERROR_WORDS, no_error_words
from memledger.input.outcome import OUTCOME_WORDS, outcome_kind
from memledger.input.quiet import READER_WORDS, QuietLines

BAR = "Capturing batches (bs=8 avail_mem=8.05 GB): 100%|██████████| 23/23 [00:17<00:00]"


def test_the_case_twins_are_every_character_re_matches_with_an_ascii_letter() -> None:
    letter = re.compile(r"[A-Za-z]", re.IGNORECASE)
    twins = {chr(c) for c in range(128, sys.maxunicode + 1) if letter.fullmatch(chr(c))}
    assert twins == set(CASE_TWINS)
    # and no other character lower-cases to something holding an ASCII letter
    lowered = {
        chr(c)
        for c in range(128, sys.maxunicode + 1)
        if any(ch.isascii() and ch.isalpha() for ch in chr(c).lower())
    }
    assert lowered <= twins


def test_every_non_ascii_reader_word_is_caseless() -> None:
    """Else non_ascii_words gives None and every non-ASCII line is read in full (slow, exact)."""
    for words in (READER_WORDS, ERROR_WORDS, OUTCOME_WORDS):
        assert non_ascii_words(words) is not None
    assert caseless("显存") and not caseless("Größe") and not caseless("ſ")
    assert non_ascii_words(["out of memory", "显存", "Größe"]) is None
    assert non_ascii_words(["out of memory", "显存", "显存"]) == ("显存",)


def test_the_stand_in_keeps_every_ascii_character_in_its_place() -> None:
    assert ascii_view("avail mem=9.02 GB") == "avail mem=9.02 GB"
    view = ascii_view(BAR)
    assert view is not None and len(view) == len(BAR) and view.isascii()
    assert view.replace("\x00", "█") == BAR
    for twin in CASE_TWINS:
        assert ascii_view(f"{BAR} {twin}") is None
    assert ascii_view(f"{BAR} 显存不足", ("显存",)) is None  # a reader's own non-ASCII word
    assert ascii_view(BAR, None) is None  # a cased non-ASCII word somewhere: read in full


def test_a_progress_bar_is_quiet_and_an_error_in_one_is_not() -> None:
    assert QuietLines()(BAR)
    assert no_error_words(BAR)
    oom = f"{BAR} torch.OutOfMemoryError: CUDA OUT OF MEMORY. Tried to allocate 2.00 GiB"
    assert not QuietLines()(oom)
    assert not no_error_words(oom)
    assert outcome_kind(oom) is not None
    # a non-ASCII word of a reader, in a line with a bar
    assert not QuietLines()(f"{BAR} 显存不足")
    found = outcome_kind(f"{BAR} 显存不足")
    assert found is not None and found[1] == "显存不足"
    # `ſ` and the Kelvin sign read as `s` and `k` to the case-blind regexes: read in full
    assert not QuietLines()("Killed \u212a")
    assert not no_error_words("out of memory \u017f")
