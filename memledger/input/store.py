"""The event store of one parse: what a streaming pass keeps, bounded in startups and ranks.

Full events are kept only for what the end of the parse can still select:
- startups: SGLang's startups begin at `server_args` lines, so once one is seen only the
  startup(s) `--startup` names are kept (the last by default; `-k` keeps the last k, `i` the
  i-th); a log without server_args lines (startups at rank-0 init lines, decided at the end) keeps
  its newest segments within RETAINED_CAP items and says in a note what it let go;
- ranks: only tags the rank rule can select (rank-0 tags, the lowest tag while no rank 0 is seen,
  the tags `--rank` names) keep their events; any other rank of a kept startup is a bounded
  summary (its event count and the readings of the per-rank table). Ranks past RANKS_CAP are
  counted, not summarised, and a note says so.
Counts stay exact: what is not kept is counted and reported, never silently dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from memledger.input.error_texts import ERROR_WORDS, ErrorReading, ErrorTextReader
from memledger.input.quiet import QuietLines
from memledger.input.ranks import is_rank0_tag, natural_key, rank_key_values, rank_sort_key
from memledger.model.events import Event, EventKind, RankInfo, UnrecognisedLine, Value
from memledger.sglang.env_reports import report_evidence

RANKS_CAP = 1024
"""Distinct rank tags tracked (per-rank table rows); more are counted in a note."""
CANDIDATE_CAP = 64
"""Tags that may be selected and so keep their events (rank-0 variants, --rank matches)."""
ERROR_TEXTS_CAP = 16
"""Lines of error text read per rank and segment (input.error_texts: an allocator OOM message,
an exception line, a KV refusal, a process exit); a startup prints a few (the corpus: at most
two per rank). Beyond it (a server in a retry loop, a hostile log) a line holding error words is
counted in coverage as not read, without being parsed, so time per line stays flat (review 3,
finding 3: 50,000 OOM lines took 15.9 s). The outcome is decided apart (input.outcome)."""
ERROR_TEXTS_ALL_RANKS_CAP = 4096
"""The same over all ranks of a segment (RANKS_CAP ranks each printing two)."""
ERRORS_NOT_READ = f"not read: more than {ERROR_TEXTS_CAP} error texts of this rank"
RETAINED_CAP = 16384
"""Items (events, rank summaries) a log without server_args lines keeps before it lets its oldest
startup segments go (a startup printing this many is no SGLang startup)."""
UNRECOGNISED_CAP = 50
"""How many unrecognised lines a startup lists (the count is exact)."""
TEXT_CAP = 400
GPU_EVIDENCE_CAP = 64
"""Distinct environment-output readings a startup keeps (memledger.sglang.env_reports: a node's
GPUs' names, memory rows and processes, the engine's release)."""

RANK_AGNOSTIC = frozenset(
    {
        EventKind.SERVER_ARGS,
        EventKind.READY,
        EventKind.OOM,
        EventKind.CRASH,
        EventKind.OOM_MESSAGE,
        EventKind.KV_REFUSAL,
        EventKind.TRACEBACK,
        EventKind.PROCESS_EXIT,
        EventKind.POOL_EXHAUSTED,
        EventKind.REPORTED,
        EventKind.GPU_CAPACITY_FALLBACK,
        EventKind.MFS_VLM_ADJUSTED,
        EventKind.SETTING_ADJUSTED,
        EventKind.PLATFORM_MARKER,
        EventKind.ENV_VAR,
        EventKind.GPU_NAMED,
        EventKind.RELEASE_NAMED,
    }
)
BEFORE_STARTUP = frozenset(
    {
        EventKind.GPU_CAPACITY_FALLBACK,
        EventKind.MFS_VLM_ADJUSTED,
        EventKind.ENV_VAR,
        EventKind.GPU_NAMED,
        EventKind.RELEASE_NAMED,
    }
)
"""Rank-agnostic lines SGLang prints while building ServerArgs, before the `server_args` line
that starts a startup: they belong to the startup that follows them."""


def before_startup(event: Event) -> bool:
    """A line of BEFORE_STARTUP, or a setting SGLang changed while building its ServerArgs
    (memledger.sglang.adjustments, `at` args)."""
    return event.kind in BEFORE_STARTUP or event.values.get("at") == "args"


def preamble(kind: EventKind, prefixed: bool) -> bool:
    """What the reporter wrote above the log (its words, a bare out-of-memory sentence) belongs to
    the first startup, as BEFORE_STARTUP lines do, when it says the startup failed (`always got
    CUDA out of memory`, then the log); else it is a launcher's chatter, no part of it."""
    return kind is EventKind.REPORTED or (kind is EventKind.OOM and not prefixed)


