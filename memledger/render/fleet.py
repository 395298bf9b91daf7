"""The fleet view: one summary line per log (text table, CSV, JSON Lines), each naming its log.

Figures come from the rows (exact bytes, whatever the summary's schema): usable memory, the
weights, the state pool (KV cache and Mamba/SWA state), CUDA graphs, the runtime headroom left
after the last capture, the fixed overhead (everything but the state pool) and what no line or
formula explained.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from memledger.model.ledger import Ledger
from memledger.render.escape import csv_records, finish, one_line, write_csv
from memledger.render.formats import Format, Formats, pieces
from memledger.render.tables import (
    ABSENT,
    TABLE_ROWS,
    Align,
    Table,
    text_table,
    text_table_in_chunks,
)
from memledger.render.terminal import PLAIN, Terminal, fit_lines
from memledger.units import format_gib

if TYPE_CHECKING:
    from memledger.model.fleet import FleetEntry

# (key, text header): the byte figures of each line
FIGURES: tuple[tuple[str, str], ...] = (
    ("usable", "usable"),
    ("weights", "weights"),
    ("state_pool", "pool"),
    ("cuda_graph", "graphs"),
    ("runtime_headroom", "free"),
    ("fixed_overhead", "fixed"),
    ("unexplained", "unexpl"),
)
MIN_NAME = 16
"""A log's name is shortened in the middle to fit the terminal, never below this."""


def figures(ledger: Ledger) -> dict[str, int | None]:
    """Byte figures of one ledger, from its partition rows; None where the ledger has none."""
    totals: Counter[str] = Counter()
    present: set[str] = set()
    for row in ledger.rows:
        if row.in_partition and row.bytes is not None:
            totals[row.group.value] += row.bytes
            present.add(row.group.value)
    values: dict[str, int | None] = {
        key: totals[key] if key in present else None for key, _ in FIGURES
    }
    usable = ledger.usable_bytes
    values["usable"] = usable
    pool = values["state_pool"]
    values["fixed_overhead"] = None if usable is None else usable - (pool or 0)
    if ledger.stopped_at:  # free memory where it stopped is no runtime headroom (review 2, m9)
        values["runtime_headroom"] = None
    return values


def line_of(path: str, ledger: Ledger) -> dict[str, Any]:
    """One log's line as data (what the fleet view shows of it): computed where the ledger is
    built, so a fleet's ledgers need not be kept (or sent between processes)."""
    return {
        "log": Path(path).name,
        "path": path,
        "outcome": ledger.outcome,
        "stopped_at": ledger.stopped_at,
        "error": None,
        **figures(ledger),
        "kv_tokens_per_rank": ledger.summary.kv_tokens_per_rank,
    }


def record(entry: FleetEntry) -> dict[str, Any]:
    """One log's line as data: name, path, outcome, where it stopped, figures, or its error."""
    if entry.line is not None:
        return entry.line
    empty: dict[str, Any] = dict.fromkeys(key for key, _ in FIGURES)
    return {
        "log": entry.name,
        "path": entry.path,
        "outcome": "unreadable",
        "stopped_at": None,
        "error": entry.error,
        **empty,
        "kv_tokens_per_rank": None,
    }


def _tokens(value: int | None) -> str:
    if value is None:
        return ABSENT
    return f"{value / 1e6:.2f} M" if value >= 1_000_000 else f"{value:,}"


def _middle(name: str, width: int) -> str:
    """`001-docker-r1…-3090.log`: the start and the end of a name say which log it is."""
    if len(name) <= width:
        return name
    head = (2 * (width - 1)) // 3  # the start (its number, the model) says more than the end
    return name[:head] + "…" + name[len(name) - (width - 1 - head) :]


def _headline(outcomes: Counter[str], n_logs: int) -> str:
    parts = [f"{outcomes[k]} {k}" for k in ("ready", "partial", "unreadable") if outcomes[k]]
    noun = "log" if n_logs == 1 else "logs"
    return f"memledger ledger: {n_logs} {noun} -- {', '.join(parts)}"


def _state(entry: FleetEntry) -> str:
    if entry.line is None:
        return "unreadable"
    return "ready" if entry.line["stopped_at"] is None else "partial"


# The text table: an outcome, the figures and KV tokens (all columns but the log's name), then
# the name. Its layout needs every line (column widths; which columns make way for the name),
# so the lines are read twice: once for the widths (`_layout`), once to print them a chunk at a
# time laid out with those widths (`text_table_in_chunks`).
_HEADERS = ["outcome", *(header for _, header in FIGURES), "KV/rank"]
_DROPS = (None, len(_HEADERS) - 1, 1 + [k for k, _ in FIGURES].index("cuda_graph"))
"""Columns that make way for the log's name on a narrow terminal (KV tokens, then graphs)."""
LEGEND = (
    "GiB per card of the selected rank (rank 0 unless --rank); pool: the state pool; free: the "
    "runtime headroom; fixed: the fixed overhead (usable - pool - free; JSON and CSV "
    f"`fixed_overhead` include the free headroom); {ABSENT} = no value (the log has none)."
)


