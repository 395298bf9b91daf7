"""The readers of error texts (memledger.sglang.errors, one entry per text) that make events: an
allocator OOM message's sizes, SGLang's refusals and exhausted pools, Python tracebacks (their
frames name the phase), and process ends.

These texts are mostly bare lines (continuations of one multi-line log record whose first line
carries the SGLang prefix), so a bare line is attributed to the rank of the last prefixed line.
What a reader does beyond the table: type the captured numbers, join a text a narrow terminal
wrapped over several lines, and gather a traceback's frames into one event. An exception line
without its traceback (`RuntimeError: ...` pasted alone) is a traceback event of no frames; a
frame whose code line builds the request-to-token table marks the traceback `pool=req_to_token`.

Every reader tolerates what people paste: surrounding text, alignment spaces, a trailing note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from memledger.input.ascii_view import ascii_view, non_ascii_words
from memledger.input.reported import read_reported
from memledger.input.rewrap import PROSE
from memledger.model.events import EventKind, Value
from memledger.sglang.errors import (
    BY_NAME,
    ERRORS,
    ErrorText,
    Family,
    of_kind,
)
from memledger.sglang.failure_rules import CRASH_CAUSES, CrashCause
from memledger.sglang.frameworks import framework_of
from memledger.units import Size, float_or_none, format_gib, int_or_none, parse_size

_NUM = r"(-?\d+(?:\.\d+)?)\s*(bytes|KiB|MiB|GiB|KB|MB|GB)"
"""A size as c10's `format_size` prints it (bytes, KiB, MiB, GiB), or in decimal units."""

ALLOCATOR_FIELDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # torch_npu's workspace allocator writes it lower-case: `NPUWorkspaceAllocator tried to
    # allocate 216.00 MiB(NPU 0; 61.27 GiB total capacity; 90.23 MiB free)` (OpParamMaker.cpp)
    ("requested", re.compile(r"[Tt]ried to allocate " + _NUM)),
    # torch >= 2.1 (2.1 itself printed `total capacty`, c10/cuda/CUDACachingAllocator.cpp; the
    # typo was fixed in 2.2)
    ("capacity", re.compile(r"has a total capac(?:i)?ty of " + _NUM)),
    # `GPU 1 ... 50.40 GiB is free`: a paste that elides the capacity (sglang#37712)
    ("free", re.compile(r"(?:of which|\.\.\.|…) ?" + _NUM + r" is free")),
    ("process_in_use", re.compile(r"this process has " + _NUM + r" memory in use")),
    # every process the driver lists, by PID; the first is kept: its presence without `this process
    # has` says the text named none as its own (a container's PIDs are not the host's)
    ("listed_process", re.compile(r"Process \d+ has " + _NUM + r" memory in use")),
    ("allocated", re.compile(r"Of the allocated memory " + _NUM + r" is allocated by PyTorch")),
    ("private_pools", re.compile(_NUM + r" allocated in private pools")),
    ("reserved_unallocated", re.compile(_NUM + r" is reserved by PyTorch but unallocated")),
    # torch < 2.1 and torch_npu: `(GPU 0; 15.78 GiB total capacity; ...; 3.12 MiB free; ...)`
    ("capacity", re.compile(_NUM + r" total capacity")),
    ("allocated", re.compile(_NUM + r" already allocated")),
    ("free", re.compile(r"; " + _NUM + r" free")),
    ("reserved_total", re.compile(_NUM + r" reserved in total by PyTorch")),
    # the same numbers retold in Chinese (the errors entry's second head)
    ("requested", re.compile(r"尝试分配\s*" + _NUM)),
    # `总容量为 79.15 GiB` or `79.10GiB总容量`; `其中 2.00 GiB 空闲`, `仅有380.31MB空闲内存`
    ("capacity", re.compile(r"总容量(?:为|是)?\s*" + _NUM)),
    ("capacity", re.compile(_NUM + r"\s*的?总容量")),
    (
        "free",
        re.compile(
            r"(?:其中|仅有|只有|仅剩|剩余|还有)\s*" + _NUM + r"\s*(?:是|为)?的?(?:空闲|可用)"
        ),
    ),
    ("allocated", re.compile(r"PyTorch\s*已?分配了?\s*" + _NUM)),
    ("private_pools", re.compile(_NUM + r"[^，。,;]{0,24}私有池")),
    ("reserved_unallocated", re.compile(_NUM + r"\s*为?(?:预留|保留)但未分配")),
)
"""The sizes of an allocator OOM message (memledger.sglang.errors `allocator_oom`), each read after
its head; the first pattern of a key that reads wins. torch >= 2.1: `CUDA out of memory. Tried
to allocate 1.50 GiB. GPU 0 has a total capacity of 79.19 GiB of which 812.00 MiB is free.
[Process N has X memory in use. ]Including non-PyTorch memory, this process has 78.38 GiB memory
in use. Of the allocated memory X is allocated by PyTorch, [with X allocated in private pools
(e.g., CUDA Graphs), ]and X is reserved by PyTorch but unallocated.` Older torch and torch_npu:
`NPU out of memory. Tried to allocate 52.00 MiB (NPU 0; 60.96 GiB total capacity; 59.36 GiB
already allocated; [X current active; ]X free; X reserved in total by PyTorch)`."""
ALLOCATOR_DEVICE_INDEX_RE = re.compile(r"(?:GPU|NPU|Device|device)\s+(\d+)(?: has a total|;)")
"""The device an allocator OOM message names (`GPU 0 has a total`, `(NPU 3; ...`)."""

