"""What a parsed startup and its ledger say about a failure: the error events that matter, the
budget figures SGLang sized with, and where the startup had got to."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property

from memledger.diagnosis.model import Direction, Finding, FindingId, Severity, Suggestion
from memledger.input.launch_command import NOTE_PREFIX
from memledger.model.events import Event, EventKind, ParsedLog, Value
from memledger.model.ledger import Checkpoint, Ledger
from memledger.sglang.failure_rules import nearest_source
from memledger.sglang.findings import ADVISED, SAID
from memledger.sglang.known_bugs import KnownBug, known_bug
from memledger.sglang.lifecycle import (
    FRAME_MENTIONS,
    MENTION,
    SETTING_MENTION_FIXED,
    SETTING_MENTIONS,
    SUPERSEDED,
    Mention,
)
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import version_code
from memledger.sizing.inputs import SizingInputs, sizing_inputs
from memledger.sizing.named_weights import NamedWeights, named_weights
from memledger.units import Size, float_or, int_or

_OOM_EXCEPTION = "OutOfMemory"


@dataclass(frozen=True)
class Frame:
    path: str
    lineno: int
    function: str

    @property
    def text(self) -> str:
        return f"{self.path}:{self.lineno} in {self.function}"


def frames_of(traceback: Event) -> list[Frame]:
    """A traceback event's frames, outermost first."""
    frames: list[Frame] = []
    for part in str(traceback.values.get("frames") or "").split(" > "):
        location, _, function = part.rpartition(" ")
        path, _, lineno = location.rpartition(":")
        if path and lineno.isdigit():
            frames.append(Frame(path, int(lineno), function))
    return frames


def innermost_sglang_frame(traceback: Event) -> Frame | None:
    return next((f for f in reversed(frames_of(traceback)) if f.path.startswith("srt/")), None)


@dataclass(frozen=True)
class Budget:
    """The numbers of SGLang's KV budget `rest = A - P x (1 - mfs)` as this log printed them."""

    pre_load: Checkpoint | None
    """P: free before the weights (load begin)."""
    after_load: Checkpoint | None
    """A: free after the last load before the pool (the draft's when it loads first)."""
    pool_end: Checkpoint | None
    mem_fraction_static: float | None
    typed_at: int | None = None
    """The line where the reporter typed the fraction, when nothing printed one."""

    @property
    def slack_bytes(self) -> int | None:
        """P x (1 - mfs): what everything sized after the KV budget must fit in."""
        if self.pre_load is None or self.mem_fraction_static is None:
            return None
        return round(self.pre_load.avail_bytes * (1 - self.mem_fraction_static))

    @property
    def minimum_viable(self) -> float | None:
        """1 - A/P: below this mfs the weights leave no KV budget."""
        if self.pre_load is None or self.after_load is None or self.pre_load.avail_bytes <= 0:
            return None
        return 1 - self.after_load.avail_bytes / self.pre_load.avail_bytes

    @property
    def kv_budget_bytes(self) -> int | None:
        slack = self.slack_bytes
        if slack is None or self.after_load is None:
            return None
        return self.after_load.avail_bytes - slack