def _cells(entry: FleetEntry) -> list[str]:
    """A log's cells but its name (GiB per card; an untrusted outcome on one line)."""
    line = record(entry)
    values = dict(line)
    if line["fixed_overhead"] is not None:  # free headroom is not overhead
        values["fixed_overhead"] = line["fixed_overhead"] - (line["runtime_headroom"] or 0)
    cells = [ABSENT if values[key] is None else format_gib(values[key]) for key, _ in FIGURES]
    return [one_line(str(line["outcome"])), *cells, _tokens(line["kv_tokens_per_rank"])]


def _name(entry: FleetEntry) -> str:
    """The log's name as its cell shows it (untrusted: on one line, controls shown)."""
    return one_line(entry.name)


def _plain(cell: str) -> bool:
    """A cell whose width in the table is its length (printable ASCII, nothing to strip):
    every cell memledger writes; any other is measured by the table layout itself."""
    return cell.isascii() and cell.isprintable() and cell == cell.strip()


def _widths(headers: list[str], align: list[Align], rows: Iterable[list[str]]) -> list[int]:
    """Each column's width as `text_table` lays it out over `rows` (at least its header's + 2),
    measured a chunk of rows at a time: for cells whose width is not their length."""
    widths = [len(header) + 2 for header in headers]
    rows = iter(rows)
    while chunk := list(islice(rows, TABLE_ROWS)):
        rule = text_table(Table(headers, chunk, align=align)).split("\n")[1]
        widths = [max(w, len(dashes)) for w, dashes in zip(widths, rule.split("  "), strict=True)]
    return widths


@dataclass(frozen=True)
class _Layout:
    outcomes: Counter[str]
    n_logs: int
    headers: list[str]
    align: list[Align]
    drop: list[int]
    probe: list[str]
    """A row as wide as the widest cell of every column, the name's included."""
    name_width: int
    notes: bool


def _layout(entries: Iterable[FleetEntry], terminal: Terminal) -> _Layout:
    """One pass over the lines for what the table needs of all of them: counts, the widest
    cell of each column, whether a log has a note; lines with a cell whose width is not its
    length (not printable ASCII) are read again and measured by the table layout itself."""
    outcomes: Counter[str] = Counter()
    widest = [0] * len(_HEADERS)
    widest_name = 0
    odd_cells = odd_names = notes = False
    for entry in entries:
        outcomes[_state(entry)] += 1
        notes = notes or entry.line is None or entry.line["stopped_at"] is not None
        for i, cell in enumerate(_cells(entry)):
            if _plain(cell):
                widest[i] = max(widest[i], len(cell))
            else:
                odd_cells = True
        name = _name(entry)
        if _plain(name):
            widest_name = max(widest_name, len(name))
        else:
            odd_names = True
    every_right: list[Align] = ["right"] * (len(_HEADERS) - 1)
    if odd_cells:
        rows = (cells for cells in map(_cells, entries) if not all(map(_plain, cells)))
        measured = _widths(_HEADERS, ["left", *every_right], rows)
        widest = [max(w, m) for w, m in zip(widest, measured, strict=True)]
    headers, align, drop, room = list(_HEADERS), ["left", *every_right], [], 0
    for column in _DROPS:
        if column is not None:
            drop.append(column)
            headers.pop(column)
            align.pop()
        probe = ["x" * w for i, w in enumerate(widest) if i not in drop]
        figures_only = text_table(Table(headers, [probe], align=align)).split("\n")
        width = max(len(x) for x in figures_only)
        if odd_cells:  # a row of such cells may be longer than the rule (a zero-width char)
            odd_rows = (
                [c for i, c in enumerate(cells) if i not in drop]
                for cells in map(_cells, entries)
                if not all(map(_plain, cells))
            )
            chunks = text_table_in_chunks(
                lambda chunk: Table(headers, chunk, align=align), probe, odd_rows
            )
            width = max([width, *map(len, chunks)])
        room = terminal.width - 2 - width
        if room >= MIN_NAME:
            break
    name_width = max(MIN_NAME, room)
    widest_name = min(widest_name, name_width)  # a longer plain name is cut to the width
    if odd_names:
        names = ([_middle(n, name_width)] for n in map(_name, entries) if not _plain(n))
        widest_name = max(widest_name, *_widths(["log"], ["left"], names))
    return _Layout(
        outcomes,
        sum(outcomes.values()),
        [*headers, "log"],
        [*align, "left"],
        drop,
        [*probe, "x" * widest_name],
        name_width,
        notes,
    )