_ALLOCATOR_OOM = BY_NAME["allocator_oom"]
_OOM_MESSAGES = of_kind(EventKind.OOM_MESSAGE)
_REFUSALS = of_kind(EventKind.KV_REFUSAL)
_POOLS = of_kind(EventKind.POOL_EXHAUSTED)
_ADJUSTMENTS = of_kind(EventKind.SETTING_ADJUSTED)
OUT_OF_MEMORY_RE = _ALLOCATOR_OOM.regex
TRACEBACK_RE = BY_NAME["traceback_head"].regex
FRAME_RE = BY_NAME["traceback_frame"].regex
EXCEPTION_RE = BY_NAME["exception_line"].regex
REQ_TO_TOKEN_CODE_RE = BY_NAME["req_to_token_code"].regex
_KILLED = BY_NAME["killed"]
_FRAMEWORK = BY_NAME["framework_named"]
_FRAME_ROWS = tuple(e for e in of_kind(EventKind.REPORTED) if e.values.get("where") == "frame")
_LOG_MENTIONS = tuple(
    e
    for e in of_kind(EventKind.REPORTED)
    if e.family is not Family.REPORTER and "mention" in e.values
)
"""Rows of SGLang's own lines that name a mention (a warning it prints, a request it refuses):
read on a prefixed log line too, where the reporter's prose rows are not."""


def _frame_mentions(text: str) -> list[str]:
    """The mentions a traceback frame line names (memledger.sglang.errors rows read in frames:
    `where` frame)."""
    return [str(e.values["mention"]) for e in _FRAME_ROWS if e.find(text) is not None]


_EXIT_CODE = BY_NAME["exit_code"]
SIGKILL_EXIT_CODES = frozenset({-9, 137})
"""multiprocessing reports SIGKILL as -9; a shell reports 128 + 9."""

MAX_FRAMES = 100
"""Frames kept per traceback (the innermost ones: they name where it failed)."""
MESSAGE_CAP = 300


def _size(match: re.Match[str]) -> Size | None:
    try:
        return parse_size(match.group(1), match.group(2))
    except ValueError:
        return None


def _captured(entry: ErrorText, match: re.Match[str]) -> dict[str, Value]:
    """The entry's fixed values, then the numbers its groups captured, typed."""
    values: dict[str, Value] = dict(entry.values)
    for key, group, kind in entry.captures:
        text = match.group(group)
        number = (int_or_none(text) if kind is int else float_or_none(text)) if text else None
        if number is not None:
            values[key] = number
    for key, pattern in entry.glued:
        glued = pattern.search(match.string)
        count = int_or_none(glued.group(1)) if glued else None
        if count is not None:
            values[key] = count
    return values


