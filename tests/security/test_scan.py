"""The keyword scan on hostile long lines: the same verdicts as the regexes it replaced, in
time linear in the line whatever its bytes (benchmarks/bench_security.py --hostile-lines measures
it; no timed test here).

A regex alternation of the ~80 prefilter words tried every word at every position of a line
holding none (0.15-0.4 s per MB on a quiet machine, 1-2.5 s busy), and the cut-line pattern's
`([>#][ \\t]*)*` backtracked through a long run of `>` markers; `KeywordTest` is one `find` per
word and `cut_tail` tries the rest of the pattern only where the markers can end.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memledger.input.scan import (
    _ANY_CASE_KEYWORDS,
    _CUT_TAIL_MATCH,
    SHAPE_MAX_BYTES,
    KeywordTest,
    LineFilter,
    cut_tail,
)
from memledger.sglang.lines import CUT_TAIL_ERE, PREFILTER_WORDS

WORDS = [w.encode() for w in PREFILTER_WORDS]
# what the regexes were: one alternation of the escaped words, and the any-case keywords
OLD_KEYWORDS = re.compile(
    b"|".join(
        [*(re.escape(w) for w in sorted(set(WORDS), key=len, reverse=True)), _ANY_CASE_KEYWORDS]
    )
)
# bytes that make the words, the any-case words and the cut-line pattern's pieces likely
ALPHABET = b">#  \t0123456789.,;=(iB_xaAvVmMeEoOuUsSiIlLzZGgKkbtyrc\rD:[]"
pieces = st.sampled_from(
    [bytes([b]) for b in ALPHABET] + [w[: len(w) // 2 + 1] for w in WORDS] + [b"> ", b"# ", b", a="]
)
lines = st.lists(pieces, max_size=900).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(body=lines, tail=lines)
@example(body=b"", tail="显存".encode()[:4])  # a CJK any-case word cut mid-character
def test_keyword_test_agrees_with_the_alternation(body: bytes, tail: bytes) -> None:
    data = body + tail
    assert KeywordTest(WORDS)(data) == (OLD_KEYWORDS.search(data) is not None)
    assert KeywordTest(WORDS, any_case=False)(data) == any(w in data for w in WORDS)


@settings(max_examples=400, deadline=None)
@given(
    markers=st.lists(st.sampled_from([b">", b"#", b" ", b"\t", b"> ", b"#\t"]), max_size=400),
    rest=lines,
    pad=st.integers(min_value=0, max_value=1),
)
def test_cut_tail_agrees_with_the_pattern_on_long_marker_runs(
    markers: list[bytes], rest: bytes, pad: int
) -> None:
    data = b">" + b"".join(markers) + rest
    if pad:
        data = data + b"x" * (SHAPE_MAX_BYTES + 1 - min(len(data), SHAPE_MAX_BYTES))
    assert cut_tail(data) == (_CUT_TAIL_MATCH(data) is not None)


def test_cut_tail_splits_the_pattern_where_its_markers_end() -> None:
    # cut_tail rebuilds CUT_TAIL_ERE as markers + rest: a change of its markers would break it
    assert CUT_TAIL_ERE.startswith("([>#][ \t]*)*(")
    run = b"> " * 5000
    for rest, expected in [(b"88", True), (b"x, key=1", True), (b"  len=4", True), (b"zz", False)]:
        assert cut_tail(run + rest) is expected is (_CUT_TAIL_MATCH(run + rest) is not None)


def test_a_long_line_is_a_candidate_exactly_when_it_holds_a_keyword() -> None:
    line_filter = LineFilter()
    plain = b"[2025-02-04 05:29:22 TP0] " + b"avai " * 100_000
    hit = plain + b" Memory pool end. avail mem=2.68 GB"
    cased = plain + b" OUT OF MEMORY"
    found = list(line_filter.candidates([plain, hit, cased, b"> " * 300_000 + b"7"], 1))
    assert [number for number, _ in found] == [2, 3, 4]
