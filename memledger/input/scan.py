"""The built-in keyword scanner: the bytes of a log -> the few physical lines worth decoding.

Pure Python and import-light, because a worker process runs it too
(`python -m memledger.input.scan`, started by memledger.input.reader for the second half of a big
file). Each 1 MiB chunk is split into
lines once; serving-time lines (`Decode batch`, `Prefill batch`) are dropped by a substring test
(the last one before a candidate is looked for back from it: SERVING_REACH); the rest are tested
against the keywords once per line shape (digits folded); only a keyword with a digit in it
(`DSV4`) is looked for again in each line of a shape that may hold it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import lru_cache
from typing import IO, Protocol

from memledger.errors import InputError
from memledger.input.wrappers import unwrapped_bytes
from memledger.sglang.errors import ANY_CASE_WORDS
from memledger.sglang.lines import CUT_TAIL_ERE, MEMORY_WORDS_ANY_CASE, PREFILTER_WORDS

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 4 << 20
"""A physical line longer than this is processed in pieces (same line number) to bound memory.
At least CHUNK_BYTES: only a read without newline can then cut a line, which keeps the cuts of a
worker starting mid-file equal to a whole-file scan's."""
SHAPE_MAX_BYTES = 1024
"""Lines up to this long have their keyword verdict cached by shape (see `LineFilter`)."""
SHAPE_CACHE_ENTRIES = 4096
_FOLD_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def _any_case(word: str) -> str:
    """An ERE matching the word in any case (grep -E and Python agree on bracket sets); a
    non-ASCII letter stays itself (bytes.lower folds ASCII only; `[内内]` as bytes is a set of
    three bytes, not the character); an ERE operator (`?` of a question) is escaped."""
    return "".join(_any_case_char(c) for c in word)


def _any_case_char(c: str) -> str:
    if c.isascii() and c.isalpha():
        return f"[{c.upper()}{c.lower()}]"
    return "\\" + c if c in _ERE_OPS else c


_ERE_OPS = frozenset(".[]()*+?{}|^$\\")


OUT_OF_MEMORY_ERE = "|".join(_any_case(w) for w in (*ANY_CASE_WORDS, *MEMORY_WORDS_ANY_CASE))
"""Keywords matched in any case, as one ERE: `out of memory` and the memory-looking words."""
_ANY_CASE_KEYWORDS = OUT_OF_MEMORY_ERE.encode()
# The start of a cut line's rest (sglang.lines.CUT_TAIL_ERE), matched at the line's start only:
# tested after the keywords, once per line shape (it matches a digit-folded shape exactly when
# it matches the line: its digits are any digits).
_CUT_TAIL_MATCH = re.compile(CUT_TAIL_ERE.encode()).match
# Serving-time lines, the bulk of a long-running server's log: a physical line holding one is
# skipped whole (they carry no startup memory fact and no crash evidence).
BORING_LINES: tuple[bytes, ...] = (b"] Decode batch", b"] Prefill batch")
BORING_ERE = (
    r"^[^[]*\] (Decode|Prefill) batch[^[]*(\[[^[]*)?$|^[^[]*\[[^[]*\] (Decode|Prefill) batch[^[]*$"
)
"""A serving-time line alone on its physical line (a marker, at most one `[`, as
`LineFilter.candidates` tests it); the grep path drops these."""


_ANY_CASE_WORDS = tuple(w.lower().encode() for w in (*ANY_CASE_WORDS, *MEMORY_WORDS_ANY_CASE))
"""OUT_OF_MEMORY_ERE's words: `[Oo][Uu]...` matches exactly where the ASCII-lowered bytes
(bytes.lower folds ASCII only) hold the lowered word."""