def _byte_sizes(entry: ErrorText, match: re.Match[str]) -> dict[str, Size]:
    """The byte counts an OOM text prints (its `sizes` groups), as sizes; a group with a unit
    beside it (`<group>_unit`) is a printed size."""
    sizes: dict[str, Size] = {}
    units = match.groupdict()
    for key, group in entry.sizes:
        unit = units.get(f"{group}_unit")
        if unit and match.group(group):
            try:
                sizes[key] = parse_size(match.group(group), unit)
            except ValueError:
                pass
            continue
        count = int_or_none(match.group(group) or "")
        if count is not None and count >= 0:
            # printed in bytes: shown in GiB
            sizes[key] = Size(bytes=count, half_ulp=0, text=f"{format_gib(count)} GiB")
    return sizes


def _first(entries: Iterable[ErrorText], text: str) -> tuple[ErrorText, re.Match[str]] | None:
    """The first of `entries` found in `text`, with its match."""
    return next(((entry, match) for entry in entries if (match := entry.find(text))), None)


def read_oom_message(text: str) -> tuple[dict[str, Size], dict[str, Value]] | None:
    """The numbers of an allocator OOM message, or None when `text` is not one."""
    own = _first((e for e in _OOM_MESSAGES if e is not _ALLOCATOR_OOM), text)
    if own is not None:  # a runtime's own text: its byte counts, if it prints any
        return _byte_sizes(*own), _captured(*own)
    head = _ALLOCATOR_OOM.find(text)
    if head is None:
        return None
    sizes: dict[str, Size] = {}
    for key, pattern in ALLOCATOR_FIELDS:
        if key in sizes:
            continue
        match = pattern.search(text, head.start())
        size = _size(match) if match else None
        if size is not None:
            sizes[key] = size
    if not sizes:
        return None
    values: dict[str, Value] = {}
    if head.group("device"):
        values["device"] = head.group("device").upper()
    index = ALLOCATOR_DEVICE_INDEX_RE.search(text, head.start())
    if index:
        gpu = int_or_none(index.group(1))
        if gpu is not None:
            values["gpu"] = gpu
    return sizes, values


def read_kv_refusal(text: str) -> dict[str, Value] | None:
    """SGLang refusing to size the KV pool (weights left no room), or None."""
    found = _first(_REFUSALS, text)
    return None if found is None else _captured(*found)


def read_pool_exhausted(text: str) -> dict[str, Value] | None:
    """SGLang's own pool (or the host's memory) running out, or None."""
    found = _first(_POOLS, text)
    return None if found is None else _captured(*found)


def read_adjustment(text: str) -> dict[str, Value] | None:
    """SGLang changing a memory setting by itself (memledger.sglang.adjustments): the entry's
    setting and the value its `value` group read (printed as it is: a count, a dtype), or None."""
    found = _first(_ADJUSTMENTS, text)
    if found is None:
        return None
    read = {key: text for key, text in found[1].groupdict().items() if text and text.strip()}
    return {**found[0].values, **read}


def read_process_exit(text: str) -> dict[str, Value] | None:
    """A process end the log reports (`Killed`, a non-zero exit code), or None."""
    if _KILLED.find(text) is not None:
        return {"killed": True}
    match = _EXIT_CODE.find(text)
    found = {} if match is None else {k: int_or_none(v) for k, v in match.groupdict().items() if v}
    code, status = found.get("code"), found.get("status")
    if status is not None:  # os.waitpid's: a signal in the low 7 bits, else the code above them
        code = -(status & 0x7F) if status & 0x7F else status >> 8
    if code is None or code == 0:
        return None
    return {"exit_code": code, "killed": code in SIGKILL_EXIT_CODES}


def _prose_only(entry: ErrorText) -> bool:
    """A reporter's prose row: read on a bare line only (`read_reported`), unlike the framework
    a line names (`_framework`, any line: a frame's path, a warning, a flag) and the mentions a
    traceback frame names (`_frame_mentions`)."""
    return (
        entry.kind == EventKind.REPORTED
        and entry.family is Family.REPORTER
        and entry is not _FRAMEWORK
        and entry not in _FRAME_ROWS
    )


