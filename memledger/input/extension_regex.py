"""Regexp terminals of `--grammar` extensions: shapes that could backtrack catastrophically
are refused (F22), and their literal words feed the prefilter like `"literal"` strings (F23).

Python's `re` cannot be interrupted mid-match, so the bound is by design: an extension's
regexps are refused at load when they have a shape that makes backtracking exponential or of
a polynomial degree of two or more on a message (messages are at most MAX_PARSE_CHARS long):

- a nested quantifier: a repeated group holding an unbounded repeat that can also match what
  follows it in the group or the next repetition (`(a+)+`, `(\\w+\\s?)*`, `(.*,){9}`; not
  `(\\d+,\\s*)*` or `(?:\\.\\w+)*`, whose iterations are fenced by a character);
- overlapping alternatives under an unbounded repeat (`(a|ab)*`, `(\\d+|\\d+\\.)*`);
- adjacent unbounded repeats, the second able to start with what the first matches, with
  something after them that can fail (`.*.*x`, `a*a*b`, `\\s*.*x`; not a trailing `\\s*[^,]+`):
  quadratic, 33 ms for one 4096-character message, so a log of such lines would take hours.

Bounded repeats multiply too (review 3, finding 2: `(a?){28}a{28}b` took 13.5 s on a 40-character
line, each +2 four times that), so a pattern is judged by the ways it can try, whatever its
counts: a repeated group (`{n}` included) that can match empty, whose iterations can split the
same text two ways (`(a{1,2}){28}`) or whose alternatives overlap (`(a|ab){9}`), and a row of
optional or counted items that can match the same characters whose choices multiply past
MAX_CHOICES (`a?a?a?...` 28 times: 2^28 ways).

Characters are modelled over Latin-1 plus four classes beyond it (digits, letters, spaces,
others), which keeps the test conservative: a false alarm asks the author to rewrite a
pattern, never a hang.
"""

from __future__ import annotations

import re

# the regexp parser of the standard library (re._parser since Python 3.11, the minimum)
from re import _constants as sre_constants
from re import _parser as sre_parse
from typing import Any

# Latin-1 codes, then four symbols for the characters above U+00FF by class.
_BEYOND_DIGIT, _BEYOND_LETTER, _BEYOND_SPACE, _BEYOND_OTHER = 256, 257, 258, 259
_BEYOND = frozenset({_BEYOND_DIGIT, _BEYOND_LETTER, _BEYOND_SPACE, _BEYOND_OTHER})
_ALL = frozenset(range(256)) | _BEYOND
_UNBOUNDED = 100
"""A repeat whose maximum exceeds this counts as unbounded."""
MAX_CHOICES = 1000
"""Ways a row of adjacent bounded repeats over the same characters may be tried (their
(max - min + 1) multiplied): 1000 is a millisecond on one message."""


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


# category -> (its Latin-1 test, the beyond-Latin-1 classes it covers whole)
_CATEGORIES: dict[str, tuple[Any, frozenset[int]]] = {
    "CATEGORY_DIGIT": (str.isdigit, frozenset({_BEYOND_DIGIT})),
    "CATEGORY_NOT_DIGIT": (
        lambda c: not c.isdigit(),
        frozenset({_BEYOND_LETTER, _BEYOND_SPACE, _BEYOND_OTHER}),
    ),
    "CATEGORY_SPACE": (str.isspace, frozenset({_BEYOND_SPACE})),
    "CATEGORY_NOT_SPACE": (
        lambda c: not c.isspace(),
        frozenset({_BEYOND_DIGIT, _BEYOND_LETTER, _BEYOND_OTHER}),
    ),
    "CATEGORY_WORD": (_is_word, frozenset({_BEYOND_DIGIT, _BEYOND_LETTER})),
    "CATEGORY_NOT_WORD": (
        lambda c: not _is_word(c),
        frozenset({_BEYOND_SPACE, _BEYOND_OTHER}),
    ),
}


def _beyond_class(char: str) -> int:
    if char.isdigit():
        return _BEYOND_DIGIT
    if _is_word(char):
        return _BEYOND_LETTER
    return _BEYOND_SPACE if char.isspace() else _BEYOND_OTHER


