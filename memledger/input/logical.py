"""Physical lines -> logical SGLang lines: ANSI codes removed, tqdm CR states split, and a line
cut at every SGLang `[date time TAGS]` prefix (glued lines), each with its rank tag.

What a paste adds around each line is removed first: a Windows line end (CRLF), GitHub quote
markers (`> `), a comment marker (`#   `), a docker compose service column (`sglang-1  | `), a
`kubectl logs --prefix` column (`[pod/NAME/CONTAINER] `), a line number (`cat -n`, `grep -n`), and
the timestamps docker, kubectl, journald and Python's logging put first.
A prefix whose timestamp the user cut (`[TP0] `, `[DP0 TP0 EP0] `) still counts as a prefix, and so
does a rank range a user wrote for a line each rank printed alike (`[TP0..3] ` reads as TP0's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memledger.input.wrappers import (
    ANSI_PATTERN,
    STAMP_PATTERN,
    unrendered_frame,
    unwrapped_record,
    without_columns,
    without_suffix,
)

# `[2025-10-16 09:06:22 DP0 TP0 EP0]`, `[22:30:52 TP0]`, `[2026-02-04 11:30:29]`, `[gpu_id=0]`,
# `[12-27 11:24:23]` (datefmt `%m-%d %H:%M:%S`, v0.5.23 multimodal_gen/runtime/utils/
# logging_utils.py:459; users shorten pastes the same way).
PREFIX_RE = re.compile(
    r"\[(?:(?:\d{4}-)?\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?"
    r"(?P<tags>(?: [A-Za-z_][\w\-]*(?:\[\d+\])?)*)\]"
    r"|\[(?P<gpu>gpu(?:_id)?=\d+)\]"
    # rank tags alone: the user cut the timestamp (`[TP0] `, `[DP0 TP0 EP0] `); parallel kinds
    # only, so a bracketed word of prose (`[H100]`, `[Bug]`) is no prefix
    r"|\[(?P<bare_tags>(?:[A-Z]+_)?(?:TP|DP|EP|PP|CP)\d+(?: (?:[A-Z]+_)?(?:TP|DP|EP|PP|CP)\d+)*)\] "
    # a rank range a user wrote for a line every rank printed alike (`[TP0..3] `, `[TP0-3] `,
    # `[TP0..TP3] `): the line as its first rank printed it
    r"|\[(?P<range_first>(?:TP|DP|EP|PP|CP)\d+)(?:\.\.|-)(?:TP|DP|EP|PP|CP)?\d+\][ \t]"
)
LEVEL_FILE_RE = re.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) +[\w.\-/]+\.py:\d+: ?"
)
ANSI_RE = re.compile(ANSI_PATTERN)
# Text other tools put before a bare line (docker/kubectl timestamps, Python logging, Ray,
# journald) and the columns a paste puts before each line (quote markers, docker compose,
# kubectl --prefix, line numbers): the rows of memledger.input.wrappers, each with its source.
JUNK_PREFIX_RE = re.compile(STAMP_PATTERN)


@dataclass(frozen=True, slots=True)
class LogicalLine:
    """One SGLang line (or one bare line) with the physical line it came from."""

    line: int
    """1-based physical line number."""
    text: str
    """The message after the prefix (level/file dropped), or the bare text."""
    rank: str = ""
    """Rank tag text (`TP0`, `DP0 TP0 EP0`, `gpu_id=0`); empty when untagged or bare."""
    prefixed: bool = False
    """True when the line carried an SGLang `[...]` prefix."""


def rank_tag_of(match: re.Match[str]) -> str:
    """The rank tag text of a prefix match (`DP0 TP0 EP0`, `gpu_id=0`, or empty)."""
    gpu, tags, bare_tags, range_first = match.group("gpu", "tags", "bare_tags", "range_first")
    if gpu is not None:
        return gpu
    if range_first is not None:
        return range_first
    # each tag of `tags` follows exactly one space and holds none, and `bare_tags` are tags
    # joined by single spaces: the tags joined by one space each, as they stand
    return tags[1:] if tags is not None else bare_tags


def strip_paste_columns(text: str) -> str:
    """The line without what a paste put around it: CRLF, quote/compose/kubectl columns and
    tool timestamps at its start (the module docstring)."""
    if text.endswith("\r"):
        text = text.rstrip("\r")  # CRLF, or `\r\r\n` (a CRLF written again in text mode)
    return without_columns(without_suffix(text))


def _message(text: str) -> str:
    text = text.strip()
    level = LEVEL_FILE_RE.match(text)
    return text[level.end() :] if level else text


def split_physical_line(line: int, text: str) -> list[LogicalLine]:
    """One decoded physical line -> its logical lines (ANSI removed, CR and prefix split)."""
    return list(iter_logical_lines(line, text))


def _cr_segments(text: str) -> Iterator[tuple[bool, bool, str]]:
    """(first, last, segment) of each CR-separated segment, without a list of them all (a tqdm
    bar redrawn for hours is one line of a million states)."""
    start = 0
    while True:
        cut = text.find("\r", start)
        if cut < 0:
            yield start == 0, True, text[start:]
            return
        yield start == 0, False, text[start:cut]
        start = cut + 1


def iter_logical_lines(line: int, text: str) -> Iterator[LogicalLine]:
    """`split_physical_line`, one logical line at a time (memory flat in the line's length)."""
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if text[:1] == "[" and "\r" not in text and not text.startswith("[pod/"):
        # The common case, a line that starts with its prefix: no paste column or tool timestamp
        # starts with `[` but kubectl's `[pod/`, and without a CR the line is one segment.
        head = PREFIX_RE.match(text)
        if head is not None and PREFIX_RE.search(text, head.end()) is None:
            return iter((LogicalLine(line, _message(text[head.end() :]), rank_tag_of(head), True),))
    return logical_lines_in_full(line, text)


def logical_lines_in_full(line: int, text: str) -> Iterator[LogicalLine]:
    """`iter_logical_lines` of an ANSI-free line, every step taken (no common-case shortcut)."""
    if text[:1] == "{":  # a line inside a tool's record (docker's json-file)
        text = unwrapped_record(text)
        if "\x1b" in text:
            text = ANSI_RE.sub("", text)
    text = strip_paste_columns(text)
    for first, last, segment in _cr_segments(text):
        if not segment:
            continue
        matches = list(PREFIX_RE.finditer(segment))
        bare = segment[: matches[0].start()] if matches else segment
        if first:
            junk = JUNK_PREFIX_RE.match(bare)
            if junk:
                bare = bare[junk.end() :]
        if bare[:6] == 'File "':  # a frame at column 0: copied from a rendered page
            bare = unrendered_frame(bare)
        bare = bare.strip()
        # tqdm: only the last CR state counts, except `Capturing ...` descriptions (each bs matters)
        if bare and (last or bool(matches) or bare.startswith("Capturing")):
            yield LogicalLine(line, bare)
        for position, match in enumerate(matches):
            end = matches[position + 1].start() if position + 1 < len(matches) else len(segment)
            message = _message(segment[match.end() : end])
            yield LogicalLine(line, message, rank_tag_of(match), True)