ERROR_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(word.lower() for entry in ERRORS if entry.kind for word in entry.words)
)
"""Lower-cased, what every text a reader here reads holds one of (memledger.input.quiet): the
words of every entry a reader reads (memledger.sglang.errors)."""
LOG_ERROR_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        word.lower()
        for entry in ERRORS
        if entry.kind and not _prose_only(entry)
        for word in entry.words
    )
)
"""ERROR_WORDS without the reporter's prose rows': what a prefixed line a reader here reads
holds one of (SGLang's own lines print `SWA`, `kept`, `Mamba` where no prose row is read)."""
_NON_ASCII_ERROR_WORDS = non_ascii_words(ERROR_WORDS)


def no_error_words(text: str, prefixed: bool = False) -> bool:
    """True when a line holds none of ERROR_WORDS (LOG_ERROR_WORDS if `prefixed`): then no
    reader reads anything in it (most lines; a non-ASCII line is tested on its ASCII stand-in,
    memledger.input.ascii_view)."""
    view = ascii_view(text, _NON_ASCII_ERROR_WORDS)
    if view is None:
        return False
    lowered = view.lower()
    return not any(word in lowered for word in (LOG_ERROR_WORDS if prefixed else ERROR_WORDS))


def known_shapes(text: str) -> frozenset[str]:
    """The error-text rows and crash causes `text` holds, with the groups each read (a reporter's
    prose row by its name after rewrap.PROSE): what a line reads as, to tell a line a terminal
    cut from two lines (memledger.input.rewrap)."""
    found: set[str] = set()
    for entry in ERRORS:
        match = entry.find(text) if entry.kind else None
        if match is not None and _prose_only(entry):
            found.add(PROSE + entry.name)
        elif match is not None:
            found.add(entry.name)
            found.update(f"{entry.name}.{key}" for key, got in match.groupdict().items() if got)
    for cause in CRASH_CAUSES:
        if cause.pattern.search(text) is not None:
            found.add(cause.finding_id)
            found.update(f"{cause.finding_id}.{key}" for key in _numbers(cause, text))
    return frozenset(found)


MAX_REJOINS = 8
"""Wrapped lines joined back into one error text at most (an OOM message over 8 lines)."""
WRAP_MIN_CHARS = 40
"""A line shorter than this was not cut by a wrap."""


def _oom_cut(text: str) -> bool:
    """An allocator OOM message that stops before its free figure (the rest on the next line)."""
    if "Tried to allocate" not in text or OUT_OF_MEMORY_RE.search(text) is None:
        return False
    reading = read_oom_message(text)
    return reading is None or "free" not in reading[0]


_NUMBERED = tuple(entry for entry in ERRORS if entry.kind and entry.captures)
"""The texts that carry numbers (a refusal's fraction and floor): a wrap may cut them off."""


def _numbers_read(text: str) -> int:
    """How many numbers the numbered texts read in `text` (0: none, or no such text)."""
    found = (m for entry in _NUMBERED if (m := entry.find(text)) is not None)
    return max((sum(1 for v in m.groupdict().values() if v is not None) for m in found), default=0)


def _numbers_cut(text: str) -> bool:
    """A numbered text that ends the line before any of its numbers (`... the KV cache under`
    and `--mem-fraction-static=0.5. Raise above 0.627` on the next line)."""
    found = [m for entry in _NUMBERED if (m := entry.find(text)) is not None]
    tail = text.rstrip()[found[0].end() :] if found else ""
    if not found or _numbers_read(text):
        return False
    return len(tail) <= 24 and not _DIGIT_RE.search(tail)


_DIGIT_RE = re.compile(r"\d")


def _looks_cut(text: str) -> bool:
    """A frame, an OOM message or a numbered text a narrow terminal's wrap cut (read once the
    next line came)."""
    if len(text) < WRAP_MIN_CHARS:
        return False
    if text.lstrip().startswith('File "') and FRAME_RE.match(text) is None:
        return True
    return _oom_cut(text) or _numbers_cut(text)


