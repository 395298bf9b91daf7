"""vLLM log text -> readings, grouped into startups (the input step for the vLLM engine).

A physical line is decoded only when it holds a prefilter word (`prefilter_words`); its
ANSI colours (real or pasted as `^[[0;36m`) are dropped, its process tag is read for the rank,
and each `lines.LINES` / `errors.ERRORS` pattern is searched in the rest. The prefix before the
message is never parsed: vLLM's `INFO MM-DD HH:MM:SS [file.py:N]`, a docker-compose `vllm-1  | `,
Buildkite's `[timestamp]`, a host logger's `[Error] (Process)`, TorchServe's `MODEL_LOG - `, a
quote bar: each is text before the sentence the pattern looks for.

Startups: a paste can hold several (three runs of one command, a fix run after a failure). A
reading opens a new startup when it contradicts a fact the current one already holds on the
same rank (another value beyond the printed precision), or when an engine-configuration line
comes after memory lines. Stdlib only; sizes are integer bytes with their printing error.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memledger.input.wrappers import enclosed_line, unwrapped_record, unwrapped_text
from memledger.vllm.errors import ERRORS, GRAPH_FRAMES, LOAD_FRAMES, PROFILE_FRAMES, VllmError
from memledger.vllm.lines import LINES, VllmLine

GIB = 1 << 30
MIB = 1 << 20
MAX_LINE_CHARS = 16384
"""A physical line is read up to this many characters (a vLLM memory line is < 1,000)."""
MAX_TEXT_CHARS = 600
"""A reading keeps at most this much of its line (for evidence)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\^\[\[[0-9;]*m")
_PROCESS = re.compile(
    r"\((?P<proc>VllmWorkerProcess|VllmWorker|RayWorkerWrapper|RayWorkerVllm|"
    r"EngineCore(?:_DP\d+|_\d+)?|Worker(?:_(?:DP|PP|TP|EP|DCP)\d+)*|APIServer)"
    r"(?: rank=(?P<rank>\d+))? pid=(?P<pid>\d+)\)"
)
_PARALLEL = re.compile(r"_(DP|PP|TP|EP|DCP)(\d+)")
_HEADER = re.compile(
    r"(?:INFO|WARNING|ERROR|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d(?: \[[^\]]{1,80}\]|"
    r" [\w.]{1,80}:\d+\])\s"
)
_ERROR_LEVEL = re.compile(r"(?:^|[\s|\]])ERROR\s+\d\d-\d\d \d\d:\d\d:\d\d")
_QUOTE = re.compile(r"^[\s▎>|]*")
_SERVE = re.compile(r"(?:^|\s)(?:vllm serve|vllm\.entrypoints\.\S+)\s")
_FLAG = re.compile(
    r"--(?P<name>gpu-memory-utilization|max-model-len|tensor-parallel-size|max-num-seqs|"
    r"max-num-batched-tokens|kv-cache-memory-bytes|kv-cache-memory|pipeline-parallel-size|"
    r"data-parallel-size)[= ](?P<value>[0-9][0-9_.,kKmM]*)"
)
_ARGS = re.compile(
    r"'(?P<name>gpu_memory_utilization|max_model_len|tensor_parallel_size|max_num_seqs|"
    r"max_num_batched_tokens|kv_cache_memory_bytes|pipeline_parallel_size|data_parallel_size|"
    r"enforce_eager|kv_cache_dtype)': (?P<value>[0-9.]+|True|False|'[\w.]{1,32}')"
)
_CONFIG_KEYS = re.compile(
    r"\b(?P<name>max_seq_len|tensor_parallel_size|pipeline_parallel_size|data_parallel_size|"
    r"kv_cache_dtype|enforce_eager|quantization)=(?P<value>[\w.]{1,32})"
)
_MODEL = re.compile(r"config: model='(?P<model>[^']{1,200})'")
_READY = (
    "init engine (profile, create kv cache, warmup model) took",
    "Supported_tasks",
    "Application startup complete",
    "Processed prompts",
    "Starting vLLM API server",
)
"""Lines printed only once a startup is done (v0.10.2 vllm/v1/engine/core.py:218 `init engine`,
vllm/entrypoints/llm.py `Supported_tasks`, uvicorn's `Application startup complete`)."""
_OTHER_WORDS = ("non-default args", "vllm serve", "LLM engine ", *_READY)
_TEXT_GROUPS = frozenset({"device", "version", "graph_modes"})
_FLAG_FACT = {
    "gpu-memory-utilization": "gpu_memory_utilization",
    "max-model-len": "max_model_len",
    "tensor-parallel-size": "tp",
    "pipeline-parallel-size": "pp",
    "data-parallel-size": "dp",
    "max-num-seqs": "max_num_seqs",
    "max-num-batched-tokens": "max_num_batched_tokens",
    "kv-cache-memory-bytes": "kv_cache_memory_bytes",
    "kv-cache-memory": "kv_cache_memory_bytes",
    "max_seq_len": "max_model_len",
    "tensor_parallel_size": "tp",
    "pipeline_parallel_size": "pp",
    "data_parallel_size": "dp",
}

Value = float | int | str


def prefilter_words() -> frozenset[str]:
    """Every word a memory line (`vllm.lines.LINES`) or an error text (`vllm.errors.ERRORS`) holds:
    a line with none of them is not decoded."""
    words = {w for spec in LINES for w in spec.words}
    words.update(w for spec in ERRORS for w in spec.words)
    return frozenset(words)


@dataclass(frozen=True)
class Reading:
    """One fact-bearing line: its kind, its facts as printed, where it is."""

    kind: str
    facts: dict[str, Value]
    """Fact name -> value in the name's unit as printed (`weights_gib`: 14.9888)."""
    sizes: dict[str, tuple[int, int]]
    """Fact name -> (bytes, ± bytes of printing precision) for every size fact."""
    line: int
    text: str
    tag: str
    """The rank tag from the process prefix: `` (driver/engine core), `TP1`, `rank3`,
    `PP1_TP3`, `pid 6499` (a V0 worker process, rank unknown)."""
    source: str
    """The wheel line of the wording (`lines.VllmLine.source` / `errors.VllmError.source`)."""
    error: VllmError | None = None
    first: str | None = None
    """The first release that prints this wording (`lines.VllmLine.first`)."""
    last: str | None = None
    engine: str = "any"
    """`v0`, `v1` or `any`: the engine generation whose wording this is."""


@dataclass
class Startup:
    """The readings of one engine startup, in log order."""

    readings: list[Reading] = field(default_factory=list)
    ready: bool = False
    first_line: int = 0
    error_line: int | None = None
    """The first `ERROR` line of the startup (an error whose text the log cut)."""
    frame_phase: str | None = None
    """The phase the first traceback frame naming one says (`frame_phase`)."""

    def of(self, kind: str) -> list[Reading]:
        return [r for r in self.readings if r.kind == kind]

    @property
    def errors(self) -> list[Reading]:
        return [r for r in self.readings if r.error is not None]

    @property
    def outcome(self) -> str:
        """`oom`, `error`, `ready` or `truncated` (the log stops before either)."""
        ids = {r.error.id for r in self.errors if r.error is not None}
        if ids & {"torch_oom", "cuda_error_oom"}:
            return "oom"
        if ids or self.blocks_zero() or self.error_line is not None:
            return "error"
        return "ready" if self.ready else "truncated"

    def blocks_zero(self) -> bool:
        """`# GPU blocks: 0`: V0 raises 'No available memory' next (v0.5.4 worker.py:369)."""
        return any(r.facts.get("gpu_blocks") == 0 for r in self.of("blocks"))


@dataclass
class VllmLog:
    """What the reader found in one input."""

    path: str
    startups: list[Startup]
    n_lines: int
    serve_settings: dict[str, Value] = field(default_factory=dict)
    """Settings from a `vllm serve ... --flag X` command or a `non-default args: {...}` line."""
    serve_line: int | None = None
    model: str | None = None
    version: str | None = None
    rank_tags: list[str] = field(default_factory=list)
    """Every process tag seen, first-seen order."""


def _strip(text: str) -> str:
    """The line without ANSI codes, out of a tool's JSON record or a paste's inline code
    (memledger.input.wrappers)."""
    text = _ANSI.sub("", unwrapped_record(text))
    if text.rstrip().endswith("`"):
        return enclosed_line(text) or text
    return text


def _process_tag(text: str) -> re.Match[str] | None:
    """A line's process tag: the innermost of a run of them (a Ray actor's or a launcher's tag
    goes before the line the process printed with its own, `(ServeReplica:app pid=1)
    (EngineCore_DP0 pid=2) INFO ...`: the inner one names the process)."""
    found = _PROCESS.search(text)
    while found is not None:
        start = found.end()
        while text[start : start + 1] == " ":
            start += 1
        inner = _PROCESS.match(text, start)
        if inner is None:
            break
        found = inner
    return found


def rank_tag(text: str) -> str:
    """The rank a line's process prefix names (see `Reading.tag`)."""
    found = _process_tag(text)
    if found is None:
        return ""
    proc = found.group("proc")
    if found.group("rank") is not None:
        return f"rank{found.group('rank')}"
    if proc == "VllmWorkerProcess" or proc.startswith("Ray"):
        return f"pid {found.group('pid')}"
    if proc.startswith("Worker_"):
        parts = [f"{k}{n}" for k, n in _PARALLEL.findall(proc)]
        return "_".join(parts)
    engine = re.fullmatch(r"EngineCore_(?:DP)?(\d+)", proc)
    if engine is not None and engine.group(1) != "0":
        return f"DP{engine.group(1)}"  # another data-parallel engine's core
    return ""


STARTUP_KINDS = frozenset({"config", "weights", "profile", "usable", "kv_available"})
"""Lines a rank prints once per startup: a second one on the same rank is the next startup."""

RANK0_TAGS = frozenset({"", "rank0", "TP0", "PP0", "PP0_TP0", "DP0", "DP0_TP0", "DP0_TP0_EP0"})
"""Tags whose lines are rank 0's (the driver, the engine core, or a rank-0 worker)."""


def is_rank0(tag: str) -> bool:
    return tag in RANK0_TAGS or (tag.startswith("DP0_") and "TP0" in tag and "PP" not in tag)


def _unit_of(name: str) -> tuple[str, str, int]:
    """(fact name, unit, bytes per unit) of a regex group name."""
    if name.endswith("_gb"):
        return name[:-3] + "_gib", "GiB", GIB  # vLLM printed GiB as 'GB' (/ 2**30)
    if name.endswith("_n"):
        return name[:-2], "count", 0
    if re.search(r"_gib(?:_|$)", name):
        return name, "GiB", GIB
    if re.search(r"_mib(?:_|$)", name):
        return name, "MiB", MIB
    if re.search(r"_bytes(?:_|$)", name):
        return name, "bytes", 1
    return name, "number", 0


_SIZE_UNITS = {"KiB": 1 << 10, "MiB": MIB, "GiB": GIB}
_SIZE_FACT = {
    "oom_tried_to_allocate_size": ("oom_tried_to_allocate_mib", MIB),
    "oom_free_size": ("oom_free_mib", MIB),
    "oom_allocated_by_pytorch_size": ("oom_allocated_by_pytorch_gib", GIB),
}


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _typed(match: re.Match[str]) -> tuple[dict[str, Value], dict[str, tuple[int, int]]]:
    facts: dict[str, Value] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for group, raw in match.groupdict().items():
        if raw is None:
            continue
        if group in _TEXT_GROUPS:
            facts[group] = raw
            continue
        if group in _SIZE_FACT:
            number, unit = raw.split(" ")
            name, per = _SIZE_FACT[group]
            scale = _SIZE_UNITS[unit]
            value = float(number)
            facts[name] = round(value * scale / per, 4)
            sizes[name] = (round(value * scale), round(scale * 0.5 * 10 ** -_decimals(number)))
            continue
        name, unit, per = _unit_of(group)
        digits = raw.replace(",", "")
        if unit == "count":
            facts[name] = int(digits)
        elif unit == "bytes":
            facts[name] = int(float(digits))
            sizes[name] = (int(float(digits)), 0)
        elif unit in ("GiB", "MiB"):
            facts[name] = float(digits)
            sizes[name] = (round(float(digits) * per), round(per * 0.5 * 10 ** -_decimals(digits)))
        else:
            facts[name] = float(digits)
    return facts, sizes


def _message(text: str) -> str:
    """A continuation line's text without its prefix (for a message vLLM broke over lines), and
    without what a tool or a paste put before it (memledger.input.wrappers)."""
    text = unwrapped_text(text)
    headers = list(_HEADER.finditer(text))
    if headers:
        return text[headers[-1].end() :].strip()
    found = _process_tag(text)
    if found is not None:
        text = text[found.end() :]
    return _QUOTE.sub("", text).strip()


def _contradicts(startup: Startup, reading: Reading) -> bool:
    """Whether `reading` holds a fact the startup already has on its rank, with another value
    beyond both printing precisions."""
    for earlier in startup.readings:
        if earlier.tag != reading.tag:
            continue
        for name, value in reading.facts.items():
            before = earlier.facts.get(name)
            if before is None or isinstance(value, str) or isinstance(before, str):
                continue
            if name in reading.sizes and name in earlier.sizes:
                (a, ea), (b, eb) = reading.sizes[name], earlier.sizes[name]
                if abs(a - b) > ea + eb:
                    return True
            elif float(value) != float(before):
                return True
    return False


_FRAMES = tuple(
    (w, phase)
    for phase, words in (
        ("graph_capture", GRAPH_FRAMES),
        ("profile", PROFILE_FRAMES),
        ("load", LOAD_FRAMES),
    )
    for w in words
)


def frame_phase(text: str) -> str | None:
    """The startup phase a traceback line names (`errors.GRAPH_FRAMES`, ...), if any."""
    return next((phase for word, phase in _FRAMES if word in text), None)


def _match_line(text: str) -> list[tuple[VllmLine | VllmError, re.Match[str]]]:
    found: list[tuple[VllmLine | VllmError, re.Match[str]]] = []
    for spec in LINES:
        if any(w in text for w in spec.words):
            match = re.search(spec.pattern, text)
            if match is not None and all(spec.kind != getattr(f, "kind", "") for f, _ in found):
                found.append((spec, match))
    for error in ERRORS:
        if any(w in text for w in error.words):
            match = re.search(error.pattern, text)
            if match is not None:
                found.append((error, match))
                break
    return found


def _serve_settings(text: str, log: VllmLog, line: int) -> None:
    pairs: list[tuple[str, str]] = []
    if _SERVE.search(text):
        pairs = [(m.group("name"), m.group("value")) for m in _FLAG.finditer(text)]
    elif "non-default args:" in text:
        pairs = [(m.group("name"), m.group("value")) for m in _ARGS.finditer(text)]
    elif "LLM engine " in text:
        pairs = [(m.group("name"), m.group("value")) for m in _CONFIG_KEYS.finditer(text)]
        model = _MODEL.search(text)
        if model is not None and log.model is None:
            log.model = model.group("model")
    for name, raw in pairs:
        key = _FLAG_FACT.get(name, name)
        value: Value = raw.strip("'")
        if isinstance(value, str) and re.fullmatch(r"\d+", value):
            value = int(value)
        elif isinstance(value, str) and re.fullmatch(r"\d*\.\d+", value):
            value = float(value)
        log.serve_settings.setdefault(key, value)
        if log.serve_line is None:
            log.serve_line = line


MAX_PIECES = 4
"""The most lines one cut line is read back from (a 250-character line at 60 columns)."""
MIN_CUT_CHARS = 60
"""A line shorter than this was never cut by a terminal (80 columns and up)."""
_STARTS_RECORD = re.compile(
    r"\s|Traceback|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|[(\[{<>|#▎]|\d{4}-\d\d-\d\d"
)
"""A line that starts a record of its own (indented, a level, a process tag, a bracketed tag, a
timestamp, a quote or a table's mark): never the rest of a line a terminal cut."""


def _read_facts(text: str) -> set[tuple[str, str, str]]:
    return {
        (getattr(spec, "kind", "") or getattr(spec, "id", ""), key, value)
        for spec, match in _match_line(_strip(text))
        for key, value in match.groupdict().items()
        if value is not None
    }


def _cut(first: str, rest: list[str]) -> bool:
    """Whether `rest` (one or more lines) is the rest of `first`, a line a terminal hard-wrapped
    at its width (a short paste shows no width: memledger.input.rewrap measures a long one):
    the join, without a space (a hard wrap keeps every character), reads more of vLLM's
    wordings than `first` while no piece of `rest` reads any alone, or completes a header cut
    in two (`... INFO 09-13 22:25:38 ` + `model_runner.py:1008] ...`)."""
    if len(first) < MIN_CUT_CHARS or any(not r or _STARTS_RECORD.match(r) for r in rest):
        return False
    if any(error.continued and re.search(error.continued, first) for error in ERRORS):
        return False  # a message vLLM itself broke over lines: read_vllm joins it
    joined = first + "".join(rest)
    header = _HEADER.search(joined, max(0, len(first) - 80))
    if header is not None and header.start() < len(first) < header.end():
        return len(rest) == 1 and _HEADER.search(rest[0]) is None
    if not _read_facts(first) < _read_facts(joined):
        return False
    return not any(_read_facts(r) for r in rest)


def _rejoined(lines: Iterable[str]) -> Iterator[str]:
    """The physical lines, each a terminal cut into pieces joined to its rest (`_cut`: of up to
    MAX_PIECES lines after it, the fewest that read the most) and an empty line left for each piece
    (every later line keeps its number)."""
    ahead: deque[str] = deque()
    source = iter(lines)
    while True:
        if not ahead:
            line = next(source, None)
            if line is None:
                return
            ahead.append(line)
        held = ahead.popleft()
        if len(held) >= MIN_CUT_CHARS and not ahead:
            line = next(source, None)
            if line is not None:
                ahead.append(line)
        if ahead and ahead[0] and len(held) >= MIN_CUT_CHARS and not _STARTS_RECORD.match(ahead[0]):
            while len(ahead) < MAX_PIECES:
                line = next(source, None)
                if line is None:
                    break
                ahead.append(line)
            pieces = [piece[:MAX_LINE_CHARS] for piece in ahead]
            # the join that reads the most (a later piece may hold the rest of its values)
            cuts = [k for k in range(1, len(pieces) + 1) if _cut(held, pieces[:k])]
            taken = max(
                cuts, key=lambda k: (len(_read_facts(held + "".join(pieces[:k]))), -k), default=0
            )
            if taken:
                yield held + "".join(ahead.popleft() for _ in range(taken))
                yield from [""] * taken
                continue
        yield held


def read_vllm(lines: Iterable[str], path: str) -> VllmLog:
    """Every reading of a vLLM log (`lines`: its physical lines, without line ends)."""
    words = prefilter_words() | {w for w, _ in _FRAMES}
    startups = [Startup()]
    log = VllmLog(path=path, startups=startups, n_lines=0)
    pending: tuple[int, str, str, VllmError] | None = None  # a broken error message
    for number, physical in enumerate(_rejoined(lines), start=1):
        log.n_lines = number
        raw = physical[:MAX_LINE_CHARS]
        if pending is not None:
            start, joined, tag, error = pending
            joined = f"{joined} {_message(raw)}"
            match = re.search(error.pattern, joined)
            done = match is not None and match.groupdict().get("estimated_max_model_len_n")
            if done or number - start >= 3:
                if match is not None:
                    _add(log, startups, error, match, start, joined, tag)
                pending = None
            else:
                pending = (start, joined, tag, error)
        if not any(w in raw for w in words) and not _wanted_otherwise(raw):
            continue
        text = _strip(raw)
        tag = rank_tag(text)
        if tag and tag not in log.rank_tags:
            log.rank_tags.append(tag)
        _serve_settings(text, log, number)
        if any(mark in text for mark in _READY):
            startups[-1].ready = True
        if _ERROR_LEVEL.search(text) and startups[-1].error_line is None:
            startups[-1].error_line = number
        phase = frame_phase(text)
        if phase is not None and startups[-1].frame_phase is None:
            startups[-1].frame_phase = phase
        for error in ERRORS:
            if error.continued and re.search(error.continued, text):
                pending = (number, _message(text), tag, error)
                break
        else:
            for spec, match in _match_line(text):
                _add(log, startups, spec, match, number, text, tag)
    if pending is not None:
        start, joined, tag, error = pending
        match = re.search(error.pattern, joined)
        if match is not None:
            _add(log, startups, error, match, start, joined, tag)
    log.startups = [s for s in startups if s.readings] or [Startup()]
    return log


def _wanted_otherwise(text: str) -> bool:
    """A line read though it holds no memory word: settings, readiness, errors, frames."""
    return "ERROR" in text or any(mark in text for mark in _OTHER_WORDS)


def _add(
    log: VllmLog,
    startups: list[Startup],
    spec: VllmLine | VllmError,
    match: re.Match[str],
    number: int,
    text: str,
    tag: str,
) -> None:
    facts, sizes = _typed(match)
    kind = spec.id if isinstance(spec, VllmError) else spec.kind
    reading = Reading(
        kind=kind,
        facts=facts,
        sizes=sizes,
        line=number,
        text=text[:MAX_TEXT_CHARS],
        tag=tag,
        source=spec.source,
        error=spec if isinstance(spec, VllmError) else None,
        first=spec.first,
        last=spec.last,
        engine=spec.engine if isinstance(spec, VllmLine) else "any",
    )
    if kind == "config" and isinstance(facts.get("version"), str):
        log.version = str(facts["version"])
    current = startups[-1]
    again = kind in STARTUP_KINDS and any(r.kind == kind and r.tag == tag for r in current.readings)
    new = (
        again
        or _contradicts(current, reading)
        or (kind in STARTUP_KINDS and current.outcome in ("error", "oom"))
    )
    if new and current.readings:
        startups.append(Startup(first_line=number))
    if not startups[-1].readings:
        startups[-1].first_line = number
    startups[-1].readings.append(reading)


def looks_like_vllm(text: str) -> bool:
    """Whether one line is a vLLM line (a memory line, a failure text or a process tag)."""
    clean = _strip(text)
    if any(e.continued and re.search(e.continued, clean) for e in ERRORS):
        return True
    found = [spec for spec, _ in _match_line(clean) if not getattr(spec, "engine_neutral", False)]
    return bool(found) or _PROCESS.search(clean) is not None
