"""Table data shared by the diff renderers: headers and string rows, built once.

No tabulate here: `render.tables` decides the table syntax; this module decides columns,
rounding and order.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from memledger.compare.categories import group_label
from memledger.compare.compute import sort_rows
from memledger.compare.models import (
    ByteChange,
    DiffInput,
    DiffStatus,
    LedgerDiff,
    RowDiff,
    SortKey,
    SummaryField,
)
from memledger.model.ledger import RowGroup
from memledger.render.diff_prose import state_pool_statement, usable_note
from memledger.render.tables import ABSENT, ELLIPSIS, Align, Table
from memledger.units import GIB, format_gib

SUMMARY_TABLE_KEYS = (
    "usable",
    "fixed_overhead",
    "state_pool",
    "kv_pool",
    "draft_kv",
    "slots",
    "state_per_slot",
    "kv_tokens_per_rank",
    "kv_tokens_per_dp_group",
    "kv_tokens_per_instance",
    "cuda_graph",
    "runtime_headroom",
    "mem_fraction_static",
)
"""Summary keys in the short summary table (the full list goes in the details)."""

FIXED_AND_HEADROOM = "fixed overhead + headroom"
"""Usable memory minus the state pool: every group but the state pool, the free runtime
headroom included. Named so, because free headroom is not overhead (the Rows table of a ledger
shows the fixed overhead without it)."""

COMPOSITION_ORDER: tuple[RowGroup, ...] = (
    RowGroup.WEIGHTS,
    RowGroup.WEIGHT_STAGING,
    RowGroup.DRAFT_WEIGHTS,
    RowGroup.COMMUNICATION,
    RowGroup.WORKSPACE,
    RowGroup.UNEXPLAINED,
    RowGroup.CUDA_GRAPH,
    RowGroup.RUNTIME_HEADROOM,
    RowGroup.STATE_POOL,
)
"""Order of groups in composition bars and charts: fixed overhead first, state pool last."""


def gib_text(byte_count: int | None, *, signed: bool = False, digits: int = 2) -> str:
    """Bytes as GiB; `+`/`-` when signed; `ABSENT` for no value; never `-0.00`."""
    return ABSENT if byte_count is None else format_gib(byte_count, digits, signed=signed)


def pct_text(pct: float | None) -> str:
    """A Δ% as `+12.3%`, `ABSENT` when undefined (a base of 0 or no value)."""
    return ABSENT if pct is None else f"{pct:+.1f}%"


def number_text(value: int | float | None, unit: str, *, signed: bool = False) -> str:
    """A summary figure in its unit: GiB with 2 decimals, token counts in millions."""
    if value is None:
        return ABSENT
    sign = "+" if signed else ""
    if unit == "tokens":
        if abs(value) >= 1_000_000:
            return f"{value / 1_000_000:{sign}.2f} M"
        if abs(value) >= 10_000:
            return f"{value / 1_000:{sign}.1f} k"
        return f"{int(value):{sign}d}"
    if unit == "count":
        return f"{int(value):{sign}d}"
    if unit == "fraction":
        return f"{value:{sign}.3f}"
    if abs(value) < 0.005:
        value = 0.0
    return f"{value:{sign}.2f}"


def round_parts(parts: Sequence[int], digits: int = 2) -> tuple[list[str], str]:
    """Signed GiB strings for parts and their total such that the printed parts add up exactly.

    Largest-remainder rounding in units of 10**-digits GiB: each printed part is within one unit
    of its true value and the printed total is the true total rounded.
    """
    scale = 10**digits
    exact = [p * scale / GIB for p in parts]
    total = round(sum(parts) * scale / GIB)
    floors = [math.floor(x) for x in exact]
    remaining = total - sum(floors)
    order = sorted(range(len(parts)), key=lambda i: exact[i] - floors[i], reverse=True)
    units = list(floors)
    for i in order[: max(0, remaining)]:
        units[i] += 1
    return [_units_text(u, digits) for u in units], _units_text(total, digits)


def _units_text(units: int, digits: int) -> str:
    return "+0.00" if units == 0 else f"{units / 10**digits:+.{digits}f}"


def input_line(side: str, item: DiffInput) -> str:
    """`base dp16: samples/dp16.log (startup 0 of 1, rank TP0, ready)`."""
    extra = f", stopped {item.stopped_at}" if item.stopped_at else ""
    return (
        f"{side_header(side, item)}: {item.path} (startup #{item.startup} of {item.n_startups}, "
        f"rank {item.rank or '-'}, {item.outcome}{extra})"
    )


def definition_line() -> str:
    """What Δ and Δ% mean, and the one placeholder for a value a cell does not have."""
    return (
        "Δ = head - base; Δ% = (head - base) / base, in percent; sizes in GiB; "
        f"{ABSENT} = no value (not on that side, not known, or Δ% of a base of 0 or less)"
    )


def short_stop(stopped_at: str) -> str:
    """`after checkpoint load_begin (line 372)` out of the engine's longer
    `after ...; out of memory at ...: text`."""
    return stopped_at.split("; ", 1)[0]


def _unsized_sides(diff: LedgerDiff) -> list[str]:
    """The sides that stopped before SGLang sized their pools: a partial ledger whose state
    pool is empty has no pool to compare, only a startup that never got that far."""
    pool = diff.state_pool.state_pool
    sides = (
        ("base", diff.inputs.base, pool.base_bytes),
        ("head", diff.inputs.head, pool.head_bytes),
    )
    return [side for side, item, size in sides if item.stopped_at and not size]


def headline(diff: LedgerDiff) -> str:
    """One line: the KV capacity each side holds, the verdict on the state pool and the
    biggest mover."""
    analysis = diff.state_pool
    pool = analysis.state_pool
    fixed = analysis.fixed_overhead
    unsized = _unsized_sides(diff)
    if not analysis.available:
        verdict = "no state-pool comparison"
    elif unsized:
        verdict = f"no state-pool comparison ({' and '.join(unsized)} stopped before its pools)"
    elif pool.status is DiffStatus.UNCHANGED and fixed.status is DiffStatus.UNCHANGED:
        verdict = "state pool and fixed overhead + headroom unchanged (within printing precision)"
    else:
        verdict = (
            f"state pool {gib_text(pool.delta_bytes, signed=True)} GiB "
            f"(fixed overhead + headroom {gib_text(fixed.delta_bytes, signed=True)} GiB)"
        )
    partial_sides = [
        s for s, i in (("base", diff.inputs.base), ("head", diff.inputs.head)) if i.stopped_at
    ]
    mover_text = (
        f"biggest mover: {_mover_text(diff)}"
        if diff.biggest_mover_group
        else ("no row on both sides moved" if partial_sides else "nothing moved")
    )
    partial = [
        f"{side} partial ({item.outcome}, stopped {short_stop(item.stopped_at)})"
        for side, item in (("base", diff.inputs.base), ("head", diff.inputs.head))
        if item.stopped_at
    ]
    tail = f" · {'; '.join(partial)}" if partial else ""
    tokens = _tokens_text(diff, quiet_if_equal=verdict.endswith("(within printing precision)"))
    lead = f"{tokens} · " if tokens and not unsized else ""
    return (
        f"{diff.inputs.head.label} vs {diff.inputs.base.label}: {lead}{verdict} · "
        f"{mover_text}{tail}"
    )


KV_TOKEN_KEYS = ("kv_tokens_per_instance", "kv_tokens_per_rank")
"""The verdict's capacity figure: per instance (what a deployment holds), else per rank."""