@dataclass(frozen=True)
class Evidence:
    """Everything the rules read, gathered once."""

    path: str
    rank: str
    outcome: str
    outcome_line: int | None
    events: list[Event]
    """The selected rank's events plus every rank's error events, in line order."""
    server_args: dict[str, object]
    ledger: Ledger
    budget: Budget
    oom: Event | None
    """The allocator OOM message used: the ledger rank's own, else the first."""
    oom_messages: list[Event]
    refusal: Event | None
    traceback: Event | None
    """The traceback that names the failure (the OOM's, else the first from SGLang code)."""
    exit: Event | None
    exhausted: list[Event]
    """SGLang's pools (or the host's memory) running out: `pool_exhausted` events."""
    reported: list[Event] = field(default_factory=list)
    """What the reporter typed around the paste: `reported` events (settings, mentions)."""
    tp_seen: int | None = None
    """The highest `TPn` in the log's rank tags, plus one: a lower bound of the tp size."""
    sizing: SizingInputs | None = None
    """What the sizing model reads of this startup (its release range, P, the knobs)."""
    command_line: int | None = None
    """The pasted launch command's line, when the settings are its (no server_args line)."""
    command_notes: list[str] = field(default_factory=list)
    """The parse's notes about a pasted launch command (memledger.input.launch_command)."""

    @property
    def settings_where(self) -> str:
        """Where a setting read from `server_args` comes from, for a citation."""
        if self.command_line is None:
            return "in the log"
        return f"from the pasted launch command, {self.at(self.command_line)}"

    def at(self, line: int | None) -> str:
        return f"{self.path}:{line}" if line is not None else self.path

    def finding(
        self,
        id: str,
        severity: Severity,
        message: str,
        *lines: int | None,
        bytes: int | None = None,
    ) -> Finding:
        """A finding resting on the log's `lines` (`file:line` each), of `bytes` if it has an
        amount."""
        at = [self.at(line) for line in lines]
        return Finding(id=id, severity=severity, message=message, bytes=bytes, evidence=at)

    def said(self, name: str, /, *lines: int | None, **fields: object) -> Finding:
        """The finding `name` in its words (memledger.sglang.findings), the paste's `fields` in
        them; `bytes=` its amount."""
        row, amount = SAID[name], fields.pop("bytes", None)
        words, amount = row.words(**fields), amount if isinstance(amount, int) else None
        found = FindingId(row.finding_id)
        return self.finding(found, Severity(row.severity), words, *lines, bytes=amount)

    def advice(self, name: str, /, **fields: object) -> Suggestion:
        """The lever `name` in its words (memledger.sglang.findings.ADVICE), the paste's `fields`
        in them; `value=` its value, also a field."""
        row, value = ADVISED[name], fields.get("value")
        value = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        why = row.words(**fields)
        return Suggestion(knob=row.knob, direction=Direction(row.direction), value=value, why=why)

    @property
    def capacity(self) -> Size | None:
        """The GPU's total capacity the OOM text printed (None: no OOM text, or none printed)."""
        size = self.oom.sizes.get("capacity") if self.oom is not None else None
        return size if size is not None and size.bytes > 0 else None

    @property
    def version(self) -> VersionRange | None:
        """The releases the log's formats date it to (None: no sizing inputs)."""
        return self.sizing.version if self.sizing is not None else None

    def known_bug(self, symptom: str) -> tuple[KnownBug, str] | None:
        """A known defect of `symptom` this log's release and settings may have (known_bugs)."""
        return known_bug(symptom, self.version, self.server_args)

    def cite(self, sources: tuple[tuple[str, str], ...]) -> str:
        """`vX path:line` of `sources` at the release nearest the log's own (v0.5.8's when the
        log does not date itself)."""
        version = self.version
        first, last = (version.first or 0, version.last or 0) if version is not None else (0, 0)
        return nearest_source(sources, first, last)

    @property
    def serving_batch(self) -> Event | None:
        """The last serving-batch line (`Prefill batch.` / `Decode batch.`) before the failure's
        error text (any, when only prose states the failure): what was being served then."""
        texts = [e.line for e in (self.oom, self.refusal, self.traceback, self.exit) if e]
        before = min(texts, default=None)
        batches = [e for e in self.events if e.kind is EventKind.SERVING_BATCH]
        return next((e for e in reversed(batches) if before is None or e.line < before), None)

    @property
    def failure_line(self) -> int | None:
        lines = [e.line for e in (self.oom, self.refusal, self.traceback, self.exit) if e]
        if not lines and self.outcome in ("oom", "crash") and self.outcome_line is not None:
            # only without an error text: the outcome phrase is any line saying "out of memory"
            # or "Error:", prose of a paste included (`I got an "out of memory" error`)
            lines.append(self.outcome_line)
        return min(lines) if lines else None

    @property
    def memory_evidence(self) -> bool:
        return self.oom is not None or self.refusal is not None or self.outcome == "oom"

    def param(self, name: str) -> object:
        return self.server_args.get(name)

    @property
    def tp_size(self) -> int | None:
        """--tp-size from server_args, else at least the highest `TPn` rank tag + 1."""
        return self.int_param("tp_size") or self.tp_seen

    def int_param(self, name: str) -> int | None:
        return int_or(self.server_args.get(name), None)

    def before_failure(self, kinds: set[EventKind]) -> list[Event]:
        stop = self.failure_line
        return [e for e in self.events if e.kind in kinds and (stop is None or e.line <= stop)]

    @cached_property
    def mentions(self) -> list[Mention]:
        """What the paste names, once each in the table's order, what its failing frames make
        (lifecycle.FRAME_MENTIONS) and what its settings make (lifecycle.SETTING_MENTIONS:
        speculative decoding, a DFLASH draft under DP attention); read once a diagnosis."""
        named = {str(e.values.get("mention")) for e in self.reported}
        frames = frames_of(self.traceback) if self.traceback is not None else []
        named |= {name for f in frames for part, name in FRAME_MENTIONS.items() if part in f.path}
        for name, settings in SETTING_MENTIONS.items():
            fixed, version = SETTING_MENTION_FIXED.get(name), self.version
            if fixed and version is not None and version.lower >= version_code(fixed):
                continue
            if all(
                (value := self.param(key)) and (not values or value in values)
                for key, values in settings
            ):
                named.add(name)
        named -= {name for name, by in SUPERSEDED.items() if by in named}
        return [m for name, m in MENTION.items() if name in named]

    @cached_property
    def weights_by_name(self) -> NamedWeights | None:
        """The weights a rank holds as the model's name spells them, against the fraction's
        share of the card the OOM text gives (memledger.sizing.named_weights)."""
        fraction = self.budget.mem_fraction_static
        return named_weights(self.server_args, self.tp_size, self.oom, fraction)