class KeywordTest:
    """Whether bytes hold one of the words (or, `any_case`, an any-case keyword): one
    `bytes.find` per word. A regex alternation of ~80 words tries every word at every position
    (0.15-0.4 s per MB of a long line holding none, more with `>` markers); `find` is a
    memchr-speed scan per word whatever the bytes, 0.03-0.09 s per MB for all of them."""

    def __init__(self, words: Iterable[bytes], *, any_case: bool = True) -> None:
        self.words = tuple(sorted(set(words), key=len, reverse=True))
        self.any_case = _ANY_CASE_WORDS if any_case else ()

    def __call__(self, data: bytes) -> bool:
        for word in self.words:
            if data.find(word) >= 0:
                return True
        if self.any_case:
            lowered = data.lower()
            for word in self.any_case:
                if lowered.find(word) >= 0:
                    return True
        return False


def _keyword_regex(words: Iterable[bytes], *, any_case: bool = True) -> KeywordTest:
    """The test of the words (and the any-case keywords); with none at all, never true."""
    return KeywordTest(words, any_case=any_case)


# A cut line's rest after its quote markers (CUT_TAIL_ERE = markers + rest): matched from each
# place the markers can end, so a long run of markers is never backtracked through
_MARKERS_ERE = "([>#][ \t]*)*"
_CUT_REST_MATCH = re.compile(CUT_TAIL_ERE.removeprefix(_MARKERS_ERE).encode()).match
_RUN_BYTES = b"># \t"
_REST_REACH = 80
"""How far before the markers' end the rest can start: its `[^ (]{0,80}, key=` alternative can
begin on marker characters; the others start after them (digits, `.`, `i`, `B`, blanks)."""


def cut_tail(data: bytes) -> bool:
    """`_CUT_TAIL_MATCH(data) is not None`, in time linear in a long run of quote markers: the
    markers `([>#][ \t]*)*` can end anywhere in the run of `>#` and blanks that starts a line
    with `>` or `#`, and only the last _REST_REACH + 1 places can start a match of the rest."""
    if data[:1] not in (b">", b"#") or len(data) <= SHAPE_MAX_BYTES:
        return _CUT_TAIL_MATCH(data) is not None
    end = len(data) - len(data.lstrip(_RUN_BYTES))
    return any(
        _CUT_REST_MATCH(data, place) is not None
        for place in range(max(0, end - _REST_REACH), end + 1)
    )


@lru_cache(maxsize=16)
def _filter_regexes(extra_words: tuple[str, ...]) -> tuple[KeywordTest, ...]:
    """LineFilter's keyword tests (built once per process: a fleet parses log after log)."""
    words = [w.encode() for w in (*PREFILTER_WORDS, *extra_words)]
    # Lines differ from each other mostly in their numbers. Folding every digit to 0 leaves
    # every other byte in place and keeps digits digits, so a keyword without a digit (and
    # every any-case word) is in a line exactly where it is in the line's folded shape: one
    # regex run per shape decides every line of the shape. Only a keyword with a digit
    # (`DSV4`) can be in a shape and not in a line of it (`DSV5`): when such a folded
    # keyword is all a shape holds, each of its lines is searched for those keywords.
    digit_free = [w for w in words if not any(48 <= b <= 57 for b in w)]
    with_digits = [w for w in words if any(48 <= b <= 57 for b in w)]
    return (
        _keyword_regex(words),
        _keyword_regex(digit_free),
        _keyword_regex([w.translate(_FOLD_DIGITS) for w in with_digits], any_case=False),
        _keyword_regex(with_digits, any_case=False),
    )


@lru_cache(maxsize=16)
def _shape_verdicts(extra_words: tuple[str, ...]) -> dict[bytes, int]:
    """The shape verdicts of the filters of these words (one dict per process, bounded by
    SHAPE_CACHE_ENTRIES: cleared when full)."""
    return {}


_NO_KEYWORD, _KEYWORD, _DIGIT_KEYWORD_MAYBE = 0, 1, 2
"""A shape's verdict: no keyword; a keyword (every line of the shape is a candidate); only a
keyword with a digit may be there (each line of the shape is searched for those)."""


SERVING_REACH = 8
"""A serving-time line is kept before a candidate (or the end of the input) when fewer than this
many lines lie between them: the last one logged before a failure, what was being served then
(memledger.sglang.lines.SERVING_BATCH_HEADS). The grep prefilter finds it the same way (`grep -B`:
memledger.input.grep_scan)."""
SERVING_LINE_MAX = 4096
"""A serving-time line longer than this is not kept (SGLang's are a few hundred bytes)."""
Held = tuple[int, bytes] | None
"""The last serving-time line after the last candidate, within reach: (line number, bytes)."""