def _tokens_text(diff: LedgerDiff, *, quiet_if_equal: bool) -> str:
    """`KV tokens per instance 51.08 M -> 43.00 M (-15.8%)`: the capacity the two deployments
    differ by, first in the verdict; empty when neither figure is on both sides, or when it is
    equal and `quiet_if_equal` (nothing else moved either)."""
    fields = {f.key: f for f in diff.summary_fields}
    for key in KV_TOKEN_KEYS:
        found = fields.get(key)
        if found is None or found.base is None or found.head is None:
            continue
        if quiet_if_equal and found.base == found.head:
            return ""
        label = found.label.split(" (", 1)[0]
        change = "unchanged" if found.base == found.head else pct_text(found.delta_pct)
        return (
            f"{label} {number_text(found.base, found.unit)} -> "
            f"{number_text(found.head, found.unit)} ({change})"
        )
    return ""


def _mover_text(diff: LedgerDiff) -> str:
    """`CUDA graphs +5.88 GiB (+72.8%; most from cuda_graph_largest_bucket +3.05)`."""
    group = next(g for g in diff.groups if g.id == diff.biggest_mover_group)
    details = [] if group.delta_pct is None else [pct_text(group.delta_pct)]
    row = next((r for r in diff.rows if r.id == diff.biggest_mover), None)
    if row is not None and group.n_rows > 1:
        details.append(f"most from {row.id} {gib_text(row.delta_bytes, signed=True)}")
    detail = f" ({'; '.join(details)})" if details else ""
    return f"{group.label} {gib_text(group.delta_bytes, signed=True)} GiB{detail}"