def _checkpoint(ledger: Ledger, *ids: str, before: int | None = None) -> list[Checkpoint]:
    return [c for c in ledger.checkpoints if c.id in ids and (before is None or c.line < before)]


def _budget(ledger: Ledger, server_args: dict[str, object], reported: list[Event]) -> Budget:
    pre = next(iter(_checkpoint(ledger, "load_begin")), None)
    pool = next(iter(_checkpoint(ledger, "memory_pool_end")), None)
    loads = _checkpoint(ledger, "load_end", "draft_load_end", before=pool.line if pool else None)
    mfs = ledger.summary.mem_fraction_static
    if mfs is None:
        mfs = float_or(server_args.get("mem_fraction_static"), None)
    if mfs is None and ledger.sizing is not None:
        # no server_args: the fraction the logged pools imply (memledger.sizing)
        mfs = ledger.sizing.implied_mem_fraction_static
    typed = [
        (v, e.line)
        for e in reported
        if e.values.get("knob") == "mem_fraction_static"
        and e.values.get("said") == "oom"
        and isinstance(v := e.values.get("value"), float)
    ]
    if mfs is None and typed:
        # nothing printed: the lowest fraction the reporter says ran out of memory (`an OOM at
        # mem_fraction_static=0.85`), the one a lower value must start from
        mfs, line = min(typed)
        return Budget(pre, loads[-1] if loads else None, pool, mfs, line)
    return Budget(pre, loads[-1] if loads else None, pool, mfs)