def is_serving(raw: bytes) -> bool:
    """A serving-time line alone on its physical line (a marker and at most one `[`): skipped as
    a candidate; glued to another SGLang line (a second `[`), the line is read and the
    serving-time part yields nothing (security review F11). A `[` of what a tool put around the
    line (ANSI colours, journald's `IDENT[PID]: `, kubectl's `[pod/...] `, a tqdm state a CR
    redrew) does not count: `serving_behind_wrapper`."""
    decode, prefill = BORING_LINES
    if raw.find(decode) < 0 and raw.find(prefill) < 0:
        return False
    return raw.count(b"[") < 2 or serving_behind_wrapper(raw)


def serving_behind_wrapper(raw: bytes) -> bool:
    """A line with a serving-time marker and two or more `[` (`is_serving`'s slow path: SGLang's
    own lines have one) is a serving-time line alone when, without its ANSI codes and the
    columns a tool put first (memledger.input.wrappers), the marker is left with at most one
    `[`; a progress bar's states a CR redrew before it go too, unless one holds a keyword of
    the default words (then the line is read: no kept text is skipped). A line none of that
    changes is two SGLang lines glued (read as a candidate)."""
    rest = unwrapped_bytes(raw)
    cut = rest.rfind(b"\r")
    if cut >= 0:
        before = rest[:cut]
        if _default_keywords()(before) or _CUT_TAIL_MATCH(before) is not None:
            return False
        rest = unwrapped_bytes(rest[cut + 1 :])
    if len(rest) == len(raw):
        return False
    decode, prefill = BORING_LINES
    return (rest.find(decode) >= 0 or rest.find(prefill) >= 0) and rest.count(b"[") < 2


def _default_keywords() -> KeywordTest:
    """The keyword test of the default words (`_filter_regexes(())`'s first)."""
    return _filter_regexes(())[0]


def keyword_test(extra_words: Iterable[str] = ()) -> KeywordTest:
    """Whether a whole line holds a keyword (the default words and `extra_words`), as
    LineFilter decides a candidate (with `cut_tail`)."""
    return _filter_regexes(tuple(extra_words))[0]


def serving_within_reach(held: Held, line: int) -> Held:
    """`held` when it is to be kept before a candidate (or the end) at `line`."""
    if held is None or line - held[0] - 1 >= SERVING_REACH:
        return None
    return held