TEXT_LABEL_CHARS = 24
"""A side's label in text output (column headers, the verdict) is at most this long; the input
lines under the summary name each side's file whole."""


def distinct_labels(base: str, head: str, limit: int = TEXT_LABEL_CHARS) -> tuple[str, str]:
    """Both labels in at most `limit` characters each, cut so that they still tell the sides
    apart: a label that fits stays whole; a longer one keeps its start when the two differ
    there, else `…` and its end from the word before the one where they first differ (words
    end at `-`, `_`, `.`, `/` or a blank): `…0412-dp16` / `…0412-dp2`, not two equal
    `server-2026-11-05-run-04…`."""
    if len(base) <= limit and len(head) <= limit:
        return base, head
    shared = len(os.path.commonprefix([base, head]))

    def cut(label: str) -> str:
        if len(label) <= limit:
            return label
        if shared < limit - 1:
            return label[: limit - 1] + ELLIPSIS
        words = [i + 1 for i, c in enumerate(label[:shared]) if c in "-_./ "] or [shared]
        body = label[words[-2] if len(words) > 1 else words[-1] :]  # the word before, too
        return ELLIPSIS + (body if len(body) < limit else body[: limit - 2] + ELLIPSIS)

    return cut(base), cut(head)


def with_text_labels(diff: LedgerDiff, limit: int = TEXT_LABEL_CHARS) -> LedgerDiff:
    """The diff with its sides' labels as text output shows them (`distinct_labels`)."""
    base, head = diff.inputs.base, diff.inputs.head
    short = distinct_labels(base.label, head.label, limit)
    if short == (base.label, head.label):
        return diff
    inputs = replace(
        diff.inputs, base=replace(base, label=short[0]), head=replace(head, label=short[1])
    )
    return replace(diff, inputs=inputs)


def side_header(side: str, item: DiffInput) -> str:
    """`base dp16`, or just `base` when the label is the side's name."""
    return side if item.label == side else f"{side} {item.label}"


def _side_headers(diff: LedgerDiff) -> list[str]:
    return [side_header("base", diff.inputs.base), side_header("head", diff.inputs.head), "Δ", "Δ%"]


def summary_table(diff: LedgerDiff, keys: Sequence[str] | None = SUMMARY_TABLE_KEYS) -> Table:
    """Summary figures (a subset, or all when keys is None); skips figures unknown on both.

    Usable, fixed overhead and state pool come from the rows (as the split below adds them).
    """
    analysis = diff.state_pool
    by_key = {f.key: f for f in diff.summary_fields}
    chosen = list(by_key) if keys is None else [k for k in keys if k in by_key]
    totals: dict[str, tuple[str, ByteChange]] = {
        "usable": ("usable, sum of rows", analysis.partition),
        "fixed_overhead": (FIXED_AND_HEADROOM, analysis.fixed_overhead),
        "state_pool": ("state pool", analysis.state_pool),
    }
    rows = []
    for key in chosen:
        if key in totals:
            label, change = totals[key]
            rows.append([f"{label} (GiB)", *_change_cells(change)])
            continue
        item = by_key[key]
        if item.base is None and item.head is None:
            continue
        rows.append(_summary_row(item))
    return Table(["figure", *_side_headers(diff)], rows, _numbers_right(5, first=1))


def _numbers_right(n: int, *, first: int, last: int | None = None) -> list[Align]:
    """Text columns left, number columns (`first` up to `last`, exclusive) right-aligned."""
    end = n if last is None else last
    return ["right" if first <= i < end else "left" for i in range(n)]