_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def _in_set(items: list[tuple[Any, Any]], ignore_case: bool) -> frozenset[int]:
    """A character class. Negated, it keeps every beyond-Latin-1 class that its members do
    not cover whole (`[^中]` still matches other CJK characters)."""
    chosen: set[int] = set()
    covered: set[int] = set()
    negate = False
    for op, value in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chosen |= _literal(value, ignore_case)
        elif name == "RANGE":
            low, high = value
            chosen |= set(range(low, min(high, 255) + 1))
            if high > 255:
                chosen |= _BEYOND  # any class may lie in a range above Latin-1
        elif name == "CATEGORY" and str(value) in _CATEGORIES:
            test, whole = _CATEGORIES[str(value)]
            chosen |= {code for code in range(256) if test(chr(code))} | whole
            covered |= whole
        else:
            chosen |= _ALL
            covered |= _BEYOND
    if not negate:
        return frozenset(chosen)
    return (_ALL - {code for code in chosen if code < 256}) - covered


def _literal(code: int, ignore_case: bool) -> set[int]:
    chars = {chr(code)}
    if ignore_case:
        chars |= {chr(code).lower(), chr(code).upper()}
    return {ord(c) if ord(c) < 256 else _beyond_class(c) for c in chars if len(c) == 1}


class _Analysis:
    def __init__(self, ignore_case: bool) -> None:
        self.ignore_case = ignore_case

    def first(self, sequence: Any) -> tuple[frozenset[int], bool]:
        """The characters a sequence can start with, and whether it can match empty."""
        found: set[int] = set()
        for item in sequence:
            chars, nullable = self.item_first(item)
            found |= chars
            if not nullable:
                return frozenset(found), False
        return frozenset(found), True

    def item_first(self, item: tuple[Any, Any]) -> tuple[frozenset[int], bool]:
        op, value = item
        name = str(op)
        if name == "LITERAL":
            return frozenset(_literal(value, self.ignore_case)), False
        if name == "NOT_LITERAL":
            return (_ALL - {value}) if value < 256 else _ALL, False
        if name == "ANY":
            return _ALL, False
        if name == "IN":
            return _in_set(value, self.ignore_case), False
        if name in _REPEATS:
            low, _, body = value
            chars, nullable = self.first(body)
            return chars, nullable or low == 0
        if name == "SUBPATTERN":
            return self.first(value[-1])
        if name == "ATOMIC_GROUP":
            return self.first(value)
        if name == "BRANCH":
            found: set[int] = set()
            nullable = False
            for branch in value[1]:
                chars, empty = self.first(branch)
                found |= chars
                nullable = nullable or empty
            return frozenset(found), nullable
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return frozenset(), True
        return _ALL, True  # back-references, conditionals: assume the worst

    def chars(self, sequence: Any) -> frozenset[int]:
        """Every character a sequence can match anywhere (not only first)."""
        found: set[int] = set()
        for op, value in sequence:
            name = str(op)
            if name in _REPEATS:
                found |= self.chars(value[2])
            elif name == "SUBPATTERN":
                found |= self.chars(value[-1])
            elif name == "ATOMIC_GROUP":
                found |= self.chars(value)
            elif name == "BRANCH":
                for branch in value[1]:
                    found |= self.chars(branch)
            elif name not in ("AT", "ASSERT", "ASSERT_NOT"):
                found |= self.item_first((op, value))[0]
        return frozenset(found)

    def problem(self, sequence: Any, *, may_end: bool = False) -> str | None:
        """The first dangerous shape in `sequence` (searched at every depth). `may_end`: what
        follows the sequence can match empty, so a match that reaches its end succeeds."""
        items = list(sequence)
        run: list[frozenset[int]] = []
        for index, item in enumerate(items):
            op, value = item
            name = str(op)
            # nothing after this item can fail: backtracking into it never happens
            ends_here = may_end and self.first(items[index + 1 :])[1]
            if name in _REPEATS:
                _, high, body = value
                found = self.problem(body)
                if found is None and high > 1:
                    found = self._ambiguous_iteration(list(body), unbounded=high > _UNBOUNDED)
                if found is None and high > 1:
                    found = self._overlapping_alternatives(body)
                if found is None:
                    found = self._multiplied(items[: index + 1], ends_here)
                if found:
                    return found
                if high > _UNBOUNDED:
                    # ambiguous when this repeat can start with what the one before can match
                    chars = self.chars(body)
                    run = [*run, chars] if run and run[-1] & self.first(body)[0] else [chars]
                    if len(run) >= 2 and not ends_here:
                        return "two adjacent unbounded repeats that can match the same characters"
                else:
                    run = []
                continue
            if name not in ("AT", "ASSERT", "ASSERT_NOT"):
                run = []
            found = self._inner(name, value, may_end=ends_here)
            if found:
                return found
        return None

    def _inner(self, name: str, value: Any, *, may_end: bool) -> str | None:
        if name == "SUBPATTERN":
            return self.problem(value[-1], may_end=may_end)
        if name == "ATOMIC_GROUP":
            return self.problem(value)
        if name == "BRANCH":
            for branch in value[1]:
                found = self.problem(branch, may_end=may_end)
                if found:
                    return found
        if name in ("ASSERT", "ASSERT_NOT"):
            return self.problem(value[1])
        return None

    def _ambiguous_iteration(self, body: list[Any], *, unbounded: bool) -> str | None:
        """A repeated body holding an unbounded repeat that can also match what comes right
        after it (the rest of the body, or the next iteration's start): `(a+)+`, `(.*,){9}`.
        `(\\.\\w+)*` is safe: each iteration starts with the dot the inner repeat cannot match."""
        flat = _flatten(body)
        start, nullable = self.first(flat)
        if nullable:
            return "a nested quantifier (a repeated group that can match empty)"
        for index, item in enumerate(flat):
            if not _holds_unbounded(item) and not _holds_variable(item):
                continue
            following, rest_nullable = self.first(flat[index + 1 :])
            if rest_nullable:
                following |= start
            if self.chars([item]) & following:
                return (
                    "a nested quantifier (a repeated group whose inner repeat can also match "
                    "the text after it)"
                )
        return None

    def _multiplied(self, items: list[Any], ends_here: bool) -> str | None:
        """The row of bounded variable repeats ending at `items[-1]` whose neighbours can match
        the same characters: its ways to split a text multiply (`a?a?a?...b`)."""
        if ends_here:
            return None  # nothing after it can fail: it is never backtracked into
        choices, seen = 1, frozenset[int]()
        for op, value in reversed(items):
            if str(op) not in _REPEATS or value[1] > _UNBOUNDED or value[0] == value[1]:
                break
            chars = self.chars(value[2])
            if seen and not chars & seen:
                break
            choices *= value[1] - value[0] + 1
            seen |= chars
            if choices > MAX_CHOICES:
                return (
                    f"a row of optional or counted repeats that can match the same characters "
                    f"(more than {MAX_CHOICES:,} ways to try)"
                )
        return None

    def _overlapping_alternatives(self, body: Any) -> str | None:
        for op, value in body:
            name = str(op)
            if name == "SUBPATTERN":
                found = self._overlapping_alternatives(value[-1])
                if found:
                    return found
            elif name == "BRANCH":
                seen: set[int] = set()
                for branch in value[1]:
                    chars, nullable = self.first(branch)
                    if nullable or seen & chars:
                        return "alternatives that can match the same text under a repeat"
                    seen |= chars
        return None


