"""The checkpoint chain: avail readings with stable ids and roles, the spans between them,
usable memory and what each load/capture span printed as its own usage.

Roles are fields (`Point.region`, `Span.closing`, `Roles.load_role`, `Roles.capture_prefix`),
assigned once here; no later step reads a role back out of an id string.
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.engine.audit import Audit
from memledger.engine.carve import Carve
from memledger.engine.roles import DRAFT, POST_CAPTURE, TARGET, Roles, assign_roles
from memledger.model.events import Event, EventKind, ParamValue, Startup
from memledger.sglang.rows import AVAIL_KINDS
from memledger.sglang.versions import MEMORY_BASELINE
from memledger.units import GIB, Size


@dataclass(frozen=True)
class Point:
    """A checkpoint of the chain: an avail reading with a stable id."""

    id: str
    event: Event
    avail: Size
    derived_text: str | None = None
    """Set when the reading was not printed as such (e.g. load begin = end avail + usage)."""
    region: str = TARGET
    """`draft` for the draft's `Memory pool end`, `post_capture` for post-capture KV sizing."""


@dataclass(frozen=True)
class Span:
    """The interval between two consecutive checkpoints, with the events logged inside it."""

    start: Point
    end: Point
    events: list[Event]
    closing: int | None = None
    """The begin event's index when the span is exactly one load or capture (begin -> end)."""

    @property
    def key(self) -> str:
        return f"{self.start.id}->{self.end.id}"

    @property
    def region(self) -> str:
        return self.end.region

    @property
    def drop(self) -> int:
        return self.start.avail.bytes - self.end.avail.bytes

    @property
    def error(self) -> int:
        return self.start.avail.half_ulp + self.end.avail.half_ulp


@dataclass(frozen=True)
class Chain:
    """One startup's events in line order, their roles and the checkpoint chain."""

    path: str
    startup: Startup
    events: list[Event]
    args: dict[str, ParamValue]
    index: dict[int, int]
    """id(event) -> position in `events`."""
    roles: Roles
    points: list[Point]
    spans: list[Span]
    dist_event: Event | None
    """`Init torch distributed ends` with mem usage, before the first reading."""
    mixed: tuple[Event, Event] | None = None
    """Two lines one worker never prints back to back: several workers' lines are interleaved
    (untagged ranks, or two servers with the same tag in one file), so no reading can be told
    to be one worker's (the chain is then empty)."""

    def position(self, event: Event) -> int:
        return self.index[id(event)]

    def load_role(self, event: Event) -> str:
        return self.roles.load_role.get(self.position(event), TARGET)

    def summary_event(self) -> Event | None:
        return next((e for e in self.events if e.kind == EventKind.SUMMARY), None)

    def complete(self) -> bool:
        """The startup reached the server summary (or said it was ready)."""
        return self.startup.outcome == "ready" or self.summary_event() is not None

    def where(self, events: list[Event]) -> str:
        return ", ".join(f"{self.path}:{event.line}" for event in events)


@dataclass(frozen=True)
class Usage:
    """A load/capture span's own printed usage (or its drop when none is printed)."""

    total: int
    error: int
    closed: bool = False
    """The printed usage matches the drop within printing precision: the span is accounted by
    the line's own number, and only the printing rounding is left."""
    rounding: int = 0
    rounding_slack: int = 0


def build_chain(path: str, startup: Startup, audit: Audit) -> Chain:
    """Roles, checkpoints and spans of one startup."""
    events = sorted(startup.events, key=lambda e: e.line)
    args: dict[str, ParamValue] = dict(startup.server_args)
    index = {id(event): position for position, event in enumerate(events)}
    roles = assign_roles(events, args)
    mixed = interleaved_ranks(events, tagged=bool(startup.rank))
    points = [] if mixed is not None else _points(events, roles, audit)
    spans = _spans(events, points, index, roles)
    dist = _dist(events, points) if mixed is None else None
    return Chain(path, startup, events, args, index, roles, points, spans, dist, mixed)


ONCE_PER_WORKER = {
    EventKind.DIST_INIT_END: "Init torch distributed ends",
    EventKind.LOAD_BEGIN: "Load weight begin",
    EventKind.LOAD_END: "Load weight end",
}
"""Lines one ModelRunner prints once each, in this order (v0.5.8 model_executor/model_runner.py
:801 distributed init, :808 and :950 the load); a draft worker's own ModelRunner prints its set
after the target's load. `Memory pool end` may repeat: from 0.5.16 a DFLASH draft is loaded
before the pools, whose two `Memory pool end` lines then follow each other (single/005)."""


def one_rank_readings(startup: Startup) -> bool:
    """The startup's readings are one worker's: no two workers' lines interleave (the chain
    takes no checkpoint otherwise, and the flow redoes no sizing from them)."""
    events = sorted(startup.events, key=lambda e: e.line)
    return interleaved_ranks(events, tagged=bool(startup.rank)) is None


