"""Row builders: the one place that decides columns, cell text and rounding for ledger tables.

Everything here is plain data (no tabulate): text and markdown format the same `Table`s
(`render.tables`); the diff renderers reuse the cell helpers.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from enum import StrEnum
from typing import assert_never

from memledger.model.ledger import FIXED_OVERHEAD_GROUPS, Ledger, Row, RowGroup, RowKind, Summary
from memledger.record import computed_names, to_dict
from memledger.render.tables import ABSENT, ABSENT_LEGEND, Align, Table
from memledger.units import GIB, format_gib

GIB_DIGITS = 2
"""SGLang prints GB with two decimals; showing more would suggest precision the log lacks."""
ERROR_DIGITS = 3
"""Printing-precision bounds are usually ±0.005 GiB per number, so they need one digit more."""
SOURCE_WIDTH = 56
"""Longest source cell before it is shortened (the full text is in --explain and JSON)."""
LABEL_WIDTH = 60
"""Longest label cell in tables (the last column, so long labels do not push numbers away)."""

INFORMATIONAL_MARK = "*"
"""Appended to the kind of rows that are shown but not summed (in_partition False)."""

GROUP_ORDER: tuple[RowGroup, ...] = (
    *(group for group in RowGroup if group in FIXED_OVERHEAD_GROUPS),
    RowGroup.STATE_POOL,
)
"""Fixed-overhead groups first, then the state pool: the article's order of the account."""


@dataclass(frozen=True)
class GroupBlock:
    """The rows of one group and their subtotal (partition rows with known bytes only)."""

    group: RowGroup
    rows: list[Row]
    subtotal_bytes: int
    subtotal_error_bytes: int
    unknown_count: int


@dataclass(frozen=True)
class Headline:
    """The identity and verdict of a ledger as ordered (label, value) pairs."""

    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)


# --- cells -----------------------------------------------------------------------------------


def gib_cell(byte_count: int | None) -> str:
    """Bytes as GiB with two decimals; `ABSENT` for unknown; never `-0.00`."""
    return ABSENT if byte_count is None else format_gib(byte_count, GIB_DIGITS)


def signed_gib_cell(byte_count: int | None) -> str:
    """Bytes as GiB with an explicit sign (for differences and balance errors)."""
    return ABSENT if byte_count is None else format_gib(byte_count, GIB_DIGITS, signed=True)


def error_cell(error_bytes: int) -> str:
    """A ± bound in GiB, blank when exact."""
    return "" if error_bytes == 0 else f"±{error_bytes / GIB:.{ERROR_DIGITS}f}"


def count_cell(value: int | None) -> str:
    """An integer count with thousands separators; `ABSENT` for None."""
    return ABSENT if value is None else f"{value:,}"


def shorten(text: str, width: int | None = SOURCE_WIDTH) -> str:
    """One line of at most `width` characters (None: whole), cut with `...`."""
    flat = " ".join(text.split())
    return flat if width is None or len(flat) <= width else flat[: width - 3].rstrip() + "..."


def source_cell(row: Row, log_name: str | None = None, *, width: int | None = SOURCE_WIDTH) -> str:
    """Where the number comes from, short: file:line, the formula, the residual, or the reason.

    `log_name`: the file the report's header names; a line of it is `:line` (no repeat).
    `width`: the longest text (None: whole, for tables that fit themselves)."""
    evidence = row.evidence
    match row.kind:
        case RowKind.LOGGED:
            if not evidence.sources:
                return "log"
            first = evidence.sources[0]
            more = f" (+{len(evidence.sources) - 1} lines)" if len(evidence.sources) > 1 else ""
            name = posixpath.basename(first.path.replace(chr(92), "/"))
            return f"{'' if name == log_name else name}:{first.line}{more}"
        case RowKind.DERIVED:
            return shorten(evidence.formula or evidence.note or "formula", width)
        case RowKind.RESIDUAL:
            return shorten(f"residual of {row.interval}" if row.interval else "residual", width)
        case RowKind.UNKNOWN:
            return shorten(evidence.note or "unknown", width)
        case _:
            assert_never(row.kind)


def kind_cell(row: Row) -> str:
    """The row kind, marked when the row is informational (not summed)."""
    return row.kind.value if row.in_partition else f"{row.kind.value}{INFORMATIONAL_MARK}"