def backtracking_problem(pattern: str, flags: int = 0) -> str | None:
    """Why this regexp could backtrack catastrophically, or None when its shape is safe."""
    try:
        parsed = sre_parse.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"not a valid regexp ({exc})"
    ignore_case = bool((flags | parsed.state.flags) & sre_constants.SRE_FLAG_IGNORECASE)
    # a terminal is matched, never searched: a match that reaches the pattern's end succeeds
    return _Analysis(ignore_case).problem(list(parsed), may_end=True)


def _flatten(sequence: list[Any]) -> list[Any]:
    """Groups opened into the sequence around them (their items match in line)."""
    flat: list[Any] = []
    for op, value in sequence:
        if str(op) == "SUBPATTERN":
            flat += _flatten(list(value[-1]))
        else:
            flat.append((op, value))
    return flat


def _holds_variable(item: tuple[Any, Any]) -> bool:
    """A bounded repeat of more than one count (`a{1,2}`, `b?`) at any depth."""
    op, value = item
    name = str(op)
    if name in _REPEATS:
        return bool(value[0] != value[1]) or any(_holds_variable(i) for i in value[2])
    if name == "SUBPATTERN":
        return any(_holds_variable(i) for i in value[-1])
    if name == "ATOMIC_GROUP":
        return any(_holds_variable(i) for i in value)
    if name == "BRANCH":
        return any(_holds_variable(i) for branch in value[1] for i in branch)
    return False


