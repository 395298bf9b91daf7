"""`parse_log`: a whole SGLang log -> `ParsedLog` (startups, the selected rank's events, outcome).

One streaming pass keeps every recognised line of every rank (a startup has few), plus small
bounded bookkeeping for outcome evidence and coverage; rank and startup selection happen at the
end, because the rank-0 rule ("no tag anywhere -> untagged lines are rank 0") and the startup rule
("server_args lines, else rank-0 init lines") need the whole file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO

from memledger.config_files import read_config_text
from memledger.errors import InputError, SelectionError
from memledger.input.error_texts import ErrorReading
from memledger.input.launch_command import find_launch_command, with_launch_command
from memledger.input.linegrammar import LineGrammar, extra_keywords, known_head, load_grammar
from memledger.input.logical import LogicalLine
from memledger.input.outcome import outcome_kind
from memledger.input.pasted import tidy_pasted, without_links
from memledger.input.ranks import RankSelection, head_tags, rank0_after_head, select_rank
from memledger.input.reader import (
    SNIFF_BYTES,
    ByteSource,
    OpenedLog,
    ProgressMeter,
    ReadStats,
    iter_candidate_texts,
    open_log,
)
from memledger.input.server_args import bounded_parts, coverage_reason, parse_server_args
from memledger.input.store import (
    RANK_AGNOSTIC,
    RETAINED_CAP,
    TEXT_CAP,
    UNRECOGNISED_CAP,
    Bucket,
    Collector,
    Evidence,
    RankCandidates,
    Stored,
    Window,
    before_startup,
    bound_notes,
    preamble,
    rank_table,
)
from memledger.input.transform import LineParse
from memledger.input.wrapped import CutLines
from memledger.model.events import (
    Event,
    EventKind,
    LineCause,
    ParamValue,
    ParsedLog,
    Startup,
    UnrecognisedLine,
    Value,
)
from memledger.sglang.lines import (
    DRAFT_INIT_AFTER,
    DRAFT_INIT_UNTIL,
    ENV_VAR_HEADS,
    ENV_VAR_NAMES,
    SERVING_BATCH_STARTS,
    looks_like_memory,
    platform_marker,
    read_serving_batch,
    wanted_env_line,
)

MAX_PARSE_CHARS = 4096
"""Messages longer than this are no SGLang memory line (server_args is parsed separately)."""
EVENTS_PER_KIND_CAP = 2000
"""Recognised lines kept per kind, rank and startup (a segment between startup markers while no
server_args line is seen); a startup prints far fewer. Beyond it (a runtime line repeated for
days) lines are counted as not kept, so memory stays flat."""

_BARE_RANK0 = frozenset({EventKind.CAPTURE_PROGRESS, EventKind.SUMMARY})


def _add_errors(out: Collector, readings: list[ErrorReading]) -> None:
    """Error events of any rank (diagnosis needs the rank that failed), capped per kind and rank
    and, over all ranks, per kind."""
    for reading in readings:
        key = (out.segment, reading.rank, reading.kind)
        every_rank = (out.segment, "\0every rank", reading.kind)
        kept = out.kept_per_kind.get(key, 0)
        if kept >= EVENTS_PER_KIND_CAP or out.kept_per_kind.get(every_rank, 0) >= RETAINED_CAP:
            continue
        out.kept_per_kind[key] = kept + 1
        out.kept_per_kind[every_rank] = out.kept_per_kind.get(every_rank, 0) + 1
        event = Event(
            kind=reading.kind,
            line=reading.line,
            rank=reading.rank,
            sizes=reading.sizes,
            values=reading.values,
            text=reading.text[:TEXT_CAP],
        )
        out.keep(Stored(event, bool(reading.rank), out.segment))


def _unrecognised(
    out: Collector,
    logical: LogicalLine,
    reason: str | Callable[[], str],
    bucket: Bucket | None = None,
) -> None:
    out.add_unrecognised(logical.line, logical.rank, logical.text, reason, bucket)


def _evidence(out: Collector, kind: EventKind, logical: LogicalLine, reason: str) -> None:
    out.add_evidence(kind, logical.line, logical.rank, logical.prefixed, reason, logical.text)


def _event(kind: EventKind, logical: LogicalLine, parsed: LineParse | None = None) -> Event:
    return Event(
        kind=kind,
        line=logical.line,
        rank=logical.rank,
        sizes=dict(parsed.sizes) if parsed else {},
        values=dict(parsed.values) if parsed else {},
        text=logical.text[:TEXT_CAP],
    )


def _server_args_event(
    line: int, rank: str, text: str, params: dict[str, ParamValue] | None
) -> Event:
    return Event(
        kind=EventKind.SERVER_ARGS,
        line=line,
        rank=rank,
        params=params,
        # `server_args={...}` (a resolved dict, SGLang >= 0.5.19) or `ServerArgs(...)`
        values={"form": "dict" if text.startswith("server_args={") else "repr"},
        text=text[:TEXT_CAP],
    )


def _read_server_args(collector: Collector, lo: int, hi: int) -> None:
    """Parse the kept server_args lines of the selected startup (the store keeps their text)."""
    for item in collector.stored:
        text = item.server_args_text
        if text is None or not lo <= item.event.line <= hi:
            continue
        problems: list[str] = []
        not_kept: list[str] = []
        params = parse_server_args(text, problems, not_kept)
        item.event = _server_args_event(item.event.line, item.event.rank, text, params)
        item.server_args_text = None
        if (problems or not_kept) and len(collector.server_args_problems) < UNRECOGNISED_CAP:
            # kept as text, so the engine treats them as absent: say so in every rank's coverage
            collector.server_args_problems.append(
                UnrecognisedLine(
                    line=item.event.line,
                    rank=item.event.rank,
                    text=text[:TEXT_CAP],
                    reason=coverage_reason(problems, not_kept),
                    cause=LineCause.GAP if problems else LineCause.READ_IN_PART,
                    bounded=bounded_parts(not_kept),
                )
            )


def _progress_message(text: str) -> str:
    # tqdm line: keep the description only, `Capturing batches (bs=8 avail_mem=7.19 GB)`
    close = text.find(")")
    return text[: close + 1] if close > 0 else text


def _add_platform(out: Collector, logical: LogicalLine) -> None:
    """One event per platform per `server_args` line (sglang.lines.PLATFORM_MARKERS: every
    rank prints them), prefixed or bare."""
    marker = platform_marker(logical.text)
    if marker is None or not out.first_platform_marker(marker.platform):
        return
    values: dict[str, Value] = {"platform": marker.platform, "marker": marker.text}
    event = Event(kind=EventKind.PLATFORM_MARKER, line=logical.line, rank=logical.rank,
                  values=values, text=logical.text[:TEXT_CAP])  # fmt: skip
    out.keep(Stored(event, logical.prefixed, out.segment))


def _handle(logical: LogicalLine, grammar: LineGrammar, out: Collector) -> None:
    text = logical.text
    if not logical.prefixed and "**" in text:
        # markdown bold inside a quoted message (`Please try to **increase** ...`): the error
        # texts are read without it, as a pasted line's message is (input.pasted)
        text = text.replace("**", "")
    if not logical.prefixed and "](" in text:
        text = without_links(text)  # a sentence's markdown links, as the page shows them
    if logical.prefixed:
        out.saw_prefix = True
        out.see_tag(logical.rank, logical.line)
    if text.startswith("server_args="):
        out.start_server_args(logical.line)
        # parsed at the end if its startup is the one selected (100,000 startups: one parse)
        event = _server_args_event(logical.line, logical.rank, text, None)
        out.keep(Stored(event, logical.prefixed, out.segment, server_args_text=text))
        return
    # most lines: no outcome phrase, platform marker or error text
    quiet = out.quiet(text, logical.prefixed)
    outcome = None if quiet else outcome_kind(text)
    if outcome is not None:
        _evidence(out, outcome[0], logical, outcome[1])
        out.draft_may_init.clear()  # the server is up or down: a distributed init restarts it
    gpu = False
    if not quiet:
        _add_platform(out, logical)
        gpu = out.keep_gpu_line(logical.line, logical.rank, logical.prefixed, logical.text)
    readings, unread = out.read_errors(logical.line, text, logical.rank, logical.prefixed, quiet)
    if readings:
        _add_errors(out, readings)
    # SGLang's line that changed a setting is read whole (memledger.sglang.adjustments)
    adjusted = any(r.kind is EventKind.SETTING_ADJUSTED for r in readings)

    if not logical.prefixed and text.startswith(ENV_VAR_HEADS):
        # the launcher's environment, printed bare before the server starts (sglang.lines)
        wanted = wanted_env_line(text) and len(text) <= MAX_PARSE_CHARS
        env = grammar.parse(text) if wanted else None
        if env is not None and env.kind is EventKind.ENV_VAR and ENV_VAR_NAMES & env.values.keys():
            _store(logical, text, env, out, pasted=False)
        return
    if not logical.prefixed and not (
        text.startswith("Capturing") or text.startswith("max_total_num_tokens=")
    ):
        if out.saw_prefix:
            # error text (an allocator message under a traceback) is read above: not skipped
            if outcome is None and not readings and looks_like_memory(text):
                _unrecognised(
                    out, logical, SKIPPED_BARE, out.skipped.setdefault(out.segment, Bucket())
                )
            return
        parsed = None if adjusted else _parse_pasted(logical, grammar, out)
        if parsed is not None or outcome is not None or readings or gpu:
            out.pasted_lines += 1
        if parsed is not None:
            _store(logical, tidy_pasted(text, MAX_PARSE_CHARS), parsed, out, pasted=True)
        return
    if text.startswith(SERVING_BATCH_STARTS):
        serving = read_serving_batch(text)  # the scanner kept the last one before a kept line
        if serving is not None:
            parsed = LineParse(EventKind.SERVING_BATCH, values=dict(serving))
            _store(logical, text[:MAX_PARSE_CHARS], parsed, out, pasted=False)
            return
    message = _progress_message(text) if text.startswith("Capturing") else text
    if (
        out.a_kind_full  # else no line is past its cap: nothing to save
        and len(message) <= MAX_PARSE_CHARS
        and (outline := grammar.outline(message)) is not None
    ):
        # a shape all of whose lines type alike: typed only if kept (not if past the cap)
        _store(logical, message, outline, out, pasted=False, typed_by=grammar)
        return
    parsed = grammar.parse(message) if len(message) <= MAX_PARSE_CHARS else None
    if parsed is None:
        if (
            logical.prefixed
            and not adjusted
            and (unread or looks_like_memory(text) or grammar.meant_for(message))
        ):
            _unrecognised(out, logical, unread or (lambda: _why_not_parsed(message, grammar)))
        return
    _store(logical, message, parsed, out, pasted=False)


def _not_kept(kind: EventKind) -> str:
    return f"not kept: more than {EVENTS_PER_KIND_CAP} {kind} lines"


SKIPPED_BARE = "skipped: no SGLang prefix (the input's other lines have one)"


def _why_not_parsed(message: str, grammar: LineGrammar) -> str:
    if len(message) > MAX_PARSE_CHARS:
        return f"too long to parse ({len(message)} characters)"
    if (rule := grammar.meant_for(message)) is not None:
        return f"starts as --grammar rule {rule}, which does not parse it"
    if known_head(message):
        return "malformed: a known line shape that does not parse"
    return "unrecognised"


def _parse_pasted(logical: LogicalLine, grammar: LineGrammar, out: Collector) -> LineParse | None:
    """A bare line of an input without prefixes, read as the message it holds (input/pasted)."""
    message = tidy_pasted(logical.text, MAX_PARSE_CHARS)  # bounded before any pattern runs
    serving = read_serving_batch(message) if message.startswith(SERVING_BATCH_STARTS) else None
    if serving is not None:
        return LineParse(EventKind.SERVING_BATCH, values=dict(serving))
    parsed = grammar.parse(message) if 0 < len(message) <= MAX_PARSE_CHARS else None
    if parsed is None and (looks_like_memory(logical.text) or grammar.meant_for(message)):
        _unrecognised(out, logical, _why_not_parsed(message, grammar), out.pasted_unrecognised)
    return parsed


def _store(
    logical: LogicalLine,
    message: str,
    parsed: LineParse,
    out: Collector,
    *,
    pasted: bool,
    typed_by: LineGrammar | None = None,
) -> None:
    """Keep a recognised line (bounded per kind), with its startup and evidence bookkeeping.

    With `typed_by`, `parsed` is an outline (LineGrammar.outline): its kind, size keys and
    problems (none) are the line's, not its values; the line is typed before any value is read
    or once it is kept, so a line past its kind's cap is counted without being typed."""
    if parsed.kind is EventKind.CAPTURE_PROGRESS:
        if "avail" not in parsed.sizes:  # vLLM's `Capturing CUDA graphs (decode, FULL)`: every
            return  # SGLang bar says avail_mem (v0.5.6 cuda_graph_runner.py:474, cpu_...:475)
        # one event per description change (tqdm repeats the same description per update)
        desc = (logical.line, message)
        previous = out.last_progress_desc
        out.last_progress_desc = desc
        if previous is not None and previous[1] == message:
            return
    if typed_by is not None and (
        parsed.kind is EventKind.DIST_INIT_BEGIN or parsed.kind.value in DRAFT_INIT_AFTER
    ):  # values are read next (the init's variant, the worker's role): the line's own
        parsed, typed_by = _typed(typed_by, message), None
    if parsed.kind.value in DRAFT_INIT_AFTER and parsed.values.get("role") != "draft":
        out.draft_may_init.add(logical.rank)
    elif parsed.kind.value == DRAFT_INIT_UNTIL:
        out.draft_may_init.clear()  # rank 0's (or bench_one_batch's bare) line: every worker built
    if (
        parsed.kind is EventKind.DIST_INIT_BEGIN
        and parsed.values.get("variant") in ("torch_distributed", "nccl")
        and logical.rank not in out.draft_may_init  # else the draft worker's own init
    ):
        if pasted:  # a startup marker only if the whole input turns out to be a paste
            out.pasted_init_lines.append((logical.line, logical.rank, True))
        else:
            out.mark(logical.line)
            out.init_lines.append((logical.line, logical.rank, logical.prefixed))
    if parsed.kind is EventKind.SUMMARY:
        _evidence(out, EventKind.SUMMARY, logical, "max_total_num_tokens=")
    if not out.keeping:
        return
    coverage = out.pasted_unrecognised if pasted else None
    if parsed.problems and (logical.prefixed or pasted):
        _unrecognised(out, logical, "malformed: " + "; ".join(parsed.problems), coverage)
    if logical.prefixed and logical.rank not in out.tags_first_line:
        out.untracked_rank_lines += 1  # a rank past RANKS_CAP: counted, not summarised
        return
    kept_key = (out.segment, logical.rank, parsed.kind)
    kept = out.kept_per_kind.get(kept_key, 0)
    if kept >= EVENTS_PER_KIND_CAP:
        _unrecognised(out, logical, partial(_not_kept, parsed.kind), coverage)
        return
    out.kept_per_kind[kept_key] = kept + 1
    if kept + 1 == EVENTS_PER_KIND_CAP:
        out.a_kind_full = True
    if typed_by is not None:
        parsed = _typed(typed_by, message)
    event = _event(parsed.kind, logical, parsed)
    out.keep(Stored(event, logical.prefixed or pasted, out.segment, pasted))