def _summary_row(item: SummaryField) -> list[str]:
    unit = "" if item.unit in ("count", "fraction") else f" ({item.unit})"
    return [
        f"{item.label}{unit}",
        number_text(item.base, item.unit),
        number_text(item.head, item.unit),
        number_text(item.delta, item.unit, signed=True),
        pct_text(item.delta_pct),
    ]


def _change_cells(change: ByteChange) -> list[str]:
    # A side the item is absent from, or whose bytes are unknown, has no value: `ABSENT`.
    return [
        gib_text(change.base_bytes),
        gib_text(change.head_bytes),
        gib_text(change.delta_bytes, signed=True),
        pct_text(change.delta_pct),
    ]


def category_table(diff: LedgerDiff, *, with_rows: bool = False) -> Table:
    """The fixed-overhead split: categories whose printed Δ add up exactly to the printed total."""
    analysis = diff.state_pool
    deltas, total_text = round_parts([c.delta_bytes or 0 for c in analysis.categories])
    rows: list[list[str]] = []
    for category, delta_text in zip(analysis.categories, deltas, strict=True):
        rows.append(
            [
                category.label,
                gib_text(category.base_bytes),
                gib_text(category.head_bytes),
                delta_text,
                pct_text(category.delta_pct),
            ]
        )
        if with_rows:
            by_id = {r.id: r for r in diff.rows}
            rows.extend(
                [f"· {c.id}", *_change_cells(by_id[c.id])]
                if c.id in by_id
                else [f"· {c.id}", ABSENT, ABSENT, gib_text(c.delta_bytes, signed=True), ABSENT]
                for c in category.rows
            )
    fixed = analysis.fixed_overhead
    rows.append(
        [
            f"{FIXED_AND_HEADROOM} (sum)",
            gib_text(fixed.base_bytes),
            gib_text(fixed.head_bytes),
            total_text,
            pct_text(fixed.delta_pct),
        ]
    )
    headers = [f"category ({FIXED_AND_HEADROOM})", *_side_headers(diff)]
    return Table(headers, rows, _numbers_right(5, first=1))


def contributions_table(diff: LedgerDiff) -> Table:
    """Every row's share of each category delta; each category named once, on its first row."""
    rows: list[list[str]] = []
    for category in diff.state_pool.categories:
        rows.extend(
            [
                category.label if index == 0 else "",
                c.id,
                c.label,
                gib_text(c.delta_bytes, signed=True),
                status_text(c.status),
            ]
            for index, c in enumerate(category.rows)
        )
    return Table(
        ["category", "row id", "row", "Δ", "status"], rows, _numbers_right(5, first=3, last=4)
    )


def status_text(status: DiffStatus) -> str:
    """A status as a table shows it (`not comparable`)."""
    return status.value.replace("_", " ")


def balance_lines(diff: LedgerDiff) -> list[str]:
    """The arithmetic that closes: state-pool Δ = usable Δ - fixed-overhead Δ; none when a side
    stopped before its pools (the headline says so: no "larger by" that contradicts it)."""
    analysis = diff.state_pool
    unsized = _unsized_sides(diff)
    if analysis.available and unsized:
        return [
            f"no state-pool comparison: {' and '.join(unsized)} stopped before SGLang sized "
            "its pools (the rows that moved are below)."
        ]
    lines = [state_pool_statement(diff) + "."]
    deltas, total_text = round_parts([c.delta_bytes or 0 for c in analysis.categories])
    terms = ""
    for i, (text, category) in enumerate(zip(deltas, analysis.categories, strict=True)):
        if i == 0:
            terms = f"{text.lstrip('+')} ({category.label})"
        else:
            terms += f" {text[0]} {text[1:]} ({category.label})"
    lines.append(f"Fixed overhead + headroom, head - base: {total_text} GiB = {terms}.")
    part = analysis.partition
    pool = analysis.state_pool
    lines.append(
        f"State pool, head - base: {gib_text(pool.delta_bytes, signed=True)} GiB = usable "
        f"{gib_text(part.delta_bytes, signed=True)} - (fixed overhead + headroom) "
        f"{gib_text(analysis.fixed_overhead.delta_bytes, signed=True)}."
    )
    note = usable_note(diff)
    if note:
        lines.append(f"Note: {note}.")
    if analysis.reason:
        lines.append(f"Caveat: {analysis.reason}.")
    return lines


