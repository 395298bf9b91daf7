"""CSV rendering of a ledger diff: one flat record per (section, id) with base, head and delta.

Sections: `row`, `group` (TOTAL included), `category`, `checkpoint`, `interval.<metric>`,
`summary` and `parameter`. Byte quantities are exact integers (unit `bytes`); every record
repeats which inputs were compared, so a record read alone still says what it compares.
"""

from __future__ import annotations

from collections.abc import Iterator

from memledger.compare.compute import sort_rows
from memledger.compare.models import ByteChange, LedgerDiff, SortKey
from memledger.render.escape import write_csv

CSV_HEADERS = [
    "section",
    "id",
    "label",
    "group",
    "status",
    "unit",
    "base",
    "head",
    "delta",
    "delta_pct",
    "base_kind",
    "head_kind",
    "in_partition",
    "base_path",
    "base_startup",
    "base_rank",
    "head_path",
    "head_startup",
    "head_rank",
]


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).replace("\r", " ").replace("\n", " ")


def _bytes_cells(change: ByteChange) -> list[str]:
    return [
        change.status.value,
        "bytes",
        _text(change.base_bytes),
        _text(change.head_bytes),
        _text(change.delta_bytes),
        _text(change.delta_pct),
    ]


def _records(diff: LedgerDiff, sort: SortKey) -> Iterator[list[str]]:
    for row in sort_rows(diff.rows, sort):
        yield [
            "row",
            row.id,
            row.label,
            row.group.value,
            *_bytes_cells(row),
            _text(row.base_kind and row.base_kind.value),
            _text(row.head_kind and row.head_kind.value),
            _text(row.in_partition),
        ]
    for group in [*diff.groups, diff.total]:
        yield ["group", group.id, group.label, group.id, *_bytes_cells(group), "", "", "true"]
    for category in diff.state_pool.categories:
        groups = " ".join(g.value for g in category.groups)
        yield ["category", category.id, category.label, groups, *_bytes_cells(category), "", "", ""]
    for checkpoint in diff.checkpoints:
        yield ["checkpoint", checkpoint.id, "avail", "", *_bytes_cells(checkpoint), "", "", ""]
    for interval in diff.intervals:
        name = f"{interval.from_id}->{interval.to_id}"
        for metric in ("drop", "logged", "named", "residual", "unexplained"):
            change: ByteChange = getattr(interval, metric)
            yield [f"interval.{metric}", name, metric, "", *_bytes_cells(change), "", "", ""]
    for field in diff.summary_fields:
        yield [
            "summary",
            field.key,
            field.label,
            "",
            field.status.value,
            field.unit,
            _text(field.base),
            _text(field.head),
            _text(field.delta),
            _text(field.delta_pct),
            "",
            "",
            "",
        ]
    for param in diff.parameters:
        yield [
            "parameter",
            param.name,
            " ".join(param.affects),
            "",
            param.status.value,
            "value",
            _text(param.base),
            _text(param.head),
            "",
            "",
            "",
            "",
            "",
        ]


def render_diff_csv(diff: LedgerDiff, *, sort: SortKey = SortKey.DELTA) -> str:
    """A header line and one record per (section, id); every row, unchanged ones too."""
    base, head = diff.inputs.base, diff.inputs.head
    identity = [base.path, str(base.startup), base.rank, head.path, str(head.startup), head.rank]
    return write_csv(
        CSV_HEADERS, (record + [_text(c) for c in identity] for record in _records(diff, sort))
    )