def _typed(grammar: LineGrammar, message: str) -> LineParse:
    """The typed parse of an outlined line (LineGrammar.outline: its shape parsed)."""
    typed = grammar.parse(message)
    assert typed is not None, "a message of an outlined shape parses"  # shapecache.Shape
    return typed


def _startup_range(
    collector: Collector,
    selection: RankSelection,
    any_tag: bool,
    startup: int | None,
    n_lines: int,
    display: str,
) -> tuple[int, int, int, int, Callable[[Stored], bool]]:
    """(number of startups, selected index, first line, last line) of the startup asked for,
    and which kept items are in it."""
    window = collector.window
    if window.count:  # startups begin at server_args lines; the store kept the one(s) asked for
        n_startups = window.count
        index = _startup_index(startup, n_startups, display)
        starts = {position: (line, segment) for position, line, segment in window.starts}
        lo, segment = starts[index]
        hi = starts[index + 1][0] - 1 if index + 1 in starts else max(n_lines, lo)

        def in_kept_startup(item: Stored) -> bool:
            if before_startup(item.event) or item.event.line < lo:  # the store gave them the
                return item.segment == segment  # next startup's (store.preamble: the first's)
            return lo <= item.event.line <= hi

        return n_startups, index, lo, hi, in_kept_startup
    let_go = sum(n for tag, n in collector.let_go_init.items() if selection.leads(tag, any_tag))
    kept = sorted(
        {
            line
            for line, tag, prefixed in collector.init_lines
            if prefixed and selection.leads(tag, any_tag)
        }
    )
    if not kept and not let_go:
        kept = [1]
    n_startups = let_go + len(kept)
    index = _startup_index(startup, n_startups, display)
    if index < let_go:
        raise SelectionError(
            f"startup {index} was not kept: this log has {n_startups} startups and no "
            f"server_args lines, and memledger keeps only its newest {RETAINED_CAP} events "
            f"(from line {collector.let_go_before})",
            path=display,
        )
    position = index - let_go
    lo = kept[position]
    hi = kept[position + 1] - 1 if position + 1 < len(kept) else max(n_lines, lo)

    said = any(e.line < kept[0] and preamble(e.kind, e.prefixed) for e in collector.evidence)

    def in_startup(item: Stored) -> bool:
        line = item.event.line
        if before_startup(item.event) or (  # the startup that follows them
            said and line < kept[0] and preamble(item.event.kind, item.prefixed)
        ):
            return next((start for start in kept if start >= line), kept[-1]) == lo
        return lo <= line <= hi

    return n_startups, index, lo, hi, in_startup