def _holds_unbounded(item: tuple[Any, Any]) -> bool:
    op, value = item
    name = str(op)
    if name in _REPEATS:
        return bool(value[1] > _UNBOUNDED) or any(_holds_unbounded(i) for i in value[2])
    if name == "SUBPATTERN":
        return any(_holds_unbounded(i) for i in value[-1])
    if name == "ATOMIC_GROUP":
        return any(_holds_unbounded(i) for i in value)
    if name == "BRANCH":
        return any(_holds_unbounded(i) for branch in value[1] for i in branch)
    return False


_GRAMMAR_REGEXP = re.compile(r"/((?:[^/\\\n]|\\.)+)/([imslux]*)")
_MIN_KEYWORD = 4


def literal_runs(pattern: str) -> list[str]:
    """Runs of at least four literal characters that `pattern` always matches (none when it
    ignores case: the prefilter matches exact bytes)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return []
    if parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE:
        return []
    found: list[str] = []
    run: list[str] = []
    for op, value in [*parsed, (None, None)]:
        if str(op) == "LITERAL":
            run.append(chr(value))
            continue
        if len(run) >= _MIN_KEYWORD:
            found.append("".join(run))
        run = []
    return found


def regexp_example(pattern: str) -> str | None:
    """A short text `pattern` matches whole (each repeat at its least, each choice its first),
    or None when this cannot build one."""
    try:
        parsed = sre_parse.parse(pattern)
        text = _example(list(parsed))
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    return text if re.fullmatch(pattern, text) else None


_CATEGORY_EXAMPLE = {"CATEGORY_DIGIT": "0", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " "}


def _example(sequence: list[Any]) -> str:
    out: list[str] = []
    for op, value in sequence:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name in ("NOT_LITERAL", "ANY"):
            out.append("x" if value != ord("x") else "y")
        elif name == "IN":
            out.append(_member(value))
        elif name in _REPEATS:
            out.append(_example(list(value[2])) * max(value[0], 0))
        elif name == "SUBPATTERN":
            out.append(_example(list(value[-1])))
        elif name == "BRANCH":
            out.append(_example(list(value[1][0])))
        elif name not in ("AT", "ASSERT", "ASSERT_NOT"):
            raise ValueError(name)
    return "".join(out)


def _member(items: list[tuple[Any, Any]]) -> str:
    op, value = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(value)
    if name == "RANGE":
        return chr(value[0])
    if name == "CATEGORY" and str(value) in _CATEGORY_EXAMPLE:
        return _CATEGORY_EXAMPLE[str(value)]
    raise ValueError(name)  # a negated class or another category: no example


def regexp_literals(grammar_text: str) -> list[str]:
    """Runs of at least four literal characters that a `/regexp/` of a grammar always matches,
    in order (case-insensitive regexps give none: the prefilter matches exact bytes)."""
    found: list[str] = []
    for line in grammar_text.splitlines():
        if line.lstrip().startswith("//"):
            continue
        for match in _GRAMMAR_REGEXP.finditer(line):
            if "i" not in match.group(2):
                found += literal_runs(match.group(1))
    return found