# --- structure -------------------------------------------------------------------------------


def group_blocks(ledger: Ledger) -> list[GroupBlock]:
    """The ledger's rows grouped in account order; empty groups are left out."""
    blocks: list[GroupBlock] = []
    for group in GROUP_ORDER:
        rows = [row for row in ledger.rows if row.group == group]
        if not rows:
            continue
        total = ledger.group(group)  # the engine's group total, not re-added here
        blocks.append(
            GroupBlock(
                group=group,
                rows=rows,
                subtotal_bytes=0 if total is None else total.bytes,
                subtotal_error_bytes=0 if total is None else total.error_bytes,
                unknown_count=0 if total is None else total.unknown,
            )
        )
    return blocks


def partition_total(blocks: list[GroupBlock], groups: frozenset[RowGroup]) -> tuple[int, int]:
    """Sum and ± of the subtotals of the given groups."""
    chosen = [block for block in blocks if block.group in groups]
    return (
        sum(block.subtotal_bytes for block in chosen),
        sum(block.subtotal_error_bytes for block in chosen),
    )


# --- tables ----------------------------------------------------------------------------------

ROW_HEADERS = ["group", "row", "GiB", "±GiB", "kind", "source", "what"]
ROW_ALIGN: list[Align] = ["left", "left", "right", "right", "left", "left", "left"]


def headline(ledger: Ledger) -> Headline:
    """Title and key facts: file, startup, rank, outcome, usable and the balance."""
    source = ledger.source
    facts: list[tuple[str, str]] = [
        *engine_facts(ledger),
        ("file", source.path),
        ("startup", startup_text(source.startup, source.n_startups)),
        ("rank", source.rank or "(untagged)"),
        ("outcome", ledger.outcome),
    ]
    if ledger.diagnosis is not None:
        facts.append(("diagnosis", ledger.diagnosis.verdict))
    if ledger.stopped_at:
        facts.append(("stopped", ledger.stopped_at))
    usable = "unknown" if ledger.usable_bytes is None else f"{gib_cell(ledger.usable_bytes)} GiB"
    facts.append(("usable", usable))
    facts.append(("balance", balance_text(ledger)))
    return Headline(title=f"memledger ledger: {source.path}", facts=facts)


def engine_facts(ledger: Ledger) -> list[tuple[str, str]]:
    """A second engine's ledger says which engine and which rows its budget holds (an SGLang
    ledger's headline is as it always was)."""
    if ledger.engine == "sglang":
        return []
    params = ledger.parameters
    release = params.get("release") or "release not printed"
    inside = [r.id for r in ledger.rows if r.in_budget and r.in_partition]
    outside = [r.id for r in ledger.rows if r.in_budget is False and r.in_partition]
    budget = params.get("budget_bytes")
    fraction = params.get("gpu_memory_utilization")
    size = f" = {gib_cell(budget)} GiB" if isinstance(budget, int) else ""
    return [
        ("engine", f"vLLM ({params.get('era', '?')}, {release})"),
        (
            "budget",
            f"gpu_memory_utilization {fraction if fraction is not None else '?'}{size} holds "
            f"{', '.join(inside) or '-'}; outside it: {', '.join(outside) or '-'}",
        ),
    ]


def startup_text(index: int, n_startups: int) -> str:
    """The startup as `--startup` numbers it (0-based), with how many the file holds."""
    if n_startups <= 1:
        return f"{index} (the only startup in the file)"
    last = "; the last" if index == n_startups - 1 else ""
    return f"{index} (of startups 0..{n_startups - 1}{last})"


def balance_text(ledger: Ledger) -> str:
    """`verdict (rows - usable = x GiB, within ±t GiB)`: the verdict first, no word that reads
    as a failure when it balances (review 2, m2: `error +0.00 GiB ...: balances`)."""
    if ledger.usable_bytes is None:
        return "not checked (usable memory unknown)"
    within = abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
    verdict, where = ("balances", "within") if within else ("OUT OF BALANCE", "beyond")
    return (
        f"{verdict} (rows - usable = {signed_gib_cell(ledger.balance_error_bytes)} GiB, "
        f"{where} ±{ledger.tolerance_bytes / GIB:.{ERROR_DIGITS}f} GiB)"
    )