def _startup_index(startup: int | None, n_startups: int, display: str) -> int:
    if startup is None:
        return n_startups - 1
    if -n_startups <= startup < n_startups:
        return startup % n_startups
    raise SelectionError(
        f"startup {startup} does not exist: this log has {n_startups} startup(s), "
        f"numbered 0 to {n_startups - 1}",
        path=display,
    )


def _outcome(
    collector: Collector, lo: int, hi: int, selection: RankSelection, any_tag: bool, opening: bool
) -> tuple[str, int | None, str, list[Event]]:
    # the first startup's also what the reporter wrote above it (store.preamble), after its own
    evidence = [
        e
        for e in collector.evidence
        if lo <= e.line <= hi or (opening and e.line < lo and preamble(e.kind, e.prefixed))
    ]
    ready_like = [
        e
        for e in evidence
        if e.kind is EventKind.READY
        or (e.kind is EventKind.SUMMARY and (not e.prefixed or selection.leads(e.rank, any_tag)))
    ]
    outcome_events: list[Event] = []
    decided: tuple[str, int | None, str] = ("truncated", None, "")
    for kind, name in ((EventKind.OOM, "oom"), (EventKind.CRASH, "crash")):
        hits = sorted((e for e in evidence if e.kind is kind), key=lambda e: (e.line < lo, e.line))
        if hits:
            first = hits[0]
            outcome_events.append(_outcome_event(kind, first))
            if decided[0] == "truncated":
                decided = (name, first.line, _reason(collector, first, selection))
    if ready_like:
        first_ready = min(ready_like, key=lambda e: e.line)
        outcome_events.append(_outcome_event(EventKind.READY, first_ready))
        if decided[0] == "truncated":
            decided = ("ready", first_ready.line, first_ready.text)
    return decided[0], decided[1], decided[2], outcome_events