def fleet_text_lines(entries: Iterable[FleetEntry], terminal: Terminal = PLAIN) -> Iterator[str]:
    """The text view's lines (unfitted), reading `entries` two or three times: verdict line,
    then one row per log (GiB per card), the log's name last (shortened in the middle to fit
    the terminal; CSV and JSON have it whole); then why any log is partial or unreadable."""
    layout = _layout(entries, terminal)
    yield _headline(layout.outcomes, layout.n_logs)
    yield ""
    rows = (
        [c for i, c in enumerate(_cells(entry)) if i not in layout.drop]
        + [_middle(_name(entry), layout.name_width)]
        for entry in entries
    )
    yield from text_table_in_chunks(
        lambda chunk: Table(layout.headers, chunk, align=layout.align), layout.probe, rows
    )
    yield ""
    yield LEGEND
    if layout.notes:
        yield ""
        yield "stopped or unreadable:"
        for entry in entries:
            if entry.line is None or entry.line["stopped_at"] is not None:
                stopped = entry.error if entry.line is None else entry.line["stopped_at"]
                yield f"  {one_line(entry.name)}: {one_line(str(stopped))}"


def fleet_text_chunks(entries: Iterable[FleetEntry], terminal: Terminal = PLAIN) -> Iterator[str]:
    """The text view, each line fitted to the terminal."""
    return (fit_lines(line, terminal.width) + "\n" for line in fleet_text_lines(entries, terminal))


def fleet_csv_chunks(entries: Iterable[FleetEntry]) -> Iterator[str]:
    """A header and one record per log; sizes in exact bytes, empty where the log has none."""
    records: Iterator[dict[str, Any]] = map(record, entries)
    first = next(records, None)
    if first is None:
        return
    headers = list(first)
    # the one CSV writer (render.escape): cells on one line, no formula (a path or an error
    # text is the user's); a CR left in a cell split the record when the CSV pass re-read it
    yield write_csv(headers, [])
    records = chain([first], records)
    while chunk := list(islice(records, TABLE_ROWS)):
        yield csv_records([["" if v is None else str(v) for v in line.values()] for line in chunk])


def fleet_jsonl_chunks(entries: Iterable[FleetEntry]) -> Iterator[str]:
    """JSON Lines: one object per log (sizes in bytes, null where the log has none)."""
    return (json.dumps(record(entry), ensure_ascii=False) + "\n" for entry in entries)


class FleetFormat(StrEnum):
    """Formats of `memledger ledger` over several logs."""

    TEXT = "text"
    CSV = "csv"
    JSON = "json"


FleetChunks: TypeAlias = "Callable[[Iterable[FleetEntry]], Iterator[str]]"
_CHUNKS: dict[FleetFormat, Callable[[Terminal], FleetChunks]] = {
    FleetFormat.TEXT: lambda terminal: partial(fleet_text_chunks, terminal=terminal),
    FleetFormat.CSV: lambda _: fleet_csv_chunks,
    FleetFormat.JSON: lambda _: fleet_jsonl_chunks,
}


def _whole(fmt: FleetFormat) -> Callable[[Terminal], Callable[[Iterable[FleetEntry]], str]]:
    return lambda terminal: lambda entries: "".join(_CHUNKS[fmt](terminal)(entries))


FLEET_FORMATS: Formats[FleetFormat, Terminal, Iterable[FleetEntry]] = Formats(
    FleetFormat,
    {
        FleetFormat.TEXT: Format(_whole(FleetFormat.TEXT), "one line per log"),
        FleetFormat.CSV: Format(_whole(FleetFormat.CSV), "one record per log, bytes"),
        FleetFormat.JSON: Format(_whole(FleetFormat.JSON), "JSON Lines: one object per log"),
    },
)
"""The registry `memledger ledger LOG LOG... --format` comes from (whole-string renderers of
the lines, which they read more than once: a list, or `fleet.FleetSpool`)."""


def fleet_stream(fmt: FleetFormat | str, terminal: Terminal = PLAIN) -> FleetChunks:
    """The streaming renderer of a format (what `memledger ledger` over a fleet writes): its
    output in pieces of whole lines, each passed through the format's escaping, the same text
    as `FLEET_FORMATS`' renderer."""
    member = FLEET_FORMATS.pick(fmt)
    make = _CHUNKS[member](terminal)
    destination = FLEET_FORMATS.destinations[member]
    return lambda entries: (finish(destination, piece) for piece in pieces(make(entries)))


def render_fleet_text(entries: Iterable[FleetEntry], terminal: Terminal = PLAIN) -> str:
    """The text view (`fleet_text_lines`) as one string."""
    return "".join(fleet_text_chunks(entries, terminal))


def render_fleet_csv(entries: Iterable[FleetEntry]) -> str:
    """The CSV view (`fleet_csv_chunks`) as one string."""
    return "".join(fleet_csv_chunks(entries))


def render_fleet_jsonl(entries: Iterable[FleetEntry]) -> str:
    """The JSON Lines view as one string."""
    return "".join(fleet_jsonl_chunks(entries))