# the readings `rank_key_values` takes from a rank's events: the first event of a kind with a size
_KEY_READINGS = (
    (EventKind.LOAD_BEGIN, "avail"),
    (EventKind.LOAD_END, "avail"),
    (EventKind.LOAD_END, "usage"),
    (EventKind.MEMORY_POOL_END, "avail"),
    (EventKind.CAPTURE_END, "usage"),
    (EventKind.CAPTURE_END, "avail"),
)
_FIRST_ONLY = frozenset({EventKind.OOM, EventKind.CRASH, EventKind.READY})
"""Outcome evidence of any rank: only the earliest line of each kind decides."""


@dataclass
class Stored:
    """A recognised line of a selectable rank (or of no rank), with what selection needs."""

    event: Event
    prefixed: bool
    segment: int
    pasted: bool = False
    """Read from a bare line while no line had shown a prefix (kept only if none ever does)."""
    server_args_text: str | None = None
    """A server_args line's text, parsed only if its startup is selected."""


@dataclass
class Evidence:
    kind: EventKind
    line: int
    rank: str
    prefixed: bool
    reason: str
    text: str
    segment: int


@dataclass
class Bucket:
    count: int = 0
    lines: list[UnrecognisedLine] = field(default_factory=list)


@dataclass
class RankSummary:
    """A rank that cannot be selected, within one segment: its event count and the few events
    the per-rank table reads (the first of each reading), not all of them."""

    n_events: int = 0
    first_line: int = 0
    firsts: list[Event] = field(default_factory=list)

    def add(self, event: Event) -> None:
        if not self.n_events:
            self.first_line = event.line
        self.n_events += 1
        if event.kind is EventKind.KV_ALLOCATED:
            if not any(e.kind is EventKind.KV_ALLOCATED for e in self.firsts):
                self.firsts.append(event)
            return
        for kind, key in _KEY_READINGS:
            if (
                event.kind is kind
                and key in event.sizes
                and not any(e.kind is kind and key in e.sizes for e in self.firsts)
            ):
                self.firsts.append(event)
                return


class RankCandidates:
    """Which tags the rank rule (memledger.input.ranks.select_rank) may still select, decided
    when a tag is first seen; a tag can later lose the chance (a lower tag, a rank 0 appears)."""

    def __init__(self, spec: str | None) -> None:
        self.spec_parts = set(spec.split()) if spec is not None else None
        self.tags: set[str] = set()
        self.overflow = 0
        """Tags that qualified past CANDIDATE_CAP (not selectable: a note says so)."""
        self.overflowed: set[str] = set()
        self.tagged_seen = False
        self.rank0_seen = False
        self.exact_seen = False
        self.lowest: str | None = None
        self.subset: list[str] = []

    def _take(self, tag: str) -> bool:
        if len(self.tags) >= CANDIDATE_CAP:
            self.overflow += 1
            if len(self.overflowed) < RANKS_CAP:
                self.overflowed.add(tag)
            return False
        self.tags.add(tag)
        return True

    def _drop(self, tag: str | None, demoted: list[str]) -> None:
        if tag is not None and tag in self.tags:
            self.tags.discard(tag)
            demoted.append(tag)

    def first_sight(self, tag: str) -> tuple[bool, list[str]]:
        """Whether `tag` (seen for the first time) may be selected, and the tags that no longer
        may."""
        demoted: list[str] = []
        if self.spec_parts is None:
            if not tag:
                return (not self.tagged_seen and self._take(tag)), demoted
            if not self.tagged_seen:
                self.tagged_seen = True
                self._drop("", demoted)
            if is_rank0_tag(tag):
                if not self.rank0_seen:
                    self.rank0_seen = True
                    self._drop(self.lowest, demoted)
                    self.lowest = None
                return self._take(tag), demoted
            if self.rank0_seen:
                return False, demoted
            if self.lowest is None or natural_key(tag) < natural_key(self.lowest):
                self._drop(self.lowest, demoted)
                self.lowest = tag if self._take(tag) else None
                return self.lowest is not None, demoted
            return False, demoted
        parts = set(tag.split())
        if parts == self.spec_parts:
            if not self.exact_seen:
                self.exact_seen = True
                for other in self.subset:
                    self._drop(other, demoted)
            return self._take(tag), demoted
        if tag and self.spec_parts <= parts and not self.exact_seen:
            self.subset.append(tag)
            if len(self.subset) == 1:
                return self._take(tag), demoted
            # two partial matches and no exact one (yet): ambiguous unless an exact tag comes
            for other in self.subset[:-1]:
                self._drop(other, demoted)
            self.subset = self.subset[:2]
        return False, demoted