def _rejoin(start: str, rest: str) -> str | None:
    """`start` completed by the wrapped `rest`: glued (a wrap mid-word) or with the space a wrap
    at a word boundary dropped, whichever reads; None when `rest` is no continuation of it."""
    rest = rest.strip()
    if not rest or TRACEBACK_RE.search(rest) or FRAME_RE.match(rest) or EXCEPTION_RE.match(rest):
        return None  # a record of its own
    candidates = (start + rest, start + " " + rest)
    if start.lstrip().startswith('File "'):
        return next((c for c in candidates if FRAME_RE.match(c)), None)
    before = read_oom_message(start)
    known = len(before[0]) if before is not None else 0
    # the candidate that reads the most figures (`allocate` + `448.00 MiB` needs the space)
    counts = [len(reading[0]) if (reading := read_oom_message(c)) else 0 for c in candidates]
    best = max(range(2), key=lambda i: (counts[i], -i))
    if counts[best] > known:
        return candidates[best]
    if not known and _numbers_read(candidates[1]) > _numbers_read(start):
        return candidates[1]  # a numbered text's numbers, on the wrapped line
    # a message wrapped over several lines: prose goes on (lower-case or a digit first)
    return candidates[1] if known and _mid_sentence(rest) else None


def _mid_sentence(rest: str) -> bool:
    """A wrapped piece of prose (`memory in use. Of the allocated`): starts lower-case or with
    a digit, the way no log record does."""
    return rest[:1].islower() or rest[:1].isdigit()


def _numbers(cause: CrashCause, text: str) -> dict[str, Value]:
    """The numbers a known crash text carries (its `numbers` groups, by value key), typed: an
    int where the text printed one."""
    found = cause.numbers.search(text) if cause.numbers is not None else None
    if found is None:
        return {}
    values: dict[str, Value] = {}
    for key, number in found.groupdict().items():
        typed = int_or_none(number) if number and number.isdigit() else float_or_none(number)
        if typed is not None:
            values[key] = typed
    return values


_LIBRARY_TAG_RE = re.compile(r"\[([\w.]{1,60})\]\s*")
"""The library a standalone error line names first (`[torch_memory_saver.cpp] CUresult ...`)."""
_C_FRAME_RE = re.compile(r"file=(\S{1,200}) func=(\w{1,100}) line=(\d{1,9})")
"""Where a library's C++ error line was raised (`file=csrc/core.cpp func=resume line=172`)."""
_STANDALONE = tuple(cause for cause in CRASH_CAUSES if cause.standalone)


def short_path(path: str) -> str:
    """A frame's file without the install prefix: `srt/model_executor/model_runner.py` for
    SGLang, `torch/utils/_device.py` for site-packages, else the last two components."""
    for marker in ("/sglang/", "site-packages/", "dist-packages/"):
        cut = path.rfind(marker)
        if cut >= 0:
            return path[cut + len(marker) :]
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


@dataclass(frozen=True, slots=True)
class ErrorReading:
    """One error event read from one or more lines (a traceback spans many)."""

    kind: EventKind
    line: int
    rank: str
    text: str
    sizes: dict[str, Size] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)


@dataclass
class _Block:
    line: int
    rank: str
    context: str
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    n_frames: int = 0
    after_frame: bool = False
    """The previous line was a frame (this one is its code line)."""
    pool: str = ""
    code: str = ""
    """The last frame's code line: a bare `AssertionError`'s only text is its `assert` there."""