def _outcome_event(kind: EventKind, hit: Evidence) -> Event:
    """The event of an outcome: the line that decided it, and the phrase it matched."""
    return Event(
        kind=kind, line=hit.line, rank=hit.rank, values={"reason": hit.reason}, text=hit.text
    )


def _reason(collector: Collector, hit: Evidence, selection: RankSelection) -> str:
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
    collector = Collector(RankCandidates(rank), Window(-1 if startup is None else startup))
    stats = ReadStats()
    with open_log(source) as log:
        display = label or log.name
        for tag, line in head_tags(log.head, whole=len(log.head) < SNIFF_BYTES):
            collector.see_tag(tag, line)
        launch = find_launch_command(log.head, whole=len(log.head) < SNIFF_BYTES)
        meter = ProgressMeter(progress)
        try:
            # start scanning first: a grep prefilter runs while the grammar builds
            decoded = iter_candidate_texts(log, stats, extra_keywords(extra_texts), meter)
            grammar = load_grammar(extra_grammars)
            cut_lines = CutLines(grammar)
            for logical in cut_lines.lines(decoded):
                _handle(logical, grammar, collector)
            grammar.save_shapes()  # for the next run: known shapes skip lark
            if rank is None and len(log.head) >= SNIFF_BYTES:  # a rank 0 past the head
                rank0_after_head(source, log, collector.tags_first_line, collector.see_tag)
        except InputError as exc:
            raise InputError(exc.message, path=display) from exc
        finally:
            meter.finish()
    _add_errors(collector, collector.errors.finish())
    notes = _settle_pasted(collector) + cut_lines.notes()

    no_lines = not collector.saw_prefix and not collector.stored and not collector.tags_first_line
    # a pasted launch command alone is still settings; an out-of-memory phrase alone (prose, an
    # error line without PyTorch's sizes) is still an OOM to diagnose, if only by its phase's levers
    said_oom = any(e.kind is EventKind.OOM for e in collector.evidence)
    if no_lines and launch is None and not said_oom:
        raise InputError(
            "no SGLang log lines found (no `[date time TP0]` prefix, no known line)", path=display
        )

    any_tag = any(tag for tag in collector.tags_first_line)
    overflow = collector.candidates.overflowed
    selectable_tags = {t: n for t, n in collector.tags_first_line.items() if t not in overflow}
    try:
        selection = select_rank(rank, selectable_tags)
    except SelectionError as exc:
        raise SelectionError(exc.message, path=display) from None
    if selection.note:
        notes.append(selection.note)
    n_startups, index, lo, hi, in_startup = _startup_range(
        collector, selection, any_tag, startup, stats.n_lines, display
    )
    notes.extend(bound_notes(collector, lo))
    _read_server_args(collector, lo, hi)

    def selected(item: Stored) -> bool:
        event = item.event
        if event.kind in RANK_AGNOSTIC:
            return True
        if not item.prefixed:
            return selection.rank0 and event.kind in _BARE_RANK0
        return event.rank in selection.tags

    in_range = [s for s in collector.stored if in_startup(s)]
    events = [s.event for s in in_range if selected(s)]
    outcome, outcome_line, outcome_text, outcome_events = _outcome(
        collector, lo, hi, selection, any_tag, opening=index == 0
    )
    # an outcome decided by a line that has its own row (the summary, the OOM message, the
    # traceback) is that row: the header names the outcome, a second row would repeat the line
    own_lines = {e.line for e in events}
    events = sorted(
        events + [e for e in outcome_events if e.line not in own_lines], key=lambda e: e.line
    )

    server_args: dict[str, ParamValue] = {}
    for event in events:
        if event.kind is EventKind.SERVER_ARGS and event.params:
            server_args = event.params
            break
    events, server_args, launch_notes = with_launch_command(events, server_args, launch)
    notes.extend(launch_notes)

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

    rank_infos = rank_table(collector, in_range, lo, hi)

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