def destination_table(diff: LedgerDiff) -> Table:
    """Where the state pool goes: pools, tokens, slots, then the state rows that moved."""
    headers = ["figure", *_side_headers(diff)]
    rows = [["state pool (GiB)", *_change_cells(diff.state_pool.state_pool)]]
    rows += [
        _summary_row(f)
        for f in diff.state_pool.destination
        if f.base is not None or f.head is not None
    ]
    by_id = {r.id: r for r in diff.rows}
    for contribution in diff.state_pool.state_rows:
        row = by_id[contribution.id]
        rows.append([f"{row.label} ({row.id})", *_change_cells(row)])
    return Table(headers, rows, _numbers_right(5, first=1))


def _row_cells(row: RowDiff) -> list[str]:
    label = row.label if row.in_partition else f"{row.label} (info, not summed)"
    return [row.id, label, group_label(row.group), *_change_cells(row), status_text(row.status)]


ROW_HEADERS = ["id", "row", "group"]


@dataclass
class RowsView:
    """The rows table after sorting and collapsing unchanged rows."""

    table: Table
    hidden_unchanged: int
    notes: list[str] = field(default_factory=list)
    total: int = 0
    """Rows the table would list without a limit."""


def rows_view(
    diff: LedgerDiff, *, sort: SortKey, show_unchanged: bool, limit: int | None = None
) -> RowsView:
    """Row diffs sorted, unchanged ones collapsed into a count unless show_unchanged; `limit`:
    only the first rows of that order."""
    ordered = sort_rows(diff.rows, sort)
    listed = [r for r in ordered if show_unchanged or r.status is not DiffStatus.UNCHANGED]
    shown = listed if limit is None else listed[:limit]
    notes = [f"{r.id}: {r.note}" for r in shown if r.note]
    if limit is not None:  # the short view: the id names the row, its label (cut) is --full's
        table = Table(
            ["id", "group", *_side_headers(diff), "status"],
            [[cell for i, cell in enumerate(_row_cells(r)) if i != 1] for r in shown],
            _numbers_right(7, first=2, last=6),
            keep=(0, 6),
            optional=(1,),
        )
    else:
        table = Table(
            [*ROW_HEADERS, *_side_headers(diff), "status"],
            [_row_cells(r) for r in shown],
            _numbers_right(8, first=3, last=7),
            keep=(0, 7),
            optional=(1, 2),  # label and group make way for the numbers on a narrow terminal
        )
    return RowsView(
        table=table,
        hidden_unchanged=len(ordered) - len(listed),
        notes=notes,
        total=len(listed),
    )


def groups_table(diff: LedgerDiff) -> Table:
    """Group totals and the grand TOTAL (each equals the sum of its partition rows)."""
    rows = [
        [g.label, str(g.n_rows), *_change_cells(g), g.status.value]
        for g in [*diff.groups, diff.total]
    ]
    headers = ["group", "rows", *_side_headers(diff), "status"]
    return Table(headers, rows, _numbers_right(len(headers), first=1, last=len(headers) - 1))


def checkpoints_table(diff: LedgerDiff) -> Table:
    """Avail memory at each checkpoint, matched by id."""
    rows = [
        [
            c.id,
            *_change_cells(c),
            "" if c.base_line is None else str(c.base_line),
            "" if c.head_line is None else str(c.head_line),
            c.status.value,
        ]
        for c in diff.checkpoints
    ]
    headers = ["checkpoint (avail)", *_side_headers(diff), "base line", "head line", "status"]
    return Table(headers, rows, _numbers_right(len(headers), first=1, last=len(headers) - 1))


