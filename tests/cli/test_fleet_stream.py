"""The `ledger` fleet view written from its spool against the view built whole in memory.

`memledger ledger LOG LOG... / DIR` spools each log's line as it comes (`fleet.FleetSpool`) and
writes the view from the spool, reading it once per pass a format needs
(`render.fleet.fleet_stream`); the text table's widths come from a first pass. Every format
must print what the view built in one piece printed (the layout of one `text_table` call over
the whole table, kept here as `whole_text`), and the spool must keep nothing per log in memory.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import pytest

from memledger.app.fleet import FleetSpool
from memledger.app.load import load_ledger
from memledger.model.fleet import FleetEntry
from memledger.render.escape import Destination, finish, write_csv
from memledger.render.fleet import (
    FIGURES,
    FLEET_FORMATS,
    MIN_NAME,
    FleetFormat,
    _middle,
    _tokens,
    fleet_stream,
    line_of,
    record,
)
from memledger.render.tables import ABSENT, TABLE_ROWS, Align, Table, text_table
from memledger.render.terminal import Terminal, fit_lines
from memledger.units import format_gib
from tests.conftest import SAMPLES

WIDTHS = (40, 60, 72, 100, 200)


def whole_text(entries: Sequence[FleetEntry], terminal: Terminal) -> str:
    """The text view as it was built before the spool (memledger a349bbe): one `text_table`
    over every row, then the whole text fitted; the oracle for the streamed one."""
    rows = []
    for entry in entries:
        line = record(entry)
        values = dict(line)
        if line["fixed_overhead"] is not None:
            values["fixed_overhead"] = line["fixed_overhead"] - (line["runtime_headroom"] or 0)
        cells = [ABSENT if values[key] is None else format_gib(values[key]) for key, _ in FIGURES]
        rows.append([line["outcome"], *cells, _tokens(line["kv_tokens_per_rank"])])
    headers = ["outcome", *(header for _, header in FIGURES), "KV/rank"]
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
    n = len(entries)
    states = [
        "unreadable" if e.line is None else ("ready" if e.line["stopped_at"] is None else "partial")
        for e in entries
    ]
    parts = [f"{states.count(k)} {k}" for k in ("ready", "partial", "unreadable") if k in states]
    lines = [
        f"memledger ledger: {n} {'log' if n == 1 else 'logs'} -- {', '.join(parts)}",
        "",
        table,
        "",
        "GiB per card of the selected rank (rank 0 unless --rank); pool: the state pool; free: the "
        "runtime headroom; fixed: the fixed overhead (usable - pool - free; JSON and CSV "
        f"`fixed_overhead` include the free headroom); {ABSENT} = no value (the log has none).",
    ]
    if notes:
        lines += ["", "stopped or unreadable:", *notes]
    return finish(Destination.TERMINAL, fit_lines("\n".join(lines), terminal.width) + "\n")


def whole(fmt: FleetFormat, entries: Sequence[FleetEntry], terminal: Terminal) -> str:
    """The oracle of every format (CSV and JSON Lines as they were written whole)."""
    if fmt is FleetFormat.TEXT:
        return whole_text(entries, terminal)
    records = [record(entry) for entry in entries]
    if fmt is FleetFormat.CSV:
        values = [["" if v is None else str(v) for v in line.values()] for line in records]
        return finish(Destination.CSV, write_csv(list(records[0]), values))
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in records)
    return finish(Destination.JSON, text)


@cache
def _line() -> dict[str, Any]:
    return line_of(str(SAMPLES / "dp16.log"), load_ledger(SAMPLES / "dp16.log"))


def fleet(n_logs: int, *, seed: int = 0, names: dict[int, str] | None = None) -> list[FleetEntry]:
    """n_logs lines of every kind (ready, partial, unreadable, figures missing), their widths
    varying, the widest cells late (in the last chunk of the table); `names`: by position."""
    names = names or {}
    rng = random.Random(seed)
    out = []
    for i in range(n_logs):
        name = names.get(i, f"pod-{i:05d}-" + "x" * rng.randrange(0, 40))
        path = f"fleet/r{i % 3}/{name}"
        if i % 11 == 5:
            out.append(FleetEntry(path, error=f"line {i}: no SGLang log lines found"))
            continue
        line = {**_line(), "log": name, "path": path}
        late = i > n_logs - 3  # a wider figure in the last chunk only
        for key, _ in FIGURES:
            if rng.random() < 0.1:
                line[key] = None
            elif line[key] is not None:
                scale = 10_000 if late else rng.choice((1, 1, 3, 0.01))
                line[key] = int(line[key] * scale) - (rng.randrange(2**30) if i % 5 == 0 else 0)
        line["kv_tokens_per_rank"] = rng.choice((None, 950_000, 1_250_000, 12))
        if i % 7 == 2:
            line["stopped_at"], line["outcome"] = f"after checkpoint load_begin (line {i})", "oom"
        out.append(FleetEntry(path, line=line))
    return out


def streamed(fmt: FleetFormat, entries: Iterable[FleetEntry], terminal: Terminal) -> str:
    with FleetSpool() as spool:
        for entry in entries:
            spool.add(entry)
        assert list(spool) == list(entries)  # the spool gives back exactly what went in
        return "".join(fleet_stream(fmt, terminal)(spool))


FLEETS = [
    pytest.param(fleet(1), id="one-log"),
    pytest.param(fleet(9, seed=1, names={4: "b" * 300 + ".log"}), id="9-logs-one-name-too-long"),
    pytest.param(fleet(TABLE_ROWS * 2 + 40, seed=2), id="three-table-chunks"),
    pytest.param(
        fleet(
            TABLE_ROWS + 5,
            seed=3,
            names={  # the widest name in the second chunk: the rule must be as long in the first
                TABLE_ROWS + 2: "日本語のログファイル名前がとても長い-" * 3 + "pod-0001.log",
                1: "café-pod.log",
                2: " leading-and-trailing-space.log ",
            },
        ),
        id="names-wider-than-their-length-or-stripped",
    ),
]


@pytest.mark.parametrize("entries", FLEETS)
def test_streamed_view_equals_the_whole_one_in_every_format(
    entries: list[FleetEntry], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(fleet_stream.__globals__["pieces"].__globals__, "PIECE_CHARS", 2048)
    for fmt in FleetFormat:
        for width in WIDTHS if fmt is FleetFormat.TEXT else (100,):
            terminal = Terminal(width=width, colour=False)
            expected = whole(fmt, entries, terminal)
            assert FLEET_FORMATS.renderer(fmt, terminal)(entries) == expected, (fmt, width)
            assert streamed(fmt, entries, terminal) == expected, (fmt, width)


def test_an_outcome_that_is_not_printable_ascii_is_measured_like_the_whole_table() -> None:
    """A saved ledger's outcome is its author's text: a width that is not its length (wide,
    accented, blank-padded) is measured by the layout, in a chunk of its own."""
    entries = fleet(TABLE_ROWS + 30, seed=4)
    odd = [
        (3, "réady"),
        (TABLE_ROWS + 10, "  準備完了  "),
        (TABLE_ROWS + 20, "trop-peu-de-mémoire"),
    ]
    for at, outcome in odd:
        i = next(i for i in range(at, len(entries)) if entries[i].line is not None)
        entries[i] = FleetEntry(entries[i].path, line={**_line(), "outcome": outcome})
    for width in WIDTHS:
        terminal = Terminal(width=width, colour=False)
        assert streamed(FleetFormat.TEXT, entries, terminal) == whole_text(entries, terminal)


def test_a_name_with_control_characters_stays_on_its_row() -> None:
    """The one intended difference from the whole-table view: a newline or an escape in a file
    name is shown (`␊`, `␛`) in its cell instead of splitting the row or being measured as
    zero-width (the row stays under its headers)."""
    names = ["a\nb.log", "x\x1b[31mred.log", "plain.log", "tab\there.log"]
    entries = fleet(4, names=dict(enumerate(names)))
    text = streamed(FleetFormat.TEXT, entries, Terminal(width=100, colour=False))
    table = text.split("\n\n")[1].splitlines()
    assert len(table) == 2 + len(entries)  # header, rule, one line per log
    width = len(table[1])  # the rule spans every column
    assert all(len(row) <= width for row in table)
    assert table[2].endswith("a␊b.log") and table[3].endswith("x␛[31mred.log")


def _kept_and_peak(entries: list[FleetEntry]) -> tuple[int, int]:
    """Bytes the spool keeps once every line is in, and the peak while writing the text view."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        with FleetSpool() as spool:
            for entry in entries:
                spool.add(entry)
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - start
            tracemalloc.reset_peak()
            for fmt in FleetFormat:
                for _ in fleet_stream(fmt, Terminal(width=100, colour=False))(spool):
                    pass
            peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return kept, peak