def _choose_traceback(tracebacks: list[Event], oom: Event | None, rank: str) -> Event | None:
    if not tracebacks:
        return None
    if oom is not None:
        for event in tracebacks:
            if event.rank == oom.rank and _OOM_EXCEPTION in str(event.values.get("exception")):
                return event
    from_sglang = [e for e in tracebacks if innermost_sglang_frame(e) is not None]
    pool = from_sglang or tracebacks
    own = [e for e in pool if e.rank == rank]
    return (own or pool)[0]


def _merged(refusals: list[Event]) -> Event | None:
    """The first refusal, with what later ones add (the `profiled value -N` warning comes
    before the `Not enough memory ... Current value: 0.88` that names the fraction)."""
    if len(refusals) < 2:
        return refusals[0] if refusals else None
    values: dict[str, Value] = {}
    for event in reversed(refusals):
        values.update(event.values)
    return replace(refusals[0], values=values)


def _said_refusal(reported: list[Event]) -> Event | None:
    """A fraction the reporter says the server needs to start above (`must > 0.92`, `below 0.9
    it can not start`): SGLang's refusal to size the KV cache as typed, its floor the minimum
    viable fraction."""
    floors = [
        e
        for e in reported
        if e.values.get("knob") == "mem_fraction_static"
        and (
            (e.values.get("relation") == ">" and e.values.get("said") != "oom")
            or (e.values.get("relation") == "<" and e.values.get("said") == "fails")
        )
    ]
    if not floors:
        return None
    floor = max(v for e in floors if isinstance(v := e.values.get("value"), int | float))
    return replace(
        floors[0], kind=EventKind.KV_REFUSAL, values={"shape": "said", "minimum_viable": floor}
    )


_TP_TAG_RE = re.compile(r"\bTP(\d{1,9})\b")
"""A rank tag TPn; at most 9 digits, so a hostile tag never reaches int() unbounded."""


def _tp_seen(ranks: list[str]) -> int | None:
    indices = [int(m.group(1)) for rank in ranks for m in _TP_TAG_RE.finditer(rank)]
    return max(indices) + 1 if indices else None


def gather(parsed: ParsedLog, ledger: Ledger, inputs: SizingInputs | None = None) -> Evidence:
    startup = parsed.startup
    events = startup.events
    by_kind: dict[EventKind, list[Event]] = {}
    for event in events:
        by_kind.setdefault(event.kind, []).append(event)
    ooms = by_kind.get(EventKind.OOM_MESSAGE, [])
    own = [e for e in ooms if e.rank == startup.rank] or ooms  # an OOM text naming its phase
    oom = next((e for e in own if e.values.get("phase")), own[0] if own else None)  # leads
    refusals = by_kind.get(EventKind.KV_REFUSAL, [])
    reported = by_kind.get(EventKind.REPORTED, [])
    exits = by_kind.get(EventKind.PROCESS_EXIT, [])
    server_args: dict[str, object] = dict(startup.server_args)
    settings = by_kind.get(EventKind.SERVER_ARGS, [])
    command = next((e for e in settings if e.values.get("form") == "command"), None)
    return Evidence(
        path=parsed.path,
        rank=startup.rank,
        outcome=startup.outcome,
        outcome_line=startup.outcome_line,
        events=events,
        server_args=server_args,
        ledger=ledger,
        budget=_budget(ledger, server_args, reported),
        oom=oom,
        oom_messages=ooms,
        refusal=_merged(refusals) or _said_refusal(reported),
        traceback=_choose_traceback(by_kind.get(EventKind.TRACEBACK, []), oom, startup.rank),
        exit=exits[0] if exits else None,
        exhausted=by_kind.get(EventKind.POOL_EXHAUSTED, []),
        reported=reported,
        tp_seen=_tp_seen([r.rank for r in startup.ranks] + [e.rank for e in events]),
        sizing=sizing_inputs(parsed) if inputs is None else inputs,
        command_line=command.line if command is not None else None,
        command_notes=[note for note in parsed.notes if note.startswith(NOTE_PREFIX)],
    )
