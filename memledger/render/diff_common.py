"""Table data shared by the diff renderers: headers and string rows, built once.

No tabulate here: `render.tables` decides the table syntax; this module decides columns,
rounding and order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from memledger.compare import (
    DELTA_PCT_DEFINITION,
    ByteChange,
    DiffInput,
    DiffStatus,
    LedgerDiff,
    RowDiff,
    SortKey,
    SummaryField,
    group_label,
    sort_rows,
)
from memledger.ledger_model import RowGroup
from memledger.render.diff_prose import state_pool_statement, usable_note
from memledger.render.tables import Table
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
    """Bytes as GiB; `+`/`-` when signed; `?` for unknown; never `-0.00`."""
    return format_gib(byte_count, digits, signed=signed)


def pct_text(pct: float | None) -> str:
    """A Δ% as `+12.3%`, empty when undefined."""
    return "" if pct is None else f"{pct:+.1f}%"


def number_text(value: int | float | None, unit: str, *, signed: bool = False) -> str:
    """A summary figure in its unit: GiB with 2 decimals, token counts in millions."""
    if value is None:
        return "?"
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
    extra = f", stopped at {item.stopped_at}" if item.stopped_at else ""
    return (
        f"{side_header(side, item)}: {item.path} (startup #{item.startup} of {item.n_startups}, "
        f"rank {item.rank or '-'}, {item.outcome}{extra})"
    )


def definition_line() -> str:
    """What Δ and Δ% mean."""
    return f"Δ = head - base; {DELTA_PCT_DEFINITION}; sizes in GiB"


def short_stop(stopped_at: str) -> str:
    """`after load_begin (line 372)` out of the engine's longer `after ...: oom at ...: text`."""
    return stopped_at.split(": ", 1)[0]


def headline(diff: LedgerDiff) -> str:
    """One line: the verdict on the state pool and the biggest mover."""
    analysis = diff.state_pool
    pool = analysis.state_pool
    fixed = analysis.fixed_overhead
    if not analysis.available:
        verdict = "no state-pool comparison"
    elif pool.status is DiffStatus.UNCHANGED and fixed.status is DiffStatus.UNCHANGED:
        verdict = "state pool and fixed overhead unchanged (within printing precision)"
    else:
        verdict = (
            f"state pool {gib_text(pool.delta_bytes, signed=True)} GiB "
            f"(fixed overhead {gib_text(fixed.delta_bytes, signed=True)} GiB)"
        )
    mover_text = (
        f"biggest mover: {_mover_text(diff)}" if diff.biggest_mover_group else ("nothing moved")
    )
    partial = [
        f"{side} partial ({item.outcome}, stopped {short_stop(item.stopped_at)})"
        for side, item in (("base", diff.inputs.base), ("head", diff.inputs.head))
        if item.stopped_at
    ]
    tail = f" · {'; '.join(partial)}" if partial else ""
    return f"{diff.inputs.head.label} vs {diff.inputs.base.label}: {verdict} · {mover_text}{tail}"