def ledger_rows_table(ledger: Ledger, *, name_the_log: bool = False) -> Table:
    """Every row, grouped, with group subtotals, fixed overhead, state pool and the total.

    `name_the_log`: a source line of the ledger's own log is `dp2.log:56`, not `:56` (the text
    report's header names the log just above; markdown's table is read apart from it)."""
    blocks = group_blocks(ledger)
    log_name = None if name_the_log else posixpath.basename(ledger.source.path.replace("\\", "/"))
    rows: list[list[str]] = []
    for block in blocks:
        for index, row in enumerate(block.rows):
            group = block.group.value if index == 0 else ""
            rows.append(
                [
                    group,
                    row.id,
                    gib_cell(row.bytes),
                    error_cell(row.error_bytes),
                    kind_cell(row),
                    # whole cells: text tables are fitted to the terminal, markdown wraps
                    source_cell(row, log_name, width=None),
                    row.label,
                ]
            )
        unknown = f"{block.unknown_count} unknown not summed" if block.unknown_count else ""
        rows.append(
            [
                "",
                "subtotal",
                gib_cell(block.subtotal_bytes),
                error_cell(block.subtotal_error_bytes),
                "",
                unknown,
                f"{block.group.value} subtotal",
            ]
        )
    # Free runtime headroom is not overhead: the TOTAL names it apart (the JSON summary's
    # `fixed_overhead` is "fixed overhead + headroom", everything but the state pool).
    overhead = FIXED_OVERHEAD_GROUPS - {RowGroup.RUNTIME_HEADROOM}
    fixed_bytes, fixed_error = partition_total(blocks, overhead)
    free_bytes, free_error = partition_total(blocks, frozenset({RowGroup.RUNTIME_HEADROOM}))
    pool_bytes, pool_error = partition_total(blocks, frozenset({RowGroup.STATE_POOL}))
    usable = "" if ledger.usable_bytes is None else f"usable {gib_cell(ledger.usable_bytes)}"
    total_bytes = fixed_bytes + free_bytes + pool_bytes
    rows += [
        ["TOTAL", "fixed overhead", gib_cell(fixed_bytes), error_cell(fixed_error), "", ""]
        + ["every group but runtime headroom and the state pool"],
        ["", "runtime headroom", gib_cell(free_bytes), error_cell(free_error), "", ""]
        + ["free after startup (not overhead)"],
        ["", "state pool", gib_cell(pool_bytes), error_cell(pool_error), "", "", "state pool"],
        ["", "sum", gib_cell(total_bytes), error_cell(fixed_error + free_error + pool_error)]
        + ["", usable, "sum of rows"],
    ]
    notes = [ABSENT_LEGEND] if any(row.bytes is None for row in ledger.rows) else []
    if any(not row.in_partition for row in ledger.rows):
        notes.append(f"{INFORMATIONAL_MARK} informational: shown, not part of any sum")
    footnote = "\n".join(notes) or None
    return Table(
        ROW_HEADERS,
        rows,
        ROW_ALIGN,
        title="Rows",
        footnote=footnote,
        keep=(0, 1),
        optional=(6,),
        provenance=(5,),
    )


def checkpoints_table(ledger: Ledger) -> Table:
    """Every avail reading, in log order."""
    rows = [
        [point.id, gib_cell(point.avail_bytes), error_cell(point.error_bytes), str(point.line)]
        for point in ledger.checkpoints
    ]
    headers = ["checkpoint", "avail GiB", "±GiB", "line"]
    return Table(headers, rows, ["left", "right", "right", "right"], title="Checkpoints")


def intervals_table(ledger: Ledger) -> Table:
    """Each interval's drop and how it is explained: logged, residual, named, unexplained."""
    headers = ["from", "to", "drop", "logged", "residual", "named", "unexplained", "±GiB"]
    rows = [
        [
            interval.from_id,
            interval.to_id,
            gib_cell(interval.drop_bytes),
            gib_cell(interval.logged_bytes),
            gib_cell(interval.residual_bytes),
            gib_cell(interval.named_bytes),
            gib_cell(interval.unexplained_bytes),
            error_cell(interval.error_bytes),
        ]
        for interval in ledger.intervals
    ]
    footnote = "GiB; residual = drop - logged; unexplained = residual - named"
    right: list[Align] = ["right"] * 6
    align: list[Align] = ["left", "left", *right]
    return Table(headers, rows, align, title="Intervals", footnote=footnote)


