"""`parse_log`: a whole SGLang log -> `ParsedLog` (startups, the selected rank's events, outcome).

One streaming pass keeps every recognised line of every rank (a startup has few), plus small
bounded bookkeeping for outcome evidence and coverage; rank and startup selection happen at the
end, because the rank-0 rule ("no tag anywhere -> untagged lines are rank 0") and the startup rule
("server_args lines, else rank-0 init lines") need the whole file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memledger.config_files import read_config_text
from memledger.errors import InputError, SelectionError
from memledger.events import (
    Event,
    EventKind,
    ParamValue,
    ParsedLog,
    RankInfo,
    Startup,
    UnrecognisedLine,
    Value,
)
from memledger.input.error_texts import ErrorReading, ErrorTextReader
from memledger.input.linegrammar import LineGrammar, extra_keywords, load_grammar
from memledger.input.logical import LogicalLine, iter_logical_lines
from memledger.input.outcome import outcome_kind
from memledger.input.pasted import tidy_pasted
from memledger.input.ranks import (
    RankSelection,
    rank_key_values,
    rank_sort_key,
    select_rank,
)
from memledger.input.reader import (
    ByteSource,
    OpenedLog,
    ReadStats,
    decode_line,
    iter_candidate_lines,
    open_log,
)
from memledger.input.server_args import coverage_reason, parse_server_args
from memledger.input.transform import LineParse
from memledger.sglang.lines import KNOWN_HEAD_RE, MEMORY_LOOKING_RE, platform_marker

MAX_PARSE_CHARS = 4096
"""Messages longer than this are no SGLang memory line (server_args is parsed separately)."""
TEXT_CAP = 400
UNRECOGNISED_CAP = 50
"""How many unrecognised lines a startup lists (the count is exact)."""
_PER_BUCKET_CAP = UNRECOGNISED_CAP
EVENTS_PER_KIND_CAP = 2000
"""Recognised lines kept per kind, rank and startup segment; a startup prints far fewer. Beyond it
(a runtime line repeated for days) lines are counted as not kept, so memory stays flat."""

_ERROR_KINDS = frozenset(
    {
        EventKind.OOM_MESSAGE,
        EventKind.KV_REFUSAL,
        EventKind.TRACEBACK,
        EventKind.PROCESS_EXIT,
        EventKind.POOL_EXHAUSTED,
    }
)
_RANK_AGNOSTIC = (
    frozenset(
        {
            EventKind.SERVER_ARGS,
            EventKind.READY,
            EventKind.OOM,
            EventKind.CRASH,
            EventKind.GPU_CAPACITY_FALLBACK,
            EventKind.PLATFORM_MARKER,
        }
    )
    | _ERROR_KINDS
)
_BARE_RANK0 = frozenset({EventKind.CAPTURE_PROGRESS, EventKind.SUMMARY})
_BEFORE_STARTUP = frozenset({EventKind.GPU_CAPACITY_FALLBACK})
"""Rank-agnostic lines SGLang prints while building ServerArgs, before the `server_args` line
that starts a startup: they belong to the startup that follows them."""
_PROGRESS_EVERY = 64 << 20


@dataclass
class _Stored:
    """A recognised line of any rank, with what selection needs."""

    event: Event
    prefixed: bool
    segment: int
    pasted: bool = False
    """Read from a bare line while no line had shown a prefix (kept only if none ever does)."""


@dataclass
class _Evidence:
    kind: EventKind
    line: int
    rank: str
    prefixed: bool
    reason: str
    text: str
    segment: int


@dataclass
class _Bucket:
    count: int = 0
    lines: list[UnrecognisedLine] = field(default_factory=list)


@dataclass
class _Collector:
    """Everything one pass keeps; bounded by the number of recognised lines."""

    stored: list[_Stored] = field(default_factory=list)
    server_args_lines: list[int] = field(default_factory=list)
    server_args_problems: list[UnrecognisedLine] = field(default_factory=list)
    init_lines: list[tuple[int, str, bool]] = field(default_factory=list)
    marker_lines: list[int] = field(default_factory=list)
    evidence: list[_Evidence] = field(default_factory=list)
    evidence_seen: set[tuple[int, str, str, bool]] = field(default_factory=set)
    platforms_seen: set[tuple[int, str]] = field(default_factory=set)
    coverage: dict[tuple[int, str], _Bucket] = field(default_factory=dict)
    tags_first_line: dict[str, int] = field(default_factory=dict)
    saw_prefix: bool = False
    last_progress_desc: tuple[int, str] | None = None
    kept_per_kind: dict[tuple[int, str, str], int] = field(default_factory=dict)
    errors: ErrorTextReader = field(default_factory=ErrorTextReader)
    pasted_lines: int = 0
    """Bare lines read while no line had a prefix (the input may be a paste)."""
    pasted_init_lines: list[tuple[int, str, bool]] = field(default_factory=list)
    pasted_unrecognised: _Bucket = field(default_factory=_Bucket)
    skipped: dict[int, _Bucket] = field(default_factory=dict)
    """Memory-looking lines not read, with why (bare lines of a prefixed log), per segment."""

    @property
    def segment(self) -> int:
        return len(self.marker_lines)

    def mark(self, line: int) -> None:
        if not self.marker_lines or self.marker_lines[-1] != line:
            self.marker_lines.append(line)

    def add_evidence(self, kind: EventKind, logical: LogicalLine, reason: str) -> None:
        key = (self.segment, kind.value, logical.rank, logical.prefixed)
        if key in self.evidence_seen:
            return
        self.evidence_seen.add(key)
        self.evidence.append(
            _Evidence(
                kind,
                logical.line,
                logical.rank,
                logical.prefixed,
                reason,
                logical.text[:TEXT_CAP],
                self.segment,
            )
        )

    def add_platform(self, logical: LogicalLine) -> None:
        """One event per platform per `server_args` line (sglang.lines.PLATFORM_MARKERS: every
        rank prints them), prefixed or bare."""
        marker = platform_marker(logical.text)
        key = (len(self.server_args_lines), marker.platform if marker else "")
        if marker is not None and key not in self.platforms_seen:
            self.platforms_seen.add(key)
            values: dict[str, Value] = {"platform": marker.platform, "marker": marker.text}
            event = Event(kind=EventKind.PLATFORM_MARKER, line=logical.line, rank=logical.rank,
                          values=values, text=logical.text[:TEXT_CAP])  # fmt: skip
            self.stored.append(_Stored(event, logical.prefixed, self.segment))

    def add_errors(self, readings: list[ErrorReading]) -> None:
        """Error events of any rank (diagnosis needs the rank that failed), capped per kind."""
        for reading in readings:
            key = (self.segment, reading.rank, reading.kind.value)
            kept = self.kept_per_kind.get(key, 0)
            if kept >= EVENTS_PER_KIND_CAP:
                continue
            self.kept_per_kind[key] = kept + 1
            event = Event(
                kind=reading.kind,
                line=reading.line,
                rank=reading.rank,
                sizes=reading.sizes,
                values=reading.values,
                text=reading.text[:TEXT_CAP],
            )
            self.stored.append(_Stored(event, bool(reading.rank), self.segment))

    def add_unrecognised(
        self, logical: LogicalLine, reason: str, bucket: _Bucket | None = None
    ) -> None:
        if bucket is None:
            bucket = self.coverage.setdefault((self.segment, logical.rank), _Bucket())
        bucket.count += 1
        if len(bucket.lines) < _PER_BUCKET_CAP:
            bucket.lines.append(
                UnrecognisedLine(
                    line=logical.line,
                    rank=logical.rank,
                    text=logical.text[:TEXT_CAP],
                    reason=reason,
                )
            )


def _event(kind: EventKind, logical: LogicalLine, parsed: LineParse | None = None) -> Event:
    return Event(
        kind=kind,
        line=logical.line,
        rank=logical.rank,
        sizes=dict(parsed.sizes) if parsed else {},
        values=dict(parsed.values) if parsed else {},
        text=logical.text[:TEXT_CAP],
    )


def _progress_message(text: str) -> str:
    # tqdm line: keep the description only, `Capturing batches (bs=8 avail_mem=7.19 GB)`
    close = text.find(")")
    return text[: close + 1] if close > 0 else text


def _handle(logical: LogicalLine, grammar: LineGrammar, out: _Collector) -> None:
    text = logical.text
    if logical.prefixed:
        out.saw_prefix = True
        out.tags_first_line.setdefault(logical.rank, logical.line)
    if text.startswith("server_args="):
        out.mark(logical.line)
        out.server_args_lines.append(logical.line)
        problems: list[str] = []
        not_kept: list[str] = []
        event = Event(
            kind=EventKind.SERVER_ARGS,
            line=logical.line,
            rank=logical.rank,
            params=parse_server_args(text, problems, not_kept),
            # `server_args={...}` (a resolved dict, SGLang >= 0.5.19) or `ServerArgs(...)`
            values={"form": "dict" if text.startswith("server_args={") else "repr"},
            text=text[:TEXT_CAP],
        )
        out.stored.append(_Stored(event, logical.prefixed, out.segment))
        if (problems or not_kept) and len(out.server_args_problems) < _PER_BUCKET_CAP:
            # kept as text, so the engine treats them as absent: say so in every rank's coverage
            reason = coverage_reason(problems, not_kept)
            out.server_args_problems.append(
                UnrecognisedLine(
                    line=logical.line, rank=logical.rank, text=text[:TEXT_CAP], reason=reason
                )
            )
        return
    outcome = outcome_kind(text)
    if outcome is not None:
        out.add_evidence(outcome[0], logical, outcome[1])
    out.add_platform(logical)
    readings = out.errors.feed(logical.line, text, logical.rank, logical.prefixed)
    out.add_errors(readings)

    if not logical.prefixed and not (
        text.startswith("Capturing") or text.startswith("max_total_num_tokens=")
    ):
        if out.saw_prefix:
            # error text (an allocator message under a traceback) is read above: not skipped
            if outcome is None and not readings and MEMORY_LOOKING_RE.search(text):
                out.add_unrecognised(
                    logical, SKIPPED_BARE, out.skipped.setdefault(out.segment, _Bucket())
                )
            return
        parsed = _parse_pasted(logical, grammar, out)
        if parsed is not None or outcome is not None or readings:
            out.pasted_lines += 1
        if parsed is not None:
            _store(logical, tidy_pasted(text), parsed, out, pasted=True)
        return
    message = _progress_message(text) if text.startswith("Capturing") else text
    parsed = grammar.parse(message) if len(message) <= MAX_PARSE_CHARS else None
    if parsed is None:
        if logical.prefixed and MEMORY_LOOKING_RE.search(text):
            out.add_unrecognised(logical, _why_not_parsed(message))
        return
    _store(logical, message, parsed, out, pasted=False)


SKIPPED_BARE = "skipped: no SGLang prefix (the input's other lines have one)"


def _why_not_parsed(message: str) -> str:
    if len(message) > MAX_PARSE_CHARS:
        return f"too long to parse ({len(message)} characters)"
    if KNOWN_HEAD_RE.match(message):
        return "malformed: a known line shape that does not parse"
    return "unrecognised"


def _parse_pasted(logical: LogicalLine, grammar: LineGrammar, out: _Collector) -> LineParse | None:
    """A bare line of an input without prefixes, read as the message it holds (input/pasted)."""
    message = tidy_pasted(logical.text)
    parsed = grammar.parse(message) if 0 < len(message) <= MAX_PARSE_CHARS else None
    if parsed is None and MEMORY_LOOKING_RE.search(logical.text):
        out.add_unrecognised(logical, _why_not_parsed(message), out.pasted_unrecognised)
    return parsed


def _store(
    logical: LogicalLine, message: str, parsed: LineParse, out: _Collector, *, pasted: bool
) -> None:
    """Keep a recognised line (bounded per kind), with its startup and evidence bookkeeping."""
    if parsed.kind is EventKind.CAPTURE_PROGRESS:
        # one event per description change (tqdm repeats the same description per update)
        desc = (logical.line, message)
        previous = out.last_progress_desc
        out.last_progress_desc = desc
        if previous is not None and previous[1] == message:
            return
    if parsed.kind is EventKind.DIST_INIT_BEGIN and parsed.values.get("variant") in (
        "torch_distributed",
        "nccl",
    ):
        if pasted:  # a startup marker only if the whole input turns out to be a paste
            out.pasted_init_lines.append((logical.line, logical.rank, True))
        else:
            out.mark(logical.line)
            out.init_lines.append((logical.line, logical.rank, logical.prefixed))
    if parsed.kind is EventKind.SUMMARY:
        out.add_evidence(EventKind.SUMMARY, logical, "max_total_num_tokens=")
    coverage = out.pasted_unrecognised if pasted else None
    if parsed.problems and (logical.prefixed or pasted):
        out.add_unrecognised(logical, "malformed: " + "; ".join(parsed.problems), coverage)
    kept_key = (out.segment, logical.rank, parsed.kind.value)
    kept = out.kept_per_kind.get(kept_key, 0)
    if kept >= EVENTS_PER_KIND_CAP:
        out.add_unrecognised(
            logical, f"not kept: more than {EVENTS_PER_KIND_CAP} {parsed.kind} lines", coverage
        )
        return
    out.kept_per_kind[kept_key] = kept + 1
    event = _event(parsed.kind, logical, parsed)
    out.stored.append(_Stored(event, logical.prefixed or pasted, out.segment, pasted))


def _startup_starts(collector: _Collector, selection: RankSelection, any_tag: bool) -> list[int]:
    if collector.server_args_lines:
        return sorted(set(collector.server_args_lines))
    starts = [
        line
        for line, tag, prefixed in collector.init_lines
        if prefixed and selection.leads(tag, any_tag)
    ]
    return sorted(set(starts)) or [1]


def _outcome(
    collector: _Collector, lo: int, hi: int, selection: RankSelection, any_tag: bool
) -> tuple[str, int | None, str, list[Event]]:
    evidence = [e for e in collector.evidence if lo <= e.line <= hi]
    ready_like = [
        e
        for e in evidence
        if e.kind is EventKind.READY
        or (e.kind is EventKind.SUMMARY and (not e.prefixed or selection.leads(e.rank, any_tag)))
    ]
    outcome_events: list[Event] = []
    decided: tuple[str, int | None, str] = ("truncated", None, "")
    for kind, name in ((EventKind.OOM, "oom"), (EventKind.CRASH, "crash")):
        hits = sorted((e for e in evidence if e.kind is kind), key=lambda e: e.line)
        if hits:
            first = hits[0]
            outcome_events.append(
                Event(
                    kind=kind,
                    line=first.line,
                    rank=first.rank,
                    values={"reason": first.reason},
                    text=first.text,
                )
            )
            if decided[0] == "truncated":
                decided = (name, first.line, _reason(collector, first, selection))
    if ready_like:
        first_ready = min(ready_like, key=lambda e: e.line)
        outcome_events.append(
            Event(
                kind=EventKind.READY,
                line=first_ready.line,
                rank=first_ready.rank,
                text=first_ready.text,
            )
        )
        if decided[0] == "truncated":
            decided = ("ready", first_ready.line, first_ready.text)
    return decided[0], decided[1], decided[2], outcome_events


def _reason(collector: _Collector, hit: _Evidence, selection: RankSelection) -> str:
    """What the deciding line says happened, in words to act on: a traceback's exception line
    instead of its header (`Scheduler hit an exception: TypeError: cannot unpack ...`, not
    `... Traceback (most recent call last):`), after the rank it came from when that is not the
    selected rank (`TP6: ...` in TP0's account)."""
    text = hit.text.strip()
    if hit.kind is EventKind.CRASH:
        traceback = next(
            (
                stored.event
                for stored in collector.stored
                if stored.event.kind is EventKind.TRACEBACK
                # the header's own line, or the `Traceback ...` line right after it
                and hit.line <= stored.event.line <= hit.line + 1
                and stored.event.values.get("exception")
            ),
            None,
        )
        if traceback is not None:
            context = traceback.values.get("context")
            text = f"{context}: {traceback.text}" if context else traceback.text
    if hit.rank and hit.rank not in selection.tags:
        text = f"{hit.rank}: {text}"
    return text


class _Progress:
    """Bytes-read progress on stderr for large inputs (only when asked: the CLI passes isatty)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.next_report = _PROGRESS_EVERY
        self.printed = False

    def __call__(self, done: int, total: int | None) -> None:
        if not self.enabled or done < self.next_report:
            return
        self.next_report = done + _PROGRESS_EVERY
        share = f" ({100 * done // total}%)" if total else ""
        sys.stderr.write(f"\rmemledger: read {done >> 20} MiB{share}")
        sys.stderr.flush()
        self.printed = True

    def finish(self) -> None:
        if self.printed:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _read_grammar_text(path: Path) -> str:
    return read_config_text(path, "grammar file", directory_hint=", not a .lark file")


def parse_log(
    source: str | os.PathLike[str] | IO[bytes] | ByteSource | OpenedLog,
    *,
    label: str | None = None,
    rank: str | None = None,
    startup: int | None = None,
    extra_grammars: Sequence[Path] = (),
    progress: bool = False,
) -> ParsedLog:
    """Parse a log (path, `-` for stdin, or a byte stream) into its selected startup and rank.

    `rank`: a tag such as `TP3` or `"DP1 TP8 EP8"` (default: rank 0 per the real-logs rule).
    `startup`: 0-based startup index (default: the last; negative counts from the end).
    Raises InputError (unreadable/empty/binary/no SGLang lines), SelectionError (rank or startup
    not in the log), ConfigError (a --grammar that does not build).
    """
    extra_texts = [_read_grammar_text(Path(p)) for p in extra_grammars]
    collector = _Collector()
    stats = ReadStats()
    with open_log(source) as log:
        display = label or log.name
        meter = _Progress(progress)
        try:
            # start scanning first: a grep prefilter runs while the grammar builds
            lines = iter_candidate_lines(log, stats, extra_keywords(extra_texts), meter)
            grammar = load_grammar(extra_grammars)
            for line_number, raw in lines:
                text = decode_line(raw, stats)
                for logical in iter_logical_lines(line_number, text):
                    _handle(logical, grammar, collector)
            grammar.save_shapes()  # for the next run: known shapes skip lark
        except InputError as exc:
            raise InputError(exc.message, path=display) from exc
        finally:
            meter.finish()
    collector.add_errors(collector.errors.finish())
    notes = _settle_pasted(collector)

    if not collector.saw_prefix and not collector.stored:
        raise InputError(
            "no SGLang log lines found (no `[date time TP0]` prefix, no known line)", path=display
        )

    any_tag = any(tag for tag in collector.tags_first_line)
    try:
        selection = select_rank(rank, collector.tags_first_line)
    except SelectionError as exc:
        raise SelectionError(exc.message, path=display) from None
    if selection.note:
        notes.append(selection.note)
    starts = _startup_starts(collector, selection, any_tag)
    n_startups = len(starts)
    if startup is None:
        index = n_startups - 1
    elif -n_startups <= startup < n_startups:
        index = startup % n_startups
    else:
        raise SelectionError(
            f"startup {startup} does not exist: this log has {n_startups} startup(s), "
            f"numbered 0 to {n_startups - 1}",
            path=display,
        )
    lo = starts[index]
    hi = starts[index + 1] - 1 if index + 1 < n_startups else max(stats.n_lines, lo)

    def selected(item: _Stored) -> bool:
        event = item.event
        if event.kind in _RANK_AGNOSTIC:
            return True
        if not item.prefixed:
            return selection.rank0 and event.kind in _BARE_RANK0
        return event.rank in selection.tags

    def in_startup(item: _Stored) -> bool:
        line = item.event.line
        if item.event.kind in _BEFORE_STARTUP:
            return next((start for start in starts if start >= line), starts[-1]) == lo
        return lo <= line <= hi

    in_range = [s for s in collector.stored if in_startup(s)]
    events = [s.event for s in in_range if selected(s)]
    outcome, outcome_line, outcome_text, outcome_events = _outcome(
        collector, lo, hi, selection, any_tag
    )
    events = sorted(events + outcome_events, key=lambda e: e.line)

    server_args: dict[str, ParamValue] = {}
    for event in events:
        if event.kind is EventKind.SERVER_ARGS and event.params:
            server_args = event.params
            break

    unrecognised: list[UnrecognisedLine] = []
    unrecognised_count = 0
    for (_segment, tag), bucket in collector.coverage.items():
        # a bucket holds one segment; a segment lies wholly inside or outside each startup
        if tag in selection.tags and bucket.lines and lo <= bucket.lines[0].line <= hi:
            unrecognised_count += bucket.count
            unrecognised.extend(bucket.lines)
    for problem in collector.server_args_problems:
        if lo <= problem.line <= hi:
            unrecognised_count += 1
            unrecognised.append(problem)
    unrecognised.sort(key=lambda u: u.line)
    skipped: list[UnrecognisedLine] = []
    skipped_count = 0
    for bucket in collector.skipped.values():
        if bucket.lines and lo <= bucket.lines[0].line <= hi:
            skipped_count += bucket.count
            skipped.extend(bucket.lines)
    skipped.sort(key=lambda u: u.line)

    ranks: dict[str, list[Event]] = {}
    for item in in_range:
        if item.prefixed and item.event.kind not in _RANK_AGNOSTIC:
            ranks.setdefault(item.event.rank, []).append(item.event)
    rank_infos = [
        RankInfo(rank=tag, n_events=len(tag_events), key_values=rank_key_values(tag_events))
        for tag, tag_events in sorted(ranks.items(), key=lambda kv: rank_sort_key(kv[0]))
    ]

    chosen = Startup(
        index=index,
        first_line=lo,
        last_line=hi,
        rank=selection.label,
        events=events,
        server_args=server_args,
        outcome=outcome,
        outcome_line=outcome_line,
        outcome_text=outcome_text[:TEXT_CAP],
        unrecognised=unrecognised[:UNRECOGNISED_CAP],
        unrecognised_count=unrecognised_count,
        skipped=skipped[:UNRECOGNISED_CAP],
        skipped_count=skipped_count,
        ranks=rank_infos,
    )
    return ParsedLog(
        path=display,
        n_lines=stats.n_lines,
        n_startups=n_startups,
        selected=index,
        startup=chosen,
        invalid_utf8_bytes=stats.invalid_utf8_bytes,
        notes=notes,
    )


def _settle_pasted(collector: _Collector) -> list[str]:
    """Bare lines read before any prefix: the input's lines if none ever came, else skipped."""
    pasted = [item for item in collector.stored if item.pasted]
    if not collector.saw_prefix:
        collector.init_lines.extend(collector.pasted_init_lines)
        bucket = collector.coverage.setdefault((0, ""), _Bucket())
        bucket.count += collector.pasted_unrecognised.count
        bucket.lines.extend(collector.pasted_unrecognised.lines[:_PER_BUCKET_CAP])
        bucket.lines.sort(key=lambda u: u.line)
        n = collector.pasted_lines
        return [f"no SGLang prefix: read {n} pasted line{'s' if n != 1 else ''}"] if n else []
    collector.stored = [item for item in collector.stored if not item.pasted]
    # they all come before the first prefixed line: the first segment
    first = collector.skipped.setdefault(0, _Bucket())
    early = [
        UnrecognisedLine(line=i.event.line, rank="", text=i.event.text, reason=SKIPPED_BARE)
        for i in pasted
    ] + [u.model_copy(update={"reason": SKIPPED_BARE}) for u in collector.pasted_unrecognised.lines]
    first.count += len(pasted) + collector.pasted_unrecognised.count
    first.lines = sorted([*early, *first.lines], key=lambda u: u.line)[:_PER_BUCKET_CAP]
    return []
