"""Error texts a failed startup leaves, read into events: allocator OOM messages, SGLang's own
refusals, Python tracebacks (their frames name the phase), and process kills.

These texts are mostly bare lines (continuations of one multi-line log record whose first line
carries the SGLang prefix), so a bare line is attributed to the rank of the last prefixed line.
Shapes, with where they come from:

* PyTorch caching allocator, torch >= 2.1 (CUDA and ROCm/HIP builds print the same text):
  `CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.19 GiB of
  which 812.00 MiB is free. [Process N has X memory in use. ]Including non-PyTorch memory, this
  process has 78.38 GiB memory in use. Of the allocated memory X is allocated by PyTorch, [with X
  allocated in private pools (e.g., CUDA Graphs), ]and X is reserved by PyTorch but unallocated.`
  Units from c10 `format_size`: bytes, KiB, MiB, GiB.
* Older torch and torch_npu: `NPU out of memory. Tried to allocate 52.00 MiB (NPU 0; 60.96 GiB
  total capacity; 59.36 GiB already allocated; [X current active; ]X free; X reserved in total by
  PyTorch)`.
* SGLang: `Not enough memory. Please try to increase --mem-fraction-static. Current value:
  self.server_args.mem_fraction_static=0.88` (v0.5.8
  model_executor/model_runner_kv_cache_mixin.py:327-331; without "Current value" in v0.4.x and
  in v0.5.23 model_executor/pool_configurator.py:96) and `Loaded weights leave no GPU memory
  for the KV cache under --mem-fraction-static=F. Raise --mem-fraction-static above S
  (minimum viable = 1 - available/pre = M).` (v0.5.23 mem_cache/kv_cache_configurator.py:3042-3058).
* SGLang's own pools running out while serving (not the allocator: a pool sized at startup is
  full): `Prefill out of memory. Try to lower your batch size.` / `Decode out of memory. Try to
  lower your batch size.` (v0.5.8 mem_cache/common.py:284, :413; v0.4.6 schedule_batch.py:901,
  :936), `alloc_req_slots runs out of memory. Please set a smaller number for
  `--max-running-requests`.` (v0.5.8 mem_cache/common.py:321), the retraction notes `KV cache
  pool is full. Retract requests.` (v0.5.8 managers/scheduler.py:2209) and `Decode out of memory
  happened. #retracted_reqs: N` (v0.4.6 managers/scheduler.py:1499), and a request longer than
  the pool: `Input length (N tokens) exceeds the maximum allowed length (M tokens).` (v0.5.8
  managers/utils.py:121, where M = min(context_len - 1, max_total_num_tokens - 1) - 5,
  managers/tp_worker.py:286-290). Host memory: `[Errno 12] Cannot allocate memory`,
  `DefaultCPUAllocator: can't allocate memory`, `std::bad_alloc`.
* An exception line without its traceback (`RuntimeError: ...` pasted alone) is a traceback
  event of no frames.
* `max_total_tokens=N is larger than the profiled value -M. Use the profiled value instead.`
  with M >= 0: the profiled KV pool had no tokens, SGLang's refusal follows (v0.4.8
  model_executor/model_runner.py:914-932).
* The host's shared memory: `Error while creating shared memory segment /dev/shm/nccl-X (size
  N)` and `failed to extend /dev/shm/...` (NCCL misc/shmutils.cc), PyTorch's `insufficient
  shared memory (shm)`, a `Bus error` (SIGBUS when a /dev/shm segment cannot grow).
* A traceback frame whose code line builds the request-to-token table (`ReqToTokenPool(`,
  `self.req_to_token = torch.zeros(`) marks the traceback `pool=req_to_token`.
* Process ends: a standalone `Killed` (the shell reporting SIGKILL), `Exit code: -9`
  (v0.5.8 entrypoints/engine.py:853), `... terminated with -9`
  (v0.5.8 managers/data_parallel_controller.py:582).

Every reader tolerates what people paste: surrounding text, alignment spaces, a trailing note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memledger.model.events import EventKind, Value
from memledger.units import Size, float_or_none, int_or_none, parse_size

_NUM = r"(-?\d+(?:\.\d+)?)\s*(bytes|KiB|MiB|GiB|KB|MB|GB)"
OUT_OF_MEMORY_RE = re.compile(
    r"(?:(?P<device>CUDA|HIP|NPU|XPU|MUSA|MPS|GPU)\s+)?out of memory", re.IGNORECASE
)
_OOM_FIELDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("requested", re.compile(r"Tried to allocate " + _NUM)),
    # torch >= 2.1
    ("capacity", re.compile(r"has a total capacity of " + _NUM)),
    # `GPU 1 ... 50.40 GiB is free`: a paste that elides the capacity (sglang#37712)
    ("free", re.compile(r"(?:of which|\.\.\.|…) ?" + _NUM + r" is free")),
    ("process_in_use", re.compile(r"this process has " + _NUM + r" memory in use")),
    ("allocated", re.compile(r"Of the allocated memory " + _NUM + r" is allocated by PyTorch")),
    ("private_pools", re.compile(_NUM + r" allocated in private pools")),
    ("reserved_unallocated", re.compile(_NUM + r" is reserved by PyTorch but unallocated")),
    # torch < 2.1 and torch_npu: `(GPU 0; 15.78 GiB total capacity; ...; 3.12 MiB free; ...)`
    ("capacity", re.compile(_NUM + r" total capacity")),
    ("allocated", re.compile(_NUM + r" already allocated")),
    ("free", re.compile(r"; " + _NUM + r" free")),
    ("reserved_total", re.compile(_NUM + r" reserved in total by PyTorch")),
)
HSA_OUT_OF_RESOURCES = "HSA_STATUS_ERROR_OUT_OF_RESOURCES"
"""ROCm's `HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary
resources.` (then `Available Free mem: N MB`): a kernel's device allocation failed, an OOM
(https://github.com/sgl-project/sglang/issues/25797, fixed by a lower --mem-fraction-static)."""
_OOM_DEVICE_INDEX_RE = re.compile(r"(?:GPU|NPU|Device|device)\s+(\d+)(?: has a total|;)")

NOT_ENOUGH_MEMORY_RE = re.compile(
    r"Not enough memory\. Please try to increase --mem-fraction-static"
    r"(?:\.\s*Current value:\s*(?:self\.server_args\.)?mem_fraction_static\s*=\s*"
    r"(?P<mfs>\d+(?:\.\d+)?))?"
    # the same RuntimeError quoted without its advice (sgl-project/sglang-omni#293's table)
    r"|RuntimeError: Not enough memory\.?\s*$"
)
PROFILED_NEGATIVE_RE = re.compile(
    r"max_total_tokens=(?P<cap>\d+) is larger than the profiled value (?P<profiled>-\d+|0)\b"
)
"""SGLang's `--max-total-tokens` warning with a profiled pool of no tokens: the KV budget
rest = A - P x (1 - mfs) came out negative, and the refusal follows (v0.4.8
model_executor/model_runner.py:914-932, v0.5.8 model_runner_kv_cache_mixin.py:299-305 then
:328-331: `if self.max_total_num_tokens <= 0: raise RuntimeError("Not enough memory...")`)."""
NO_ROOM_FOR_KV_RE = re.compile(
    r"Loaded weights leave no GPU memory for the KV cache"
    r"(?: under --mem-fraction-static=(?P<mfs>\d+(?:\.\d+)?))?"
    r"(?:.*?Raise --mem-fraction-static above (?P<above>\d+(?:\.\d+)?))?"
    r"(?:.*?minimum viable = [^=]*= (?P<minimum>\d+(?:\.\d+)?))?"
)

# `Traceback (most recent` alone: a wrap cut the head (`call last):` is on the next line)
TRACEBACK_RE = re.compile(r"Traceback \(most recent(?:\s+call)?(?:\s+last\):?)?")
FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<lineno>\d+), in (?P<func>[\w<>.]+)')
# a bare `Exception:` too: SGLang raises `Exception("Capture cuda graph failed: ...")`
# (v0.5.8 model_executor/cuda_graph_runner.py:460-470)
EXCEPTION_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Interrupt|Exit|OutOfResources))"
    r"(?::\s*(?P<message>.*))?$"
)
# (regex, pool, shape): SGLang's own pools exhausted, and the host's memory (module docstring)
POOL_EXHAUSTED_TEXTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"Prefill out of memory\.(?:.*?Try to allocate (?P<tokens>\d+) tokens)?"),
        "kv",
        "prefill",
    ),
    (re.compile(r"Decode out of memory\. Try to lower"), "kv", "decode"),
    (re.compile(r"alloc_req_slots runs out of memory"), "req_slots", "alloc_req_slots"),
    (re.compile(r"KV cache pool is full\. Retract requests"), "kv", "retract"),
    (
        re.compile(r"Decode out of memory happened\.(?:.*?#retracted_reqs: (?P<tokens>\d+))?"),
        "kv",
        "retract",
    ),
    # the count lines SGLang prints under its Prefill/Decode raise: asked, then free + evictable
    # (v0.4.5 managers/schedule_batch.py:856-860 `Avaliable`; v0.5.8 mem_cache/common.py:283-287,
    # :413-417, and :500-516 with a full and a swa count for hybrid SWA models)
    (re.compile(r"^Try to allocate (?P<tokens>\d+) tokens\.?$"), "kv", "asked"),
    (re.compile(r"^Ava(?:li|il)able tokens: (?P<tokens>\d+)"), "kv", "available"),
    (re.compile(r"^Available full tokens: (?P<tokens>\d+)"), "kv", "available_full"),
    (re.compile(r"^Available swa tokens: (?P<tokens>\d+)"), "kv", "available_swa"),
    (
        re.compile(
            r"Input length \((?P<tokens>\d+) tokens\) exceeds the maximum allowed length "
            r"\((?P<limit>\d+) tokens\)"
        ),
        "request_length",
        "too_long",
    ),
    (
        # the host's shared memory (/dev/shm: docker's default is 64 MB): NCCL's segments
        # (`misc/shmutils.cc`), PyTorch's workers, a SIGBUS when a segment cannot grow
        re.compile(
            r"Error while creating shared memory segment \S*(?: \(size (?P<size>\d+)\))?"
            r"|failed to extend /dev/shm|insufficient shared memory \(shm\)|\bBus error\b"
        ),
        "shm",
        "shm",
    ),
    (
        re.compile(
            r"\[Errno 12\] Cannot allocate memory|DefaultCPUAllocator: can't allocate memory"
            r"|std::bad_alloc"
        ),
        "host",
        "host_memory",
    ),
)
_POOL_WORDS = (
    "of memory",
    "Try to allocate ",
    "able tokens: ",
    "able full tokens: ",
    "able swa tokens: ",
    "pool is full",
    "allowed length",
    "allocate memory",
    "bad_alloc",
    "shared memory",
    "/dev/shm",
    "Bus error",
)
"""Every POOL_EXHAUSTED_TEXTS pattern holds one of these (a cheap test first)."""
_REFUSAL_WORDS = ("profiled value", "Loaded weights leave no GPU memory", "Not enough memory")
"""What read_kv_refusal's texts hold: PROFILED_NEGATIVE_RE's, then the two refusals'."""
_EXIT_WORDS = ("Killed", "xit", "terminated with")
"""Each head of KILLED_RE and EXIT_CODE_RE holds one of these."""
REQ_TO_TOKEN_CODE_RE = re.compile(r"ReqToTokenPool\(|self\.req_to_token\s*=")
"""A frame's code line that builds the request-to-token table (v0.5.8 mem_cache/memory_pool.py:136,
model_executor/model_runner_kv_cache_mixin.py:384)."""
KILLED_RE = re.compile(r"^Killed\b")
EXIT_CODE_RE = re.compile(r"(?:Exit code:|terminated with|exitcode=|exit code)\s*(-?\d+)")
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


def read_oom_message(text: str) -> tuple[dict[str, Size], dict[str, Value]] | None:
    """The numbers of an allocator OOM message, or None when `text` is not one."""
    if HSA_OUT_OF_RESOURCES in text:
        # ROCm's runtime failing a device allocation: no sizes on this line
        return {}, {"device": "HIP", "runtime": HSA_OUT_OF_RESOURCES}
    if text.isascii() and "out of memory" not in text.lower():
        return None  # the regex below needs these words (a cheap test: most lines are no error)
    head = OUT_OF_MEMORY_RE.search(text)
    if head is None:
        return None
    sizes: dict[str, Size] = {}
    for key, pattern in _OOM_FIELDS:
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
    index = _OOM_DEVICE_INDEX_RE.search(text, head.start())
    if index:
        gpu = int_or_none(index.group(1))
        if gpu is not None:
            values["gpu"] = gpu
    return sizes, values


def read_kv_refusal(text: str) -> dict[str, Value] | None:
    """SGLang refusing to size the KV pool (weights left no room), or None."""
    if _REFUSAL_WORDS[0] in text:
        profiled = PROFILED_NEGATIVE_RE.search(text)
        if profiled is None:
            return None  # a cap above a positive profiled value: no refusal
        found: dict[str, Value] = {"shape": "negative_profile"}
        for key, group in (("profiled_tokens", "profiled"), ("max_total_tokens", "cap")):
            tokens = int_or_none(profiled.group(group))
            if tokens is not None:
                found[key] = tokens
        return found
    if not any(word in text for word in _REFUSAL_WORDS[1:]):
        return None  # what both regexes start with
    match = NO_ROOM_FOR_KV_RE.search(text)
    values: dict[str, Value] = {}
    if match:
        values["shape"] = "no_room_for_kv"
        for key, group in (
            ("mem_fraction_static", "mfs"),
            ("raise_above", "above"),
            ("minimum_viable", "minimum"),
        ):
            if match.group(group):
                number = float_or_none(match.group(group))
                if number is not None:
                    values[key] = number
        return values
    match = NOT_ENOUGH_MEMORY_RE.search(text)
    if match is None:
        return None
    values["shape"] = "not_enough_memory"
    number = float_or_none(match.group("mfs")) if match.group("mfs") else None
    if number is not None:
        values["mem_fraction_static"] = number
    return values


def read_pool_exhausted(text: str) -> dict[str, Value] | None:
    """SGLang's own pool (or the host's memory) running out, or None (module docstring)."""
    if not any(word in text for word in _POOL_WORDS):
        return None  # every pattern holds one of these
    for pattern, pool, shape in POOL_EXHAUSTED_TEXTS:
        match = pattern.search(text)
        if match is None:
            continue
        values: dict[str, Value] = {"pool": pool, "shape": shape}
        for key in ("tokens", "limit", "size"):
            group = match.groupdict().get(key)
            number = int_or_none(group) if group else None
            if number is not None:
                values[key] = number
        return values
    return None


def read_process_exit(text: str) -> dict[str, Value] | None:
    """A process end the log reports (`Killed`, a non-zero exit code), or None."""
    if not any(word in text for word in _EXIT_WORDS):
        return None  # each head of the two regexes holds one of these
    if KILLED_RE.match(text.strip()):
        return {"killed": True}
    match = EXIT_CODE_RE.search(text)
    code = None if match is None else int_or_none(match.group(1))
    if code is None or code == 0:
        return None
    return {"exit_code": code, "killed": code in SIGKILL_EXIT_CODES}


ERROR_WORDS: tuple[str, ...] = tuple(
    word.lower()
    for word in (
        # the regexes' own words: a frame, an exception type, a traceback head, a cut OOM text
        "Error",  # `...Error`, `ERROR`, HSA_STATUS_ERROR_OUT_OF_RESOURCES
        "Exception",
        "Interrupt",
        "Exit",
        "OutOfResources",
        'File "',
        "Traceback",
        "Tried to allocate",
        "out of memory",
        # each cheap test's words: a reader changed there changes this too
        *_POOL_WORDS,
        *_REFUSAL_WORDS,
        *_EXIT_WORDS,
    )
)
"""Lower-cased, what every text a reader here reads holds one of (memledger.input.quiet)."""


def no_error_words(text: str) -> bool:
    """True when an ASCII line holds none of ERROR_WORDS: then no reader reads anything in it
    (most lines; a non-ASCII line is read in full, case folding beyond ASCII is the regexes')."""
    if not text.isascii():
        return False
    lowered = text.lower()
    return not any(word in lowered for word in ERROR_WORDS)


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


def _looks_cut(text: str) -> bool:
    """A frame or an OOM message a narrow terminal's wrap cut (read once the next line came)."""
    if len(text) < WRAP_MIN_CHARS:
        return False
    if text.lstrip().startswith('File "') and FRAME_RE.match(text) is None:
        return True
    return _oom_cut(text)


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
    # a message wrapped over several lines: prose goes on (lower-case or a digit first)
    return candidates[1] if known and _mid_sentence(rest) else None


def _mid_sentence(rest: str) -> bool:
    """A wrapped piece of prose (`memory in use. Of the allocated`): starts lower-case or with
    a digit, the way no log record does."""
    return rest[:1].islower() or rest[:1].isdigit()


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


@dataclass
class ErrorTextReader:
    """Reads error texts line by line; `feed` returns the events a line completes."""

    _block: _Block | None = None
    _opener: tuple[int, str] | None = None
    """(line, rank) of the last prefixed line ending in `:` (`Exception in run_tp_server:`),
    whose record a bare `Traceback` on the next line continues."""
    _held: tuple[int, str, str, bool, int] | None = None
    """(line, text, rank, prefixed, joins) of an error text that looks cut by a line wrap (a
    paste from a narrow terminal): the next bare line may complete it (`_rejoin`)."""

    def feed(
        self, line: int, text: str, rank: str, prefixed: bool, *, quiet: bool = False
    ) -> list[ErrorReading]:
        """The events this line completes. `quiet`: the caller knows the line holds none of
        ERROR_WORDS (memledger.input.quiet)."""
        if self._held is None and self._block is None and (quiet or no_error_words(text)):
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
        found: list[ErrorReading] = []
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
            if exception is not None:
                # an exception line pasted without its traceback: the error is still named
                self._block = _Block(line=line, rank=rank, context="")
                found.append(self._close(exception["type"], exception["message"] or ""))
        elif start is None and self._block is not None:
            if frame is not None:
                block = self._block
                block.n_frames += 1
                block.frames.append(
                    (short_path(frame["path"]), int(frame["lineno"]), frame["func"])
                )
                del block.frames[:-MAX_FRAMES]
                block.after_frame = True
                return found
            if self._block.after_frame and REQ_TO_TOKEN_CODE_RE.search(text):
                self._block.pool = "req_to_token"
            self._block.after_frame = False
            exception = EXCEPTION_RE.match(text.strip())
            if exception is not None:
                found.append(self._close(exception["type"], exception["message"] or ""))
        oom = read_oom_message(text)
        if oom is not None:
            found.append(ErrorReading(EventKind.OOM_MESSAGE, line, rank, text, *oom))
        refusal = read_kv_refusal(text)
        if refusal is not None:
            found.append(ErrorReading(EventKind.KV_REFUSAL, line, rank, text, values=refusal))
        exhausted = read_pool_exhausted(text)
        if exhausted is not None:
            found.append(ErrorReading(EventKind.POOL_EXHAUSTED, line, rank, text, values=exhausted))
        ended = read_process_exit(text)
        if ended is not None:
            found.append(ErrorReading(EventKind.PROCESS_EXIT, line, rank, text, values=ended))
        return found

    def finish(self) -> list[ErrorReading]:
        """Close a traceback the input stopped inside (its exception line never came)."""
        found: list[ErrorReading] = []
        if self._held is not None:
            line, text, rank, prefixed, _ = self._held
            self._held = None
            found = self._read(line, text, rank, prefixed)
        return found + ([self._close(None, "")] if self._block is not None else [])

    def _close(self, exception: str | None, message: str) -> ErrorReading:
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
        if block.pool:
            values["pool"] = block.pool
        summary = f"{exception}: {message}" if exception else "traceback cut off (no exception)"
        return ErrorReading(EventKind.TRACEBACK, block.line, block.rank, summary, values=values)