class SummaryUnit(StrEnum):
    """How a summary figure is shown."""

    GIB = "GiB"
    FRACTION = ""
    SLOTS = "slots"
    TOKENS = "tokens"


SUMMARY_UNITS: dict[str, SummaryUnit] = {
    "slots": SummaryUnit.SLOTS,
    "mem_fraction_static": SummaryUnit.FRACTION,
    "kv_tokens_per_rank": SummaryUnit.TOKENS,
    "kv_tokens_per_dp_group": SummaryUnit.TOKENS,
    "kv_tokens_per_instance": SummaryUnit.TOKENS,
}
"""Summary keys that are not GiB; every other key is GiB."""


def summary_cell(key: str, value: float | int | None) -> str:
    """A summary figure: GiB with two decimals, counts with separators, fractions as printed."""
    if value is None:
        return ABSENT
    unit = SUMMARY_UNITS.get(key, SummaryUnit.GIB)
    if unit is SummaryUnit.GIB:
        return gib_cell(int(value))  # sizes are bytes in the ledger
    if unit is SummaryUnit.FRACTION:
        return f"{value:g}"
    return count_cell(int(value))


SUMMARY_NAMES: dict[str, str] = {
    "fixed_overhead": "fixed overhead + headroom",
    "workspace": "workspace + unexplained",
    "weights_resident": "weights + staging resident",
}
"""Summary figures whose key is a shorter word than what they hold (the JSON keys stay): the
same words mean the same numbers in the Rows table and here (`workspace` there is the group)."""


def summary_table(summary: Summary) -> Table:
    """Every summary key in model order with its unit (and its meaning where the key is short);
    absent figures are `ABSENT`, explained under the table."""
    rows = [
        [
            f"{SUMMARY_NAMES[key]} ({key})" if key in SUMMARY_NAMES else key,
            summary_cell(key, value),
            SUMMARY_UNITS.get(key, SummaryUnit.GIB).value,
        ]
        for key, value in to_dict(summary, exclude=set(computed_names(Summary))).items()
    ]
    align: list[Align] = ["left", "right", "left"]
    footnote = ABSENT_LEGEND if any(row[1] == ABSENT for row in rows) else None
    return Table(["figure", "value", "unit"], rows, align, title="Summary", footnote=footnote)


def ledger_tables(ledger: Ledger, *, name_the_log: bool = False) -> list[Table]:
    """The report's tables in order; checkpoints and intervals only when there are any
    (`name_the_log`: see `ledger_rows_table`)."""
    tables = [ledger_rows_table(ledger, name_the_log=name_the_log)]
    # A startup that stopped before any avail reading has neither; its notes say so.
    if ledger.checkpoints:
        tables.append(checkpoints_table(ledger))
    if ledger.intervals:
        tables.append(intervals_table(ledger))
    tables.append(summary_table(ledger.summary))
    if ledger.sizing is not None:
        from memledger.render.sizing import sizing_table  # the sizing section renders itself

        tables.append(sizing_table(ledger.sizing))
    return tables


# --- flat records (CSV) ----------------------------------------------------------------------

CSV_HEADERS = [
    "id",
    "label",
    "group",
    "kind",
    "bytes",
    "gib",
    "error_bytes",
    "in_partition",
    "interval",
    "source",
    "formula",
    "sources",
    "note",
]


def csv_records(ledger: Ledger) -> list[list[str]]:
    """One flat record per ledger row, bytes exact, in ledger order."""
    records: list[list[str]] = []
    for row in ledger.rows:
        evidence = row.evidence
        records.append(
            [
                row.id,
                row.label,
                row.group.value,
                row.kind.value,
                "" if row.bytes is None else str(row.bytes),
                "" if row.gib is None else f"{row.gib:.6f}",
                str(row.error_bytes),
                "true" if row.in_partition else "false",
                row.interval or "",
                source_cell(row),
                evidence.formula or "",
                ";".join(f"{source.path}:{source.line}" for source in evidence.sources),
                evidence.note or "",
            ]
        )
    return records