def interleaved_ranks(events: list[Event], tagged: bool = False) -> tuple[Event, Event] | None:
    """Two lines of one ONCE_PER_WORKER kind with no other such line between them: two workers
    printed them (an untagged multi-rank log, a paste of several ranks, or, `tagged`, two
    servers with the same tag in one file). For tagged lines only a repeated end (distributed
    init, load end) counts: a reading taken as a second load begin (a release) is no proof."""
    previous: Event | None = None
    for event in events:
        if event.kind not in ONCE_PER_WORKER:
            continue
        repeated = previous is not None and previous.kind == event.kind
        if repeated and not (tagged and event.kind == EventKind.LOAD_BEGIN):
            assert previous is not None
            return previous, event
        previous = event
    return None


def _points(events: list[Event], roles: Roles, audit: Audit) -> list[Point]:
    """Every avail reading of a checkpoint kind, in log order, with its stable id."""
    points: list[Point] = []
    for index, event in enumerate(events):
        avail = event.size("avail")
        if event.kind not in AVAIL_KINDS or avail is None:
            continue
        region = (
            DRAFT
            if index in roles.draft_pools
            else POST_CAPTURE
            if event.kind == EventKind.POST_CAPTURE_KV
            else TARGET
        )
        points.append(Point(roles.ids[index], event, avail, region=region))
    if points and points[0].event.kind == EventKind.LOAD_END:
        # A fragment without `Load weight begin`: its printed usage recovers the reading.
        first = points[0]
        usage = first.event.size("usage")
        if usage is not None:
            start = Size(
                bytes=first.avail.bytes + usage.bytes,
                half_ulp=first.avail.half_ulp + usage.half_ulp,
            )
            begin_id = first.id.replace("load_end", "load_begin")
            points.insert(
                0, Point(begin_id, first.event, start, "derived: load-end avail + mem usage")
            )
            audit.note(
                f"no `Load weight begin` reading: avail at {begin_id} taken as load-end "
                f"avail + mem usage (line {first.event.line})"
            )
    return points


def _dist(events: list[Event], points: list[Point]) -> Event | None:
    """The `Init torch distributed ends` line before the first reading (its mem usage)."""
    first_line = points[0].event.line if points else None
    for event in events:
        if first_line is not None and event.line >= first_line:
            break
        if event.kind == EventKind.DIST_INIT_END and event.size("usage") is not None:
            return event
    return None


def _spans(
    events: list[Event], points: list[Point], index: dict[int, int], roles: Roles
) -> list[Span]:
    """Consecutive checkpoint pairs, each with the events logged after start, up to end."""
    spans: list[Span] = []
    position = 0
    for start, end in zip(points, points[1:], strict=False):
        inside: list[Event] = []
        while position < len(events) and events[position].line <= end.event.line:
            event = events[position]
            if event.line > start.event.line or (
                start.derived_text is not None and event is start.event
            ):
                inside.append(event)
            position += 1
        spans.append(Span(start, end, inside, _closing(start, end, index, roles)))
    return spans


def _closing(start: Point, end: Point, index: dict[int, int], roles: Roles) -> int | None:
    """Index of the begin event when the span is exactly a load or capture (begin -> end)."""
    start_index = index[id(start.event)]
    end_index = index[id(end.event)]
    pairs = (
        roles.load_pairs
        if end.event.kind == EventKind.LOAD_END
        else roles.capture_pairs
        if end.event.kind == EventKind.CAPTURE_END
        else {}
    )
    if pairs.get(start_index) == end_index:
        return start_index
    if start.derived_text is not None and start_index == end_index:
        return start_index
    return None


