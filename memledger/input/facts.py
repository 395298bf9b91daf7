"""`facts_of`: the hand-checkable facts of a parsed log, exactly as defined by the real-logs README;
`parse_document`: the parsed log as the `memledger parse --format json` document.

Every fact is the first line of its kind in the selected startup and rank; numbers are the
printed GB (GiB) values, ints stay ints, null where the log did not print it.
"""

from __future__ import annotations

from typing import Any

from memledger.model.events import Event, EventKind, ParsedLog
from memledger.model.parse import Coverage, Outcome, ParseDocument
from memledger.units import GIB, Size, int_or

FACT_KEYS: tuple[str, ...] = (
    "rank_tag",
    "n_startups",
    "load_begin_avail",
    "load_end_avail",
    "load_end_mem_usage",
    "draft_load_end_avail",
    "draft_load_end_mem_usage",
    "kv_tokens",
    "k_size",
    "v_size",
    "kv_size",
    "mempool_end_avail",
    "capture_begin_avail",
    "capture_end_mem_usage",
    "capture_end_avail",
    "max_total_num_tokens",
    "max_running_requests",
    "context_len",
    "available_gpu_mem",
    "cuda_graph_bs",
    "outcome",
)


def printed_gb(size: Size | None) -> float | None:
    """The number as printed when the unit was GB/GiB; else the size in GiB."""
    if size is None:
        return None
    number, _, unit = size.text.partition(" ")
    if unit in ("GB", "GiB"):
        try:
            return float(number)
        except ValueError:
            pass
    return size.bytes / GIB


def _nth(events: list[Event], kind: EventKind, n: int = 0) -> Event | None:
    found = [e for e in events if e.kind is kind]
    return found[n] if len(found) > n else None


def _int(event: Event | None, key: str) -> int | None:
    return None if event is None else int_or(event.values.get(key), None)


def _gb(event: Event | None, key: str) -> float | None:
    return None if event is None else printed_gb(event.sizes.get(key))


def _kv_half(event: Event | None, half: str) -> float | None:
    """`K size:`/`V size:` as printed, also when the line lost the other half (the ledger does
    not take half a pair as a pool; the fact is still the number the line shows)."""
    if event is None:
        return None
    found = printed_gb(event.sizes.get(half))
    unpaired = event.values.get(f"{half}_size_unpaired")
    if found is None and isinstance(unpaired, str):
        number, _, unit = unpaired.partition(" ")
        if unit in ("GB", "GiB"):
            try:
                return float(number)
            except ValueError:
                return None
    return found


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def facts_of(parsed: ParsedLog) -> dict[str, Any]:
    """The real-logs facts of the selected startup/rank, keyed exactly as truth.jsonl."""
    startup = parsed.startup
    events = startup.events
    load_end = _nth(events, EventKind.LOAD_END, 0)
    draft_load_end = _nth(events, EventKind.LOAD_END, 1)
    kv = next(
        (
            e
            for e in events
            if e.kind is EventKind.KV_ALLOCATED and not e.values.get("va_upper_bound")
        ),
        None,
    )
    mempool = next(
        (e for e in events if e.kind is EventKind.MEMORY_POOL_END and "avail" in e.sizes), None
    )
    capture_begin = next(
        (
            e
            for e in events
            if e.kind is EventKind.CAPTURE_BEGIN
            and e.values.get("graph_named")
            and "avail" in e.sizes
        ),
        None,
    )
    capture_end = next(
        (e for e in events if e.kind is EventKind.CAPTURE_END and e.values.get("graph_named")),
        None,
    )
    summary = _nth(events, EventKind.SUMMARY)
    bs: list[int] | None = None
    bs_line = next(
        (
            e
            for e in events
            if e.kind is EventKind.CAPTURE_BS and e.values.get("graph_named") and "bs" in e.values
        ),
        None,
    )
    if bs_line is not None:
        bs = _int_list(bs_line.values["bs"])
    else:
        begin_with_bs = next(
            (e for e in events if e.kind is EventKind.CAPTURE_BEGIN and "bs" in e.values), None
        )
        if begin_with_bs is not None:
            bs = _int_list(begin_with_bs.values["bs"])
    return {
        "rank_tag": startup.rank,
        "n_startups": parsed.n_startups,
        "load_begin_avail": _gb(_nth(events, EventKind.LOAD_BEGIN), "avail"),
        "load_end_avail": _gb(load_end, "avail"),
        "load_end_mem_usage": _gb(load_end, "usage"),
        "draft_load_end_avail": _gb(draft_load_end, "avail"),
        "draft_load_end_mem_usage": _gb(draft_load_end, "usage"),
        "kv_tokens": _int(kv, "tokens"),
        "k_size": _kv_half(kv, "k"),
        "v_size": _kv_half(kv, "v"),
        "kv_size": _gb(kv, "kv"),
        "mempool_end_avail": _gb(mempool, "avail"),
        "capture_begin_avail": _gb(capture_begin, "avail"),
        "capture_end_mem_usage": _gb(capture_end, "usage"),
        "capture_end_avail": _gb(capture_end, "avail"),
        "max_total_num_tokens": _int(summary, "max_total_num_tokens"),
        "max_running_requests": _int(summary, "max_running_requests"),
        "context_len": _int(summary, "context_len"),
        "available_gpu_mem": _gb(summary, "available_gpu_mem"),
        "cuda_graph_bs": bs,
        "outcome": startup.outcome,
    }


def parse_document(parsed: ParsedLog) -> ParseDocument:
    """The JSON document of a parsed log."""
    startup = parsed.startup
    return ParseDocument(
        path=parsed.path,
        n_lines=parsed.n_lines,
        invalid_utf8_bytes=parsed.invalid_utf8_bytes,
        n_startups=parsed.n_startups,
        selected_startup=parsed.selected,
        first_line=startup.first_line,
        last_line=startup.last_line,
        rank=startup.rank,
        outcome=Outcome(
            outcome=startup.outcome, line=startup.outcome_line, text=startup.outcome_text
        ),
        facts=facts_of(parsed),
        events=startup.events,
        server_args=startup.server_args,
        coverage=Coverage(
            count=startup.unrecognised_count,
            listed=startup.unrecognised,
            skipped_count=startup.skipped_count,
            skipped=startup.skipped,
        ),
        ranks=startup.ranks,
        notes=parsed.notes,
    )