class LineFilter:
    """Which of a list of whole physical lines are candidates (keyword, no serving-time marker),
    each after the last serving-time line before it when it is within SERVING_REACH lines and
    after the previous candidate (`held` carries it from one list to the next: at most one line
    held whatever the log's length)."""

    def __init__(self, extra_words: Iterable[str] = (), held: Held = None) -> None:
        self.held = held
        words = tuple(extra_words)
        regexes = _filter_regexes(words)
        self.keywords, self.shape_keywords, self.shape_digit_keywords, self.digit_keywords = regexes
        # a shape's verdict depends on its bytes and the words alone: shared by every filter of
        # these words in the process (a fleet's logs print the same shapes)
        self.shape_verdicts = _shape_verdicts(words)

    def _shape_verdict(self, shape: bytes) -> int:
        if self.shape_keywords(shape) or _CUT_TAIL_MATCH(shape) is not None:
            return _KEYWORD
        if self.shape_digit_keywords(shape):
            return _DIGIT_KEYWORD_MAYBE
        return _NO_KEYWORD

    def candidates(self, lines: list[bytes], first_line: int) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes) of each candidate, each after the serving-time line kept before
        it; `first_line` is the number of lines[0]."""
        decode, prefill = BORING_LINES
        keywords = self.keywords
        digit_keywords = self.digit_keywords
        verdicts = self.shape_verdicts
        long_cut_tail = cut_tail
        position = 0  # lines before it are done; only candidates need their index
        for raw in lines:
            # find, not `in`: bytes.__contains__ first tries its operand as an int (slower)
            if raw.find(decode) >= 0 or raw.find(prefill) >= 0:
                # alone on its line, skipped (`is_serving`)
                if raw.count(b"[") < 2 or serving_behind_wrapper(raw):
                    continue
            if len(raw) <= SHAPE_MAX_BYTES:
                shape = raw.translate(_FOLD_DIGITS)
                verdict = verdicts.get(shape)
                if verdict is None:
                    if len(verdicts) >= SHAPE_CACHE_ENTRIES:
                        verdicts.clear()
                    verdict = verdicts[shape] = self._shape_verdict(shape)
                if verdict == _NO_KEYWORD:
                    continue
                if verdict == _DIGIT_KEYWORD_MAYBE and not digit_keywords(raw):
                    continue
            elif not (keywords(raw) or long_cut_tail(raw)):
                continue
            # The verdict depends on the bytes alone, so an equal line before this one and
            # after `position` would have been a candidate already: the first equal line
            # from `position` is this one.
            found = lines.index(raw, position)
            serving = self._last_serving(lines, position, found, first_line)
            if serving is not None:
                yield serving
            yield first_line + found, raw
            position = found + 1
        self.held = self._last_serving(lines, position, len(lines), first_line, keep=True)

    def _last_serving(
        self, lines: list[bytes], low: int, end: int, first_line: int, *, keep: bool = False
    ) -> Held:
        """The last serving-time line before lines[end] within reach and at or after lines[low]
        (lines before `low` are at or before a candidate), else `held` when `low` is 0 and it
        is still within reach; `keep`: the state for the next list (the end is no candidate)."""
        for index in range(end - 1, max(low, end - SERVING_REACH) - 1, -1):
            raw = lines[index]
            if is_serving(raw):
                return (first_line + index, raw) if len(raw) <= SERVING_LINE_MAX else None
        if low > 0 or (keep and end >= SERVING_REACH):
            return None
        return self.held if keep else serving_within_reach(self.held, first_line + end)

    def finish(self, end_line: int) -> Iterator[tuple[int, bytes]]:
        """The serving-time line kept before the end of the input (`end_line`: the number one
        past its last line); holds none after."""
        held = serving_within_reach(self.held, end_line)
        self.held = None
        if held is not None:
            yield held


def scan_lines(
    read: Callable[[int], bytes], line_filter: LineFilter, first_line: int = 1, *, ends: bool = True
) -> Generator[tuple[int, bytes], None, int]:
    """Candidates of a byte stream read in chunks; returns its number of physical lines.

    A physical line longer than MAX_LINE_BYTES is tested in pieces (each with its line number),
    cut where a chunk ends. `ends`: the stream is the input's end (else the serving-time line
    held at its end stays in `line_filter.held`, for whoever reads on).
    """
    next_line = first_line
    leftover = b""
    cut = False  # the current line went out in pieces already
    while chunk := read(CHUNK_BYTES):
        if chunk.find(b"\n") < 0:
            leftover += chunk
            if len(leftover) > MAX_LINE_BYTES:
                yield from line_filter.candidates([leftover], next_line)
                leftover = b""
                cut = True
            continue
        lines = chunk.split(b"\n")
        if leftover:
            lines[0] = leftover + lines[0]  # cheaper than joining the whole chunk
        leftover = lines.pop()  # the unfinished last line goes on with the next chunk
        cut = False
        yield from line_filter.candidates(lines, next_line)
        next_line += len(lines)
    if leftover:
        yield from line_filter.candidates([leftover], next_line)
    if leftover or cut:
        next_line += 1  # a last line without newline
    if ends:
        yield from line_filter.finish(next_line)
    return next_line - first_line


def read_error(exc: BaseException, name: str) -> InputError:
    """The InputError for a failed read."""
    return InputError(f"read failed ({exc})", path=name)


class SeekableSource(Protocol):
    """What `aligned_reader` reads: a file, or a stream that is already where it starts."""

    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, /) -> int: ...


def aligned_reader(
    handle: SeekableSource,
    start: int,
    head_bytes: int,
    name: str,
    on_bytes: Callable[[int], None],
    *,
    seek: bool = True,
) -> Callable[[int], bytes]:
    """`read(size)` for scan_lines over a file from offset `start` to its end.

    Each read ends where a whole-file scan's read ends (every CHUNK_BYTES through the
    `head_bytes` the opener peeked, at its end, then every CHUNK_BYTES again), so an over-long
    line is cut into the same pieces whichever process reads it.
    """
    position = start
    try:
        if seek:  # else: a stream already at `start` (stdin)
            handle.seek(start)
    except OSError as exc:
        raise read_error(exc, name) from exc

    def read(size: int) -> bytes:
        nonlocal position
        if position < head_bytes:
            end = min(head_bytes, (position // CHUNK_BYTES + 1) * CHUNK_BYTES)
        else:
            end = position + CHUNK_BYTES - (position - head_bytes) % CHUNK_BYTES
        try:
            chunk = handle.read(end - position)
        except OSError as exc:
            raise read_error(exc, name) from exc
        position += len(chunk)
        if chunk:
            on_bytes(len(chunk))
        return chunk

    return read


# The worker protocol: argv as below, the log file on stdin; stdout holds `N:line` per candidate
# (N counts from the start offset's line, 1), then `#lines bytes` once the scan finished.


def worker_command(start: int, head_bytes: int, extra_words: Iterable[str]) -> list[str]:
    """The command line of a worker scanning its stdin from byte `start`."""
    arguments = [__file__, start, CHUNK_BYTES, MAX_LINE_BYTES, head_bytes]
    # -P: the worker imports memledger from the installation, never from the current directory
    return [sys.executable, "-P", "-m", "memledger.input.scan", *map(str, arguments)] + [
        json.dumps(list(extra_words))
    ]


def worker_records(
    stdout: IO[bytes], first_line: int
) -> Generator[tuple[int, bytes], None, tuple[int, int] | None]:
    """A worker's candidates renumbered; returns its (lines, bytes), None if it did not finish."""
    for record in stdout:
        if record.startswith(b"#"):
            n_lines, n_bytes = record[1:].split()
            return int(n_lines), int(n_bytes)
        number, _, raw = record.partition(b":")
        yield first_line - 1 + int(number), raw[:-1]
    return None