def usable_memory(chain: Chain, pre_load: list[Carve], audit: Audit) -> int | None:
    """Dist-init usage + pre-load allocations + avail at load begin (None when unknown)."""
    points = chain.points
    if chain.mixed is not None:
        one, other = chain.mixed
        what = ONCE_PER_WORKER[one.kind]
        rank = chain.startup.rank
        audit.note(
            f"cannot balance: untagged lines of several ranks are interleaved (lines "
            f"{one.line} and {other.line} are both `{what}`, which one worker prints once): "
            "no reading can be told to be one rank's, so none is used; a log with rank tags "
            "(TP0, DP0 TP0) gives the account"
            if not rank
            else f"cannot balance: lines tagged {rank} come from two processes (lines "
            f"{one.line} and {other.line} are both `{what}`, which one worker prints once: two "
            "servers logging to one file?): no reading can be told to be one worker's, so none "
            "is used; a file per server gives the account"
        )
        return None
    if not points:
        audit.note("cannot balance: no avail reading in this log")
        return None
    first = points[0]
    if first.event.kind != EventKind.LOAD_BEGIN and first.derived_text is None:
        audit.note(
            f"cannot balance: no load-begin avail reading (the log starts at {first.id}, "
            f"line {first.event.line}): usable memory unknown"
        )
        return None
    if chain.load_role(first.event) == DRAFT:
        # A fragment from the draft's load on: the target's weights (and whatever it printed
        # before) were loaded before this reading, so avail here is not the usable memory.
        audit.note(
            f"cannot balance: the first avail reading is the draft's load ({first.id}, line "
            f"{first.event.line}); the target's load is not in this log: usable memory unknown"
        )
        return None
    # Informational lines before the first reading (a KV budget) are shown, never added.
    usable = first.avail.bytes + sum(carve.bytes for carve in pre_load if carve.in_partition)
    audit.use_number(first.event, "avail", first.avail)
    if chain.dist_event is not None:
        usage = chain.dist_event.size("usage")
        assert usage is not None
        usable += usage.bytes
        audit.use_number(chain.dist_event, "usage", usage)
    else:
        baseline = next((e for e in chain.events if e.kind == EventKind.MEMORY_BASELINE), None)
        why = (
            f"this SGLang version logs `Memory baseline taken` instead "
            f"({MEMORY_BASELINE.releases.first}+)"
            if baseline is not None
            else "no `Init torch distributed ends ... mem usage` line"
        )
        audit.note(
            f"distributed-init usage not logged ({why}): usable = avail at load begin"
            + (" + allocations logged before it" if pre_load else "")
        )
    for carve in pre_load:
        if carve.in_partition:
            for source in carve.sources:
                audit.use_sizes(source)
    return usable


def span_usages(chain: Chain, audit: Audit) -> dict[str, Usage]:
    """Every load/capture span's own usage, by span key, in span order."""
    return {span.key: _usage(span, audit) for span in chain.spans if span.closing is not None}


def _usage(span: Span, audit: Audit) -> Usage:
    usage = span.end.event.size("usage")
    if usage is None or span.start.derived_text is not None:
        audit.use_number(span.start.event, "avail", span.start.avail)
        audit.use_number(span.end.event, "avail", span.end.avail)
        return Usage(span.drop, span.error)
    slack = span.error + usage.half_ulp
    rounding = span.drop - usage.bytes
    audit.use_number(span.end.event, "usage", usage)
    if abs(rounding) <= slack:
        audit.use_number(span.start.event, "avail", span.start.avail)
        audit.use_number(span.end.event, "avail", span.end.avail)
        return Usage(usage.bytes, usage.half_ulp, True, rounding, slack)
    audit.note(
        f"{span.key}: printed mem usage {usage.bytes / GIB:.2f} GiB differs from the avail "
        f"drop {span.drop / GIB:.2f} GiB by more than printing precision; the difference "
        "is an unexplained row"
    )
    return Usage(usage.bytes, usage.half_ulp)


def stopped_at(chain: Chain) -> str | None:
    """For a startup that did not finish, in words: where the account stops and why
    (`after checkpoint load_begin (line 372); out of memory at line 536: torch.OutOf...`)."""
    startup = chain.startup
    if startup.outcome == "ready":
        return None
    summary = chain.summary_event()
    if summary is not None:
        where = f"after the startup finished (summary line {summary.line})"
    elif chain.points:
        where = f"after checkpoint {chain.points[-1].id} (line {chain.points[-1].event.line})"
    else:
        where = "before any memory reading"
    if startup.outcome == "truncated":
        return f"{where}; the log ends there (truncated)"
    line_number, text = startup.outcome_line, startup.outcome_text.strip()
    own = next(
        (e for e in chain.events if e.kind == EventKind.OOM_MESSAGE and e.rank == startup.rank),
        None,
    )
    if startup.outcome == "oom" and own is not None:
        line_number, text = own.line, own.text.strip()  # this rank's own words, not GPU 3's
    what = STOP_WORDS.get(startup.outcome, startup.outcome)
    line = f" at line {line_number}" if line_number else ""
    text = f": {excerpt(text)}" if text else ""
    return f"{where}; {what}{line}{text}"


STOP_WORDS = {"oom": "out of memory", "crash": "crashed"}
"""What ended a startup, in words (the outcome field keeps its one-word value)."""

EXCERPT_CHARS = 160
"""The quoted line's length in `stopped_at`: the line itself is one `parse` away."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` cut to `limit` characters at a sentence's end when one ends past half of it
    (`... Tried to allocate 12.00 GiB.`), else at a word, with `…`; never mid-word."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    sentence = head.rfind(". ", 0, limit)
    if sentence >= limit // 2:
        return text[: sentence + 1]
    space = head.rfind(" ", 0, limit)
    return (text[:space] if space > 0 else text[: limit - 1]).rstrip() + " …"