@dataclass
class Window:
    """The startups (server_args lines) kept for `--startup`: (index, line, segment)."""

    wanted: int
    starts: deque[tuple[int, int, int]] = field(default_factory=deque)
    count: int = 0
    last_line: int = 0
    closed: bool = False
    """The wanted startup (a non-negative index) has ended: nothing more is kept."""


@dataclass
class Collector:
    """Everything one pass keeps, bounded (see the module docstring)."""

    candidates: RankCandidates
    window: Window
    stored: list[Stored] = field(default_factory=list)
    summaries: dict[tuple[int, str], RankSummary] = field(default_factory=dict)
    server_args_problems: list[UnrecognisedLine] = field(default_factory=list)
    init_lines: list[tuple[int, str, bool]] = field(default_factory=list)
    n_markers: int = 0
    marker_starts: deque[tuple[int, int]] = field(default_factory=deque)
    """(segment, first line) of the segments kept while no server_args line is seen."""
    last_marker: int = 0
    unit: int = 0
    """What caps count in: the segment (between startup markers), or the whole server_args
    startup once one is seen."""
    evidence: list[Evidence] = field(default_factory=list)
    evidence_seen: set[tuple[int, str, str, bool]] = field(default_factory=set)
    coverage: dict[tuple[int, str], Bucket] = field(default_factory=dict)
    tags_first_line: dict[str, int] = field(default_factory=dict)
    n_tracked: int = 0
    """Rank tags in tags_first_line (the empty tag of untagged prefixed lines is no rank)."""
    untracked_rank_lines: int = 0
    """Lines of ranks past RANKS_CAP (not in the per-rank table)."""
    saw_prefix: bool = False
    platforms_seen: set[str] = field(default_factory=set)
    """Platforms with a marker event in the current server_args startup (one event each)."""
    platforms_startup: int = -1
    gpus_seen: set[tuple[str, tuple[tuple[str, Value], ...]]] = field(default_factory=set)
    """Environment-output readings with an event in the current server_args startup."""
    gpus_startup: int = -1
    last_progress_desc: tuple[int, str] | None = None
    kept_per_kind: dict[tuple[int, str, EventKind], int] = field(default_factory=dict)
    a_kind_full: bool = False
    """Some kind of some rank has reached its cap (memledger.input.parsing): from then on a line
    may be counted as not kept without being typed (its shape's outline is worth asking for)."""
    errors: ErrorTextReader = field(default_factory=ErrorTextReader)
    error_lines: dict[tuple[int, str], int] = field(default_factory=dict)
    """Lines that gave error readings, per (segment, rank), and per segment (rank `\0`)."""
    errors_not_read: int = 0
    """Lines holding error words that ERROR_TEXTS_CAP let go unread, in the whole log."""
    quiet: QuietLines = field(default_factory=QuietLines)
    """Which lines no reader before the grammar reads (per line shape)."""
    pasted_lines: int = 0
    """Bare lines read while no line had a prefix (the input may be a paste)."""
    pasted_init_lines: list[tuple[int, str, bool]] = field(default_factory=list)
    draft_may_init: set[str] = field(default_factory=set)
    """Ranks whose target worker printed a sglang.lines.DRAFT_INIT_AFTER line since their last
    summary or outcome: their next distributed init is the draft worker's, not a startup."""
    pasted_unrecognised: Bucket = field(default_factory=Bucket)
    skipped: dict[int, Bucket] = field(default_factory=dict)
    """Memory-looking lines not read, with why (bare lines of a prefixed log), per segment."""
    retained: int = 0
    """Items kept since the last eviction (events and summaries), for RETAINED_CAP."""
    let_go_before: int = 0
    """Without server_args lines: the first line still kept (0: nothing let go)."""
    let_go_items: int = 0
    let_go_init: dict[str, int] = field(default_factory=dict)
    """Prefixed init lines let go, per tag (they still count as startups)."""

    @property
    def segment(self) -> int:
        return self.unit

    @property
    def keeping(self) -> bool:
        return not self.window.closed

    def mark(self, line: int) -> None:
        if self.n_markers and self.last_marker == line:
            return
        self.n_markers += 1
        self.last_marker = line
        if self.window.count:
            return  # startups are server_args lines: caps count per startup
        self.unit = self.n_markers
        self.marker_starts.append((self.n_markers, line))
        if self.retained + len(self.marker_starts) > RETAINED_CAP:
            self._let_go_oldest()

    def see_tag(self, tag: str, line: int) -> None:
        """A prefixed line of `tag`: first sight decides whether its events are kept."""
        if tag in self.tags_first_line:
            return
        selectable, demoted = self.candidates.first_sight(tag)
        for other in demoted:
            self._summarise(other)
        if selectable or self.n_tracked < RANKS_CAP:
            self.tags_first_line[tag] = line
            self.n_tracked += bool(tag)

    def selectable(self, tag: str) -> bool:
        return tag in self.candidates.tags

    def start_server_args(self, line: int) -> None:
        """A server_args line: a startup begins; let go of what `--startup` cannot select."""
        self.mark(line)
        window = self.window
        if window.count and window.last_line == line:
            return
        index = window.count
        window.count += 1
        window.last_line = line
        if index == 0:  # startups are server_args lines from now on: init lines do not count
            self.init_lines.clear()
            self.pasted_init_lines.clear()
            self.let_go_init.clear()
            self.let_go_before = 0
        if window.closed:
            return
        previous = window.starts[-1][1] if window.starts else 0
        said = [e for e in self.evidence if preamble(e.kind, e.prefixed)] if index == 0 else []
        for item in self.stored:  # lines SGLang prints before the server_args line they precede
            first = bool(said) and preamble(item.event.kind, item.prefixed)
            if (before_startup(item.event) or first) and item.event.line > previous:
                item.segment = self.n_markers
        for evidence in said:
            evidence.segment = self.n_markers
        if window.wanted >= 0 and index > window.wanted:
            window.starts.append((index, line, self.n_markers))
            window.closed = True
            return
        self.unit = self.n_markers
        window.starts.append((index, line, self.n_markers))
        keep = 1 if window.wanted >= 0 else -window.wanted
        while len(window.starts) > keep:
            window.starts.popleft()
        self.marker_starts.clear()
        self._evict_before(window.starts[0][2], window.starts[0][1])

    def first_platform_marker(self, platform: str) -> bool:
        """True once per platform per server_args line (every rank prints the markers); the
        set is cleared at each startup, so it stays as small as the platform list."""
        if self.platforms_startup != self.window.count:
            self.platforms_startup = self.window.count
            self.platforms_seen.clear()
        if platform in self.platforms_seen:
            return False
        self.platforms_seen.add(platform)
        return True

    def keep_gpu_line(self, line: int, rank: str, prefixed: bool, text: str) -> bool:
        """A `gpu_named` or `release_named` event for what an environment output pasted with the
        log prints (memledger.sglang.env_reports: a GPU's name, memory or processes, the engine's
        release), prefixed or bare: once per reading per server_args line (every rank prints its
        config paths), at most GPU_EVIDENCE_CAP of them. True when one was kept."""
        found = report_evidence(text)
        if found is None:
            return False
        if self.gpus_startup != self.window.count:
            self.gpus_startup = self.window.count
            self.gpus_seen.clear()
        if found in self.gpus_seen or len(self.gpus_seen) >= GPU_EVIDENCE_CAP:
            return False
        self.gpus_seen.add(found)
        kind, values = found
        event = Event(kind=EventKind(kind), line=line, rank=rank, values=dict(values),
                      text=text[:TEXT_CAP])  # fmt: skip
        self.keep(Stored(event, prefixed, self.segment))
        return True

    def keep(self, item: Stored) -> None:
        """Keep a recognised line's event: in full for a selectable rank, else in its summary."""
        if not self.keeping:
            return
        event = item.event
        if (
            item.pasted
            or not item.prefixed
            or event.kind in RANK_AGNOSTIC
            or self.selectable(event.rank)
        ):
            self.stored.append(item)
            self.retained += 1
            return
        if event.rank not in self.tags_first_line:
            self.untracked_rank_lines += 1
            return
        key = (item.segment, event.rank)
        summary = self.summaries.get(key)
        if summary is None:
            summary = self.summaries[key] = RankSummary()
            self.retained += 1
        summary.add(event)

    def add_evidence(
        self, kind: EventKind, line: int, rank: str, prefixed: bool, reason: str, text: str
    ) -> None:
        if not self.keeping:
            return
        if kind in _FIRST_ONLY:
            key = (self.segment, kind.value, "", False)
        elif prefixed and rank and not (self.selectable(rank) or is_rank0_tag(rank)):
            return  # a summary line of a rank that can neither be selected nor lead
        else:
            key = (self.segment, kind.value, rank, prefixed)
        if key in self.evidence_seen:
            return
        self.evidence_seen.add(key)
        self.evidence.append(
            Evidence(kind, line, rank, prefixed, reason, text[:TEXT_CAP], self.segment)
        )

    def read_errors(
        self, line: int, text: str, rank: str, prefixed: bool, quiet: bool
    ) -> tuple[list[ErrorReading], str | None]:
        """The error events this line completes (input.error_texts), read while its rank and
        segment are within ERROR_TEXTS_CAP; and, for a line not read because of it that holds
        error words, the coverage reason to count it under."""
        key, every = (self.unit, rank), (self.unit, "\0")
        full = not quiet and (
            self.error_lines.get(key, 0) >= ERROR_TEXTS_CAP
            or self.error_lines.get(every, 0) >= ERROR_TEXTS_ALL_RANKS_CAP
        )
        # a full rank's line goes by as a quiet one: a traceback already open still closes
        readings = self.errors.feed(line, text, rank, prefixed, quiet=quiet or full)
        if readings:
            self.error_lines[key] = self.error_lines.get(key, 0) + 1
            self.error_lines[every] = self.error_lines.get(every, 0) + 1
            return readings, None
        if not full or not any(word in text.lower() for word in ERROR_WORDS):
            return readings, None
        self.errors_not_read += 1
        return readings, ERRORS_NOT_READ

    def add_unrecognised(
        self,
        line: int,
        rank: str,
        text: str,
        reason: str | Callable[[], str],
        bucket: Bucket | None = None,
    ) -> None:
        """Count a line in coverage, listed while the bucket has room (`reason` may be a
        function: worked out only for a line listed, not for the millionth of its kind)."""
        if bucket is None:
            if self.window.closed or (rank and rank not in self.candidates.tags):
                return  # coverage is the selected rank's (`keeping`, `selectable` inlined)
            key = (self.unit, rank)
            bucket = self.coverage.get(key)
            if bucket is None:
                bucket = self.coverage[key] = Bucket()
        bucket.count += 1
        if len(bucket.lines) < UNRECOGNISED_CAP:
            said = reason if isinstance(reason, str) else reason()
            bucket.lines.append(
                UnrecognisedLine(line=line, rank=rank, text=text[:TEXT_CAP], reason=said)
            )

    def _summarise(self, tag: str) -> None:
        """`tag` can no longer be selected: its kept events become summaries."""
        kept: list[Stored] = []
        for item in self.stored:
            event = item.event
            if item.prefixed and event.rank == tag and event.kind not in RANK_AGNOSTIC:
                key = (item.segment, tag)
                self.summaries.setdefault(key, RankSummary()).add(event)
            else:
                kept.append(item)
        self.stored = kept
        self.coverage = {k: b for k, b in self.coverage.items() if k[1] != tag}
        self.evidence = [e for e in self.evidence if not (e.prefixed and e.rank == tag)]
        self.evidence_seen = {k for k in self.evidence_seen if not (k[3] and k[2] == tag)}

    def _evict_before(self, segment: int, first_line: int) -> None:
        """Let go of every segment before `segment`, which begins at `first_line` (no startup
        that can be selected holds them)."""
        self.stored = [s for s in self.stored if s.segment >= segment]
        self.summaries = {k: v for k, v in self.summaries.items() if k[0] >= segment}
        self.coverage = {k: v for k, v in self.coverage.items() if k[0] >= segment}
        self.skipped = {k: v for k, v in self.skipped.items() if k >= segment}
        self.evidence = [e for e in self.evidence if e.segment >= segment]
        self.evidence_seen = {k for k in self.evidence_seen if k[0] >= segment}
        self.kept_per_kind = {k: v for k, v in self.kept_per_kind.items() if k[0] >= segment}
        self.error_lines = {k: v for k, v in self.error_lines.items() if k[0] >= segment}
        self.server_args_problems = [p for p in self.server_args_problems if p.line >= first_line]
        self.retained = len(self.stored) + len(self.summaries)

    def _let_go_oldest(self) -> None:
        """No server_args lines (yet): keep the newest half of RETAINED_CAP, by whole segments."""
        per_segment: dict[int, int] = {}
        for item in self.stored:
            per_segment[item.segment] = per_segment.get(item.segment, 0) + 1
        for segment, _tag in self.summaries:
            per_segment[segment] = per_segment.get(segment, 0) + 1
        counts = sorted(per_segment.items())
        total = sum(per_segment.values()) + len(self.marker_starts)
        cut, cut_line = self.marker_starts[-1]
        dropped = 0
        position = 0
        for n_markers_before, (segment, line) in enumerate(self.marker_starts):
            # cutting here lets go of the markers before this one and the segments before it
            while position < len(counts) and counts[position][0] < segment:
                dropped += counts[position][1]
                position += 1
            if total - dropped - n_markers_before <= RETAINED_CAP // 2 or segment == self.unit:
                cut, cut_line = segment, line
                break
        before = len(self.stored) + len(self.summaries)
        self._evict_before(cut, cut_line)
        self.let_go_items += before - self.retained
        self.let_go_before = max(self.let_go_before, cut_line)
        while self.marker_starts and self.marker_starts[0][0] < cut:
            self.marker_starts.popleft()
        for line, tag, prefixed in self.init_lines:
            if line < cut_line and prefixed:
                self.let_go_init[tag] = self.let_go_init.get(tag, 0) + 1
        self.init_lines = [i for i in self.init_lines if i[0] >= cut_line]