def intervals_table(diff: LedgerDiff) -> Table:
    """Each interval's drop and residual on both sides."""
    rows = [
        [
            f"{i.from_id} -> {i.to_id}",
            gib_text(i.drop.base_bytes),
            gib_text(i.drop.head_bytes),
            gib_text(i.drop.delta_bytes, signed=True),
            gib_text(i.residual.base_bytes),
            gib_text(i.residual.head_bytes),
            gib_text(i.residual.delta_bytes, signed=True),
            gib_text(i.unexplained.delta_bytes, signed=True),
            i.status.value,
        ]
        for i in diff.intervals
    ]
    headers = [
        "interval",
        "drop base",
        "drop head",
        "drop Δ",
        "residual base",
        "residual head",
        "residual Δ",
        "unexplained Δ",
        "status",
    ]
    # The residual columns are left out of a narrow terminal (their Δ stays).
    align = _numbers_right(len(headers), first=1, last=len(headers) - 1)
    return Table(headers, rows, align, optional=(4, 5))


PARAM_SOURCE_NOTE = (
    "source: server_args = the server_args line; log = read from log lines (log.<name>: "
    "env-driven or auto-chosen settings the log reveals); ledger = derived by the engine "
    "(ledger.<name>)"
)
"""Printed under the configuration table: what the `source` column means."""


def _param_text(value: object, source: str) -> str:
    # Whole values: a terminal table shortens its widest cells itself (with `…`); markdown
    # wraps them.
    if value is None:
        return "(not logged)" if source == "log" else "(not set)"
    return str(value)


def params_table(diff: LedgerDiff) -> Table:
    """Parameters that differ, with where each was read, next to the rows it plausibly moved."""
    rows = []
    for param in diff.parameters:
        moved = ", ".join(
            f"{c.id} {gib_text(c.delta_bytes, signed=True)}" for c in param.moved_rows[:6]
        )
        if len(param.moved_rows) > 6:
            moved += f", +{len(param.moved_rows) - 6} more"
        if not param.affects:
            moved = "(no known effect)"
        rows.append(
            [
                param.name,
                param.source,
                _param_text(param.base, param.source),
                _param_text(param.head, param.source),
                moved or "(none moved)",
            ]
        )
    headers = [
        "parameter",
        "source",
        f"base {diff.inputs.base.label}",
        f"head {diff.inputs.head.label}",
        "rows it plausibly moved (Δ GiB)",
    ]
    return Table(headers, rows, keep=(0, 1))


def coverage_table(diff: LedgerDiff) -> Table:
    """How complete each side's ledger is."""
    base, head = diff.coverage.base, diff.coverage.head

    def both(name: str, b: str, h: str) -> list[str]:
        return [name, b, h]

    rows = [
        both("outcome", base.outcome, head.outcome),
        both("stopped", base.stopped_at or "-", head.stopped_at or "-"),
        both("checkpoints", str(base.n_checkpoints), str(head.n_checkpoints)),
        both("intervals", str(base.n_intervals), str(head.n_intervals)),
        both("rows", str(base.n_rows), str(head.n_rows)),
        both(
            "unknown rows", ", ".join(base.unknown_rows) or "-", ", ".join(head.unknown_rows) or "-"
        ),
        both(
            "balance error ± tolerance (GiB)",
            f"{gib_text(base.balance_error_bytes, signed=True)} ± {gib_text(base.tolerance_bytes)}",
            f"{gib_text(head.balance_error_bytes, signed=True)} ± {gib_text(head.tolerance_bytes)}",
        ),
    ]
    headers = [
        "coverage",
        side_header("base", diff.inputs.base),
        side_header("head", diff.inputs.head),
    ]
    return Table(headers, rows)


def coverage_notes(diff: LedgerDiff) -> list[str]:
    """Where a partial side stopped, in full (the table cell may be shortened to fit), then the
    ledgers' own notes (degradations), prefixed by side."""
    sides = (("base", diff.coverage.base), ("head", diff.coverage.head))
    stops = [f"{side}: stopped {c.stopped_at}" for side, c in sides if c.stopped_at]
    return stops + [f"{side}: {n}" for side, c in sides for n in c.notes]


def composition(diff: LedgerDiff) -> tuple[list[RowGroup], list[int], list[int]]:
    """Groups in display order with each side's total bytes (negative totals kept as they are)."""
    by_group = {g.id: g for g in diff.groups}
    groups = [g for g in COMPOSITION_ORDER if g.value in by_group]
    groups += [g for g in RowGroup if g.value in by_group and g not in groups]
    return (
        groups,
        [by_group[g.value].base_bytes or 0 for g in groups],
        [by_group[g.value].head_bytes or 0 for g in groups],
    )