def main(argv: list[str]) -> int:
    """The worker: scan stdin (a log file) from a byte offset and print the records."""
    global CHUNK_BYTES, MAX_LINE_BYTES
    _exit_with_parent()
    scanner_file, start, chunk, max_line, head_bytes, extra_json = argv
    if os.path.realpath(scanner_file) != os.path.realpath(__file__):
        print("memledger scan worker: another memledger installation", file=sys.stderr)
        return 2  # the parent scans the rest itself
    # the parent's chunking, so pieces of an over-long line are cut at the same offsets
    CHUNK_BYTES, MAX_LINE_BYTES = int(chunk), int(max_line)
    n_bytes = 0

    def count(size: int) -> None:
        nonlocal n_bytes
        n_bytes += size

    out = sys.stdout.buffer
    try:
        read = aligned_reader(sys.stdin.buffer, int(start), int(head_bytes), "<stdin>", count)
        found = scan_lines(read, LineFilter(json.loads(extra_json)))
        while True:
            try:
                number, raw = next(found)
            except StopIteration as finished:
                out.write(b"#%d %d\n" % (finished.value, n_bytes))
                break
            out.write(b"%d:%b\n" % (number, raw))
        out.flush()
    except InputError as exc:
        print(f"memledger scan worker: {exc.message}", file=sys.stderr)
        return 3
    except BrokenPipeError:
        return 1  # the parent stopped reading
    return 0


def _exit_with_parent() -> None:
    """Linux: SIGTERM this worker when its parent dies (even by SIGKILL), never orphan it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    except (OSError, AttributeError):
        pass  # no prctl: a dead parent still ends this worker at its next write (SIGPIPE)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