def rank_table(collector: Collector, in_range: list[Stored], lo: int, hi: int) -> list[RankInfo]:
    """Every rank of the startup: counted from its events, or from its summaries."""
    ranks: dict[str, list[Event]] = {}
    counts: dict[str, int] = {}
    for item in in_range:
        if item.prefixed and item.event.kind not in RANK_AGNOSTIC:
            ranks.setdefault(item.event.rank, []).append(item.event)
            counts[item.event.rank] = counts.get(item.event.rank, 0) + 1
    summaries: list[tuple[int, str, RankSummary]] = [
        (summary.first_line, tag, summary)
        for (_segment, tag), summary in collector.summaries.items()
        if lo <= summary.first_line <= hi
    ]
    for _line, tag, summary in sorted(summaries, key=lambda s: s[0]):
        ranks.setdefault(tag, []).extend(summary.firsts)
        counts[tag] = counts.get(tag, 0) + summary.n_events
    return [
        RankInfo(
            rank=tag,
            n_events=counts[tag],
            key_values=rank_key_values(sorted(tag_events, key=lambda e: e.line)),
        )
        for tag, tag_events in sorted(ranks.items(), key=lambda kv: rank_sort_key(kv[0]))
    ]


def bound_notes(collector: Collector, lo: int) -> list[str]:
    """What the memory bounds did not keep (memledger.input.store), said rather than dropped."""
    notes: list[str] = []
    if collector.untracked_rank_lines:
        notes.append(
            f"more than {RANKS_CAP:,} ranks: the per-rank table lists the first {RANKS_CAP:,} "
            f"seen; {collector.untracked_rank_lines:,} lines of further ranks are not in it"
        )
    overflow = collector.candidates.overflow
    if overflow:
        notes.append(
            f"{overflow:,} rank tags past the first {CANDIDATE_CAP} that could be selected "
            "(rank-0 or --rank variants) are not selectable; their lines are summarised"
        )
    if collector.errors_not_read:
        notes.append(
            f"memory bound: {collector.errors_not_read:,} lines of error text were counted, not "
            f"read (more than {ERROR_TEXTS_CAP} per rank and startup; the first are read)"
        )
    if collector.let_go_before and lo < collector.let_go_before:
        notes.append(
            f"memory bound: this startup's lines before line {collector.let_go_before:,} were not "
            f"kept ({collector.let_go_items:,} events; the log has no server_args lines and "
            f"memledger keeps its newest {RETAINED_CAP:,})"
        )
    return notes
