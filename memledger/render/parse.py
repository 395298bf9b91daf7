"""`memledger parse` output: the selected rank's events as a table, or the versioned JSON
document (`FORMATS` is the registry `--format` comes from)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from memledger.input.facts import parse_document
from memledger.model.events import Event, EventKind, ParsedLog, RankInfo, UnrecognisedLine
from memledger.record import to_json
from memledger.render.formats import Format, Formats
from memledger.render.tables import Align, Table, text_table
from memledger.render.terminal import DEFAULT_WIDTH, PLAIN, Terminal, fit_lines

TEXT_WIDTH = 90


class ParseFormat(StrEnum):
    """Output formats of `memledger parse`."""

    TEXT = "text"
    JSON = "json"


@dataclass(frozen=True)
class ParseView:
    """Text-only options: the rank table and the unrecognised lines."""

    all_ranks: bool = False
    coverage: bool = False
    terminal: Terminal = PLAIN


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _value_text(value: object) -> str:
    if isinstance(value, list) and len(value) > 8:
        head = ", ".join(str(v) for v in value[:3])
        return f"[{head}, ... {value[-1]}] ({len(value)})"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _event_row(event: Event) -> list[str]:
    sizes = ", ".join(f"{key}={size.text}" for key, size in event.sizes.items())
    values = ", ".join(f"{key}={_value_text(value)}" for key, value in event.values.items())
    if event.params is not None:
        values = f"{len(event.params)} parameters"
    return [str(event.line), event.kind.value, event.rank, _clip(sizes, 60), _clip(values, 70)]


def _progress_row(run: list[Event]) -> list[str]:
    # tqdm states of one capture, one row: `bs 24 -> 1 (6 states)`, avail first -> last
    first, last = run[0], run[-1]
    key = "bs" if "bs" in first.values else "num_tokens"
    start, end = first.values.get(key), last.values.get(key)
    lines = str(first.line) if first.line == last.line else f"{first.line}-{last.line}"
    avail = [e.sizes["avail"].text for e in (first, last) if "avail" in e.sizes]
    sizes = "avail=" + " -> ".join(avail) if avail else ""
    values = f"{key} {start} -> {end} ({len(run)} states)" if start is not None else ""
    return [lines, first.kind.value, first.rank, sizes, values or f"{len(run)} states"]


def _event_rows(events: list[Event]) -> list[list[str]]:
    rows: list[list[str]] = []
    run: list[Event] = []
    for event in [*events, None]:
        if event is not None and event.kind is EventKind.CAPTURE_PROGRESS:
            run.append(event)
            continue
        if run:
            rows.append(_event_row(run[0]) if len(run) == 1 else _progress_row(run))
            run = []
        if event is not None:
            rows.append(_event_row(event))
    return rows


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _coverage_table(listed: list[UnrecognisedLine], width: int) -> str:
    rows = [[str(u.line), _clip(u.reason, 40), _clip(u.text, 80)] for u in listed]
    return text_table(
        Table(["line", "reason", "text"], rows, keep=(0,)), numparse=True, width=width
    )


def render_text(
    parsed: ParsedLog,
    *,
    all_ranks: bool = False,
    coverage: bool = False,
    terminal: Terminal = PLAIN,
) -> str:
    """A readable summary and event table for a terminal, fitted to its width."""
    width = terminal.width
    startup = parsed.startup
    rank = startup.rank or "(untagged lines: single-rank log)"
    outcome = startup.outcome
    if startup.outcome_line is not None:
        outcome += f" (line {startup.outcome_line}: {_clip(startup.outcome_text, 70)})"
    lines = [
        f"log:       {parsed.path} ({_plural(parsed.n_lines, 'line')})",
        f"startups:  {parsed.n_startups}; showing startup {parsed.selected} "
        f"(lines {startup.first_line}-{startup.last_line})",
        f"rank:      {rank}",
        f"outcome:   {outcome}",
    ]
    count = startup.unrecognised_count
    skipped = startup.skipped_count
    hint = "" if coverage or count + skipped == 0 else " (list them with --coverage)"
    also = f"; {skipped} not read" if skipped else ""
    lines.append(
        f"coverage:  {_plural(count, 'memory-looking line')} of this rank not recognised"
        f"{also}{hint}"
    )
    lines.extend(f"note:      {note}" for note in parsed.notes)
    if parsed.invalid_utf8_bytes:
        lines.append(f"note:      {parsed.invalid_utf8_bytes} invalid UTF-8 bytes replaced")
    lines.append("")
    rows = _event_rows(startup.events)
    if rows:
        lines.append(
            text_table(
                Table(["line", "kind", "rank", "sizes", "values"], rows, keep=(0, 1)),
                numparse=True,
                width=width,
            )
        )
    else:
        lines.append("(no memory events for this rank in this startup)")
    if coverage:
        for title, total, listed in (
            ("Not recognised", count, startup.unrecognised),
            ("Not read", skipped, startup.skipped),
        ):
            if listed:
                lines += ["", f"{title} ({total}; first {len(listed)} listed):"]
                lines.append(_coverage_table(listed, width))
    if all_ranks:
        lines.append("")
        lines.append(render_ranks(startup.ranks, width))
    return fit_lines("\n".join(lines), width) + "\n"


def render_ranks(ranks: list[RankInfo], width: int = DEFAULT_WIDTH) -> str:
    """Every rank seen in the startup with its key values (GiB), so skew between ranks shows.

    A table wider than the terminal is split into several, each with the rank column, so no
    header or value is cut."""
    if not ranks:
        return "(no tagged ranks in this startup)"
    keys = list(ranks[0].key_values)
    by_key = [_one_precision([info.key_values.get(k) for info in ranks]) for k in keys]
    rows = [
        [info.rank, str(info.n_events), *(column[i] for column in by_key)]
        for i, info in enumerate(ranks)
    ]
    headers = ["rank", "events", *keys]
    natural = [max(len(h), *(len(r[i]) for r in rows)) + 2 for i, h in enumerate(headers)]
    chunks: list[list[int]] = [[]]
    used = natural[0]
    for column in range(1, len(headers)):
        if chunks[-1] and used + natural[column] > width:
            chunks.append([])
            used = natural[0]
        chunks[-1].append(column)
        used += natural[column]
    tables = []
    for columns in chunks:
        table = Table(
            [headers[0], *(headers[i] for i in columns)],
            [[row[0], *(row[i] for i in columns)] for row in rows],
            align=["left", *(RIGHT for _ in columns)],
            keep=(0,),
        )
        tables.append(text_table(table, width=width))
    return f"Ranks ({len(ranks)}; sizes in GiB):\n" + "\n\n".join(tables)


RIGHT: Align = "right"


def _one_precision(values: list[float | int | None]) -> list[str]:
    """One column of rank values at one precision: the most decimals any of them has, so
    `53.90` stands beside `53.81` (not `53.9`); counts stay integers; absent is blank."""
    floats = [v for v in values if isinstance(v, float)]
    decimals = max((len(repr(v).partition(".")[2].rstrip("0")) for v in floats), default=0)
    decimals = min(max(decimals, 2 if floats else 0), 4)
    return [
        "" if v is None else (f"{v:.{decimals}f}" if isinstance(v, float) else str(v))
        for v in values
    ]


def render_json(parsed: ParsedLog) -> str:
    """The versioned JSON document."""
    return to_json(parse_document(parsed), indent=2) + "\n"


FORMATS: Formats[ParseFormat, ParseView, ParsedLog] = Formats(
    ParseFormat,
    {
        ParseFormat.TEXT: Format(
            lambda v: (
                lambda parsed: render_text(
                    parsed, all_ranks=v.all_ranks, coverage=v.coverage, terminal=v.terminal
                )
            ),
            "a table of events",
        ),
        ParseFormat.JSON: Format(
            lambda _: render_json, "a versioned JSON document with events and facts"
        ),
    },
)


def render_parse(
    parsed: ParsedLog, fmt: str = "text", *, all_ranks: bool = False, coverage: bool = False
) -> str:
    """The `memledger parse` output in `fmt` (text or json)."""
    return FORMATS.renderer(fmt, ParseView(all_ranks=all_ranks, coverage=coverage))(parsed)