def _mover_text(diff: LedgerDiff) -> str:
    """`CUDA graphs +5.88 GiB (+72.8%; most from cuda_graph_largest_bucket +3.05)`."""
    group = next(g for g in diff.groups if g.id == diff.biggest_mover_group)
    pct = pct_text(group.delta_pct)
    details = [pct] if pct else []
    row = next((r for r in diff.rows if r.id == diff.biggest_mover), None)
    if row is not None and group.n_rows > 1:
        details.append(f"most from {row.id} {gib_text(row.delta_bytes, signed=True)}")
    detail = f" ({'; '.join(details)})" if details else ""
    return f"{group.label} {gib_text(group.delta_bytes, signed=True)} GiB{detail}"


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
        "fixed_overhead": ("fixed overhead", analysis.fixed_overhead),
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
    return Table(["figure", *_side_headers(diff)], rows)


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
    # A side the item is absent from is blank; `?` means present but unknown.
    absent_base = change.status is DiffStatus.NEW or (
        isinstance(change, RowDiff) and change.base_kind is None
    )
    absent_head = change.status is DiffStatus.REMOVED or (
        isinstance(change, RowDiff) and change.head_kind is None
    )
    return [
        "" if absent_base else gib_text(change.base_bytes),
        "" if absent_head else gib_text(change.head_bytes),
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
            rows.extend(
                [
                    f"  {c.label} ({c.id})",
                    "",
                    "",
                    gib_text(c.delta_bytes, signed=True),
                    "",
                ]
                for c in category.rows
            )
    fixed = analysis.fixed_overhead
    rows.append(
        [
            "fixed overhead (sum)",
            gib_text(fixed.base_bytes),
            gib_text(fixed.head_bytes),
            total_text,
            pct_text(fixed.delta_pct),
        ]
    )
    return Table(["fixed-overhead category", *_side_headers(diff)], rows)


def contributions_table(diff: LedgerDiff) -> Table:
    """Every row's share of each category delta."""
    rows: list[list[str]] = []
    for category in diff.state_pool.categories:
        rows.extend(
            [
                category.label,
                c.id,
                c.label,
                gib_text(c.delta_bytes, signed=True),
                status_text(c.status),
            ]
            for c in category.rows
        )
    return Table(["category", "row id", "row", "Δ", "status"], rows)


def status_text(status: DiffStatus) -> str:
    """A status as a table shows it (`not comparable`)."""
    return status.value.replace("_", " ")


def balance_lines(diff: LedgerDiff) -> list[str]:
    """The arithmetic that closes: state-pool Δ = usable Δ - fixed-overhead Δ."""
    analysis = diff.state_pool
    lines = [state_pool_statement(diff) + "."]
    deltas, total_text = round_parts([c.delta_bytes or 0 for c in analysis.categories])
    terms = ""
    for i, (text, category) in enumerate(zip(deltas, analysis.categories, strict=True)):
        if i == 0:
            terms = f"{text.lstrip('+')} ({category.label})"
        else:
            terms += f" {text[0]} {text[1:]} ({category.label})"
    lines.append(f"Fixed overhead, head - base: {total_text} GiB = {terms}.")
    part = analysis.partition
    pool = analysis.state_pool
    lines.append(
        f"State pool, head - base: {gib_text(pool.delta_bytes, signed=True)} GiB = usable "
        f"{gib_text(part.delta_bytes, signed=True)} - fixed overhead "
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
    return Table(headers, rows)


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


def rows_view(diff: LedgerDiff, *, sort: SortKey, show_unchanged: bool) -> RowsView:
    """Row diffs sorted, unchanged ones collapsed into a count unless show_unchanged."""
    ordered = sort_rows(diff.rows, sort)
    shown = [r for r in ordered if show_unchanged or r.status is not DiffStatus.UNCHANGED]
    notes = [f"{r.id}: {r.note}" for r in shown if r.note]
    return RowsView(
        table=Table(
            [*ROW_HEADERS, *_side_headers(diff), "status"],
            [_row_cells(r) for r in shown],
            keep=(0,),
            optional=(1, 2),  # label and group make way for the numbers on a narrow terminal
        ),
        hidden_unchanged=len(ordered) - len(shown),
        notes=notes,
    )


def groups_table(diff: LedgerDiff) -> Table:
    """Group totals and the grand TOTAL (each equals the sum of its partition rows)."""
    rows = [
        [g.label, str(g.n_rows), *_change_cells(g), g.status.value]
        for g in [*diff.groups, diff.total]
    ]
    return Table(["group", "rows", *_side_headers(diff), "status"], rows)


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
    return Table(headers, rows)


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
    return Table(headers, rows, optional=(4, 5))


PARAM_SOURCE_NOTE = (
    "source: server_args = the server_args line; log = read from log lines (log.<name>: "
    "env-driven or auto-chosen settings the log reveals); ledger = derived by the engine "
    "(ledger.<name>)"
)
"""Printed under the configuration table: what the `source` column means."""


def _param_text(value: object, source: str) -> str:
    if value is None:
        return "(not logged)" if source == "log" else "(not set)"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
        both("stopped at", base.stopped_at or "-", head.stopped_at or "-"),
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
    stops = [f"{side}: stopped at {c.stopped_at}" for side, c in sides if c.stopped_at]
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