@dataclass
class ErrorTextReader:
    """Reads error texts line by line; `feed` returns the events a line completes."""

    _block: _Block | None = None
    _opener: tuple[int, str] | None = None
    """(line, rank) of the last prefixed line ending in `:` (`Exception in run_tp_server:`),
    whose record a bare `Traceback` on the next line continues."""
    _frameworks: set[str] = field(default_factory=set)
    """The frameworks named so far (each is one event, at its first line)."""
    _held: tuple[int, str, str, bool, int] | None = None
    """(line, text, rank, prefixed, joins) of an error text that looks cut by a line wrap (a
    paste from a narrow terminal): the next bare line may complete it (`_rejoin`)."""

    def feed(
        self, line: int, text: str, rank: str, prefixed: bool, *, quiet: bool = False
    ) -> list[ErrorReading]:
        """The events this line completes. `quiet`: the caller knows the line holds none of
        ERROR_WORDS (memledger.input.quiet)."""
        if self._held is None and self._block is None and (quiet or no_error_words(text, prefixed)):
            # what `_read` does with a line holding none of its words: only the opener changes
            self._opener = (line, rank) if prefixed and text.rstrip().endswith(":") else None
            return []
        held, self._held = self._held, None
        if held is not None:
            first, start, held_rank, held_prefixed, joins = held
            joined = _rejoin(start, text) if not prefixed and line == first + joins + 1 else None
            if joined is not None:
                if joins + 1 < MAX_REJOINS and _looks_cut(joined):
                    self._held = (first, joined, held_rank, held_prefixed, joins + 1)
                    return []
                return self._read(first, joined, held_rank, held_prefixed)
            return self._read(first, start, held_rank, held_prefixed) + self.feed(
                line, text, rank, prefixed
            )
        if _looks_cut(text):
            self._held = (line, text, rank, prefixed, 0)
            return []
        return self._read(line, text, rank, prefixed)

    def _read(self, line: int, text: str, rank: str, prefixed: bool) -> list[ErrorReading]:
        opener, self._opener = self._opener, None
        if prefixed:
            if text.rstrip().endswith(":"):
                self._opener = (line, rank)
        elif self._block is not None:
            rank = self._block.rank
        else:
            # a bare line belongs to no rank unless it continues the record just before it
            rank = opener[1] if opener is not None and opener[0] == line - 1 else ""
        found = self._framework(line, text, rank)
        start = TRACEBACK_RE.search(text) if "Traceback" in text else None
        frame = FRAME_RE.match(text) if start is None else None
        if start is not None:
            found.extend(self.finish())
            context = text[: start.start()].strip().rstrip(":").strip()
            self._block = _Block(line=line, rank=rank, context=context)
        elif frame is not None and self._block is None:
            # a traceback pasted without its `Traceback (most recent call last):` head
            self._block = _Block(line=line, rank=rank, context="")
        if start is None and self._block is None and frame is None:
            exception = EXCEPTION_RE.match(text.strip())
            standalone = (
                None
                if exception
                else next((c for c in _STANDALONE if c.pattern.search(text)), None)
            )
            if exception is not None:
                # an exception line pasted without its traceback: the error is still named
                self._block = _Block(line=line, rank=rank, context="")
                found.append(self._close(exception["type"], exception["message"] or "", line))
            elif standalone is not None:
                # a library's own error line (no Python exception): an error of its own
                self._block = _Block(line=line, rank=rank, context="")
                tag = _LIBRARY_TAG_RE.match(text.strip())
                named = (tag[1], text.strip()[tag.end() :]) if tag else ("error", text.strip())
                where = _C_FRAME_RE.search(text)
                if where is not None:  # the C++ source's own frame names the phase
                    self._block.frames.append((where[1], int(where[3]), where[2]))
                    self._block.n_frames = 1
                found.append(self._close(*named))
        elif start is None and self._block is not None:
            if frame is not None:
                block = self._block
                block.n_frames += 1
                block.frames.append(
                    (short_path(frame["path"]), int(frame["lineno"]), frame["func"])
                )
                del block.frames[:-MAX_FRAMES]
                block.after_frame = True
                found += [  # a frame that names what it allocates (kind reported, `frame` rows)
                    ErrorReading(EventKind.REPORTED, line, rank, text, values={"mention": m})
                    for m in _frame_mentions(text)
                ]
                return found
            if self._block.after_frame and REQ_TO_TOKEN_CODE_RE.search(text):
                self._block.pool = "req_to_token"
            self._block.code = text.strip() if self._block.after_frame else self._block.code
            self._block.after_frame = False
            exception = EXCEPTION_RE.match(text.strip())
            if exception is not None:
                found.append(self._close(exception["type"], exception["message"] or "", line))
        oom = read_oom_message(text)
        if oom is not None:
            found.append(ErrorReading(EventKind.OOM_MESSAGE, line, rank, text, *oom))
        refusal = read_kv_refusal(text)
        if refusal is not None:
            found.append(ErrorReading(EventKind.KV_REFUSAL, line, rank, text, values=refusal))
        exhausted = read_pool_exhausted(text)
        if exhausted is not None:
            found.append(ErrorReading(EventKind.POOL_EXHAUSTED, line, rank, text, values=exhausted))
        adjusted = read_adjustment(text)
        if adjusted is not None:
            found.append(
                ErrorReading(EventKind.SETTING_ADJUSTED, line, rank, text, values=adjusted)
            )
        ended = read_process_exit(text)
        if ended is not None:
            found.append(ErrorReading(EventKind.PROCESS_EXIT, line, rank, text, values=ended))
        # a refusal only in words (`a negative max_total_num_tokens`) leaves the line prose too
        read = [
            r
            for r in found
            if r.kind not in (EventKind.REPORTED, EventKind.SETTING_ADJUSTED)
            and r.values.get("shape") != "said"
        ]
        if prefixed and not read:  # SGLang's own line that names a mention
            found += [
                ErrorReading(EventKind.REPORTED, line, rank, text, values={"mention": m})
                for m in dict.fromkeys(
                    str(e.values["mention"]) for e in _LOG_MENTIONS if e.find(text)
                )
            ]
        asked = prefixed and text.rstrip().endswith("?")  # SGLang asks nothing
        said = [r for r in read if r.kind is not EventKind.PROCESS_EXIT]
        if (asked or not prefixed) and not said and self._block is None:
            # a bare line no other reader read (but for how the process ended: `every rank is
            # killed during weight load` says both), or a log line the reporter ended with a
            # question of theirs: the reporter's prose around a paste
            found += [
                ErrorReading(EventKind.REPORTED, line, rank, text, values=values)
                for values in read_reported(text)
            ]
        return found

    def _framework(self, line: int, text: str, rank: str) -> list[ErrorReading]:
        """A framework that embeds SGLang named in this line, the first time it is (any line: a
        frame's path, a warning, a flag)."""
        framework = framework_of(text) if _FRAMEWORK.find(text) is not None else None
        if framework is None or framework.name in self._frameworks:
            return []
        self._frameworks.add(framework.name)
        values: dict[str, Value] = {"framework": framework.name}
        return [ErrorReading(EventKind.REPORTED, line, rank, text, values=values)]

    def finish(self) -> list[ErrorReading]:
        """Close a traceback the input stopped inside (its exception line never came)."""
        found: list[ErrorReading] = []
        if self._held is not None:
            line, text, rank, prefixed, _ = self._held
            self._held = None
            found = self._read(line, text, rank, prefixed)
        return found + ([self._close(None, "")] if self._block is not None else [])

    def _close(self, exception: str | None, message: str, at: int | None = None) -> ErrorReading:
        """The traceback event; `at`: the exception line's own line (the event's is the head's)."""
        block = self._block
        assert block is not None
        self._block = None
        values: dict[str, Value] = {
            "context": block.context,
            "n_frames": block.n_frames,
            "frames": " > ".join(f"{path}:{lineno} {func}" for path, lineno, func in block.frames),
            "exception": exception,
            "message": message[:MESSAGE_CAP],
        }
        if at is not None and at != block.line:
            values["exception_line"] = at
        if block.pool:
            values["pool"] = block.pool
        summary = f"{exception}: {message}" if exception else "traceback cut off (no exception)"
        bare = exception == "AssertionError" and not message  # Python prints the assert line
        said = f"{exception or ''}: {(block.code if bare else message)[:MESSAGE_CAP]}"
        cause = next(
            (c for c in CRASH_CAUSES if c.pattern.search(said) or c.pattern.search(summary)), None
        )
        if cause is None and exception is None:  # cut before its text: a frame one check runs
            ran = {(func, path) for path, _, func in block.frames}
            cause = next(
                (
                    c
                    for c in CRASH_CAUSES
                    for f, part in c.frames
                    for func, path in ran
                    if func == f and part in path
                ),
                None,
            )
        if cause is not None:
            values["cause"] = cause.finding_id
            values.update(_numbers(cause, said))
        return ErrorReading(EventKind.TRACEBACK, block.line, block.rank, summary, values=values)
