"""The fleet view: one summary line per log (text table, CSV, JSON Lines), each naming its log.

Figures come from the rows (exact bytes, whatever the summary's schema): usable memory, the
weights, the state pool (KV cache and Mamba/SWA state), CUDA graphs, the runtime headroom left
after the last capture, the fixed overhead (everything but the state pool) and what no line or
formula explained.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memledger.ledger_model import Ledger
from memledger.render.escape import write_csv
from memledger.render.formats import Format, Formats
from memledger.render.rows import ABSENT
from memledger.render.tables import Align, Table, text_table
from memledger.render.terminal import PLAIN, Terminal, fit_lines
from memledger.units import format_gib

if TYPE_CHECKING:
    from memledger.fleet import FleetEntry

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


def _headline(entries: Sequence[FleetEntry]) -> str:
    outcomes = Counter(
        "unreadable" if e.line is None else ("ready" if e.line["stopped_at"] is None else "partial")
        for e in entries
    )
    parts = [f"{outcomes[k]} {k}" for k in ("ready", "partial", "unreadable") if outcomes[k]]
    noun = "log" if len(entries) == 1 else "logs"
    return f"memledger ledger: {len(entries)} {noun} -- {', '.join(parts)}"


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


def render_fleet_text(entries: Sequence[FleetEntry], terminal: Terminal = PLAIN) -> str:
    """Verdict line, then one row per log (GiB per card), the log's name last (shortened in the
    middle to fit the terminal; CSV and JSON have it whole); then why any log is partial or
    unreadable."""
    rows = []
    for entry in entries:
        line = record(entry)
        values = dict(line)
        if line["fixed_overhead"] is not None:  # free headroom is not overhead
            values["fixed_overhead"] = line["fixed_overhead"] - (line["runtime_headroom"] or 0)
        cells = [ABSENT if values[key] is None else format_gib(values[key]) for key, _ in FIGURES]
        rows.append([line["outcome"], *cells, _tokens(line["kv_tokens_per_rank"])])
    headers = ["outcome", *(header for _, header in FIGURES), "KV/rank"]
    # Columns that make way for the log's name on a narrow terminal (KV tokens, then graphs).
    for drop in (None, len(headers) - 1, 1 + [k for k, _ in FIGURES].index("cuda_graph")):
        if drop is not None:
            headers.pop(drop)
            for row in rows:
                row.pop(drop)
        right: list[Align] = ["right"] * (len(headers) - 1)
        align: list[Align] = ["left", *right]
        figures_only = text_table(Table(headers, rows, align=align))
        room = terminal.width - 2 - max(len(x) for x in figures_only.split("\n"))
        if room >= MIN_NAME:
            break
    for row, entry in zip(rows, entries, strict=True):
        row.append(_middle(entry.name, max(MIN_NAME, room)))
    table = text_table(Table([*headers, "log"], rows, align=[*align, "left"]))
    notes = [
        f"  {entry.name}: {entry.error if entry.line is None else entry.line['stopped_at']}"
        for entry in entries
        if entry.line is None or entry.line["stopped_at"] is not None
    ]
    lines = [
        _headline(entries),
        "",
        table,
        "",
        "GiB per card of the selected rank (rank 0 unless --rank); pool: the state pool; free: the "
        "runtime headroom; fixed: the fixed overhead (usable - pool - free; JSON and CSV "
        f"`fixed_overhead` include the free headroom); {ABSENT} = no value (the log has none).",
    ]
    if notes:
        lines += ["", "stopped or unreadable:", *notes]
    return fit_lines("\n".join(lines), terminal.width) + "\n"


def render_fleet_csv(entries: Sequence[FleetEntry]) -> str:
    """A header and one record per log; sizes in exact bytes, empty where the log has none."""
    records = [record(entry) for entry in entries]
    # the one CSV writer (render.escape): cells on one line, no formula (a path or an error
    # text is the user's); a CR left in a cell split the record when the CSV pass re-read it
    return write_csv(
        list(records[0]),
        [["" if v is None else str(v) for v in line.values()] for line in records],
    )


def render_fleet_jsonl(entries: Sequence[FleetEntry]) -> str:
    """JSON Lines: one object per log (sizes in bytes, null where the log has none)."""
    return "".join(json.dumps(record(entry), ensure_ascii=False) + "\n" for entry in entries)


class FleetFormat(StrEnum):
    """Formats of `memledger ledger` over several logs."""

    TEXT = "text"
    CSV = "csv"
    JSON = "json"


FLEET_FORMATS: Formats[FleetFormat, Terminal, Sequence[FleetEntry]] = Formats(
    FleetFormat,
    {
        FleetFormat.TEXT: Format(
            lambda terminal: partial(render_fleet_text, terminal=terminal), "one line per log"
        ),
        FleetFormat.CSV: Format(lambda _: render_fleet_csv, "one record per log, bytes"),
        FleetFormat.JSON: Format(lambda _: render_fleet_jsonl, "JSON Lines: one object per log"),
    },
)