def _settle_pasted(collector: Collector) -> list[str]:
    """Bare lines read before any prefix: the input's lines if none ever came, else skipped."""
    pasted = [item for item in collector.stored if item.pasted]
    if not collector.saw_prefix:
        collector.init_lines.extend(collector.pasted_init_lines)
        bucket = collector.coverage.setdefault((0, ""), Bucket())
        bucket.count += collector.pasted_unrecognised.count
        bucket.lines.extend(collector.pasted_unrecognised.lines[:UNRECOGNISED_CAP])
        bucket.lines.sort(key=lambda u: u.line)
        n = collector.pasted_lines
        return [f"no SGLang prefix: read {n} pasted line{'s' if n != 1 else ''}"] if n else []
    collector.stored = [item for item in collector.stored if not item.pasted]
    # they all come before the first prefixed line: the first segment
    first = collector.skipped.setdefault(0, Bucket())
    early = [
        UnrecognisedLine(line=i.event.line, rank="", text=i.event.text, reason=SKIPPED_BARE)
        for i in pasted
    ] + [replace(u, reason=SKIPPED_BARE) for u in collector.pasted_unrecognised.lines]
    first.count += len(pasted) + collector.pasted_unrecognised.count
    first.lines = sorted([*early, *first.lines], key=lambda u: u.line)[:UNRECOGNISED_CAP]
    return []