def test_the_spool_keeps_nothing_per_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """4x the logs, the same memory: the view built whole kept every line (~1.5 KiB a log as
    a dict, plus its table rows), 1.5 MB more here."""
    # chunks, pieces and read blocks smaller than either fleet; patched in the modules these
    # functions run in (another test may have imported memledger's modules afresh)
    view = fleet_stream.__globals__
    for module in (view, view["text_table_in_chunks"].__globals__):
        monkeypatch.setitem(module, "TABLE_ROWS", 32)
    monkeypatch.setitem(view["pieces"].__globals__, "PIECE_CHARS", 4096)
    monkeypatch.setitem(FleetSpool.records.__globals__, "_BLOCK", 4096)
    small, large = fleet(300, seed=5), fleet(1200, seed=5)
    # first-use caches, at both sizes: in some suite orders the first large pass alone peaked
    # 1.9 MB higher (a one-time cost; a second large pass was back at the small one's peak)
    _kept_and_peak(small)
    _kept_and_peak(large)
    kept_small, peak_small = _kept_and_peak(small)
    kept_large, peak_large = _kept_and_peak(large)
    per_log = (kept_large - kept_small) / (len(large) - len(small))
    assert per_log < 64, f"{per_log:.0f} bytes kept per log"
    assert peak_large - peak_small < 48 * 1024, (peak_small, peak_large)
