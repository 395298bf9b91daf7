"""The short text view of a ledger (the default; `--full` adds every table): the verdict, then
the handful of rows that matter, as ruff and pip-audit print findings before details.

What matters, in this order: every group's total, largest first, with its largest row (the
answer to "where did my memory go"); the split of usable memory into fixed overhead, runtime
headroom (free, so not overhead) and state pool; the state pool's KV figures; any unexplained
row of 0.10 GiB or more; the KV-sizing verdict.
"""

from __future__ import annotations

from memledger.model.ledger import LEDGER_PARAM_PREFIX, Ledger, Row, RowGroup
from memledger.render.rows import gib_cell, group_blocks, summary_cell
from memledger.render.tables import ABSENT, Align, Table
from memledger.units import GIB, int_or

NOTABLE_UNEXPLAINED_BYTES = GIB // 10
"""An unexplained row this large (either sign) is listed by name in the short view."""

BRIEF_FOOTER = "every row, checkpoint, interval and summary figure: --full; one row: --explain ROW"


def _largest(rows: list[Row]) -> Row | None:
    summed = [r for r in rows if r.in_partition and r.bytes is not None]
    return max(summed, key=lambda r: abs(r.bytes or 0), default=None)


def _share(byte_count: int, usable: int | None) -> str:
    if not usable or usable <= 0:
        return ABSENT
    return f"{100 * byte_count / usable:.1f}%"


def _summed(rows: list[Row]) -> bool:
    return any(r.in_partition and r.bytes is not None for r in rows)


def groups_table(ledger: Ledger) -> Table:
    """Each group's total, largest first, its share of usable memory and its largest row.

    A group none of whose rows is summed (a log without avail readings) has no total: `-`,
    never 0.00 beside rows that say otherwise."""
    blocks = sorted(
        group_blocks(ledger), key=lambda b: (not _summed(b.rows), -abs(b.subtotal_bytes))
    )
    rows = []
    for block in blocks:
        summed = _summed(block.rows)
        largest = _largest(block.rows)
        several = sum(r.in_partition for r in block.rows) > 1
        detail = f"{largest.id} {gib_cell(largest.bytes)}" if largest and several else ""
        if block.unknown_count:
            detail += f"{'; ' if detail else ''}{block.unknown_count} unknown, not summed"
        shown = sum(1 for r in block.rows if not r.in_partition and r.bytes is not None)
        if not summed and shown:
            detail += f"{'; ' if detail else ''}{shown} shown, not summed"
        rows.append(
            [
                block.group.value,
                gib_cell(block.subtotal_bytes) if summed else ABSENT,
                _share(block.subtotal_bytes, ledger.usable_bytes) if summed else ABSENT,
                detail,
            ]
        )
    align: list[Align] = ["left", "right", "right", "left"]
    return Table(
        ["group", "GiB", "share", "largest row"],
        rows,
        align,
        title="Where the memory went",
        keep=(0,),
    )


def split_line(ledger: Ledger) -> str:
    """`usable 177.70 GiB = fixed overhead 109.92 + runtime headroom 4.00 + state pool 63.78`.

    A part no summed row gives is `-`; with usable memory unknown the parts are what the log
    shows, not a split of the GPU."""
    totals = {b.group: b.subtotal_bytes for b in group_blocks(ledger) if _summed(b.rows)}
    headroom = totals.get(RowGroup.RUNTIME_HEADROOM)
    pool = totals.get(RowGroup.STATE_POOL)
    fixed_groups = [g for g in totals if g not in (RowGroup.RUNTIME_HEADROOM, RowGroup.STATE_POOL)]
    fixed = sum(totals[g] for g in fixed_groups) if fixed_groups else None
    parts = (
        f"fixed overhead {_part(fixed)} + runtime headroom (free) {_part(headroom)} + "
        f"state pool {_part(pool)}"
    )
    if ledger.usable_bytes is None and not ledger.checkpoints:
        return "usable unknown, no split: no avail reading is used (the notes say why)"
    if ledger.usable_bytes is None:
        return f"usable unknown; the rows the log shows: {parts}"
    return f"usable {gib_cell(ledger.usable_bytes)} GiB = {parts}"


def _part(byte_count: int | None) -> str:
    return ABSENT if byte_count is None else gib_cell(byte_count)


def pool_line(ledger: Ledger) -> str | None:
    """The state pool's KV figures in one sentence (None when the ledger has none)."""
    s = ledger.summary
    parts = []
    if s.kv_pool is not None:
        parts.append(f"KV pool {gib_cell(s.kv_pool)} GiB")
    if s.kv_tokens_per_rank is not None:
        tokens = f"{s.kv_tokens_per_rank:,} KV tokens per rank"
        if s.kv_tokens_per_instance not in (None, s.kv_tokens_per_rank):
            tokens += f" ({s.kv_tokens_per_instance:,} per instance)"
        parts.append(tokens)
    if s.draft_kv is not None:
        parts.append(f"draft KV {gib_cell(s.draft_kv)} GiB")
    # Per-slot state divides by the Mamba pool's own slots when the log prints them; they are
    # not the request slots (SGLang sizes the two apart), so the product is not offered then.
    mamba = int_or(ledger.parameters.get(LEDGER_PARAM_PREFIX + "max_mamba_cache_size"), None)
    state_slots = mamba + 1 if mamba is not None else s.slots
    if s.slots is not None:
        slots = f"{s.slots:,} request slots"
        if s.state_per_slot is not None and state_slots == s.slots:
            slots += f" x {gib_cell(s.state_per_slot)} GiB of state"
        parts.append(slots)
    if s.state_per_slot is not None and state_slots not in (None, s.slots):
        parts.append(
            f"{gib_cell(s.state_per_slot)} GiB of state per Mamba slot ({state_slots:,} slots)"
        )
    if not parts and not any(r.group is RowGroup.STATE_POOL for r in ledger.rows):
        parts.append("none (no pool in this ledger)")
    if s.mem_fraction_static is not None:
        mfs = summary_cell("mem_fraction_static", s.mem_fraction_static)
        parts.append(f"mem_fraction_static {mfs}")
    return "state pool: " + "; ".join(parts) if parts else None


def unexplained_lines(ledger: Ledger) -> list[str]:
    """Unexplained rows of 0.10 GiB or more (either sign), largest first."""
    notable = [
        r
        for r in ledger.rows
        if r.group is RowGroup.UNEXPLAINED
        and r.bytes is not None
        and abs(r.bytes) >= NOTABLE_UNEXPLAINED_BYTES
    ]
    notable.sort(key=lambda r: -abs(r.bytes or 0))
    return [f"{r.label}: {gib_cell(r.bytes)} GiB (--explain {r.id})" for r in notable]
